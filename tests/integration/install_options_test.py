"""install_options_test.py SOURCE_ROOT: what a user's install builds. A
fresh `meson setup -Dinstalled_only=true` (configured only, not built)
defines no target nor test of tests/, bench/ or examples/; a plain setup
does not treat warnings as errors, while the Makefile's builds do
(-Dwerror=true)."""
import json
import os
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])


def setup(tmp, *opts):
    d = os.path.join(tmp, "b")
    p = subprocess.run(["meson", "setup", d, SRC] + list(opts), capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return d


def introspect(d, what):
    p = subprocess.run(["meson", "introspect", d, "--" + what], capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = setup(tmp, "-Dinstalled_only=true")
        targets = introspect(d, "targets")
        assert targets, "no targets"
        for t in targets:
            top = os.path.relpath(t["defined_in"], SRC).split(os.sep)[0]
            assert top not in ("tests", "bench", "examples"), (t["name"], t["defined_in"])
        opts = {o["name"]: o["value"] for o in introspect(d, "buildoptions")}
        assert opts["werror"] is False, "a plain meson setup treats warnings as errors"
        assert not introspect(d, "tests"), "tests defined under installed_only"
    with open(os.path.join(SRC, "Makefile")) as f:
        mk = f.read()
    assert "-Dwerror=true" in mk and mk.count("$(MESON_DEV)") >= 4, "Makefile builds lack werror"
    print("install options: ok")


if __name__ == "__main__":
    main()
