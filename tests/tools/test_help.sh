#!/bin/sh
# test_help.sh TRNEMU: every command of the trnemu program, and the vendor
# names it answers to (neuron-ls, neuron-top, neuron-monitor), answer -h
# and --help with their usage on stdout and exit status 0, without running
# anything; `trnemu help` lists every command and `trnemu help CMD` prints
# the same usage as `CMD --help`.
set -u
TRNEMU=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cmds="ls monitor top run exec profile asm disasm launch snapshot replay"
for c in $cmds; do
    for flag in --help -h; do
        out=$("$TRNEMU" "$c" "$flag" 2>"$tmp/err") || bad "trnemu $c $flag: exit $?"
        case $out in *"usage: trnemu $c"*) ;; *) bad "trnemu $c $flag: no usage: $out";; esac
        [ -s "$tmp/err" ] && bad "trnemu $c $flag wrote to stderr: $(cat "$tmp/err")"
    done
    "$TRNEMU" help | grep -q "^  $c " || bad "trnemu help does not list $c"
    [ "$("$TRNEMU" help "$c")" = "$("$TRNEMU" "$c" --help)" ] || bad "trnemu help $c differs"
done
# After other options too, and not run as a program or a file.
"$TRNEMU" launch -n 2 --help | grep -q "usage: trnemu launch" || bad "launch -n 2 --help"
"$TRNEMU" launch --help | grep -q -- "--nodes" || bad "launch --help omits --nodes"
"$TRNEMU" snapshot --help | grep -q "snapshot verify" || bad "snapshot --help omits verify"
"$TRNEMU" replay --help | grep -q -- "--lib" || bad "replay --help omits --lib"
"$TRNEMU" snapshot list --help | grep -q "usage: trnemu snapshot" || bad "snapshot list --help"
# exec: options after the program are the program's.
out=$("$TRNEMU" exec -- sh -c 'echo ran "$0"' --help) || bad "exec -- sh --help: exit $?"
[ "$out" = "ran --help" ] || bad "exec -- CMD --help did not run CMD: $out"
# The vendor names: a link named neuron-X acts as trnemu X.
for v in ls top monitor; do
    ln -s "$(readlink -f "$TRNEMU")" "$tmp/neuron-$v"
    for flag in --help -h; do
        out=$("$tmp/neuron-$v" "$flag" 2>&1) || bad "neuron-$v $flag: exit $?"
        case $out in *"usage: trnemu $v"*) ;; *) bad "neuron-$v $flag: $out";; esac
    done
done
# An unknown option is still a usage error (exit 2) that points to --help.
for c in ls monitor top run asm disasm launch replay profile; do
    "$TRNEMU" "$c" --no-such-option >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || bad "trnemu $c --no-such-option: exit $rc"
    grep -q -- "--help" "$tmp/err" || bad "trnemu $c: the error does not point to --help"
done
[ $fail -eq 0 ] && echo "every command answers --help: ok"
exit $fail
