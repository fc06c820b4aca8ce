#!/usr/bin/env python3
"""What a bake window (issue 27) costs, on the sample's supervised HTTP server (`serve --http`,
release 1.3.0 of the release fixture, whose both slots serve HTTP):

    bake-window.py --bundle DIR --work DIR [--runs N] [--window S] [--cpu-runs N] [--target-ratio X]

1. Time to the first HTTP 200 of the same bundle with and without `analysis.*` settings
   (three checks: HTTP on the app, the app's 5xx ratio through a real Prometheus scraping its
   /metrics, the app's own signal), alternated run by run by scripts/lib/first-response.py
   on one port (the HTTP check names it). Each side has its own state directory in steady
   state; the side with analysis has its probation record removed before every start, so
   every start puts the build on probation and spawns the analyzer, as a release does.
2. CPU time (utime + stime from /proc/PID/stat, clock ticks) during a whole window of S
   seconds with the three checks (probes every 500 ms, measurements every 10 s): of the
   supervisor, of the analyzer (`rollbackctl-remote analyze`, sampled until its verdict), and
   of the app's child; against the supervisor and the child over the same S seconds of the
   same bundle without analysis.
Exits 1 when the first-response ratio's target is missed, 2 when the setup fails.
"""
import argparse, os, shutil, signal, socket, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TICK = os.sysconf("SC_CLK_TCK")
ERROR_RATIO = ('sum(rate(sample_http_responses_total{code=~"5..",version="$version"}[30s])) / '
               'sum(rate(sample_http_responses_total{version="$version"}[30s]))')

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def answers(port, path="/", timeout=2):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False

def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    sys.exit(f"bake-window: {what} within {seconds} s")

def cpu_ticks(pid):
    """utime + stime of a live process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None

def children(pid):
    """(pid, argv) of the live children of pid (argv: the supervisor spawns through
    /proc/self/fd, so the command name says nothing)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
            if int(text.rsplit(")", 1)[1].split()[1]) != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            continue
        found.append((int(entry), argv))
    return found

def probation_state(state):
    """The state= of the probation record, or None."""
    try:
        with open(os.path.join(state, "probation")) as f:
            return next((line.strip()[len("state="):] for line in f if line.startswith("state=")), None)
    except OSError:
        return None

def bundle_copy(source, target, settings):
    """A copy of the bundle whose manifest has `settings` instead of its own values of those
    keys (the first value of a key is the one read)."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    path = os.path.join(target, "manifest")
    keys = {key for key, _ in settings}
    with open(path) as f:
        lines = [line for line in f if line.split("=", 1)[0] not in keys]
    with open(path, "w") as f:
        f.writelines(lines + [f"{key}={value}\n" for key, value in settings])

def analysis_settings(port, prometheus_port, window):
    return [
        ("analysis.window_s", str(window)), ("analysis.interval_s", "10"),
        ("analysis.checks", "http,errors,app"),
        ("analysis.check.http.kind", "http"), ("analysis.check.http.url", f"http://127.0.0.1:{port}/"),
        ("analysis.check.http.probe_interval_ms", "500"), ("analysis.check.http.latency_limit_ms", "250"),
        ("analysis.check.errors.kind", "prometheus"), ("analysis.check.errors.address", f"http://127.0.0.1:{prometheus_port}"),
        ("analysis.check.errors.query", ERROR_RATIO), ("analysis.check.errors.success", "result[0] < 0.05"),
        ("analysis.check.app.kind", "app"), ("analysis.check.app.max_failures", "10"),
    ]

def start_prometheus(work, port, prometheus_port):
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 5s\nscrape_configs:\n  - job_name: sample\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
    log = open(os.path.join(work, "prometheus.log"), "w")
    process = subprocess.Popen(["/usr/bin/prometheus", f"--config.file={work}/prometheus.yml",
                                f"--storage.tsdb.path={work}/prometheus-data", f"--web.listen-address=127.0.0.1:{prometheus_port}",
                                "--log.level=warn"], stdout=log, stderr=log)
    wait_for(lambda: answers(prometheus_port, "/-/ready"), 30, "Prometheus did not get ready")
    return process

def supervised(bundle, state, port):
    env = dict(os.environ, SWITCHBACK_STATE_DIR=state)
    return subprocess.Popen([f"{bundle}/bin/launcher", "serve", "--http", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

def window_cpu(bundle, state, port, window, with_analysis):
    """CPU ticks of the supervisor, the analyzer and the app's child over one window."""
    if with_analysis:
        try:
            os.remove(os.path.join(state, "probation"))
        except FileNotFoundError:
            pass
    launcher = supervised(bundle, state, port)
    try:
        wait_for(lambda: answers(port), 60, "the supervised sample did not answer")
        app = [pid for pid, argv in children(launcher.pid) if "serve" in argv]
        supervisor_start, app_start = cpu_ticks(launcher.pid), cpu_ticks(app[0]) if app else None
        analyzer, analyzer_ticks = None, 0
        started = time.monotonic()
        deadline = started + window + 15
        while time.monotonic() < deadline:
            if with_analysis:
                if analyzer is None:
                    found = [pid for pid, argv in children(launcher.pid) if "analyze" in argv]
                    analyzer = found[0] if found else None
                if analyzer is not None:
                    ticks = cpu_ticks(analyzer)
                    if ticks is None:
                        break  # its verdict given, it exited
                    analyzer_ticks = ticks
            elif time.monotonic() - started >= window:
                break
            time.sleep(0.1)
        elapsed = time.monotonic() - started
        supervisor = cpu_ticks(launcher.pid) - supervisor_start
        child = (cpu_ticks(app[0]) - app_start) if app and cpu_ticks(app[0]) is not None else None
        return elapsed, supervisor, analyzer_ticks if with_analysis else None, child, probation_state(state) if with_analysis else None
    finally:
        stop(launcher)

def ms(ticks):
    return ticks * 1000 / TICK

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bundle", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--window", type=int, default=30)
    p.add_argument("--cpu-runs", type=int, default=3)
    p.add_argument("--target-ratio", type=float, default=1.02)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    port, prometheus_port = free_port(), free_port()
    plain, judged = os.path.join(a.work, "bundle-plain"), os.path.join(a.work, "bundle-analysis")
    bundle_copy(a.bundle, plain, [("supervise", "true")])
    # A window far longer than the runs: every start's probation is under way when it is stopped.
    bundle_copy(a.bundle, judged, [("supervise", "true")] + analysis_settings(port, prometheus_port, 3600))
    prometheus = start_prometheus(a.work, port, prometheus_port)
    status = 0
    try:
        plain_state, judged_state = os.path.join(a.work, "state-plain"), os.path.join(a.work, "state-analysis")
        serve = "serve --http 127.0.0.1:{port}"
        result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/lib/first-response.py"), "--runs", str(a.runs),
                                 "--target-ratio", str(a.target_ratio), "--port", str(port),
                                 "--a", "supervised, a bake window with 3 checks",
                                 f"sh -c 'rm -f {judged_state}/probation; SWITCHBACK_STATE_DIR={judged_state} exec {judged}/bin/launcher {serve}'",
                                 "--b", "supervised, no analysis settings",
                                 f"sh -c 'rm -f {plain_state}/probation; SWITCHBACK_STATE_DIR={plain_state} exec {plain}/bin/launcher {serve}'"])
        status = result.returncode

        # CPU over whole windows.
        bundle_copy(a.bundle, judged, [("supervise", "true")] + analysis_settings(port, prometheus_port, a.window))
        print(f"CPU time over a {a.window} s bake window with 3 checks (HTTP probe every 500 ms, measurements every 10 s), "
              f"{a.cpu_runs} runs per side, alternated (clock tick {1000 / TICK:.0f} ms):")
        rows = {"with": [], "without": []}
        for i in range(a.cpu_runs):
            for side in (["with", "without"] if i % 2 == 0 else ["without", "with"]):
                if side == "with":
                    rows[side].append(window_cpu(judged, judged_state, port, a.window, True))
                else:
                    rows[side].append(window_cpu(plain, plain_state, port, a.window, False))
        for elapsed, supervisor, analyzer, child, verdict in rows["with"]:
            print(f"  with analysis:    {elapsed:5.1f} s, supervisor {ms(supervisor):6.0f} ms, analyzer {ms(analyzer):6.0f} ms "
                  f"({ms(analyzer) / elapsed / 10:.2f}% of a core), app child {ms(child or 0):6.0f} ms; probation {verdict}")
        for elapsed, supervisor, _, child, _ in rows["without"]:
            print(f"  without analysis: {elapsed:5.1f} s, supervisor {ms(supervisor):6.0f} ms, app child {ms(child or 0):6.0f} ms")
        sup_with = statistics.median(ms(r[1]) for r in rows["with"])
        sup_without = statistics.median(ms(r[1]) for r in rows["without"])
        analyzer = statistics.median(ms(r[2]) for r in rows["with"])
        print(f"  median: supervisor {sup_with:.0f} ms with, {sup_without:.0f} ms without; analyzer {analyzer:.0f} ms "
              f"per {a.window} s window ({analyzer / a.window / 10:.2f}% of a core)")
    finally:
        prometheus.kill()
        prometheus.wait()
    sys.exit(status)

if __name__ == "__main__":
    main()
