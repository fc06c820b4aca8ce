#!/usr/bin/env python3
"""OVERVIEW: A fleet of real supervised installs polling one signed directive on a real nginx:
publish a rollback, measure how fast the fleet converges and the load on the server.

USAGE: scripts/fleet-sim [--installs N] [--interval S] [--start together|spread]
                         [--spread-over S] [--settle S] [--observe S] [--duration S]
                         [--app serve|idle] [--user NAME] [--workdir DIR] [--keep] [--json FILE]

What it does, in order (docs/fleet-simulation.md):
  1. makes a signing key (rollbackctl keygen) and builds one bundle with scripts/bundle
     (--supervise, --directive-url http://127.0.0.1:PORT/directive.json, --trust-key,
     --check-interval S, and --metrics-dir when scripts/bundle has it);
  2. starts nginx (/usr/sbin/nginx -p DIR -c DIR/nginx.conf) on 127.0.0.1, logging
     "$msec $status" per request, serving a signed run_current directive (serial 1);
  3. starts N installs: `bundle/bin/launcher serve` (or `hang`, --app idle), each with its own absolute
     SWITCHBACK_STATE_DIR, all at once (--start together) or evenly over --spread-over
     seconds (--start spread);
  4. lets them settle (--settle seconds after the last start), measuring the memory (PSS) and
     CPU of the supervisors and their children;
  5. publishes a run_previous directive (serial 2; written beside the served file, then
     renamed over it) and polls every install's state files until all of them run the
     previous slot, or --observe seconds pass;
  6. reads nginx's log (requests per 1-second window: peak and mean; 200s, 304s, others),
     every install's remote record, and, when the bundle exports metrics, the fleet view
     through a real prometheus-node-exporter; prints the report.

OPTIONS:
  --installs N          installs to run (default 1000)
  --interval S          remote.interval_s of the bundle (default 60)
  --start MODE          together (default): all launchers at once; spread: evenly over --spread-over
  --spread-over S       seconds over which --start spread starts them (default: the interval)
  --settle S            seconds from the last start to the publication (default: 2 x interval)
  --observe S           longest wait for convergence after the publication (default: 3 x interval)
  --tail S              seconds to keep measuring after the whole fleet converged (default 5)
  --duration S          hard cap on the whole run, build excluded (default: the phases + 120)
  --app MODE            what each supervised child runs: serve (default: the sample's server
                        loop, which writes a heartbeat file five times a second) or idle (the
                        sample's `hang`, asleep, made ready by a `--ready command:true` probe):
                        the same supervisors and checks without the heartbeats' CPU
  --user NAME           run the installs as this user (default: nobody when run as root), so
                        that 1,000 supervisors do not use up root's 128 inotify instances that
                        other programs on the machine need
  --workdir DIR         where to work (default: a new directory under /dev/shm, a tmpfs, when
                        it has 2 GiB free, else under /tmp): 1,000 installs on one disk
                        throttle each other's writes (a real fleet has a disk per host);
                        removed at the end unless --keep
  --keep                keep the work directory (logs, state directories, nginx's log)
  --json FILE           also write the figures as JSON to FILE
  --root DIR            the Switchback checkout (scripts/fleet-sim passes it)

Exit status: 0 when the run completed (whether or not the fleet met the acceptance bounds,
which the report states), 1 when it could not run (a build, nginx or the installs failed) or
reached --duration, 64 for bad usage, 130 on Ctrl-C or SIGTERM.
"""

import argparse
import ctypes
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


class SimError(Exception):
    """A failure that ends the run: one sentence the user can act on."""


class Interrupted(Exception):
    """Ctrl-C, SIGTERM or the hard time cap."""

    def __init__(self, why):
        super().__init__(why)
        self.why = why


def log(message):
    print(f"fleet-sim: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_key_values(path):
    """A key=value file (the state, supervisor and remote records), or None when unreadable."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(65536).decode("utf-8", "replace")
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key] = value
    return values


def percentile_time(times, count, fraction):
    """The time by which `fraction` of `count` installs had converged (times: sorted
    convergence times of those that did), or None when fewer did."""
    needed = max(1, -(-int(round(fraction * count * 1000)) // 1000))  # ceil(fraction * count)
    needed = min(needed, count)
    if len(times) < needed:
        return None
    return times[needed - 1]


class Fleet:
    def __init__(self, args):
        self.args = args
        self.root = os.path.abspath(args.root)
        self.started_at = time.monotonic()
        self.hard_deadline = None
        self.work = None
        self.nginx = None
        self.exporter = None
        self.installs = []  # dicts: index, dir, state, popen, started_mono
        self.figures = {}
        self.uid = None
        self.gid = None
        self.load = []  # (wall time, machine busy fraction over the last second, runnable processes)
        self.sampling = threading.Event()

    # --- clock and cap -------------------------------------------------------------

    def check_cap(self):
        if self.hard_deadline is not None and time.monotonic() >= self.hard_deadline:
            raise Interrupted(f"the hard cap of {self.args.duration:g} s (--duration) was reached")

    def sleep(self, seconds):
        end = time.monotonic() + seconds
        while True:
            self.check_cap()
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.5))

    # --- setup ---------------------------------------------------------------------

    def run_tool(self, argv, what, env=None):
        # In its own process group, so that an interrupted run stops the build too (a Ctrl-C
        # in a terminal reaches the group; a SIGTERM to this script alone would not).
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                   start_new_session=True)
        try:
            stdout, stderr = process.communicate()
        except BaseException:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            raise
        result = subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines()
            first_error = next((line for line in lines if line.startswith("Error:")), lines[-1] if lines else "")
            raise SimError(f"{what} failed (exit {result.returncode}): {first_error.removeprefix('Error: ')}")
        return result.stdout

    def make_workdir(self):
        if self.args.workdir:
            work = os.path.abspath(self.args.workdir)
            # Checked before it becomes the run's (and cleanup's): a directory with something
            # in it is never the script's to remove.
            if os.path.exists(work) and (not os.path.isdir(work) or os.listdir(work)):
                raise SimError(f"the work directory {work} is not empty; name a new or empty one with --workdir.")
            os.makedirs(work, exist_ok=True)
            self.work = work
        else:
            base = None
            try:
                shm = os.statvfs("/dev/shm")
                if shm.f_bavail * shm.f_frsize >= 2 << 30:
                    base = "/dev/shm"
            except OSError:
                pass
            self.work = tempfile.mkdtemp(prefix="fleet-sim.", dir=base)
        # The installs may run as another user: they need to read the bundle and reach their
        # own state directories.
        os.chmod(self.work, 0o755)
        for sub in ("keys", "www", "nginx", "installs", "metrics", "tools"):
            os.makedirs(os.path.join(self.work, sub), exist_ok=True)
        os.chmod(os.path.join(self.work, "keys"), 0o700)
        if self.uid is not None and self.uid != os.geteuid():
            parent = os.path.dirname(self.work)
            while parent != "/":
                if not os.stat(parent).st_mode & 0o001:
                    raise SimError(f"the installs run as {self.user_name} and cannot reach {self.work} ({parent} is closed to "
                                   f"other users); pick a directory under /tmp or /dev/shm, or pass --user root.")
                parent = os.path.dirname(parent)
        self.work_fs = filesystem_type(self.work)
        log(f"working in {self.work} ({self.work_fs})")

    def bundle_supports(self, flag):
        result = subprocess.run([os.path.join(self.root, "scripts/bundle"), "--help"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return flag in result.stdout

    def build(self):
        bundle_script = os.path.join(self.root, "scripts/bundle")
        # rollbackctl for keygen and sign, from a plain bundle (the real bundle needs the key first).
        log("building the tools (scripts/bundle, cached after the first run)")
        tools = os.path.join(self.work, "tools", "bundle")
        self.run_tool([bundle_script, "--out", tools], "scripts/bundle (tools)")
        self.rollbackctl = os.path.join(tools, "bin", "rollbackctl")
        keys = os.path.join(self.work, "keys")
        os.rmdir(keys)
        self.run_tool([self.rollbackctl, "keygen", "--out", keys], "rollbackctl keygen")
        self.key = os.path.join(keys, "directive.key")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/directive.json"
        self.bundle = os.path.join(self.work, "bundle")
        argv = [bundle_script, "--out", self.bundle, "--supervise",
                "--directive-url", self.url, "--trust-key", os.path.join(keys, "directive.pub"),
                "--allow-insecure-http"]
        if self.args.app == "idle":
            argv += ["--ready", "command:true"]
        self.metrics_dir = None
        if self.bundle_supports("--metrics-dir"):
            self.metrics_dir = os.path.join(self.work, "metrics")
            argv += ["--metrics-dir", self.metrics_dir]
        # Last: scripts/bundle (on the day this was written) reads the option after a numeric
        # option's value as that option's minimum, so --check-interval 60 --ready ... fails.
        argv += ["--check-interval", str(self.args.interval)]
        log("building the fleet's bundle: " + " ".join(argv[1:]))
        self.run_tool(argv, "scripts/bundle")
        manifest = read_key_values(os.path.join(self.bundle, "manifest")) or {}
        self.commit = manifest.get("current.build", "?")
        self.app_id = manifest.get("app_id")
        self.current_version = manifest.get("current.version")
        self.previous_version = manifest.get("previous.version")
        if not self.app_id or not self.current_version:
            raise SimError(f"{self.bundle}/manifest names no app id or current version; rebuild with scripts/bundle.")
        if self.metrics_dir:
            # The installs write their .prom files there as their own user; a world-writable
            # directory is refused by the metrics writer's strict modes (anyone could plant a
            # file for node_exporter), so the directory is the installs' user's, 0755.
            if self.uid is not None and self.uid != os.geteuid():
                os.chown(self.metrics_dir, self.uid, self.gid)
            os.chmod(self.metrics_dir, 0o755)

    def sign(self, serial, decision, reason, out):
        self.run_tool([self.rollbackctl, "sign", "--key", self.key, "--app-id", self.app_id,
                       "--serial", str(serial), "--decision", decision,
                       "--applies-to", self.current_version, "--expires-in", "1d",
                       "--reason", reason, "--out", out], "rollbackctl sign")

    def publish(self, serial, decision, reason):
        """Signs beside the served file, then renames over it: nginx serves the old or the new."""
        www = os.path.join(self.work, "www")
        staged = os.path.join(www, f".directive.json.{serial}")
        self.sign(serial, decision, reason, staged)
        os.chmod(staged, 0o644)
        os.rename(staged, os.path.join(www, "directive.json"))

    def start_nginx(self):
        directory = os.path.join(self.work, "nginx")
        www = os.path.join(self.work, "www")
        user = "user root;\n" if os.geteuid() == 0 else ""
        conf = f"""{user}daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format sim '$msec $status $request_method $request_uri $body_bytes_sent';
    access_log {directory}/access.log sim;
    client_body_temp_path {directory}/client_body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    types {{ application/json json; }}
    server {{
        listen 127.0.0.1:{self.port};
        root {www};
        location / {{ }}
    }}
}}
"""
        with open(os.path.join(directory, "nginx.conf"), "w") as handle:
            handle.write(conf)
        self.access_log = os.path.join(directory, "access.log")
        errors = open(os.path.join(directory, "stderr.log"), "w")
        self.nginx = subprocess.Popen(["/usr/sbin/nginx", "-p", directory, "-c", os.path.join(directory, "nginx.conf")],
                                      stdin=subprocess.DEVNULL, stdout=errors, stderr=errors, start_new_session=True)
        errors.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.nginx.poll() is not None:
                raise SimError(f"nginx exited with {self.nginx.returncode} at start; see {directory}/error.log and {directory}/stderr.log.")
            try:
                with urllib.request.urlopen(self.url, timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        else:
            raise SimError(f"nginx did not serve {self.url} within 10 s; see {directory}/error.log.")
        # The probe's own request is not the fleet's: everything before this offset is skipped.
        self.access_log_start = os.path.getsize(self.access_log)
        log(f"nginx (pid {self.nginx.pid}) serves {self.url}")

    def resolve_user(self):
        name = self.args.user
        if name is None:
            name = "nobody" if os.geteuid() == 0 else ""
        if not name:
            return
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise SimError(f"there is no user '{name}'; pass --user with an existing user (or your own).")
        if entry.pw_uid != os.geteuid() and os.geteuid() != 0:
            raise SimError(f"only root can run the installs as '{name}'; drop --user.")
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.user_name = name

    def sample_load(self):
        """Once a second: the machine's busy share and runnable processes (/proc/stat), to tell
        a burst of requests the fleet made from one a starved machine made (ticks delayed, then
        all at once)."""
        def read():
            with open("/proc/stat") as handle:
                lines = handle.read().splitlines()
            fields = [int(x) for x in lines[0].split()[1:]]
            running = next((int(l.split()[1]) for l in lines if l.startswith("procs_running")), 0)
            return sum(fields), fields[3] + fields[4], running
        previous = read()
        while not self.sampling.wait(1.0):
            current = read()
            total, idle = current[0] - previous[0], current[1] - previous[1]
            self.load.append((time.time(), (total - idle) / total if total else 0.0, current[2]))
            previous = current

    def start_installs(self):
        count = self.args.installs
        threading.Thread(target=self.sample_load, daemon=True).start()
        base = os.path.join(self.work, "installs")
        launcher = os.path.join(self.bundle, "bin", "launcher")
        spread = self.args.spread_over if self.args.start == "spread" else 0.0
        uid, gid = self.uid, self.gid

        def child_setup():
            os.setsid()
            if uid is not None and uid != os.geteuid():
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
            # After the user change (which clears it): the kernel kills the launcher if this
            # script dies without cleaning up; the launcher's own child follows it (docs/supervise.md).
            LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

        log(f"starting {count} installs ({'together' if spread == 0 else f'spread over {spread:g} s'})")
        first = time.monotonic()
        for index in range(count):
            self.check_cap()
            if spread > 0:
                due = first + spread * index / count
                while time.monotonic() < due:
                    self.check_cap()
                    time.sleep(min(0.2, max(0, due - time.monotonic())))
            directory = os.path.join(base, f"{index:04d}")
            state = os.path.join(directory, "state")
            os.makedirs(state)
            if uid is not None:
                os.chown(directory, uid, gid)
                os.chown(state, uid, gid)
            env = {"PATH": "/usr/bin:/bin", "HOME": directory, "SWITCHBACK_STATE_DIR": state}
            errors = open(os.path.join(directory, "launcher.err"), "w")
            if uid is not None:
                os.fchown(errors.fileno(), uid, gid)
            try:
                popen = subprocess.Popen([launcher, "serve" if self.args.app == "serve" else "hang"], cwd=directory, env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=errors, preexec_fn=child_setup)
            finally:
                errors.close()
            self.installs.append({"index": index, "dir": directory, "state": state, "popen": popen,
                                  "started": time.monotonic()})
        self.start_seconds = time.monotonic() - first
        self.run_zero = first
        log(f"started {count} launchers in {self.start_seconds:.1f} s")

    # --- observation ----------------------------------------------------------------

    def supervisor_record(self, install):
        return read_key_values(os.path.join(install["state"], "supervisor"))

    def serving(self, install, slot):
        record = self.supervisor_record(install)
        return bool(record) and record.get("child_slot") == slot and record.get("child_ready") == "true" \
            and "candidate_pid" not in record

    def decided(self, install, rollback):
        record = read_key_values(os.path.join(install["state"], "state"))
        return bool(record) and record.get("rollback") == ("true" if rollback else "false")

    def wait_until_ready(self, limit):
        """Waits for every install's child to serve the current slot (or the limit)."""
        deadline = time.monotonic() + limit
        pending = list(self.installs)
        while pending and time.monotonic() < deadline:
            self.check_cap()
            pending = [i for i in pending if not self.serving(i, "current")]
            if pending:
                time.sleep(0.5)
        ready = len(self.installs) - len(pending)
        self.figures["ready_after_start_s"] = round(time.monotonic() - self.run_zero, 1)
        self.figures["ready_installs"] = ready
        dead = [i for i in self.installs if i["popen"].poll() is not None]
        self.figures["exited_launchers"] = len(dead)
        log(f"{ready} of {len(self.installs)} installs serve the current slot "
            f"{self.figures['ready_after_start_s']:.1f} s after the first start; {len(dead)} launchers exited")

    def fleet_pids(self):
        """(supervisor pids, child pids) of the running installs."""
        supervisors, children = [], []
        for install in self.installs:
            if install["popen"].poll() is None:
                supervisors.append(install["popen"].pid)
                record = self.supervisor_record(install)
                if record and record.get("child_pid", "").isdigit():
                    children.append(int(record["child_pid"]))
        return supervisors, children

    @staticmethod
    def pss_kib(pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as handle:
                values = {}
                for line in handle:
                    parts = line.split()
                    if len(parts) >= 3 and parts[0] in ("Pss:", "Rss:"):
                        values[parts[0][:-1]] = int(parts[1])
                return values
        except OSError:
            return None

    @staticmethod
    def cpu_ticks(pid):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            return None

    @staticmethod
    def machine_ticks():
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields), idle

    def measure_resources(self, window):
        supervisors, children = self.fleet_pids()
        memory = {"supervisor": [self.pss_kib(p) for p in supervisors], "child": [self.pss_kib(p) for p in children]}
        figures = {}
        for kind, values in memory.items():
            values = [v for v in values if v]
            if values:
                figures[f"{kind}_pss_kib_mean"] = round(sum(v["Pss"] for v in values) / len(values))
                figures[f"{kind}_rss_kib_mean"] = round(sum(v["Rss"] for v in values) / len(values))
                figures[f"{kind}_pss_kib_total"] = sum(v["Pss"] for v in values)
                figures[f"{kind}_count"] = len(values)
        with open("/proc/meminfo") as handle:
            meminfo = {line.split(":")[0]: int(line.split()[1]) for line in handle}
        figures["machine_mem_available_kib"] = meminfo.get("MemAvailable")
        figures["machine_mem_total_kib"] = meminfo.get("MemTotal")
        # CPU over a window: the fleet's own processes, and the whole machine (which other
        # people's work shares).
        hz = os.sysconf("SC_CLK_TCK")
        pids = supervisors + children
        before = {p: self.cpu_ticks(p) for p in pids}
        machine_before = self.machine_ticks()
        start = time.monotonic()
        self.sleep(window)
        elapsed = time.monotonic() - start
        after = {p: self.cpu_ticks(p) for p in pids}
        machine_after = self.machine_ticks()
        used = {"supervisor": 0, "child": 0}
        for kind, group in (("supervisor", supervisors), ("child", children)):
            for p in group:
                if before.get(p) is not None and after.get(p) is not None:
                    used[kind] += after[p] - before[p]
        figures["cpu_window_s"] = round(elapsed, 1)
        figures["supervisors_cpu_percent_of_core"] = round(100 * used["supervisor"] / hz / elapsed, 1)
        figures["children_cpu_percent_of_core"] = round(100 * used["child"] / hz / elapsed, 1)
        total = machine_after[0] - machine_before[0]
        idle = machine_after[1] - machine_before[1]
        figures["machine_busy_percent"] = round(100 * (total - idle) / total, 1) if total else None
        figures["cores"] = os.cpu_count()
        self.figures["resources"] = figures
        log(f"memory and CPU measured over {elapsed:.0f} s: {json.dumps(figures)}")

    def observe_convergence(self):
        args = self.args
        self.publish(2, "previous", f"fleet-sim: roll back {self.current_version}")
        self.published = time.monotonic()
        self.published_wall = time.time()
        log(f"published the rollback (serial 2) at +{self.published - self.run_zero:.1f} s; polling {len(self.installs)} state directories")
        decided, serving = {}, {}
        deadline = self.published + args.observe
        # Two small files per install per round: every 0.25 s, slower for big fleets so that
        # this loop does not take the CPU the fleet needs (1,000 installs: every 0.5 s).
        period = max(0.25, len(self.installs) / 2000)
        self.figures["poll_period_s"] = period
        while time.monotonic() < deadline:
            self.check_cap()
            now = time.monotonic()
            for install in self.installs:
                index = install["index"]
                if index not in decided and self.decided(install, True):
                    decided[index] = now - self.published
                if index not in serving and self.serving(install, "previous"):
                    serving[index] = now - self.published
            if len(serving) == len(self.installs) and len(decided) == len(self.installs):
                break
            time.sleep(max(0.0, period - (time.monotonic() - now)))
        self.observed_until = time.monotonic()
        log(f"{len(decided)} installs decided, {len(serving)} serve the previous slot "
            f"{self.observed_until - self.published:.1f} s after the publication")
        if len(serving) == len(self.installs):
            self.sleep(args.tail)
        self.ended = time.monotonic()
        self.ended_wall = time.time()
        count = len(self.installs)
        for name, times in (("decided", decided), ("serving", serving)):
            ordered = sorted(times.values())
            self.figures[f"converged_{name}"] = {
                "count": len(ordered),
                **{f"p{int(f * 100)}_s": (round(t, 1) if (t := percentile_time(ordered, count, f)) is not None else None)
                   for f in (0.5, 0.9, 0.99, 1.0)},
                "first_s": round(ordered[0], 1) if ordered else None,
            }

    def read_requests(self):
        """Requests per 1-second window, from the fleet's first request to the end of the run."""
        statuses, stamps = {}, []
        with open(self.access_log, "rb") as handle:
            handle.seek(self.access_log_start)
            for line in handle:
                parts = line.split()
                if len(parts) < 2:
                    continue
                try:
                    stamp = float(parts[0])
                except ValueError:
                    continue
                status = parts[1].decode()
                statuses[status] = statuses.get(status, 0) + 1
                stamps.append(stamp)
        total = len(stamps)
        figures = {"total": total, "status_200": statuses.get("200", 0), "status_304": statuses.get("304", 0),
                   "other_statuses": {k: v for k, v in statuses.items() if k not in ("200", "304")}}
        if not stamps:
            self.figures["requests"] = figures
            return
        first = min(stamps)
        end = max(self.ended_wall, max(stamps))
        windows = [0] * (int(end - first) + 1)
        for stamp in stamps:
            windows[int(stamp - first)] += 1
        seconds = len(windows)
        peak = max(windows)
        figures.update({
            "run_seconds": seconds,
            "peak_per_s": peak,
            "peak_at_s": windows.index(peak),
            "mean_per_s": round(total / seconds, 2),
            "peak_over_mean": round(peak / (total / seconds), 2),
            "seconds_with_requests": sum(1 for w in windows if w),
        })
        # The same after the fleet settled (from one interval before the publication): the
        # steady state the acceptance bound is about, without the start-up burst.
        steady_from = self.published_wall - self.args.interval
        steady = [w for i, w in enumerate(windows) if first + i >= steady_from]
        if steady:
            steady_total = sum(steady)
            figures["steady"] = {
                "from_s_before_publication": self.args.interval,
                "seconds": len(steady), "total": steady_total, "peak_per_s": max(steady),
                "mean_per_s": round(steady_total / len(steady), 2),
                "peak_over_mean": round(max(steady) / (steady_total / len(steady)), 2) if steady_total else None,
                "seconds_with_requests": sum(1 for w in steady if w),
            }
        # The machine around the busiest seconds of the settled window: a second preceded by a
        # saturated machine is a catch-up of delayed ticks, not the fleet's own schedule.
        if figures.get("steady") and self.load:
            steady_load = [(t, busy, running) for t, busy, running in self.load if t >= steady_from]
            saturated = sum(1 for _, busy, _ in steady_load if busy >= 0.95)
            busiest = sorted(((w, first + i) for i, w in enumerate(windows) if first + i >= steady_from), reverse=True)[:3]
            before = []
            for count, at in busiest:
                near = [(busy, running) for t, busy, running in self.load if at - 5 <= t < at + 1]
                before.append({"requests": count, "at_s": round(at - first),
                               "busy_5s_before": round(sum(b for b, _ in near) / len(near), 2) if near else None,
                               "max_runnable": max((r for _, r in near), default=None)})
            figures["steady"]["machine_saturated_seconds"] = saturated
            figures["steady"]["machine_sampled_seconds"] = len(steady_load)
            figures["steady"]["busiest_seconds"] = before
        # A coarse timeline: requests per 5 seconds from the first request.
        figures["per_5s"] = [sum(windows[i:i + 5]) for i in range(0, seconds, 5)]
        self.figures["requests"] = figures

    def read_outcomes(self):
        outcomes = {}
        unreadable = 0
        for install in self.installs:
            record = read_key_values(os.path.join(install["state"], "remote"))
            if record is None:
                unreadable += 1
                continue
            key = record.get("outcome", "?") + (f"/{record['code']}" if record.get("code") else "")
            outcomes[key] = outcomes.get(key, 0) + 1
        self.figures["last_check_outcomes"] = outcomes
        self.figures["installs_without_remote_record"] = unreadable
        # The supervisor's stderr: a switch says what it does; anything else (a crash, a
        # failed start, an error) is counted, and the first such line kept as an example.
        expected = ("the persisted choice now selects", "is ready (", "a signed remote directive rolled back from it")
        troubled, example = 0, None
        for install in self.installs:
            try:
                with open(os.path.join(install["dir"], "launcher.err"), errors="replace") as handle:
                    lines = [line.strip() for line in handle if line.strip() and not any(e in line for e in expected)]
            except OSError:
                continue
            if lines:
                troubled += 1
                example = example or f"{install['index']:04d}: {lines[0][:300]}"
        self.figures["installs_with_unexpected_stderr"] = troubled
        self.figures["unexpected_stderr_example"] = example

    def read_fleet_view(self):
        if not self.metrics_dir:
            self.figures["fleet_view"] = "not available: this scripts/bundle has no --metrics-dir (no .prom export yet)"
            return
        files = [f for f in os.listdir(self.metrics_dir) if f.endswith(".prom")]
        port = free_port()
        errors = open(os.path.join(self.work, "node-exporter.log"), "w")
        self.exporter = subprocess.Popen(
            ["/usr/bin/prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={self.metrics_dir}", f"--web.listen-address=127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=errors, stderr=errors, start_new_session=True)
        errors.close()
        body = None
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and body is None:
            if self.exporter.poll() is not None:
                raise SimError(f"prometheus-node-exporter exited with {self.exporter.returncode}; see {self.work}/node-exporter.log.")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                    body = response.read().decode("utf-8", "replace")
            except OSError:
                time.sleep(0.2)
        if body is None:
            raise SimError(f"prometheus-node-exporter did not answer on 127.0.0.1:{port} within 15 s.")
        self.figures["fleet_view"] = summarise_metrics(body, len(files))

    # --- cleanup --------------------------------------------------------------------

    def cleanup(self):
        self.sampling.set()
        running = [i["popen"] for i in self.installs if i["popen"].poll() is None]
        for popen in running:
            try:
                os.killpg(popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for popen in running:
            try:
                popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for popen in running:
            if popen.poll() is None:
                try:
                    os.killpg(popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                popen.wait()
        # The launchers' own process groups may hold a child that outlived its supervisor.
        for install in self.installs:
            try:
                os.killpg(install["popen"].pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        # Detached syncs (rollbackctl-remote sync --background, in their own sessions) name
        # their state directory, which is inside the work directory: stopped by pid.
        if self.work:
            marker = (os.path.join(self.work, "installs") + "/").encode()
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) == os.getpid():
                    continue
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as handle:
                        if marker in handle.read():
                            os.kill(int(entry), signal.SIGKILL)
                except (OSError, ProcessLookupError):
                    pass
        for process in (self.exporter, self.nginx):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            if process is not None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)  # nginx's worker
                except (ProcessLookupError, PermissionError):
                    pass
        if self.work and not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        elif self.work:
            log(f"kept {self.work}")


def filesystem_type(path):
    """The type of the filesystem holding `path` (the longest mount point above it)."""
    best, kind = "", "?"
    with open("/proc/mounts") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) >= 3 and (path == fields[1] or path.startswith(fields[1].rstrip("/") + "/")) \
                    and len(fields[1]) >= len(best):
                best, kind = fields[1], fields[2]
    return kind


def summarise_metrics(body, files):
    """The fleet view from node_exporter's /metrics text: for each switchback_* metric, how many
    installs have each (label set, value) once the per-install labels are dropped; for
    timestamps, the oldest and newest. The same as `count by (...)` in PromQL."""
    view = {"prom_files": files, "series": {}}
    errors = [line for line in body.splitlines() if line.startswith("node_textfile_scrape_error")]
    view["node_textfile_scrape_error"] = errors[0].split()[-1] if errors else None
    now = time.time()
    for line in body.splitlines():
        if line.startswith("#") or not line.startswith("switchback_"):
            continue
        name, brace, rest = line.partition("{")
        if brace:
            labels, _, value = rest.rpartition("}")
        else:
            name, labels, value = line.split()[0], "", line.split()[-1]
        value = value.strip()
        entry = view["series"].setdefault(name, {"series": 0, "by_labels": {}})
        entry["series"] += 1
        kept = ",".join(part for part in split_labels(labels)
                        if not part.startswith(("install=", "install_id=", "instance=", "state_dir=", "app_id=", "build=")))
        if name.endswith("_timestamp_seconds"):
            try:
                age = now - float(value)
            except ValueError:
                continue
            entry["oldest_age_s"] = round(max(entry.get("oldest_age_s", age), age), 1)
            entry["newest_age_s"] = round(min(entry.get("newest_age_s", age), age), 1)
            continue
        key = f"{{{kept}}} {value}" if kept else value
        entry["by_labels"][key] = entry["by_labels"].get(key, 0) + 1
    return view


def split_labels(labels):
    parts, current, quoted = [], "", False
    for char in labels:
        if char == '"' and not current.endswith("\\"):
            quoted = not quoted
        if char == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    if current:
        parts.append(current)
    return parts


def fmt_s(value):
    return "never" if value is None else f"{value:.1f} s"


def report(fleet):
    args, f = fleet.args, fleet.figures
    out = []
    out.append(f"Fleet simulation: {args.installs} supervised installs, remote.interval_s={args.interval}, "
               f"started {args.start}{'' if args.start == 'together' else f' over {args.spread_over:g} s'}, "
               f"children: {'the sample server (launcher serve)' if args.app == 'serve' else 'the sample asleep (launcher hang, ready by probe)'}")
    out.append(f"  bundle {fleet.app_id} {fleet.current_version} build {fleet.commit} (previous {fleet.previous_version}); "
               f"directive {fleet.url}; installs run as {getattr(fleet, 'user_name', 'this user')}; "
               f"state directories on {fleet.work_fs}")
    out.append(f"Start: {args.installs} launchers in {fleet.start_seconds:.1f} s; {f.get('ready_installs')} serving "
               f"{f.get('ready_after_start_s')} s after the first start; {f.get('exited_launchers')} launchers exited")
    r = f.get("resources", {})
    if r:
        sup, child = r.get("supervisor_pss_kib_mean"), r.get("child_pss_kib_mean")
        per_install = (sup or 0) + (child or 0)
        out.append(f"Memory (PSS, /proc/PID/smaps_rollup): supervisor {kib(sup)}, child {kib(child)}, "
                   f"one install {kib(per_install)}; fleet {kib((r.get('supervisor_pss_kib_total') or 0) + (r.get('child_pss_kib_total') or 0))} "
                   f"(RSS: supervisor {kib(r.get('supervisor_rss_kib_mean'))}, child {kib(r.get('child_rss_kib_mean'))}); "
                   f"machine: {kib(r.get('machine_mem_available_kib'))} available of {kib(r.get('machine_mem_total_kib'))}")
        out.append(f"CPU while settled ({r.get('cpu_window_s')} s): supervisors {r.get('supervisors_cpu_percent_of_core')}% "
                   f"of one core, children {r.get('children_cpu_percent_of_core')}%; whole machine "
                   f"{r.get('machine_busy_percent')}% busy of {r.get('cores')} cores (other users included)")
    out.append(f"Publication: serial 2 (run_previous) at +{fleet.published - fleet.run_zero:.1f} s after the first start")
    for name, title in (("decided", "decided (state file: rollback=true)"),
                        ("serving", "serving the previous slot (supervisor: child ready)")):
        c = f.get(f"converged_{name}", {})
        out.append(f"Converged, {title}: {c.get('count')} of {args.installs}; first {fmt_s(c.get('first_s'))}, "
                   f"50% {fmt_s(c.get('p50_s'))}, 90% {fmt_s(c.get('p90_s'))}, 99% {fmt_s(c.get('p99_s'))}, "
                   f"100% {fmt_s(c.get('p100_s'))}")
    q = f.get("requests", {})
    out.append(f"Requests (nginx access log): {q.get('total')} in {q.get('run_seconds')} s: {q.get('status_200')} x 200, "
               f"{q.get('status_304')} x 304, others {q.get('other_statuses') or 'none'}")
    if q.get("total"):
        out.append(f"  whole run: peak {q['peak_per_s']}/s (1-second window, at +{q['peak_at_s']} s), mean {q['mean_per_s']}/s, "
                   f"peak/mean {q['peak_over_mean']}; {q['seconds_with_requests']} of {q['run_seconds']} seconds saw a request")
        s = q.get("steady")
        if s:
            out.append(f"  from one interval before the publication ({s['seconds']} s): peak {s['peak_per_s']}/s, "
                       f"mean {s['mean_per_s']}/s, peak/mean {s['peak_over_mean']}; "
                       f"{s['seconds_with_requests']} of {s['seconds']} seconds saw a request")
        if s and "busiest_seconds" in s:
            out.append(f"  the machine in that window: at least 95% busy in {s['machine_saturated_seconds']} of "
                       f"{s['machine_sampled_seconds']} seconds; the busiest seconds: "
                       + "; ".join(f"{b['requests']} at +{b['at_s']} s (machine {round(100 * b['busy_5s_before']) if b['busy_5s_before'] is not None else '?'}% "
                                   f"busy over the 5 s before, up to {b['max_runnable']} runnable)" for b in s["busiest_seconds"]))
        out.append("  requests per 5 s: " + " ".join(str(n) for n in q["per_5s"]))
    out.append(f"Installs' last check: {f.get('last_check_outcomes')}; no remote record: {f.get('installs_without_remote_record')}; "
               f"installs whose supervisor reported more than the switch: {f.get('installs_with_unexpected_stderr')}"
               + (f" (e.g. {f['unexpected_stderr_example']})" if f.get("unexpected_stderr_example") else ""))
    view = f.get("fleet_view")
    if isinstance(view, str):
        out.append(f"Fleet view (node_exporter): {view}")
    elif view:
        out.append(f"Fleet view (prometheus-node-exporter, textfile collector): {view['prom_files']} .prom files; "
                   f"node_textfile_scrape_error {view['node_textfile_scrape_error']}")
        out.append("  installs per (labels) value, as count by (...) would give; timestamps as ages:")
        for name, entry in sorted(view["series"].items()):
            if "oldest_age_s" in entry:
                out.append(f"  {name}: {entry['series']} series, ages {entry['newest_age_s']}..{entry['oldest_age_s']} s")
                continue
            # A labelled 0/1 flag says the same in its 1s: its 0s are left out.
            groups = sorted(((k, n) for k, n in entry["by_labels"].items() if not (k.startswith("{") and k.endswith("} 0"))),
                            key=lambda kv: (-kv[1], kv[0]))
            shown = ("; ".join(f"{k}: {n}" for k, n in groups[:6]) + ("; ..." if len(groups) > 6 else "")) \
                or f"0 for every install ({entry['series']} series)"
            out.append(f"  {name}: {shown}")
    c99 = f.get("converged_decided", {}).get("p99_s")
    bound = 1.2 * args.interval
    out.append(f"Acceptance (issue 14): 99% converged within 1.2 x interval ({bound:g} s): "
               f"{'yes' if c99 is not None and c99 <= bound else 'no'} ({fmt_s(c99)}); "
               + (f"peak at most twice the mean (steady window): {'yes' if q['steady']['peak_over_mean'] is not None and q['steady']['peak_over_mean'] <= 2 else 'no'} "
                  f"({q['steady']['peak_over_mean']})" if q.get("steady") else "peak/mean: no requests"))
    print("\n".join(out), flush=True)


def kib(value):
    if value is None:
        return "?"
    if value >= 1024 * 1024:
        return f"{value / 1024 / 1024:.2f} GiB"
    if value >= 1024:
        return f"{value / 1024:.1f} MiB"
    return f"{value} KiB"


def parse_arguments(argv):
    parser = argparse.ArgumentParser(prog="scripts/fleet-sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, usage=argparse.SUPPRESS,
                                     add_help=False)
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("--installs", type=int, default=1000)
    parser.add_argument("--interval", type=int, default=60)
    parser.add_argument("--start", choices=("together", "spread"), default="together")
    parser.add_argument("--spread-over", type=float)
    parser.add_argument("--settle", type=float)
    parser.add_argument("--observe", type=float)
    parser.add_argument("--tail", type=float, default=5)
    parser.add_argument("--duration", type=float)
    parser.add_argument("--user")
    parser.add_argument("--app", choices=("serve", "idle"), default="serve")
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.error = lambda message: usage_error(message[0].upper() + message[1:] + ".")
    args = parser.parse_args(argv)
    if args.help:
        print(__doc__.strip())
        sys.exit(0)
    if args.installs < 1:
        usage_error("--installs needs at least 1 install.")
    if args.interval < 1:
        usage_error("--interval needs a whole number of seconds of at least 1.")
    for name in ("spread_over", "settle", "observe", "duration"):
        value = getattr(args, name)
        if value is not None and value < 0:
            usage_error(f"--{name.replace('_', '-')} needs a number of seconds of at least 0.")
    if args.tail < 0:
        usage_error("--tail needs a number of seconds of at least 0.")
    if args.spread_over is None:
        args.spread_over = float(args.interval)
    if args.settle is None:
        args.settle = 2.0 * args.interval
    if args.observe is None:
        args.observe = 3.0 * args.interval
    if args.duration is None:
        args.duration = (args.spread_over if args.start == "spread" else 0) + args.settle + args.observe + args.tail + 120
    return args


def usage_error(message):
    print(f"Error: {message}\nUsage: scripts/fleet-sim [--installs N] [--interval S] [--start together|spread] "
          f"[--duration S] [--keep] ...\nSee 'scripts/fleet-sim --help'.", file=sys.stderr)
    sys.exit(64)


def main(argv):
    args = parse_arguments(argv)
    fleet = Fleet(args)

    def on_signal(number, frame):
        raise Interrupted("interrupted by " + signal.Signals(number).name)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    status = 0
    try:
        fleet.resolve_user()
        fleet.make_workdir()
        fleet.build()
        fleet.publish(1, "current", "fleet-sim: steady state")
        fleet.start_nginx()
        fleet.hard_deadline = time.monotonic() + args.duration
        fleet.start_installs()
        fleet.wait_until_ready(max(30.0, args.settle))
        remaining = args.settle - (time.monotonic() - fleet.installs[-1]["started"])
        window = min(10.0, max(2.0, remaining / 2))
        fleet.measure_resources(window)
        fleet.sleep(max(0.0, args.settle - (time.monotonic() - fleet.installs[-1]["started"])))
        fleet.observe_convergence()
        fleet.read_fleet_view()
        fleet.read_requests()
        fleet.read_outcomes()
        report(fleet)
        if args.json:
            with open(args.json, "w") as handle:
                run = {"build": fleet.commit, "app_id": fleet.app_id, "current_version": fleet.current_version,
                       "work_filesystem": fleet.work_fs, "start_seconds": round(fleet.start_seconds, 1),
                       "published_after_start_s": round(fleet.published - fleet.run_zero, 1),
                       "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(fleet.published_wall - (fleet.published - fleet.run_zero)))}
                json.dump({"options": {k: v for k, v in vars(args).items() if k != "help"}, "run": run, "figures": fleet.figures},
                          handle, indent=2)
    except SimError as error:
        print(f"Error: {error}", file=sys.stderr)
        status = 1
    except Interrupted as stop:
        print(f"Error: the simulation stopped early: {stop.why}; every process it started is being stopped.", file=sys.stderr)
        status = 130 if "interrupted" in stop.why else 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        fleet.cleanup()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
