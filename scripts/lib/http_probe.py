"""One HTTP request on a new loopback connection, and what it ended in: the part that
http-poller.py and live-switch.py share (and Tests/EndToEndTests/Support/HTTPPoller*.swift
does the same in Swift). Python 3 standard library only.

    kind, detail = request(port, "/", timeout=2.0)
    kind, detail = request(port, "/notes", 2.0, method="POST", body=b"text", ok=(201,))

kind is one of KINDS: "ok" (a whole HTTP 200, or a status of `ok`; detail is the body as text), "refused"
(ECONNREFUSED), "reset" (ECONNRESET, EPIPE, or end-of-file before a whole response),
"timed_out" (connecting, sending or receiving outlived `timeout`, which bounds the whole
request), "http_error" (a whole response that is not 200; detail is the status) or "other"
(any other socket error, or bytes that are not HTTP; detail says which).
"""
import re, socket, time

KINDS = ("ok", "refused", "reset", "timed_out", "http_error", "other")

def request(port, path, timeout, method="GET", body=b"", ok=(200,)):
    """`method` with `body` (POST: Content-Length sent); `ok`, the statuses that are "ok"."""
    deadline = time.monotonic() + timeout
    length = f"Content-Length: {len(body)}\r\n" if method != "GET" else ""
    message = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{length}Connection: close\r\n\r\n".encode() + body
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(("127.0.0.1", port))
        s.sendall(message)
        data = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timed_out", None
            s.settimeout(remaining)
            chunk = s.recv(16384)
            data += chunk
            state, status, body = parse(data, at_eof=not chunk)
            if state == "complete":
                if status in ok:
                    return "ok", body.decode("utf-8", "replace")
                return "http_error", status
            if state == "malformed":
                return "other", body
            if not chunk:
                return "reset", None
    except ConnectionRefusedError:
        return "refused", None
    except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
        return "reset", None
    except TimeoutError:  # socket.timeout is TimeoutError since 3.10
        return "timed_out", None
    except OSError as error:
        return "other", f"{error.strerror or error} (errno {error.errno})"
    finally:
        s.close()

def parse(data, at_eof):
    """("incomplete"|"complete"|"malformed", status, body or reason): just enough HTTP/1.1 to
    know when a response is whole (Content-Length, chunked, or up to end-of-file)."""
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        if len(data) >= 5 and not data.startswith(b"HTTP/"):
            return "malformed", None, "not an HTTP response"
        return "incomplete", None, None
    lines = data[:head_end].decode("latin-1").split("\r\n")
    words = lines[0].split(" ", 2)
    if len(words) < 2 or not words[0].startswith("HTTP/") or not words[1].isdigit():
        return "malformed", None, f"status line {lines[0][:80]}"
    status = int(words[1])
    length, chunked = None, False
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            continue
        name, value = name.strip().lower(), value.strip()
        if name == "content-length" and value.isdigit():
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    body = data[head_end + 4:]
    if 100 <= status < 200 or status in (204, 304):
        return "complete", status, b""
    if chunked:
        return dechunk(body, status)
    if length is not None:
        return ("complete", status, body[:length]) if len(body) >= length else ("incomplete", None, None)
    return ("complete", status, body) if at_eof else ("incomplete", None, None)

def dechunk(rest, status):
    body = b""
    while True:
        end = rest.find(b"\r\n")
        if end < 0:
            return "incomplete", None, None
        size_text = rest[:end].split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return "malformed", None, f"chunk size {size_text[:20]!r}"
        rest = rest[end + 2:]
        if size == 0:
            return "complete", status, body  # trailers are not waited for
        if len(rest) < size + 2:
            return "incomplete", None, None
        body, rest = body + rest[:size], rest[size + 2:]

def version_key(body):
    """The word after the first "version" ("version 1.2.0 slot current pid 123" gives
    "1.2.0"), or else the body's first line cut to 80 characters."""
    words = body.split()
    if "version" in words:
        index = words.index("version")
        if index + 1 < len(words):
            return words[index + 1]
    return re.split(r"[\r\n]", body, maxsplit=1)[0][:80]

def has_version(body, version):
    """True when the body names `version` as a whole word after "version": "version 1.2"
    does not match a body saying "version 1.2.0"."""
    return re.search(r"(?<!\S)version\s+" + re.escape(version) + r"(?!\S)", body) is not None
