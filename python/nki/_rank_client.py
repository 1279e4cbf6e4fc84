"""_rank_client.py: what `trnemu launch` starts for each rank of a job
whose ranks are forked from a zygote (_zygote.py).

    python3 _rank_client.py ZYGOTE_SOCKET JOB_FOLDER

Run by its path, with the standard library only (no nki, no NumPy), so it
starts in milliseconds. It gives the zygote this process's environment
(RANK, WORLD_SIZE and the VNC the launcher chose), working folder,
standard streams and one end of a pipe whose closing ends the rank; the
zygote forks the rank from its imports. The client passes SIGTERM and
SIGINT on to the rank and exits with its status. When the zygote cannot
be reached, it runs the rank itself (`python3 -m nki._ranks JOB_FOLDER`).
"""
import json
import os
import signal
import socket
import struct
import sys


def _recv_exact(sock, n):
    """n bytes from sock, or None when it closes first."""
    got = b""
    while len(got) < n:
        part = sock.recv(n - len(got))
        if not part:
            return None
        got += part
    return got


def _recv_msg(sock):
    """One length-prefixed JSON message from the zygote, or None."""
    head = _recv_exact(sock, 4)
    body = _recv_exact(sock, struct.unpack("<I", head)[0]) if head is not None else None
    return json.loads(body) if body is not None else None


def _fresh(folder):
    os.execv(sys.executable, [sys.executable, "-m", "nki._ranks", folder])


def main(address, folder):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address)
    except OSError:
        sock.close()
        _fresh(folder)
    life_r, life_w = os.pipe()          # the rank dies when life_w closes (with this process)
    request = json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "folder": folder}).encode()
    try:
        socket.send_fds(sock, [struct.pack("<I", len(request)) + request], [0, 1, 2, life_r])
    except OSError:
        sock.close()
        _fresh(folder)
    os.close(life_r)
    started = _recv_msg(sock)
    if started is None:
        sys.stderr.write("nki rank %s: the zygote did not start the rank\n" % os.environ.get("RANK"))
        return 1
    pid = started["pid"]

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    ended = _recv_msg(sock)
    if ended is None:                   # the zygote is gone: so is the rank
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        sys.stderr.write("nki rank %s: the zygote ended before the rank did\n" % os.environ.get("RANK"))
        return 1
    code = ended["status"]
    if code < 0:                        # killed by a signal: end the same way
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
