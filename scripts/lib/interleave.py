#!/usr/bin/env python3
"""Interleaved comparisons for scripts/bench: every side once per iteration, hundreds of
iterations, medians with 95% intervals.

Each spec is "name|command A|command B (or empty)|targets[|VAR=value;VAR=value[|VAR=value]]";
the fifth field sets environment variables for that comparison, a sixth for B alone. Targets
are a comma list of ratio<=X (median of the per-iteration ratios A/B), ratio_low<=X (the lower
end of that median's 95% interval: ratio_low<=1 holds unless A is measurably slower than B),
added_ms<=X (median of the per-iteration differences A-B) and median_ms<=X (median of A).

An iteration runs A and B once each, back to back, the order swapped every iteration, so
the drift of a shared machine (other jobs, frequency changes) hits both sides of one
iteration alike and cancels in its ratio. Each run is os.posix_spawn, then waitpid; the clock
is read just before the spawn and just after the wait (the same few microseconds of
Python on both sides). stdout and stderr go to /dev/null. The intervals are percentile
bootstrap intervals of the median (2,000 resamples).
"""
import argparse, os, random, shlex, statistics, sys, time

def run(argv, env, devnull):
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[
        (os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status = os.waitpid(pid, 0)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if status != 0:
        sys.exit(f"interleave: {' '.join(argv)} failed (wait status {status})")
    return elapsed

def interval(values, samples=2000):
    rng = random.Random(11)
    n = len(values)
    estimates = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(samples))
    return estimates[int(samples * 0.025)], estimates[int(samples * 0.975) - 1]

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iterations", type=int, default=400)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("specs", nargs="+")
    a = p.parse_args()
    devnull = os.open(os.devnull, os.O_RDWR)
    failed = False
    rows = []
    for spec in a.specs:
        name, cmd_a, cmd_b, targets, *extra = spec.split("|")
        env = dict(os.environ)
        for assignment in filter(None, (extra[0] if extra else "").split(";")):
            key, value = assignment.split("=", 1)
            env[key] = value
        # A sixth field: assignments for B only (over the fifth's).
        env_b = dict(env)
        for assignment in filter(None, (extra[1] if len(extra) > 1 else "").split(";")):
            key, value = assignment.split("=", 1)
            env_b[key] = value
        argv_a, argv_b = shlex.split(cmd_a), shlex.split(cmd_b) if cmd_b else None
        for _ in range(a.warmup):
            run(argv_a, env, devnull)
            if argv_b: run(argv_b, env_b, devnull)
        times_a, times_b, ratios, added = [], [], [], []
        for i in range(a.iterations):
            if argv_b and i % 2:
                tb = run(argv_b, env_b, devnull); ta = run(argv_a, env, devnull)
            else:
                ta = run(argv_a, env, devnull); tb = run(argv_b, env_b, devnull) if argv_b else None
            times_a.append(ta)
            if tb is not None:
                times_b.append(tb); ratios.append(ta / tb); added.append(ta - tb)
        row = {"name": name, "median_ms": statistics.median(times_a), "median_ci": interval(times_a)}
        if argv_b:
            row.update(b_ms=statistics.median(times_b), ratio=statistics.median(ratios), ratio_ci=interval(ratios),
                       added_ms=statistics.median(added), added_ci=interval(added))
            # The ratio interval's lower end: at most 1 when A is not measurably slower than B.
            row["ratio_low"] = row["ratio_ci"][0]
        verdicts = []
        for target in filter(None, targets.split(",")):
            key, limit = target.split("<=")
            ok = row[key] <= float(limit)
            failed |= not ok
            verdicts.append(f"{key} {row[key]:.3f} <= {limit}: {'ok' if ok else 'MISSED'}")
        row["verdicts"] = verdicts
        rows.append(row)
        print_row(row, a.iterations)
        sys.stdout.flush()
    print()
    for row in rows:
        for v in row["verdicts"]:
            print(f"  {row['name']}: {v}")
    sys.exit(1 if failed else 0)

def print_row(row, n):
    lo, hi = row["median_ci"]
    line = f"{row['name']}: A {row['median_ms']:.3f} ms [{lo:.3f}, {hi:.3f}]"
    if "ratio" in row:
        rlo, rhi = row["ratio_ci"]; alo, ahi = row["added_ci"]
        line += (f", B {row['b_ms']:.3f} ms; ratio {row['ratio']:.3f} [{rlo:.3f}, {rhi:.3f}],"
                 f" added {row['added_ms']:+.3f} ms [{alo:+.3f}, {ahi:+.3f}]")
    print(line + f"  ({n} iterations, 95% intervals)")

if __name__ == "__main__":
    main()
