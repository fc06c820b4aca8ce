#!/usr/bin/env python3
"""OVERVIEW: How long a stop-first switch pauses a served app, under load, beside start-first.

USAGE: pause.py --stop-first BUNDLE --start-first BUNDLE --work DIR [--rounds N] [--target-ms 100]
                [--app sample|notes-server]

--stop-first is a bundle whose switches must convert the data (the release fixture's
1.2.0-after-1.1.9: notes-v2 both ways), --start-first one whose switches need not (1.3.0 over
1.2.0). Both are supervised on a port of their own (supervise.listen), each under a client
that adds a note and lists the notes in turn, a request every 3 ms, each on a new
connection. A round switches each bundle back and forth (rollbackctl rollback, then
rollforward), the bundles' order swapped every round. For each switch: the pause the
supervisor recorded (stop-first), the slowest answer to a request sent from the command
until the supervisor has settled, refused and failed requests, and the kernel's
ListenOverflows (TcpExt, /proc/net/netstat) across it. At the end every note a client added
must be listed. --app notes-server: the bundles are Examples/NotesServer's (`serve --port P`;
a note is POST /notes, answered 201), made as docs/benchmarks.md says (a release whose
migration step 1.0.0 cannot read, over release 1.0.0). Prints the medians with 95% intervals;
exits 1 when the stop-first pause's
median is over --target-ms, a slowest answer is over its switch's pause + 100 ms, a request
was refused or failed, the queue overflowed, or a note is missing.
"""
import os, signal, subprocess, sys, threading, time
sys.dont_write_bytecode = True  # no __pycache__ in scripts/lib
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from http_probe import request
from interleave import interval
from supervised import free_port, supervisor_fields

USAGE = "usage: pause.py --stop-first BUNDLE --start-first BUNDLE --work DIR [--rounds N] [--target-ms 100] [--app sample|notes-server]"

# How each app serves, adds a note and lists them.
APPS = {
    "sample": {"serve": lambda port: ["serve", "--http", f"127.0.0.1:{port}"],
               "add": lambda port, text: request(port, f"/notes/add?text={text}", 10.0)},
    "notes-server": {"serve": lambda port: ["serve", "--port", str(port)],
                     "add": lambda port, text: request(port, "/notes", 10.0, method="POST", body=text.encode(), ok=(201,))},
}


def listen_overflows():
    with open("/proc/net/netstat") as f:
        lines = [line.split() for line in f]
    for names, values in zip(lines, lines[1:]):
        if names[0] == "TcpExt:" and values[0] == "TcpExt:":
            return int(values[names.index("ListenOverflows")])
    return 0


class Client:
    """A request every 3 ms on a new connection: /notes/add?text=..., then /notes, in turn."""

    def __init__(self, port, name, app):
        self.port, self.name, self.app = port, name, app
        self.records, self.added = [], []
        self.stopped = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        index = 0
        while not self.stopped:
            text = f"{self.name}-{index}"
            sent = time.monotonic_ns()
            kind, detail = APPS[self.app]["add"](self.port, text) if index % 2 == 0 else request(self.port, "/notes", 10.0)
            self.records.append((sent, time.monotonic_ns(), kind, detail))
            if kind == "ok" and index % 2 == 0:
                self.added.append(text)
            index += 1
            time.sleep(0.003)

    def stop(self):
        self.stopped = True
        self.thread.join()


class Served:
    """A copy of a bundle supervised on a port of its own, with its client."""

    def __init__(self, source, work, name, app):
        self.name = name
        self.bundle = os.path.join(work, name, "bundle")
        self.state = os.path.join(work, name, "state")
        os.makedirs(self.state)
        subprocess.run(["cp", "-a", source, self.bundle], check=True)
        self.port = free_port()
        with open(os.path.join(self.bundle, "manifest"), "a") as f:
            f.write(f"supervise=true\nsupervise.listen=127.0.0.1:{self.port}\n")
        self.env = dict(os.environ, SWITCHBACK_STATE_DIR=self.state, SWITCHBACK_SUPERVISE="1")
        self.log = open(os.path.join(work, name, "supervisor.err"), "w")
        self.process = subprocess.Popen([os.path.join(self.bundle, "bin/launcher")] + APPS[app]["serve"](self.port),
                                        env=self.env, stdout=subprocess.DEVNULL, stderr=self.log)
        self.slot = "current"
        self.wait_settled()
        self.client = Client(self.port, name, app)

    def wait_settled(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fields = supervisor_fields(self.state)
            if fields.get("child_slot") == self.slot and fields.get("child_ready") == "true" \
                    and "candidate_pid" not in fields and "pause_path" not in fields and request(self.port, "/", 1.0)[0] == "ok":
                return fields
            time.sleep(0.005)
        sys.exit(f"pause: {self.name} did not settle on its {self.slot} slot within {timeout:.0f} s (see its supervisor.err)")

    def switch(self):
        command, self.slot = ("rollback", "previous") if self.slot == "current" else ("rollforward", "current")
        overflows = listen_overflows()
        began = time.monotonic_ns()
        result = subprocess.run([os.path.join(self.bundle, "bin/rollbackctl"), command, "--reason", "pause bench"],
                                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            sys.exit(f"pause: rollbackctl {command} on {self.name} failed: {result.stderr.strip()}")
        fields = self.wait_settled()
        settled = time.monotonic_ns()
        time.sleep(0.1)  # the requests sent just before settling come back
        during = [r for r in self.client.records if began <= r[0] <= settled]
        paused = fields.get("last_switch_paused_ms")
        return {"command": command, "path": fields.get("last_switch_path"),
                "paused_ms": int(paused) if paused is not None else None,
                "slowest_ms": max(((r[1] - r[0]) / 1e6 for r in during), default=0.0),
                "requests": len(during),
                "refused": sum(1 for r in during if r[2] == "refused"),
                "failed": sum(1 for r in during if r[2] not in ("ok", "refused")),
                "overflows": listen_overflows() - overflows}

    def finish(self):
        self.client.stop()
        kind, listed = request(self.port, "/notes", 10.0)
        missing = [note for note in self.client.added if kind != "ok" or note + "\n" not in listed + "\n"]
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        return missing


def main():
    args = sys.argv[1:]
    options = {"--rounds": "10", "--target-ms": "100", "--app": "sample"}
    while args:
        if args[0] in ("-h", "--help"):
            print(__doc__.strip())
            return
        if len(args) < 2 or args[0] not in ("--stop-first", "--start-first", "--work", "--rounds", "--target-ms", "--app") \
                or (args[0] == "--app" and args[1] not in APPS):
            print(f"Error: unexpected '{args[0]}'.\n{USAGE}", file=sys.stderr)
            sys.exit(64)
        options[args[0]] = args[1]
        args = args[2:]
    if not all(key in options for key in ("--stop-first", "--start-first", "--work")):
        print(f"Error: --stop-first, --start-first and --work are required.\n{USAGE}", file=sys.stderr)
        sys.exit(64)
    work, rounds, target = options["--work"], int(options["--rounds"]), float(options["--target-ms"])
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    app = options["--app"]
    served = {"stop-first": Served(options["--stop-first"], work, "stop-first", app),
              "start-first": Served(options["--start-first"], work, "start-first", app)}
    switches = {name: [] for name in served}
    try:
        for index in range(rounds):
            order = ["stop-first", "start-first"] if index % 2 == 0 else ["start-first", "stop-first"]
            for name in order:
                for _ in range(2):
                    outcome = served[name].switch()
                    switches[name].append(outcome)
                    paused = f"path {outcome['path']}, paused {outcome['paused_ms']} ms" if outcome["paused_ms"] is not None else "no pause recorded"
                    print(f"pause: {name} {outcome['command']}: {paused}, "
                          f"slowest answer {outcome['slowest_ms']:.1f} ms of {outcome['requests']}, refused {outcome['refused']}, "
                          f"failed {outcome['failed']}, ListenOverflows +{outcome['overflows']}", file=sys.stderr)
                    time.sleep(0.3)
    finally:
        missing = {name: s.finish() for name, s in served.items()}
    median = lambda values: sorted(values)[len(values) // 2]
    failures = []
    for name, outcomes in switches.items():
        for command in ("rollback", "rollforward"):
            chosen = [o for o in outcomes if o["command"] == command]
            slowest = [o["slowest_ms"] for o in chosen]
            s_low, s_high = interval(slowest)
            line = f"{name} {command} ({len(chosen)}): slowest answer median {median(slowest):.1f} ms [{s_low:.1f}, {s_high:.1f}], max {max(slowest):.1f} ms"
            if name == "stop-first":
                paused = [o["paused_ms"] for o in chosen if o["paused_ms"] is not None]
                if len(paused) != len(chosen) or any(o["path"] != "stop-first" for o in chosen):
                    failures.append(f"a {command} of the stop-first bundle was not stop-first")
                    paused = paused or [0]
                p_low, p_high = interval(paused)
                line = f"{name} {command} ({len(chosen)}): pause median {median(paused)} ms [{p_low}, {p_high}] (target <= {target:.0f}), max {max(paused)} ms; " \
                       + line.split(": ", 1)[1]
                if median(paused) > target:
                    failures.append(f"the stop-first {command}'s median pause is {median(paused)} ms, over {target:.0f}")
                over = [o for o in chosen if o["paused_ms"] is not None and o["slowest_ms"] > o["paused_ms"] + 100]
                if over:
                    failures.append(f"{len(over)} stop-first {command}s had an answer slower than their pause + 100 ms")
            refused, failed, overflows = (sum(o[key] for o in chosen) for key in ("refused", "failed", "overflows"))
            print(f"{line}; refused {refused}, failed {failed}, ListenOverflows +{overflows}")
            if refused or failed:
                failures.append(f"{name} {command}: {refused} refused and {failed} failed requests")
            if overflows:
                failures.append(f"{name} {command}: ListenOverflows rose by {overflows}")
    for name, notes in missing.items():
        print(f"{name}: {len(served[name].client.added)} notes added, {len(notes)} missing")
        if notes:
            failures.append(f"{name}: {len(notes)} notes added are not listed (first: {notes[0]})")
    for failure in failures:
        print(f"pause: missed: {failure}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
