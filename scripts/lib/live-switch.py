#!/usr/bin/env python3
"""OVERVIEW: Supervised switch latency, against the app's own time to ready.

USAGE: live-switch.py --bundle DIR --work DIR [--switches N] [--target-ms 100]

The bundle's both slots must serve `serve --http HOST:PORT` (the sample app, as the release
fixture builds it). Runs, alternated one for one, N times each:
  switch  the bundle supervised on a socket it owns (supervise.listen), serving; from the
          moment `rollbackctl rollback` (or `rollforward`) renames the new state file into
          place (seen by inotify here, as by the supervisor), the milliseconds until GET / is
          first answered by the other version: the supervisor noticing the change, starting
          the new child on the same socket, and the new child answering;
  ready   the same bundle unsupervised on a port of its own: the milliseconds from starting
          the launcher until GET / is first answered, which is the app's own time to ready
          (the launcher's start included, as it is in every supervised child).
Prints both medians with their 95% intervals and the switch's overhead (median switch minus
median ready), and how soon the supervisor noticed the change (its record names the new child;
target 50 ms); exits 1 when a target is missed.
"""
import ctypes, os, select, signal, socket, struct, subprocess, sys, time
sys.dont_write_bytecode = True  # no __pycache__ in scripts/lib
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from http_probe import request, version_key
from interleave import interval
from supervised import free_port, supervisor_fields

USAGE = "usage: live-switch.py --bundle DIR --work DIR [--switches N] [--target-ms 100]"


def answering_version(port):
    outcome, body = request(port, "/", 1.0)
    return version_key(body) if outcome == "ok" and body else None


def wait_for_version(port, version, timeout=30.0):
    """Milliseconds (monotonic) when `version` first answered, polling every 0.5 ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if answering_version(port) == version:
            return time.monotonic_ns()
        time.sleep(0.0005)
    sys.exit(f"live-switch: version {version} did not answer on port {port} within {timeout:.0f} s")


def manifest_value(bundle, key):
    with open(os.path.join(bundle, "manifest")) as f:
        for line in f:
            if line.startswith(key + "="):
                return line.strip().split("=", 1)[1]
    sys.exit(f"live-switch: the manifest in {bundle} has no {key}")


class StateWatch:
    """inotify on the state directory (through libc, by ctypes): when the state file is
    replaced, the moment the supervisor's own watch fires too."""
    IN_MOVED_TO = 0x80

    def __init__(self, directory):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, directory.encode(), self.IN_MOVED_TO) < 0:
            sys.exit(f"live-switch: inotify on {directory} failed: {os.strerror(ctypes.get_errno())}")

    def drain(self):
        try:
            while os.read(self.fd, 65536):
                pass
        except BlockingIOError:
            pass

    def wait_for_state_file(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            data = os.read(self.fd, 65536)
            offset = 0
            while offset < len(data):
                _, mask, _, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16:offset + 16 + length].rstrip(b"\0")
                offset += 16 + length
                if name == b"state":
                    return time.monotonic_ns()
        sys.exit(f"live-switch: the state file was not replaced within {timeout:.0f} s")


def wait_for_candidate(state, timeout=10.0):
    """When the supervisor's record first names a new child (candidate_pid), polled every 0.2 ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "candidate_pid" in supervisor_fields(state):
            return time.monotonic_ns()
        time.sleep(0.0002)
    sys.exit(f"live-switch: the supervisor started no new child within {timeout:.0f} s")


def supervisor_settled(state, slot):
    """The supervisor record names `slot` as the ready child, with no switch under way."""
    fields = supervisor_fields(state)
    return fields.get("child_slot") == slot and fields.get("child_ready") == "true" and "candidate_pid" not in fields


def main():
    args = sys.argv[1:]
    options = {"--switches": "20", "--target-ms": "100"}
    while args:
        if args[0] in ("-h", "--help"):
            print(__doc__.strip())
            return
        if len(args) < 2 or args[0] not in ("--bundle", "--work", "--switches", "--target-ms"):
            print(f"Error: unexpected '{args[0]}'.\n{USAGE}", file=sys.stderr)
            sys.exit(64)
        options[args[0]] = args[1]
        args = args[2:]
    if "--bundle" not in options or "--work" not in options:
        print(f"Error: --bundle and --work are required.\n{USAGE}", file=sys.stderr)
        sys.exit(64)
    source, work = options["--bundle"], options["--work"]
    switches, target = int(options["--switches"]), float(options["--target-ms"])

    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    bundle = os.path.join(work, "bundle")
    subprocess.run(["cp", "-a", source, bundle], check=True)
    port = free_port()
    with open(os.path.join(bundle, "manifest"), "a") as f:
        f.write(f"supervise.listen=127.0.0.1:{port}\n")
    versions = {"current": manifest_value(bundle, "current.version"), "previous": manifest_value(bundle, "previous.version")}
    launcher, rollbackctl = os.path.join(bundle, "bin/launcher"), os.path.join(bundle, "bin/rollbackctl")
    state = os.path.join(work, "state")
    os.makedirs(state)
    env = dict(os.environ, SWITCHBACK_STATE_DIR=state, SWITCHBACK_SUPERVISE="1")
    log = open(os.path.join(work, "supervisor.err"), "w")
    supervisor = subprocess.Popen([launcher, "serve", "--http", f"127.0.0.1:{port}"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=log)
    switch_ms, ready_ms, notice_ms = [], [], []
    watch = StateWatch(state)
    def cold_start(slot):
        own_port = free_port()
        started = time.monotonic_ns()
        child = subprocess.Popen([launcher, "serve", "--http", f"127.0.0.1:{own_port}"],
                                 env=dict(env, SWITCHBACK_STATE_DIR=os.path.join(work, f"state-ready-{slot}"),
                                          SWITCHBACK_SUPERVISE="0", SWITCHBACK_SLOT=slot),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        answered = wait_for_version(own_port, versions[slot])
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=30)
        return started, answered

    for slot in ("current", "previous"):
        os.makedirs(os.path.join(work, f"state-ready-{slot}"))
        cold_start(slot)
    try:
        wait_for_version(port, versions["current"])
        slot = "current"
        for index in range(switches):
            # One switch...
            while not supervisor_settled(state, slot):
                time.sleep(0.005)
            command, slot = ("rollback", "previous") if slot == "current" else ("rollforward", "current")
            # The choice changes when rollbackctl renames the new state file into place: this
            # script's inotify fires then, as the supervisor's does.
            watch.drain()
            control = subprocess.Popen([rollbackctl, command], env=env, stdout=subprocess.DEVNULL)
            changed = watch.wait_for_state_file()
            noticed = wait_for_candidate(state)
            answered = wait_for_version(port, versions[slot])
            notice_ms.append((noticed - changed) / 1e6)
            switch_ms.append((answered - changed) / 1e6)
            if control.wait(timeout=30) != 0:
                sys.exit(f"live-switch: rollbackctl {command} failed")
            # ...then one cold start of the same app, unsupervised, on a port of its own, in
            # steady state (a state directory per slot, migrated and marked good beforehand).
            started, answered = cold_start(slot)
            ready_ms.append((answered - started) / 1e6)
    finally:
        supervisor.send_signal(signal.SIGTERM)
        try:
            supervisor.wait(timeout=30)
        except subprocess.TimeoutExpired:
            supervisor.kill()
    median = lambda values: sorted(values)[len(values) // 2]
    s_low, s_high = interval(switch_ms)
    r_low, r_high = interval(ready_ms)
    overhead = median(switch_ms) - median(ready_ms)
    verdict = "ok" if overhead <= target else "MISSED"
    print(f"supervised switch, changed choice (state file replaced) -> new version answering ({switches} switches, alternated with cold starts)")
    print(f"  switch   median {median(switch_ms):7.1f} ms  (95% CI {s_low:.1f}-{s_high:.1f}; min {min(switch_ms):.1f}, max {max(switch_ms):.1f})")
    print(f"  ready    median {median(ready_ms):7.1f} ms  (95% CI {r_low:.1f}-{r_high:.1f}; the app's own start to first answer)")
    print(f"  overhead {overhead:7.1f} ms  target <= {target:.0f} ms: {verdict}")
    n_low, n_high = interval(notice_ms)
    noticed_ok = median(notice_ms) <= 50
    print(f"  noticed  median {median(notice_ms):7.1f} ms  (95% CI {n_low:.1f}-{n_high:.1f}; max {max(notice_ms):.1f}; the new child started)  target <= 50 ms: {'ok' if noticed_ok else 'MISSED'}")
    sys.exit(0 if overhead <= target and noticed_ok else 1)


if __name__ == "__main__":
    main()
