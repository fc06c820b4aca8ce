#!/usr/bin/env python3
"""Time to the first HTTP 200: a server started through the launcher against the same server
as a plain executable, the two sides alternated run by run in one process.

    first-response.py --runs N --target-ratio X --target-added-ms Y \
        --a NAME '[VAR=value ...] COMMAND {port}' --b NAME '[VAR=value ...] COMMAND {port}' \
        [--c NAME '[VAR=value ...] COMMAND {port}'] [--port PORT]

Each iteration starts side A and side B once (the order swapped every iteration), each on a
fresh loopback port: the clock starts just before the process is spawned and stops when a
`GET /` on 127.0.0.1 first answers `HTTP/1.1 200`; then the server gets SIGTERM and is
waited for. The ratio and the added time are medians of per-iteration values (the two sides
of one iteration ran within a second of each other), with 95% bootstrap intervals.
Exits 1 when the ratio's target is missed (or, given --target-added-ms, when both are).
A third side (--c) runs in the same rotation and A against it is reported, not judged.
With --port every run uses that one port (for servers whose configuration names it, as a
bake window's HTTP check does); the runs never overlap, each server is gone before the next.
"""
import argparse, os, random, shlex, signal, socket, statistics, subprocess, sys, time

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def first_ok(port, deadline):
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    while time.perf_counter() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(request)
                head = s.recv(64)
                if head.startswith(b"HTTP/1.1 200"):
                    return time.perf_counter()
        except OSError:
            time.sleep(0.0002)
    return None

def run_once(command, fixed_port=None):
    port = fixed_port or free_port()
    args = shlex.split(command.format(port=port))
    # Leading NAME=value words set the environment of this side only, as in a shell.
    env = dict(os.environ)
    while args and "=" in args[0] and not args[0].startswith("/"):
        name, value = args.pop(0).split("=", 1)
        env[name] = value
    start = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    ready = first_ok(port, start + 60)
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if ready is None:
        sys.exit(f"first-response: {args[0]} never answered 200 on port {port} within 60 s")
    return (ready - start) * 1000

def interval(values, statistic=statistics.median, samples=2000):
    rng = random.Random(7)
    estimates = sorted(statistic([rng.choice(values) for _ in values]) for _ in range(samples))
    return estimates[int(samples * 0.025)], estimates[int(samples * 0.975)]

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--target-ratio", type=float, default=1.05)
    p.add_argument("--target-added-ms", type=float, default=None)
    p.add_argument("--a", nargs=2, metavar=("NAME", "COMMAND"), required=True)
    p.add_argument("--b", nargs=2, metavar=("NAME", "COMMAND"), required=True)
    p.add_argument("--c", nargs=2, metavar=("NAME", "COMMAND"))
    p.add_argument("--port", type=int, default=None)
    a = p.parse_args()
    sides = [a.a, a.b] + ([a.c] if a.c else [])
    for _ in range(a.warmup):
        for side in sides:
            run_once(side[1], a.port)
    times = [[] for _ in sides]
    for i in range(a.runs):
        # Every order of the sides in turn, so that none always runs first or after another.
        order = list(range(len(sides)))
        order = order[i % len(order):] + order[:i % len(order)]
        if (i // len(order)) % 2:
            order.reverse()
        for index in order:
            times[index].append(run_once(sides[index][1], a.port))
    print(f"time to the first HTTP 200, {a.runs} runs per side, alternated:")
    for side, values in zip(sides, times):
        print(f"  {side[0]:<44} median {statistics.median(values):7.2f} ms")

    def compare(other):
        ratios = [x / y for x, y in zip(times[0], times[other])]
        added = [x - y for x, y in zip(times[0], times[other])]
        return statistics.median(ratios), interval(ratios), statistics.median(added), interval(added)

    ratio, (rlo, rhi), plus, (alo, ahi) = compare(1)
    print(f"  {a.a[0]} vs {a.b[0]}:")
    print(f"  ratio  {ratio:.3f}  (95% interval {rlo:.3f} to {rhi:.3f}; target <= {a.target_ratio})")
    if a.target_added_ms is None:
        print(f"  added  {plus:+.2f} ms  (95% interval {alo:+.2f} to {ahi:+.2f} ms)")
        ok = ratio <= a.target_ratio
        print(f"  {'ok' if ok else 'MISSED'}: ratio <= {a.target_ratio}")
    else:
        print(f"  added  {plus:+.2f} ms  (95% interval {alo:+.2f} to {ahi:+.2f} ms; target <= {a.target_added_ms} ms)")
        ok = ratio <= a.target_ratio or plus <= a.target_added_ms
        print(f"  {'ok' if ok else 'MISSED'}: ratio <= {a.target_ratio} or added <= {a.target_added_ms} ms")
    if a.c:
        ratio, (rlo, rhi), plus, (alo, ahi) = compare(2)
        print(f"  {a.a[0]} vs {a.c[0]} (reported, not judged):")
        print(f"  ratio  {ratio:.3f}  (95% interval {rlo:.3f} to {rhi:.3f})")
        print(f"  added  {plus:+.2f} ms  (95% interval {alo:+.2f} to {ahi:+.2f} ms)")
    sys.exit(0 if ok else 1)

if __name__ == "__main__":
    main()
