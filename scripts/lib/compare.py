#!/usr/bin/env python3
"""Alternating hyperfine comparisons for scripts/bench.

Each spec is "name|command A|command B (or empty)|targets[|VAR=value;VAR=value]": the
optional last field sets environment variables for that comparison. Targets are a comma list of
ratio<=X (median A / median B), added_ms<=X (median A - median B) and median_ms<=X (A).
For each spec, `rounds` rounds run hyperfine on A and B with `runs` runs each, swapping
the order every round. The medians of A and B are taken over all runs pooled; the ratio and
the added time are the medians, over the rounds, of each round's own ratio and difference
(A and B of one round ran seconds apart, so drift on a shared machine cancels out).
"""
import argparse, json, os, statistics, subprocess, sys

def hyperfine(commands, runs, export, env):
    args = ["hyperfine", "-N", "--style", "none", "--warmup", "10", "--runs", str(runs), "--export-json", export]
    subprocess.run(args + commands, check=True, stdout=subprocess.DEVNULL, env=env)
    with open(export) as f:
        return [r["times"] for r in json.load(f)["results"]]

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--out", required=True)
    p.add_argument("specs", nargs="+")
    a = p.parse_args()
    failed = False
    rows = []
    for spec in a.specs:
        name, cmd_a, cmd_b, targets, *extra = spec.split("|")
        env = dict(os.environ)
        for assignment in filter(None, (extra[0] if extra else "").split(";")):
            key, value = assignment.split("=", 1)
            env[key] = value
        pooled_a, pooled_b = [], []
        round_ratios, round_added = [], []
        for r in range(a.rounds):
            order = [cmd_a, cmd_b] if cmd_b else [cmd_a]
            if cmd_b and r % 2:
                order.reverse()
            times = hyperfine(order, a.runs, os.path.join(a.out, "hyperfine.json"), env)
            by_cmd = dict(zip(order, times))
            for cmd, t in by_cmd.items():
                (pooled_a if cmd == cmd_a else pooled_b).extend(t)
            if cmd_b:
                ma, mb = statistics.median(by_cmd[cmd_a]), statistics.median(by_cmd[cmd_b])
                round_ratios.append(ma / mb)
                round_added.append((ma - mb) * 1000)
        med_a = statistics.median(pooled_a) * 1000
        row = {"name": name, "a_ms": med_a, "n": len(pooled_a)}
        if pooled_b:
            med_b = statistics.median(pooled_b) * 1000
            row.update(b_ms=med_b, ratio=statistics.median(round_ratios), added_ms=statistics.median(round_added))
        row["median_ms"] = med_a
        verdicts = []
        for target in filter(None, targets.split(",")):
            key, limit = target.split("<=")
            ok = row[key] <= float(limit)
            failed |= not ok
            verdicts.append(f"{key} {row[key]:.3f} <= {limit}: {'ok' if ok else 'MISSED'}")
        row["verdicts"] = verdicts
        rows.append(row)
    print(f"{'comparison':<44} {'A median':>10} {'B median':>10} {'ratio':>7} {'added':>9}  runs/side")
    for row in rows:
        b = f"{row['b_ms']:.2f} ms" if "b_ms" in row else "-"
        ratio = f"{row['ratio']:.3f}" if "ratio" in row else "-"
        added = f"{row['added_ms']:+.2f} ms" if "added_ms" in row else "-"
        print(f"{row['name']:<44} {row['a_ms']:>7.2f} ms {b:>10} {ratio:>7} {added:>9}  {row['n']}")
    for row in rows:
        for v in row["verdicts"]:
            print(f"  {row['name']}: {v}")
    sys.exit(1 if failed else 0)

if __name__ == "__main__":
    main()
