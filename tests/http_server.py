#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""http_server.py - a small HTTP(S) server for dtrain's download tests.

Serves the files under --root on 127.0.0.1 (or on --bind, an address of
the simulated cluster of tests/cluster/) at a free port (or at --port),
which it prints on stdout (one line, the number alone) once it is
listening. It honours Range requests (one range, "bytes=START-" or
"bytes=START-END") and can misbehave on purpose, chosen per request in
either of two ways:

    /fault/MODE/PATH            /fault/MODE-N/PATH
    /PATH?fault=MODE            /PATH?fault=MODE&n=N&to=/OTHER

MODE is one of:
    404       a 404 answer with an HTML body (missing files get one too)
    500       HTTP 500 (HTML body) for the first N requests (default 1),
              then the file
    drop      the first request gets the headers and half of the body,
              then the connection is cut; later ones are served normally
    wrong     the file with every byte changed (same length)
    redirect  302 to `to` (default: the same PATH without the fault)
    loop      302 to itself, forever
    slow      a quarter of the body, then nothing for `secs` seconds
              (default 30) on the first N requests (default: all)
    norange   ignores Range: always 200 and the whole file
    badrange  answers a Range request with 206 from byte 0
    nolen     the whole file with no Content-Length (the end of the body
              is the end of the connection)
    html200   a 200 answer whose body is an HTML page (a login wall or a
              moved-file notice served in place of the data)

Every file answer carries an ETag (the first 32 hex digits of the
sha256 of the bytes served, quoted), and a Range request whose If-Range
names another ETag gets the whole file with 200 (RFC 9110 13.1.5).

Counts (500 N times, drop once, slow N times) are kept per request target
(path and query), so a test that wants a fresh count adds a unique query
parameter such as &id=NAME.

The server stops by itself after --max-seconds (default 120) and as soon as
the process that started it is gone, so a crashed test leaves nothing
behind. --log FILE appends one line per request: "PATH range=R status=S",
and with --log-client " client=ADDR" after it.
--tls-cert/--tls-key serve HTTPS instead.
"""

import argparse
import hashlib
import http.server
import os
import posixpath
import socket
import ssl
import sys
import threading
import time
import urllib.parse

COUNTS = {}
COUNTS_LOCK = threading.Lock()
LOG_LOCK = threading.Lock()


def bump(key):
    """Returns how many times key was seen before this call."""
    with COUNTS_LOCK:
        n = COUNTS.get(key, 0)
        COUNTS[key] = n + 1
        return n


def html(code, text):
    return ("<!DOCTYPE html>\n<html><head><title>%d %s</title></head>"
            "<body><h1>%d %s</h1><p>This is an error page, not data.</p>"
            "</body></html>\n" % (code, text, code, text)).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "dtrain-test/1"

    def log_message(self, fmt, *args):
        pass

    def note(self, status, rng):
        log = self.server.log_path
        if log is None:
            return
        with LOG_LOCK, open(log, "a") as f:
            client = (" client=%s" % self.client_address[0]
                      if self.server.log_client else "")
            f.write("%s range=%s status=%d%s\n" % (self.path, rng or "-",
                                                   status, client))

    def send_html(self, code, text, rng):
        body = html(code, text)
        self.note(code, rng)
        self.send_response(code, text)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location, rng):
        self.note(302, rng)
        self.send_response(302, "Found")
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def parse_fault(self):
        """(mode, n, to, secs, file path part of the URL)."""
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        path = url.path
        mode, n = None, None
        if path.startswith("/fault/"):
            rest = path[len("/fault/"):]
            spec, _, tail = rest.partition("/")
            path = "/" + tail
            mode, _, count = spec.partition("-")
            if count:
                n = int(count)
        elif "fault" in q:
            mode = q["fault"][0]
            if "n" in q:
                n = int(q["n"][0])
        to = q.get("to", [path])[0]
        secs = float(q.get("secs", ["30"])[0])
        return mode, n, to, secs, path

    def file_of(self, path):
        rel = posixpath.normpath(urllib.parse.unquote(path)).lstrip("/")
        full = os.path.realpath(os.path.join(self.server.root, rel))
        if not full.startswith(self.server.root + os.sep):
            return None
        return full if os.path.isfile(full) else None

    def do_GET(self):
        rng = self.headers.get("Range")
        try:
            mode, n, to, secs, path = self.parse_fault()
        except ValueError:
            self.send_html(400, "Bad Request", rng)
            return
        seen = bump(self.path)

        if mode == "404":
            self.send_html(404, "Not Found", rng)
            return
        if mode == "500" and seen < (n if n is not None else 1):
            self.send_html(500, "Internal Server Error", rng)
            return
        if mode == "html200":
            body = html(200, "Please sign in")
            self.note(200, rng)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode == "redirect":
            self.redirect(to, rng)
            return
        if mode == "loop":
            self.redirect(self.path, rng)
            return

        full = self.file_of(path)
        if full is None:
            self.send_html(404, "Not Found", rng)
            return
        with open(full, "rb") as f:
            data = f.read()
        if mode == "wrong":
            data = bytes(b ^ 0x5A for b in data)

        etag = '"%s"' % hashlib.sha256(data).hexdigest()[:32]
        if_range = self.headers.get("If-Range")
        start, end = 0, len(data)
        status = 200
        if (rng is not None and mode not in ("norange", "nolen") and
                (if_range is None or if_range == etag)):
            try:
                parsed = parse_range(rng, len(data))
            except ValueError:
                self.send_html(400, "Bad Request", rng)
                return
            if parsed is None:
                self.note(416, rng)
                self.send_response(416, "Range Not Satisfiable")
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end = parsed
            if mode == "badrange":
                start = 0
            status = 206

        body = data[start:end]
        self.note(status, rng)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("ETag", etag)
        if mode != "nolen":
            self.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" %
                             (start, end - 1, len(data)))
        self.end_headers()

        if mode == "drop" and seen == 0:
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.cut()
            return
        if mode == "slow" and (n is None or seen < n):
            self.wfile.write(body[:len(body) // 4])
            self.wfile.flush()
            stop = time.monotonic() + secs
            while time.monotonic() < stop:
                time.sleep(0.05)
            self.cut()
            return
        self.wfile.write(body)
        if mode == "nolen":
            self.wfile.flush()
            self.cut()

    def cut(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def parse_range(header, size):
    """(start, end) for "bytes=START-[END]", end exclusive; None when the
    range cannot be satisfied."""
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return 0, size
    first, _, last = spec.strip().partition("-")
    if first == "":
        return 0, size
    start = int(first)
    end = int(last) + 1 if last else size
    if start >= size:
        return None
    return start, min(end, size)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that hang up on purpose (timeouts) are part of the tests.
        pass


def watchdog(max_seconds, parent):
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.2)
    os._exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, default=0,
                    help="listen on this port (default: a free one)")
    ap.add_argument("--max-seconds", type=float, default=120)
    ap.add_argument("--bind", default="127.0.0.1",
                    help="127.0.0.1, or an address in 198.18.0.0/15")
    ap.add_argument("--log")
    ap.add_argument("--log-client", action="store_true")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    args = ap.parse_args()

    parent = os.getppid()
    threading.Thread(target=watchdog, args=(args.max_seconds, parent),
                     daemon=True).start()

    if args.bind != "127.0.0.1" and not args.bind.startswith(("198.18.",
                                                               "198.19.")):
        sys.exit("http_server.py: --bind %s: only 127.0.0.1 or the "
                 "benchmark range 198.18.0.0/15" % args.bind)
    try:
        server = Server((args.bind, args.port), Handler)
    except OSError as e:
        sys.exit("http_server.py: cannot listen on %s:%d: %s"
                 % (args.bind, args.port, e.strerror))
    server.log_client = args.log_client
    server.root = os.path.realpath(args.root)
    server.log_path = args.log
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
