#!/usr/bin/env python3
"""The ratios of bench/cli/run.sh, and `agui apply` against the reference's
`defaultApplyEvents` on the corpus's first 5,000 events, measured interleaved: each
round runs every command once, in turn, so that a machine whose speed drifts (a shared
one) slows both sides of a ratio alike. Reports each command's median and minimum wall
time over the rounds and the ratios reference ÷ agui of the medians.

    bench/cli/interleaved.py [--rounds 15]

Run bench/cli/run.sh once first: it builds `agui`, writes the corpus (data/) and links
the reference packages; this script reuses them (AGUI_BIN names another binary).
"""
import argparse, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    agui = os.environ.get("AGUI_BIN", os.path.join(ROOT, "target", "release", "agui"))
    sse, pb = os.path.join(HERE, "data", "events.sse"), os.path.join(HERE, "data", "events.pb")
    if not (os.path.exists(agui) and os.path.exists(sse) and os.path.exists(pb)):
        sys.exit("run bench/cli/run.sh first (it builds agui and writes data/)")
    env = {**os.environ, "NODE_PATH": os.path.join(ROOT, "interop", "node_modules")}
    # `apply`: the first 5,000 events of the corpus (the reference reducer copies the
    # conversation on every event, so the whole corpus would take it many minutes).
    apply_sse = os.path.join(HERE, "data", "apply.sse")
    if not os.path.exists(apply_sse):
        with open(os.path.join(HERE, "data", "events.jsonl"), "rb") as f:
            head = b"".join(line for _, line in zip(range(5000), f))
        with open(apply_sse, "wb") as out:
            subprocess.run([agui, "encode", "--to", "sse", "-"], input=head, stdout=out, check=True)
    pairs = [
        ("decode --from sse", [agui, "decode", "--from", "sse", sse], ["node", "ref-cli.mjs", "decode", "sse", sse]),
        ("verify --from sse", [agui, "verify", "--from", "sse", sse], ["node", "ref-cli.mjs", "verify", "sse", sse]),
        ("decode --from proto", [agui, "decode", "--from", "proto", pb], ["node", "ref-cli.mjs", "decode", "proto", pb]),
        ("apply --from sse (5,000 events)", [agui, "apply", "--from", "sse", apply_sse],
         ["node", "ref-cli.mjs", "apply", "sse", apply_sse]),
    ]
    times = {(name, side): [] for name, _, _ in pairs for side in ("agui", "reference")}

    def run(cmd):
        t = time.perf_counter()
        r = subprocess.run(cmd, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} exited with {r.returncode}")
        return time.perf_counter() - t

    for name, ours, theirs in pairs:  # warm-up
        run(ours), run(theirs)
    for _ in range(a.rounds):
        for name, ours, theirs in pairs:
            times[(name, "agui")].append(run(ours))
            times[(name, "reference")].append(run(theirs))
    lines = [f"`bench/cli/interleaved.py --rounds {a.rounds}`: wall time, median (minimum) in ms", "",
             "| command | agui | reference | reference ÷ agui (medians) |", "|---|---:|---:|---:|"]
    for name, _, _ in pairs:
        o, t = times[(name, "agui")], times[(name, "reference")]
        lines.append(f"| {name} | {statistics.median(o) * 1e3:.1f} ({min(o) * 1e3:.1f}) | "
                     f"{statistics.median(t) * 1e3:.1f} ({min(t) * 1e3:.1f}) | "
                     f"{statistics.median(t) / statistics.median(o):.1f}× |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    open(os.path.join(HERE, "data", "last-interleaved.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
