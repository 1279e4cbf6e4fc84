#!/usr/bin/env python3
"""top_term.py: `trnemu top` (neuron-top) in real terminals of 80x24 and
160x40 against a live instance where two programs run (`trnemu run` of
the softmax example, slow enough to outlast the test on an idle machine: one
on VNCs 4-5 executing on VNC 5, one tagged "second" on VNC 9). The
terminal is a tmux pane read back with capture-pane when tmux is
installed, else a pseudo-terminal (pty, sized with TIOCSWINSZ) whose
output a small screen model below replays, noting any auto-wrap or
scroll. Each screen must fit (no line reaching the last column, no more
lines than rows, the title on the first row) and show neuron-top's
sections: the title, NeuronCore utilisation with VNC 5 busy, vCPU, the
memory summary, the memory details tree, and the tab bar. The keys must
work as neuron-top's: 2 and 3 select the processes' tabs (each then shows
only its VNC), a/d step between tabs, x expands the tree (the model and
the categories appear; the arrows scroll to the model row), F switches
to FLOPS, q quits.

No step may hang the test: every tmux command, every wait for a process
and the pty's close have a deadline (then SIGKILL), each size and attempt
has its own tmux server, and a watchdog prints where the test stood
before meson's timeout would kill it silently. A tmux command that does
not answer (the terminal, not trnemu) gets the size one more try with a
fresh server; a trnemu process that SIGTERM does not end fails the test.

Usage: top_term.py TRNEMU EXAMPLES_DIR [--pty]   (--pty: skip tmux)
"""
import faulthandler
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

TRNEMU, EXAMPLES = sys.argv[1], sys.argv[2]
first_pid = 0   # the program on VNCs 4-5
USE_PTY = "--pty" in sys.argv or shutil.which("tmux") is None
STEP_S = 10       # the longest any one command or process wait may take
WATCHDOG_S = 165  # under meson's 180 s: the traceback of a stuck test


stuck = []        # the processes a signal did not end in STEP_S


def kill_by_argv(word):
    """SIGKILL every process whose command line holds word (read from /proc)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if word.encode() in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def reap(pid, what, drain_fd=None):
    """Wait for pid up to STEP_S (reading drain_fd meanwhile, if given: a
    full pty would block its last frame), then SIGKILL it and note it in
    stuck: nothing waits forever, and a process deaf to SIGTERM fails the
    test."""
    deadline = time.monotonic() + STEP_S
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return
        if drain_fd is None:
            time.sleep(0.05)
        elif select.select([drain_fd], [], [], 0.05)[0]:
            try:
                os.read(drain_fd, 65536)
            except OSError:           # the pty closed: its process is ending
                time.sleep(0.05)
    stuck.append(what)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


class Screen:
    """A terminal of w x h cells fed the bytes trnemu top writes: cursor
    home, erase line/below/all, newline, carriage return, printable text
    with auto-wrap; colour and cursor-visibility sequences are ignored.
    wrapped/scrolled say whether the program ever made it wrap or scroll."""

    def __init__(self, w, h):
        self.w, self.h = w, h
        self.rows = [[" "] * w for _ in range(h)]
        self.x = self.y = 0
        self.pending = False       # at the last column: the next character wraps
        self.wrapped = self.scrolled = False
        self.buf = b""

    def _down(self):
        if self.y == self.h - 1:
            self.scrolled = True
            self.rows = self.rows[1:] + [[" "] * self.w]
        else:
            self.y += 1

    def _csi(self, params, final):
        if final == "H":
            nums = [int(p) if p else 1 for p in params.split(";")] if params else [1, 1]
            self.y, self.x = nums[0] - 1, (nums[1] - 1 if len(nums) > 1 else 0)
            self.pending = False
        elif final == "K":
            for i in range(self.x, self.w):
                self.rows[self.y][i] = " "
        elif final == "J":
            if params == "2":
                self.rows = [[" "] * self.w for _ in range(self.h)]
            else:
                for i in range(self.x, self.w):
                    self.rows[self.y][i] = " "
                for r in range(self.y + 1, self.h):
                    self.rows[r] = [" "] * self.w

    def feed(self, data):
        self.buf += data
        text = self.buf.decode("utf-8", "replace")
        self.buf = b""
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\033":
                m = re.match(r"\033\[([?0-9;]*)([@-~])", text[i:])
                if m is None:
                    self.buf = text[i:].encode()
                    return
                self._csi(m.group(1), m.group(2))
                i += len(m.group(0))
                continue
            if c == "\n":
                self._down()
                self.pending = False
            elif c == "\r":
                self.x, self.pending = 0, False
            elif c >= " ":
                if self.pending:
                    self.wrapped = True
                    self.x, self.pending = 0, False
                    self._down()
                self.rows[self.y][self.x] = c
                if self.x == self.w - 1:
                    self.pending = True
                else:
                    self.x += 1
            i += 1

    def text(self):
        return "\n".join("".join(r).rstrip() for r in self.rows).rstrip("\n") + "\n"


class PtyTerm:
    """trnemu top in a pseudo-terminal of w x h."""

    def __init__(self, w, h):
        self.screen = Screen(w, h)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", h, w, 0, 0))
            os.execv(TRNEMU, [TRNEMU, "top"])

    def capture(self):
        while select.select([self.fd], [], [], 0.05)[0]:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                break
            if not data:
                break
            self.screen.feed(data)
        if self.screen.wrapped or self.screen.scrolled:
            raise SystemExit("FAIL: %dx%d: the program made the terminal %s"
                             % (self.screen.w, self.screen.h,
                                "wrap" if self.screen.wrapped else "scroll"))
        return self.screen.text()

    def keys(self, *ks):
        seq = {"Down": "\033[B", "Up": "\033[A", "Left": "\033[D", "Right": "\033[C"}
        for k in ks:
            os.write(self.fd, seq.get(k, k).encode())

    def alive(self):
        self.capture()
        return os.waitpid(self.pid, os.WNOHANG) == (0, 0)

    def close(self):
        """SIGTERM, then reaped (its output read meanwhile) or killed."""
        try:
            os.kill(self.pid, signal.SIGTERM)
            reap(self.pid, "trnemu top", self.fd)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


class TmuxStuck(Exception):
    """A tmux command (the terminal, not trnemu) did not answer in STEP_S."""


class TmuxTerm:
    """trnemu top in a tmux pane of w x h (a server socket of its own for
    each size and attempt)."""

    def __init__(self, w, h, attempt=1):
        self.sock = "trnemu-top-test-%d-%dx%d-%d" % (os.getpid(), w, h, attempt)
        try:
            self.tmux("new-session", "-d", "-s", "top", "-x", str(w), "-y", str(h),
                      TRNEMU + " top")
        except TmuxStuck:
            kill_by_argv(self.sock)              # no close() follows a failed start
            raise

    def tmux(self, *args):
        try:
            return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null"] + list(args),
                                  capture_output=True, text=True, timeout=STEP_S)
        except subprocess.TimeoutExpired:
            raise TmuxStuck("tmux %s did not answer in %d s" % (args[0], STEP_S)) from None

    def capture(self):
        return self.tmux("capture-pane", "-p", "-t", "top").stdout

    def keys(self, *ks):
        for k in ks:
            self.tmux("send-keys", "-t", "top", k)

    def alive(self):
        return self.tmux("has-session", "-t", "top").returncode == 0

    def close(self):
        try:
            self.tmux("kill-server")
        except TmuxStuck as e:     # its server (argv names the socket) and trnemu top go
            sys.stderr.write("top_term: %s; its server killed\n" % e)
            kill_by_argv(self.sock)


def fits(screen, w, h):
    lines = screen.rstrip("\n").split("\n")
    long = [l for l in lines if len(l) >= w]
    assert len(lines) <= h, "%d lines in %d rows" % (len(lines), h)
    assert not long, "a line reaches the last column: %r" % long[0]
    assert "neuron-top " in lines[0] and " running on i-" in lines[0], "no title on row 1"


def wait_for(term, w, h, check, what, tries=80):
    screen = ""
    for _ in range(tries):
        time.sleep(0.15)
        screen = term.capture()
        try:
            fits(screen, w, h)
            check(screen)
            return screen
        except AssertionError as e:
            last = str(e)
    raise SystemExit("FAIL: %dx%d: %s (%s)\n--- screen:\n%s" % (w, h, what, last, screen))


def need(screen, pattern):
    assert re.search(pattern, screen, re.M), "no match for %r" % pattern


def sections(tabs):
    def check(s):
        need(s, r"NeuronCore v3d Utilization \(Avg: [0-9.]+%")
        need(s, r"^ND1 .*\|\[ *[0-9.]+%\]")           # VNC 5 (ND1's NC1) busy
        assert not re.search(r"^ND1 +\[ *[0-9.]+%\] +\[ *0\.00%\]", s, re.M), "VNC 5 idle"
        need(s, r"^vCPU Utilization")
        need(s, r"^System vCPU Usage .*\[ *[0-9.]+%, *[0-9.]+%\]")
        need(s, r"^Runtime vCPU Usage .*\[ *[0-9.]+%, *[0-9.]+%\]")
        need(s, r"^Memory Usage Summary")
        need(s, r"^Host Used Memory +Total: [0-9.]+[KMG]?B")
        need(s, r"^Device Used Memory +Total: [0-9.]+[KMG]B +Tensors: [0-9.]*[1-9]")
        need(s, r"^Memory Usage Details")
        need(s, r"Model ID +Device Memory +Host Memory")
        need(s, r"^\[\+\] ND 1 ")
        need(s, r"^\[\+\] ND 2 ")
        m = re.search(r"^Neuron Apps +>\[1\]:all< +\[([23])\]:(\S+) +\[([23])\]:(\S+)", s, re.M)
        assert m, "no tab bar with the two programs"
        tabs.update({m.group(2): int(m.group(1)), m.group(4): int(m.group(3))})
        assert set(tabs) == {str(first_pid), "second"}, "tabs %r" % tabs
    return check


def tab(n, label, mine):
    def check(s):
        need(s, r"^Neuron Apps .*>\[%d\]:%s<" % (n, label))
        if mine:     # only the first program's VNCs: ND1, no ND2
            need(s, r"^ND1 ")
            assert not re.search(r"^ND2 ", s, re.M), "tab 2 shows ND2"
            need(s, r"^\[\+\] ND 1 ")
            assert not re.search(r"ND 2", s), "tab 2's tree shows ND 2"
        else:
            need(s, r"^ND2 .*\|\[ *[0-9.]+%\]")
            assert not re.search(r"^ND1 ", s, re.M), "tab 3 shows ND1"
    return check


def expanded(s):
    need(s, r"^\[-\] ND 1 ")
    need(s, r"^    \[-\] NC 0 \(VNC 4\) ")
    need(s, r"^            Model Scratchpad ")


def model_row(s):
    need(s, r"^        \[-\] softmax +[0-9]+ +[0-9.]+[KMG]?B +[0-9.]*[1-9][0-9.]*[KMG]?B")
    need(s, r"^                Model Code +0\.0B +[0-9.]*[1-9]")


def flops(s):
    need(s, r"NeuronCore v3d FLOPS \(Total: ")
    need(s, r"^ND1 .*\[ *0\.0 F\]")


def watchdog(sig, frame):
    """Where the test stands, then a failure that still runs the cleanups
    (the busy `trnemu run`s must not outlive the test)."""
    faulthandler.dump_traceback()
    raise SystemExit("FAIL: %s after %s s (traceback above)"
                     % ("still running" if sig == signal.SIGALRM else "SIGTERM",
                        WATCHDOG_S if sig == signal.SIGALRM else "meson's timeout"))


def run_size(w, h, attempt):
    term = PtyTerm(w, h) if USE_PTY else TmuxTerm(w, h, attempt)
    try:
        tabs = {}
        wait_for(term, w, h, sections(tabs), "every section")
        mine, other = tabs[str(first_pid)], tabs["second"]
        term.keys(str(other))
        wait_for(term, w, h, tab(other, "second", False), "key %d: the second's tab" % other)
        term.keys(str(mine))
        wait_for(term, w, h, tab(mine, str(first_pid), True), "key %d: the first's tab" % mine)
        step, back = ("d", "a") if mine == 2 else ("a", "d")
        term.keys(step)
        wait_for(term, w, h, tab(other, "second", False), "key %s: the next tab" % step)
        term.keys(back)
        wait_for(term, w, h, tab(mine, str(first_pid), True), "key %s: back" % back)
        term.keys("x")
        wait_for(term, w, h, expanded, "key x: the whole tree open")
        term.keys(*(["Down"] * 11))
        wait_for(term, w, h, model_row, "arrows: the model row of VNC 5")
        term.keys("F")
        wait_for(term, w, h, flops, "key F: FLOPS")
        term.keys("q")
        for _ in range(40):
            if not term.alive():
                break
            time.sleep(0.1)
        else:
            raise SystemExit("FAIL: %dx%d: q did not end trnemu top" % (w, h))
    finally:
        term.close()


def main():
    signal.signal(signal.SIGALRM, watchdog)
    signal.signal(signal.SIGTERM, watchdog)    # meson's timeout: still clean up
    signal.alarm(WATCHDOG_S)
    out = tempfile.mkdtemp()
    env = dict(os.environ)
    env["NEURON_RT_VISIBLE_CORES"] = "4-5"
    env.pop("NEURON_PROCESS_TAG", None)
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = [subprocess.Popen([TRNEMU, "run", os.path.join(EXAMPLES, "softmax.neff"), "--repeat",
                              "1000000", "--vnc", "1", "--output-dir", out], env=env, **quiet)]
    env2 = dict(env, NEURON_RT_VISIBLE_CORES="9", NEURON_PROCESS_TAG="second")
    work.append(subprocess.Popen([TRNEMU, "run", os.path.join(EXAMPLES, "softmax.neff"), "--repeat",
                                  "1000000", "--output-dir", out], env=env2, **quiet))
    try:
        time.sleep(0.5)
        global first_pid
        first_pid = work[0].pid
        for w, h in ((80, 24), (160, 40)):
            try:
                run_size(w, h, 1)
            except TmuxStuck as e:      # the terminal, not trnemu top: once more, a fresh server
                sys.stderr.write("top_term: %dx%d: %s; again with a new tmux server\n" % (w, h, e))
                try:
                    run_size(w, h, 2)
                except TmuxStuck as e2:
                    raise SystemExit("FAIL: %dx%d: %s twice" % (w, h, e2))
    finally:
        for p in work:
            p.terminate()
            reap(p.pid, "trnemu run %d" % p.pid)
            p.returncode = -signal.SIGTERM   # reaped above: Popen must not wait again
        shutil.rmtree(out, ignore_errors=True)
    if stuck:
        raise SystemExit("FAIL: SIGTERM did not end %s in %d s" % (", ".join(stuck), STEP_S))
    print("trnemu top in %s at 80x24 and 160x40: ok" % ("a pty" if USE_PTY else "tmux"))


if __name__ == "__main__":
    main()
