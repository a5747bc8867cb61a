"""Measures connections to the proxy world's servers (tests/proxy_world.py), directly or through
the call's proxy: run once outside a sandbox (`direct`) and once inside one (`proxy`), in the same
world, so the two numbers are measured side by side.

    python3 proxy_measure.py direct|proxy CONNECTS BYTES

Prints one JSON object: median and p90 of open-to-first-byte over CONNECTS connections, and the
throughput of reading BYTES bytes from the world's source server.
"""

import json
import socket
import statistics
import sys
import time

mode, connects, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
PROXY = ("127.0.0.1", 3128)


def open_to(port):
    """A connection to 192.0.2.1:port, directly or as a CONNECT tunnel through the proxy."""
    if mode == "direct":
        return socket.create_connection(("192.0.2.1", port))
    s = socket.create_connection(PROXY)
    s.sendall(f"CONNECT 192.0.2.1:{port} HTTP/1.1\r\nHost: 192.0.2.1:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            raise SystemExit(f"the proxy closed: {head!r}")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"refused: {head!r}")
    return s


latencies = []
for _ in range(connects):
    start = time.perf_counter()
    s = open_to(5432)  # says "pg-ok" at once
    s.recv(6)
    latencies.append(time.perf_counter() - start)
    s.close()

s = open_to(9001)
start = time.perf_counter()
s.sendall(f"{size}\n".encode())
got = 0
buffer = bytearray(1 << 16)
while got < size:
    n = s.recv_into(buffer)
    if not n:
        break
    got += n
elapsed = time.perf_counter() - start
latencies.sort()
print(json.dumps({
    "mode": mode,
    "connect_median_us": statistics.median(latencies) * 1e6,
    "connect_p90_us": latencies[int(len(latencies) * 0.9)] * 1e6,
    "bytes": got,
    "seconds": elapsed,
    "mib_per_s": got / elapsed / (1 << 20),
}))
