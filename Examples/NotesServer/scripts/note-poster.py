#!/usr/bin/env python3
"""OVERVIEW: Stores notes in a NotesServer while it is switched, and says which it stored.

USAGE: note-poster.py --port P --prefix TEXT [--interval-ms 20] [--max-seconds 120] [--timeout-ms 5000]

Sends POST /notes with the body "PREFIX N" (N = 1, 2, ...) to 127.0.0.1:P every
--interval-ms, each on a new connection, until SIGTERM or SIGINT or --max-seconds; then
prints one JSON line on stdout and exits 0:

  {"requests":N,"stored":N,"failed":N,"kinds":{"refused":N,...},
   "failures":[{"at_ms":12.3,"note":"PREFIX 7","kind":"http_error","detail":503},...],
   "stored_notes":["PREFIX 1",...],"ended_by":"signal|max_seconds","start_monotonic_ns":T}

A note is stored when the answer is a whole HTTP 201. The other kinds are those of
scripts/lib/http_probe.py: refused, reset, timed_out (the whole request outlived
--timeout-ms), http_error (another status; detail is it) and other. failures lists the first
20; at_ms is a request's start after the poster's start (start_monotonic_ns,
time.monotonic_ns()). Python 3 standard library only.
"""
import argparse, http.client, json, signal, sys, time


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"Error: {message}\nSee 'note-poster.py --help'.", file=sys.stderr)
        sys.exit(64)


signals = 0


def on_signal(number, frame):
    global signals
    signals += 1


def post(port, body, timeout):
    """("stored", None) for a 201, else (kind, detail)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/notes", body=body.encode(),
                           headers={"Content-Type": "text/plain", "Connection": "close"})
        response = connection.getresponse()
        response.read()
        return ("stored", None) if response.status == 201 else ("http_error", response.status)
    except ConnectionRefusedError:
        return "refused", None
    except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, http.client.IncompleteRead):
        return "reset", None  # RemoteDisconnected is a ConnectionResetError
    except TimeoutError:
        return "timed_out", None
    except (OSError, http.client.HTTPException) as error:
        return "other", str(error)
    finally:
        connection.close()


def main():
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, usage=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--interval-ms", type=float, default=20)
    parser.add_argument("--max-seconds", type=float, default=120)
    parser.add_argument("--timeout-ms", type=float, default=5000)
    o = parser.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    start_ns = time.monotonic_ns()
    start = start_ns / 1e9
    stored, failures, kinds, requests = [], [], {}, 0
    next_at = start
    while True:
        now = time.monotonic_ns() / 1e9
        if signals:
            ended_by = "signal"; break
        if now - start >= o.max_seconds:
            ended_by = "max_seconds"; break
        if now < next_at:
            time.sleep(min(next_at - now, 0.01))
            continue
        requests += 1
        note = f"{o.prefix} {requests}"
        kind, detail = post(o.port, note, o.timeout_ms / 1000)
        if kind == "stored":
            stored.append(note)
        else:
            kinds[kind] = kinds.get(kind, 0) + 1
            if len(failures) < 20:
                failure = {"at_ms": round((now - start) * 1000, 1), "note": note, "kind": kind}
                if detail is not None:
                    failure["detail"] = detail
                failures.append(failure)
        next_at = now + o.interval_ms / 1000
    print(json.dumps({"requests": requests, "stored": len(stored), "failed": requests - len(stored), "kinds": kinds,
                      "failures": failures, "stored_notes": stored, "ended_by": ended_by,
                      "start_monotonic_ns": start_ns}, separators=(",", ":")))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
