#!/usr/bin/env python3
"""OVERVIEW: Switches a supervised NotesServer back and forth with rollbackctl, and times
each switch from the command to the new version's first answer.

USAGE: switches.py --rollbackctl PATH --port P --current TEXT --previous TEXT [--count 10] [--hold-ms 0] [--timeout-s 60]

Runs `rollbackctl rollback --reason ...` and `rollbackctl rollforward` alternately, --count
times in all. After each command it sends GET / to 127.0.0.1:P every millisecond, each on a
new connection, until a 200 whose first line is the text the switch should bring (--previous
after a rollback, --current after a roll-forward); the next switch starts --hold-ms later.
The clock starts just before rollbackctl runs, so a switch's time includes the command (and
the data check or downgrade it runs), the new child's start and its readiness.

Prints one line per switch, then one JSON line:

  {"switches":[{"command":"rollback","ms":41.2,"command_ms":24.1,"start_monotonic_ns":T},...],
   "median_ms":X,"max_ms":X,"elapsed_ms":X}

start_monotonic_ns is time.monotonic_ns() (CLOCK_MONOTONIC) just before the command ran, to
place what clients saw (http-poller.py's failures) against the switches.

Exits 1 with a message on stderr when rollbackctl fails or the new version does not answer
within --timeout-s, 64 when misused. rollbackctl runs with this script's environment (its
SWITCHBACK_STATE_DIR). Python 3 standard library and Switchback's scripts/lib/http_probe.py.
"""
import argparse, json, os, statistics, subprocess, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "scripts", "lib"))
from http_probe import request


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"Error: {message}\nSee 'switches.py --help'.", file=sys.stderr)
        sys.exit(64)


def main():
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, usage=argparse.SUPPRESS)
    parser.add_argument("--rollbackctl", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--current", required=True)
    parser.add_argument("--previous", required=True)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--hold-ms", type=float, default=0)
    parser.add_argument("--timeout-s", type=float, default=60)
    o = parser.parse_args()

    switches = []
    started = time.monotonic_ns()
    for number in range(1, o.count + 1):
        if number % 2:
            command, expected = [o.rollbackctl, "rollback", "--reason", f"exercise switch {number}"], o.previous
        else:
            command, expected = [o.rollbackctl, "rollforward"], o.current
        t0 = time.monotonic_ns()
        result = subprocess.run(command, capture_output=True, text=True)
        command_ns = time.monotonic_ns() - t0
        if result.returncode != 0:
            sys.exit(f"switches.py: switch {number}: {' '.join(command[1:2])} exited {result.returncode}: "
                     f"{(result.stdout + result.stderr).strip()}")
        last = "no answer yet"
        while True:
            kind, detail = request(o.port, "/", 2.0)
            if kind == "ok" and detail.split("\n", 1)[0] == expected:
                break
            last = f"{kind}: {detail!r}" if detail is not None else kind
            if time.monotonic_ns() - t0 > o.timeout_s * 1e9:
                sys.exit(f"switches.py: switch {number} ({command[1]}): 127.0.0.1:{o.port} did not answer "
                         f"'{expected}' within {o.timeout_s:g} s; last: {last}")
            time.sleep(0.001)
        ms = (time.monotonic_ns() - t0) / 1e6
        switches.append({"command": command[1], "ms": round(ms, 1), "command_ms": round(command_ns / 1e6, 1),
                         "start_monotonic_ns": t0})
        print(f"switch {number}: {command[1]} -> '{expected}' answered after {ms:.0f} ms "
              f"(rollbackctl took {command_ns / 1e6:.0f} ms)", flush=True)
        time.sleep(o.hold_ms / 1000)
    times = [s["ms"] for s in switches]
    print(json.dumps({"switches": switches, "median_ms": round(statistics.median(times), 1), "max_ms": max(times),
                      "elapsed_ms": round((time.monotonic_ns() - started) / 1e6, 1)}, separators=(",", ":")))


if __name__ == "__main__":
    main()
