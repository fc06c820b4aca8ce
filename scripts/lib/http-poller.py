#!/usr/bin/env python3
"""OVERVIEW: What clients of a loopback HTTP server saw while it ran: for shell scripts and
benchmarks that switch the server and must show nobody noticed (the Swift tests use
Tests/EndToEndTests/Support/HTTPPoller.swift, which counts the same way).

USAGE: http-poller.py --port P [--path /] [--interval-ms 5] [--max-seconds 60] [--max-requests 20000] [--timeout-ms 2000] [--slow-every K --slow-ms M]

Sends GET <path> to 127.0.0.1:<port> every --interval-ms, each on a new connection, until
SIGTERM or SIGINT, --max-seconds or --max-requests; then prints one JSON line on stdout and
exits 0:

  {"requests":N,"ok":N,"refused":N,"reset":N,"timed_out":N,"http_errors":N,"other":N,
   "versions_seen":["1.0.0","1.1.0"],"failures":[{"at_ms":12.3,"took_ms":0.1,"kind":"refused"},...],
   "slow":{"requests":N,"ok":N,"failed":N,"unfinished":N},
   "ended_by":"signal|max_seconds|max_requests","elapsed_ms":X,"start_monotonic_ns":T}

ok is an HTTP 200; refused is ECONNREFUSED; reset is ECONNRESET, EPIPE or end-of-file before
a whole response; timed_out is a request that outlived --timeout-ms; http_errors are whole
responses with another status; other is any other socket error. versions_seen lists the word
after "version" in each 200 body each time it changed ("version 1.2.0 slot current pid 123"
gives 1.2.0; a body without one counts as its first line, cut to 80 characters).
failures are the first 20 requests (short or slow) that did not end in ok, by start time;
at_ms is their start after the poller's start (start_monotonic_ns, time.monotonic_ns()).

With --slow-every K, every K-th request is followed by a slow GET /slow?ms=M on its own thread
(timeout M + --timeout-ms), counted apart under "slow": about M / (K * interval) of them
are in flight at any moment. After the window closes the poller waits for those in flight
to end; a SIGTERM or SIGINT that comes after the window closed (the second, when a signal
closed it) stops that wait, and the ones cut off count as unfinished.

OPTIONS:
  --port P              The server's port on 127.0.0.1 (required).
  --path PATH           The path of the short requests (default /).
  --interval-ms X       From the start of one short request to the next (default 5).
  --max-seconds S       Close the window after S seconds (default 60).
  --max-requests N      Close the window after N short requests (default 20000).
  --timeout-ms X        Give up on a short request after X ms (default 2000).
  --slow-every K        Add a slow request after every K-th short one (with --slow-ms).
  --slow-ms M           What the slow requests ask the server to take: /slow?ms=M.
  -h, --help            Show this help.

Exits 64 with a usage line when misused, 0 otherwise.
"""
import json, os, signal, sys, threading, time
sys.dont_write_bytecode = True  # no __pycache__ in scripts/lib
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from http_probe import request, version_key

USAGE = ("usage: http-poller.py --port P [--path /] [--interval-ms 5] [--max-seconds 60] [--max-requests 20000] "
         "[--timeout-ms 2000] [--slow-every K --slow-ms M]")

def usage_error(message):
    print(f"Error: {message}\n{USAGE}\nSee 'http-poller.py --help'.", file=sys.stderr)
    sys.exit(64)

def parse_arguments(argv):
    options = {"port": None, "path": "/", "interval-ms": 5.0, "max-seconds": 60.0, "max-requests": 20000,
               "timeout-ms": 2000.0, "slow-every": None, "slow-ms": None}
    kinds = {"port": int, "path": str, "interval-ms": float, "max-seconds": float, "max-requests": int,
             "timeout-ms": float, "slow-every": int, "slow-ms": int}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in ("-h", "--help"):
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--help | head` ends quietly
            print(__doc__.strip())
            sys.exit(0)
        name, equals, value = word[2:].partition("=") if word.startswith("--") else ("", "", "")
        if name not in kinds:
            usage_error(f"unknown argument '{word}'")
        if not equals:
            if i + 1 >= len(argv):
                usage_error(f"--{name} needs a value")
            i += 1
            value = argv[i]
        try:
            options[name] = kinds[name](value)
        except ValueError:
            usage_error(f"--{name} takes a number, not '{value}'")
        i += 1
    if options["port"] is None:
        usage_error("--port is required")
    if not 0 < options["port"] < 65536:
        usage_error(f"--port {options['port']} is not a port (1 to 65535)")
    if not options["path"].startswith("/"):
        usage_error(f"--path must start with /, not '{options['path']}'")
    for name in ("interval-ms", "max-seconds", "max-requests", "timeout-ms"):
        if not options[name] > 0:
            usage_error(f"--{name} must be positive")
    if (options["slow-every"] is None) != (options["slow-ms"] is None):
        usage_error("--slow-every and --slow-ms go together")
    if options["slow-every"] is not None and (options["slow-every"] < 1 or options["slow-ms"] < 0):
        usage_error("--slow-every must be at least 1 and --slow-ms at least 0")
    return options

class Window:
    """The records, shared by the main thread and the slow requests' threads."""
    def __init__(self):
        self.lock = threading.Lock()
        self.short = []   # (start_ns, took_ns, kind, detail), in start order
        self.slow = []

    def record(self, into, start_ns, kind, detail):
        entry = (start_ns, time.monotonic_ns() - start_ns, kind, detail)
        with self.lock:
            into.append(entry)

signals = 0

def on_signal(number, frame):
    global signals
    signals += 1

def main():
    o = parse_arguments(sys.argv[1:])
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    start_ns = time.monotonic_ns()
    interval_ns = int(o["interval-ms"] * 1e6)
    end_ns = start_ns + int(o["max-seconds"] * 1e9)
    timeout = o["timeout-ms"] / 1000
    window = Window()
    slow_threads = []

    def slow_request(at_ns):
        kind, detail = request(o["port"], f"/slow?ms={o['slow-ms']}", o["slow-ms"] / 1000 + timeout)
        window.record(window.slow, at_ns, kind, detail)

    next_ns, sent = start_ns, 0
    while True:
        now = time.monotonic_ns()
        if signals:
            ended_by = "signal"; break
        if sent >= o["max-requests"]:
            ended_by = "max_requests"; break
        if now >= end_ns:
            ended_by = "max_seconds"; break
        if now < next_ns:
            time.sleep(min(next_ns - now, 10_000_000) / 1e9)
            continue
        kind, detail = request(o["port"], o["path"], timeout)
        window.record(window.short, now, kind, detail)
        sent += 1
        next_ns = now + interval_ns
        if o["slow-every"] and sent % o["slow-every"] == 0:
            thread = threading.Thread(target=slow_request, args=(time.monotonic_ns(),), daemon=True)
            thread.start()
            slow_threads.append(thread)
    elapsed_ns = time.monotonic_ns() - start_ns

    # The slow requests in flight finish (each within its timeout) unless a second signal comes.
    stop_waiting_at = signals + 1
    for thread in slow_threads:
        while thread.is_alive() and signals < stop_waiting_at:
            thread.join(0.05)
    with window.lock:
        short, slow = list(window.short), list(window.slow)
    print(json.dumps(summary(short, slow, len(slow_threads), ended_by, elapsed_ns, start_ns), separators=(",", ":")))
    sys.stdout.flush()
    os._exit(0)  # not sys.exit: a slow thread cut off must not hold the exit

def summary(short, slow, slow_started, ended_by, elapsed_ns, start_ns):
    counts = {kind: 0 for kind in ("ok", "refused", "reset", "timed_out", "http_error", "other")}
    versions = []
    for _, _, kind, detail in short:
        counts[kind] += 1
        if kind == "ok":
            key = version_key(detail)
            if not versions or versions[-1] != key:
                versions.append(key)
    failures = []
    failed = sorted([r + (False,) for r in short if r[2] != "ok"] + [r + (True,) for r in slow if r[2] != "ok"],
                    key=lambda r: r[0])
    for start, took, kind, detail, is_slow in failed[:20]:
        failure = {"at_ms": round((start - start_ns) / 1e6, 3), "took_ms": round(took / 1e6, 3), "kind": kind}
        if kind == "http_error":
            failure["status"] = detail
        elif kind == "other":
            failure["detail"] = detail
        if is_slow:
            failure["slow"] = True
        failures.append(failure)
    slow_ok = sum(1 for r in slow if r[2] == "ok")
    return {
        "requests": len(short), "ok": counts["ok"], "refused": counts["refused"], "reset": counts["reset"],
        "timed_out": counts["timed_out"], "http_errors": counts["http_error"], "other": counts["other"],
        "versions_seen": versions, "failures": failures,
        "slow": {"requests": slow_started, "ok": slow_ok, "failed": len(slow) - slow_ok, "unfinished": slow_started - len(slow)},
        "ended_by": ended_by, "elapsed_ms": round(elapsed_ns / 1e6, 3), "start_monotonic_ns": start_ns,
    }

if __name__ == "__main__":
    main()
