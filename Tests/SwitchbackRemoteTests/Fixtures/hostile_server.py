#!/usr/bin/env python3
"""A small, deliberately badly behaved HTTP server for the SwitchbackRemote tests.

Binds 127.0.0.1 on a free port, prints the port alone on the first line of stdout, and
serves until killed or until --lifetime seconds pass (whichever comes first). Standard
library only. Every loop is bounded in count and in time.

Paths:
  /hang                 read the request, never answer (until the client leaves or 60 s)
  /drip                 200 with Content-Length 100, then one byte per second
  /status/<code>        answer <code> with a tiny body (500, 404, ...)
  /big                  200 with Content-Length 50 MB, streamed in 64 KiB chunks
  /big-unannounced      200 without Content-Length, 50 MB streamed, then close
  /loop/a, /loop/b      302 to each other: a redirect loop
  /slowloop/a, /b       the same loop, 10 ms per hop
  /chain/<n>            302 to /chain/<n-1>; /chain/0 serves /files/directive.json
  /redirect?to=<url>    302 to <url>
  /files/<name>         serve <root>/<name> with ETag and Last-Modified; 304 on a match
  /gzip-bomb            200, Content-Encoding: gzip, Content-Length: ~10 KB that inflates to
                        10 MB of zeros (whatever Accept-Encoding the client sent)
  /gzip-bomb-stream     200, Content-Encoding: gzip, chunked: 1 GB of zeros gzipped on the fly
  /endless-chunked      200, Transfer-Encoding: chunked, 64 KiB chunks for ever (bounded by
                        MAX_STREAM_SECONDS and the client leaving)
  /huge-headers          200 with 100 headers of 1000 bytes each (100 KB of headers), then a body
  /not-modified-forever/<name>
                        304 to any request that carries If-None-Match or If-Modified-Since,
                        else <root>/<name> with ETag and Last-Modified (a frozen mirror)
"""

import argparse
import gzip
import zlib
import hashlib
import os
import signal
import sys
import threading
import time
import urllib.parse
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIG_SIZE = 50 * 1024 * 1024
CHUNK = 64 * 1024
MAX_HANG_SECONDS = 60
MAX_DRIP_BYTES = 100
MAX_STREAM_SECONDS = 30
BOMB_SIZE = 10 * 1024 * 1024
BOMB_STREAM_SIZE = 1024 * 1024 * 1024
_bomb = None


def gzip_bomb():
    """10 MB of zeros, gzipped (about 10 KB): made once, before the port is announced, so
    that serving it costs no time on a loaded machine (a test's deadline is about the client)."""
    global _bomb
    if _bomb is None:
        _bomb = gzip.compress(b"\0" * BOMB_SIZE, compresslevel=9)
    return _bomb


class Handler(BaseHTTPRequestHandler):
    server_version = "hostile/1"
    timeout = 30  # seconds to wait for a client's request bytes

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_GET(self):
        parsed = urllib.parse.urlsplit(self.path)
        path = parsed.path
        if path == "/hang":
            return self.hang()
        if path == "/drip":
            return self.drip()
        if path.startswith("/status/"):
            return self.status(int(path.rsplit("/", 1)[1]))
        if path == "/big":
            return self.big(announced=True)
        if path == "/big-unannounced":
            return self.big(announced=False)
        if path == "/loop/a":
            return self.redirect("/loop/b")
        if path == "/loop/b":
            return self.redirect("/loop/a")
        if path in ("/slowloop/a", "/slowloop/b"):
            time.sleep(0.01)
            return self.redirect("/slowloop/b" if path.endswith("a") else "/slowloop/a")
        if path.startswith("/chain/"):
            n = int(path.rsplit("/", 1)[1])
            return self.redirect("/files/directive.json" if n <= 0 else "/chain/%d" % (n - 1))
        if path == "/redirect":
            target = urllib.parse.parse_qs(parsed.query).get("to", ["/"])[0]
            return self.redirect(target)
        if path.startswith("/files/"):
            return self.file(path[len("/files/"):])
        if path == "/gzip-bomb":
            return self.bomb()
        if path == "/gzip-bomb-stream":
            return self.bomb_stream()
        if path == "/endless-chunked":
            return self.endless_chunked()
        if path == "/huge-headers":
            self.send_response(200)
            for i in range(100):
                self.send_header("X-Filler-%d" % i, "y" * 1000)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            return
        if path.startswith("/not-modified-forever/"):
            if self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"):
                self.send_response(304)
                self.send_header("ETag", '"frozen"')
                self.end_headers()
                return
            return self.file(path[len("/not-modified-forever/"):])
        return self.status(404)

    def hang(self):
        deadline = time.monotonic() + MAX_HANG_SECONDS
        while time.monotonic() < deadline:
            time.sleep(0.1)

    def drip(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(MAX_DRIP_BYTES))
        self.end_headers()
        try:
            for _ in range(MAX_DRIP_BYTES):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass

    def status(self, code):
        body = ("status %d\n" % code).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def big(self, announced):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if announced:
            self.send_header("Content-Length", str(BIG_SIZE))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        chunk = b"x" * CHUNK
        try:
            for _ in range(BIG_SIZE // CHUNK):
                self.wfile.write(chunk)
        except OSError:
            pass

    def bomb(self):
        body = gzip_bomb()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")

    def bomb_stream(self):
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
        zeros = b"\0" * (1024 * 1024)
        deadline = time.monotonic() + MAX_STREAM_SECONDS
        try:
            for _ in range(BOMB_STREAM_SIZE // len(zeros)):
                if time.monotonic() > deadline:
                    break
                piece = compressor.compress(zeros)
                if piece:
                    self.write_chunk(piece)
            self.write_chunk(compressor.flush())
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
        self.close_connection = True

    def endless_chunked(self):
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"x" * CHUNK
        deadline = time.monotonic() + MAX_STREAM_SECONDS
        try:
            while time.monotonic() < deadline:
                self.write_chunk(chunk)
        except OSError:
            pass
        self.close_connection = True

    def redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def file(self, name):
        root = self.server.root
        if root is None or "/" in name or name.startswith("."):
            return self.status(404)
        full = os.path.join(root, name)
        try:
            with open(full, "rb") as f:
                data = f.read()
            mtime = os.stat(full).st_mtime
        except OSError:
            return self.status(404)
        etag = '"%s"' % hashlib.sha256(data).hexdigest()[:16]
        last_modified = formatdate(mtime, usegmt=True)
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", last_modified)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", last_modified)
        self.end_headers()
        self.wfile.write(data)


def main():
    # A parent that spawned us from a thread with signals blocked (Foundation's Process does)
    # passes that mask on; unblock so SIGTERM and SIGINT work as expected.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(signal.Signals))
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=None, help="directory served under /files/")
    parser.add_argument("--lifetime", type=float, default=120.0, help="exit after this many seconds")
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.root = args.root

    def expire():
        time.sleep(args.lifetime)
        os._exit(0)

    threading.Thread(target=expire, daemon=True).start()
    gzip_bomb()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
