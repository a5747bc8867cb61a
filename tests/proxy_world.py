"""A small internet of the tests' own, for the proxy's tests and benchmark.

Run inside a user and network namespace of its own (`unshare -Urn python3 proxy_world.py DIR --
COMMAND...`): it brings loopback up, gives it addresses of hosts the tests name, starts servers on
them, runs COMMAND (lnk, usually) with the caller's standard streams as an ordinary user (uid
1234, no capabilities), and exits with its code.

Hosts (all on this namespace's loopback, none reachable from a sandbox's own namespace):

| address | port | what |
|---|---|---|
| 192.0.2.1 | 80 | HTTP: files from DIR/www ("allowed" host) |
| 192.0.2.1 | 443 | HTTPS: the same files, with DIR/cert.pem (made here by openssl) |
| 192.0.2.1 | 5432 | TCP: says "pg-ok", then echoes a line |
| 192.0.2.1 | 8081 | HTTP: the same files as on 80 (a listed host on another port) |
| 192.0.2.1, 198.51.100.7 | 3128 | TCP: says "door-bypassed" (the proxy's port number elsewhere) |
| 198.51.100.7 | 80 | HTTP: "unlisted" host |
| 2001:db8::1 | 80 | HTTP over IPv6 |
| 127.0.0.1 | 80, 8080 | HTTP: "the harness's own server" |
| 192.0.2.1 | 53/udp | answers any datagram (a DNS covert channel would need it) |
| 192.0.2.1 | 9000 | TCP sink: reads and counts bytes, for the benchmark |
| 192.0.2.1 | 9001 | TCP source: sends N bytes (first line of the request), for the benchmark |
| 192.0.2.3 | 80 | raw recorder: answers with every byte its connection got, and keeps them in DIR/recorded/N |
"""

import http.server
import os
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import threading

DIR = sys.argv[1]
COMMAND = sys.argv[sys.argv.index("--") + 1 :]
WWW = os.path.join(DIR, "www")
os.makedirs(WWW, exist_ok=True)


def ip(*args):
    tool = shutil.which("ip") or next(p for p in ("/usr/sbin/ip", "/sbin/ip", "/bin/ip") if os.path.exists(p))
    subprocess.run([tool, *args], check=True)


ip("link", "set", "lo", "up")
# A narrow range of automatic ports in this namespace (WORLD_PORT_RANGE="40000 40999"), so a test
# can show in seconds what a program would otherwise need minutes to use up.
if os.environ.get("WORLD_PORT_RANGE"):
    with open("/proc/sys/net/ipv4/ip_local_port_range", "w") as f:
        f.write(os.environ["WORLD_PORT_RANGE"])
for address in ("192.0.2.1/32", "192.0.2.3/32", "198.51.100.7/32"):
    ip("addr", "add", address, "dev", "lo")
ip("-6", "addr", "add", "2001:db8::1/128", "dev", "lo", "nodad")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=WWW, **k)

    def log_message(self, *a):
        pass


class Named(http.server.BaseHTTPRequestHandler):
    name = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.name)))
        self.end_headers()
        self.wfile.write(self.name)

    def log_message(self, *a):
        pass


def named(text):
    return type("NamedHandler", (Named,), {"name": text.encode()})


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Server6(Server):
    address_family = socket.AF_INET6


def http_server(address, port, handler, family=socket.AF_INET, tls=False):
    cls = Server6 if family == socket.AF_INET6 else Server
    server = cls((address, port), handler)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(DIR, "cert.pem"), os.path.join(DIR, "key.pem"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def tcp_server(address, port, handle):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, port))
    listener.listen(64)

    def accept():
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def pg(conn):
    with conn:
        conn.sendall(b"pg-ok\n")
        line = conn.makefile("rb").readline()
        conn.sendall(b"echo:" + line)


def bypassed(conn):
    with conn:
        conn.sendall(b"door-bypassed\n")


def sink(conn):
    with conn:
        total = 0
        while True:
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            total += len(chunk)
        conn.sendall(str(total).encode())


def source(conn):
    with conn:
        n = int(conn.makefile("rb").readline())
        block = b"x" * (1 << 16)
        while n > 0:
            conn.sendall(block[: min(n, len(block))])
            n -= len(block)


RECORDED = os.path.join(DIR, "recorded")
recorded_count = iter(range(1 << 30))
recorded_lock = threading.Lock()


def recorder(conn):
    """What the proxy sent upstream, byte for byte: everything this connection receives until the
    head's end and a second more (or its end) is written to DIR/recorded/N as it comes,
    then sent back as the body of a 200."""
    with recorded_lock:
        os.makedirs(RECORDED, exist_ok=True)
        n = next(recorded_count)
    got = b""
    with conn, open(os.path.join(RECORDED, str(n)), "wb") as keep:
        conn.settimeout(10)
        try:
            while True:
                if b"\r\n\r\n" in got:
                    conn.settimeout(1.0)
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                got += chunk
                keep.write(chunk)
                keep.flush()
        except OSError:
            pass
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(got) + got)
        except OSError:
            pass


def udp_echo():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("192.0.2.1", 53))
    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(b"udp:" + data, peer)


subprocess.run(
    ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=allowed.test",
     "-addext", "subjectAltName=DNS:allowed.test",
     "-keyout", os.path.join(DIR, "key.pem"), "-out", os.path.join(DIR, "cert.pem")],
    check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
http_server("192.0.2.1", 80, Quiet)
http_server("192.0.2.1", 443, Quiet, tls=True)
http_server("192.0.2.1", 8081, Quiet)
http_server("198.51.100.7", 80, named("unlisted-host\n"))
http_server("2001:db8::1", 80, named("ipv6-host\n"), family=socket.AF_INET6)
http_server("127.0.0.1", 80, named("harness-secret\n"))
http_server("127.0.0.1", 8080, named("harness-secret\n"))
tcp_server("192.0.2.1", 5432, pg)
tcp_server("192.0.2.1", 3128, bypassed)
tcp_server("198.51.100.7", 3128, bypassed)
tcp_server("192.0.2.1", 9000, sink)
tcp_server("192.0.2.1", 9001, source)
tcp_server("192.0.2.3", 80, recorder)
threading.Thread(target=udp_echo, daemon=True).start()

sys.stdout.flush()
# The command runs as an ordinary user: uid 1234 in a user namespace of its own, without any
# capability, as lnk would run for a harness that is not root (this world's root owns the network).
# With WORLD_AS_ROOT=1 it runs as this world's root instead (lnk run by root, with capabilities).
drop = [] if os.environ.get("WORLD_AS_ROOT") == "1" else ["unshare", "-U", "--map-user=1234", "--map-group=1234", "--"]
result = subprocess.run([*drop, *COMMAND])
sys.exit(result.returncode)
