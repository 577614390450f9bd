#!/usr/bin/env python3
"""Two `agui` builds against each other on bench/cli's corpus, interleaved: each round
runs every command with both binaries in turn, so that a machine whose speed drifts
slows both alike. Prints each command's median (minimum) wall time and after ÷ before.

    bench/cli/ab.py BEFORE_AGUI AFTER_AGUI [--rounds 30]

Run bench/cli/run.sh (or interleaved.py, for data/apply.sse) once first: it writes data/.
"""
import argparse, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("--rounds must be at least 1")
    data = os.path.join(HERE, "data")
    cmds = [
        ("decode --from sse", ["decode", "--from", "sse", os.path.join(data, "events.sse")]),
        ("verify --from sse", ["verify", "--from", "sse", os.path.join(data, "events.sse")]),
        ("decode --from proto", ["decode", "--from", "proto", os.path.join(data, "events.pb")]),
        ("apply --from sse (5,000 events)", ["apply", "--from", "sse", os.path.join(data, "apply.sse")]),
    ]
    for _, c in cmds:
        if not os.path.exists(c[-1]):
            sys.exit(f"{c[-1]} is missing: run bench/cli/run.sh and interleaved.py first")
    bins = {"before": a.before, "after": a.after}
    times = {(n, k): [] for n, _ in cmds for k in bins}
    for _ in range(a.rounds):
        for n, c in cmds:
            for k, b in bins.items():
                t = time.perf_counter()
                subprocess.run([b] + c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                times[(n, k)].append(time.perf_counter() - t)
    print(f"`bench/cli/ab.py --rounds {a.rounds}`: wall time, median (minimum) in ms\n")
    print("| command | before | after | after ÷ before |\n|---|---:|---:|---:|")
    for n, _ in cmds:
        b, f = times[(n, "before")], times[(n, "after")]
        mb, mf = statistics.median(b) * 1e3, statistics.median(f) * 1e3
        print(f"| {n} | {mb:.1f} ({min(b) * 1e3:.1f}) | {mf:.1f} ({min(f) * 1e3:.1f}) | {mf / mb:.2f} |")


if __name__ == "__main__":
    main()
