#!/usr/bin/env python3
"""OVERVIEW: How long after a switch a loopback HTTP server first answers with the new version.

USAGE: switch-latency.py --port P --expect-version V --timeout-s S [--since-monotonic-ns T] [--path /]

Sends GET <path> to 127.0.0.1:<port> every millisecond, each on a new connection, until a
200 response whose body names "version V" (V as a whole word: "version 1.2" does not match
"version 1.2.0"). Then prints, on stdout, the milliseconds from the start to that response
(e.g. 41.208) and exits 0.

The start is this script's own start (taken before it parses its arguments, but after the
Python interpreter started: 20 to 150 ms after it was run, depending on the machine), or T
with --since-monotonic-ns: a time.monotonic_ns() value (CLOCK_MONOTONIC, the same in every
process) the caller took just before it triggered the switch, so that the switch's first
milliseconds count and the interpreter's start-up does not:

  t=$(python3 -c 'import time; print(time.monotonic_ns())')
  rollbackctl rollback
  switch-latency.py --port 8080 --expect-version 1.0.0 --timeout-s 10 --since-monotonic-ns "$t"

OPTIONS:
  --port P                  The server's port on 127.0.0.1 (required).
  --expect-version V        The version the switch should bring (required).
  --timeout-s S             Give up S seconds after this script started (required).
  --since-monotonic-ns T    Measure from T (CLOCK_MONOTONIC, in ns) instead of this script's start.
  --path PATH               The path to ask (default /).
  -h, --help                Show this help.

Exits 1 with a one-line message on stderr when no such response came within S seconds,
64 with a usage line when misused.
"""
import time
OWN_START_NS = time.monotonic_ns()
import os, signal, sys
sys.dont_write_bytecode = True  # no __pycache__ in scripts/lib
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from http_probe import has_version, request, version_key

USAGE = "usage: switch-latency.py --port P --expect-version V --timeout-s S [--since-monotonic-ns T] [--path /]"
POLL_NS = 1_000_000

def usage_error(message):
    print(f"Error: {message}\n{USAGE}\nSee 'switch-latency.py --help'.", file=sys.stderr)
    sys.exit(64)

def parse_arguments(argv):
    options = {"port": None, "expect-version": None, "timeout-s": None, "since-monotonic-ns": None, "path": "/"}
    kinds = {"port": int, "expect-version": str, "timeout-s": float, "since-monotonic-ns": int, "path": str}
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
    for name in ("port", "expect-version", "timeout-s"):
        if options[name] is None:
            usage_error(f"--{name} is required")
    if not 0 < options["port"] < 65536:
        usage_error(f"--port {options['port']} is not a port (1 to 65535)")
    if not options["expect-version"] or any(c.isspace() for c in options["expect-version"]):
        usage_error("--expect-version must be one word")
    if not options["timeout-s"] > 0:
        usage_error("--timeout-s must be positive")
    since = options["since-monotonic-ns"]
    if since is not None and not 0 <= since <= time.monotonic_ns():
        usage_error(f"--since-monotonic-ns {since} is not a time.monotonic_ns() value taken before now")
    if not options["path"].startswith("/"):
        usage_error(f"--path must start with /, not '{options['path']}'")
    return options

def describe(kind, detail):
    if kind == "ok":
        return f"200 with {version_key(detail)!r}"
    if kind == "http_error":
        return f"HTTP {detail}"
    return kind.replace("_", " ") + (f" ({detail})" if detail else "")

def main():
    o = parse_arguments(sys.argv[1:])
    since = o["since-monotonic-ns"] if o["since-monotonic-ns"] is not None else OWN_START_NS
    deadline = OWN_START_NS + int(o["timeout-s"] * 1e9)
    attempts, last = 0, "no request sent"
    while True:
        now = time.monotonic_ns()
        if now >= deadline:
            break
        # One attempt may not outlive the deadline, nor wait on one stuck connection for long.
        kind, detail = request(o["port"], o["path"], min(1.0, (deadline - now) / 1e9))
        attempts += 1
        if kind == "ok" and has_version(detail, o["expect-version"]):
            print(f"{(time.monotonic_ns() - since) / 1e6:.3f}")
            return 0
        last = describe(kind, detail)
        pause = now + POLL_NS - time.monotonic_ns()
        if pause > 0:
            time.sleep(pause / 1e9)
    print(f"Error: 127.0.0.1:{o['port']}{o['path']} did not answer 200 with 'version {o['expect-version']}' "
          f"within {o['timeout-s']:g} s ({attempts} requests; the last: {last}).", file=sys.stderr)
    return 1

if __name__ == "__main__":
    sys.exit(main())
