"""A TCP relay that holds every chunk a fixed time each way: a server on another machine,
for measuring what a round trip costs (the PostgreSQL figures in BENCHMARKS.md).

    python3 benches/delay_relay.py LISTEN_PORT TARGET_PORT DELAY_SECONDS

Loopback only. One thread per direction of each connection, so the bytes keep their order;
a chunk read while the one before it waits is held from when it was read.
"""

import socket
import sys
import threading
import time


def pump(src, dst, delay):
    try:
        while True:
            data = src.recv(65536)
            due = time.perf_counter() + delay
            if not data:
                break
            while (left := due - time.perf_counter()) > 0:
                time.sleep(left)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    listen_port, target_port, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(256)
    while True:
        client, _ = server.accept()
        upstream = socket.create_connection(("127.0.0.1", target_port))
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump, args=(client, upstream, delay), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client, delay), daemon=True).start()


if __name__ == "__main__":
    main()
