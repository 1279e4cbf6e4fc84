#!/usr/bin/env python3
"""boot_flood.py HOST PORT SECONDS: a hostile neighbour of a bootstrap
endpoint (docs/security.md). Keeps 1,000 silent TCP connections open to
HOST:PORT (opening new ones as the endpoint drops them) and one more that
sends a byte a second, for SECONDS or until terminated (SIGTERM). Prints
how many connections it opened and how many the endpoint dropped."""
import errno
import resource
import signal
import socket
import sys
import time

HOLD = 1000


def top_up(held, host, port, count):
    """Open silent connections until HOLD are held (or one is refused)."""
    while len(held) < HOLD:
        s = socket.socket()
        s.setblocking(False)
        if s.connect_ex((host, port)) not in (0, errno.EINPROGRESS):
            s.close()
            return
        held.append(s)
        count["opened"] += 1


def forget_closed(held, count):
    """The connections still open; the ones the endpoint closed counted."""
    alive = []
    for s in held:
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                raise ConnectionResetError
        except BlockingIOError:
            alive.append(s)
            continue
        except OSError:
            pass
        s.close()
        count["dropped"] += 1
    return alive


def flood(host, port, end, count):
    held, slow, last_byte = [], None, 0.0
    while time.monotonic() < end:
        top_up(held, host, port, count)
        held = forget_closed(held, count)
        if time.monotonic() - last_byte >= 1.0:  # the slow sender
            last_byte = time.monotonic()
            try:
                if slow is None:
                    slow = socket.create_connection((host, port), timeout=1)
                slow.send(b"\x00")
            except OSError:
                if slow is not None:
                    slow.close()
                slow = None
        count["held_max"] = max(count["held_max"], len(held))
        time.sleep(0.01)


def stop(signum, frame):
    raise KeyboardInterrupt


def main():
    host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < HOLD + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(HOLD + 64, hard), hard))
    signal.signal(signal.SIGTERM, stop)
    count = {"opened": 0, "dropped": 0, "held_max": 0}
    try:
        flood(host, port, time.monotonic() + seconds, count)
    except KeyboardInterrupt:
        pass
    print(f"boot_flood: opened {count['opened']} connections, held up to {count['held_max']} "
          f"at once, {count['dropped']} dropped by the endpoint")


if __name__ == "__main__":
    main()
