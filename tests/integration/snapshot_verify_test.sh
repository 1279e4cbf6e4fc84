#!/bin/sh
# snapshot_verify_test.sh TRNEMU KERNEL_DEMO NEFF: `trnemu snapshot verify`
# as a user runs it. A snapshot taken before the first execution verifies
# ok (exit 0); the same file with one chunk's bytes changed, or with one
# region-chunk row deleted, is reported CORRUPT (exit 1) with a log line
# naming the cause; a file that is not a snapshot store is refused.
set -u
T=$1
K=$2
NEFF=$3
W=$(mktemp -d "${TMPDIR:-/tmp}/trnemu-verify-test.XXXXXX")
trap 'rm -rf "$W"' EXIT
export TRNEMU_SHM_DIR="$W/shm"
mkdir -p "$TRNEMU_SHM_DIR"
export TRNEMU_INSTANCE=trn1.2xlarge
unset TRNEMU_INSTANCE_NAME
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
PY=python3
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import sqlite3' 2>/dev/null; then PY=$p; break; fi
done

# kernel_demo links libnrt.so.1 itself (no LD_PRELOAD, which sanitizer
# builds would refuse)
if ! TRNEMU_SNAPSHOT_AT=1 TRNEMU_SNAPSHOT_FILE="$W/s.db" "$K" "$NEFF" >"$W/run" 2>&1 ||
    [ ! -s "$W/s.db" ]; then
    echo "FAIL: kernel_demo with TRNEMU_SNAPSHOT_AT=1 left no snapshot"
    cat "$W/run"
    exit 1
fi

"$T" snapshot verify "$W/s.db" >"$W/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q ": ok" "$W/out" || { fail "intact file: exit $rc"; cat "$W/out"; }

# one bit of one chunk flipped (same length, so only the content hash knows)
cp "$W/s.db" "$W/bit.db"
"$PY" - "$W/bit.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cid, data = db.execute("SELECT id, data FROM chunk ORDER BY id LIMIT 1").fetchone()
b = bytearray(data)
b[len(b) // 2] ^= 1
db.execute("UPDATE chunk SET data = ? WHERE id = ?", (bytes(b), cid))
db.commit()
PYEOF
"$T" snapshot verify "$W/bit.db" >"$W/out" 2>"$W/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "CORRUPT" "$W/out" && [ -s "$W/err" ] ||
    { fail "flipped chunk bit: exit $rc"; cat "$W/out" "$W/err"; }

# one region-chunk row deleted: the manifest no longer matches
cp "$W/s.db" "$W/row.db"
"$PY" - "$W/row.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
snap, region, off = db.execute(
    "SELECT snap, region, off FROM region_chunk ORDER BY snap, region, off DESC LIMIT 1").fetchone()
db.execute("DELETE FROM region_chunk WHERE snap = ? AND region = ? AND off = ?", (snap, region, off))
db.commit()
PYEOF
"$T" snapshot verify "$W/row.db" >"$W/out" 2>"$W/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "CORRUPT" "$W/out" && [ "$(wc -l <"$W/err")" -ge 1 ] ||
    { fail "deleted region_chunk row: exit $rc"; cat "$W/out" "$W/err"; }

# not a snapshot store at all
printf 'not a database' >"$W/junk.db"
"$T" snapshot verify "$W/junk.db" >"$W/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] || { fail "junk file: exit 0"; cat "$W/out"; }

[ "$fails" -eq 0 ] && echo "snapshot verify: all cases as expected"
exit "$fails"
