#!/usr/bin/env python3
"""boot_fake_root.py PORT: a stand-in for rank 0's bootstrap endpoint
(docs/nodes.md) that closes the first connection without an answer, as
rank 0 does with a connection it drops, and answers the next one's hello
with a failure ("fake root: second connection"), so that the rank ends
at once. Prints how many connections came: a rank that retries after the
drop makes two."""
import socket
import struct
import sys

MAGIC = 0x3142454E
HELLO = 256


def read_hello(conn):
    got = b""
    while len(got) < HELLO:
        part = conn.recv(HELLO - len(got))
        if not part:
            return None
        got += part
    return got


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", int(sys.argv[1])))
    srv.listen(4)
    srv.settimeout(60)
    first, _ = srv.accept()
    first.close()  # dropped without an answer
    conn, _ = srv.accept()
    hello = read_hello(conn)
    world = struct.unpack_from("<I", hello, 72)[0] if hello else 0
    why = b"fake root: second connection".ljust(112, b"\0")
    conn.sendall(struct.pack("<IiII", MAGIC, 2, world, 0xFFFFFFFF) + why)  # 2: NRT_INVALID
    conn.close()
    print("boot_fake_root: 2 connections")


if __name__ == "__main__":
    main()
