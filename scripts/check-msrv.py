#!/usr/bin/env python3
"""Each workspace crate's declared `rust-version` must be at least the newest one that
any crate in its normal and build dependency tree declares (what a user compiling it
needs). Fails naming the crate, the version it needs and the dependency that needs it;
`--print` lists what each crate needs."""
import json, subprocess, sys

def version_key(v):
    parts = [int(x) for x in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))

meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--format-version", "1"], check=True, capture_output=True, text=True
).stdout)
by_id = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}

def closure(root):
    seen, stack = set(), [root]
    while stack:
        pid = stack.pop()
        for dep in nodes[pid]["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if kinds & {None, "build"} and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                stack.append(dep["pkg"])
    return seen

failed = False
for pid in meta["workspace_members"]:
    pkg = by_id[pid]
    need, why = "1.0", None
    for dep in closure(pid):
        rv = by_id[dep].get("rust_version")
        if rv and version_key(rv) > version_key(need):
            need, why = rv, by_id[dep]["name"]
    declared = pkg.get("rust_version") or "none"
    ok = declared != "none" and version_key(declared) >= version_key(need)
    if "--print" in sys.argv or not ok:
        print(f"{pkg['name']}: declares {declared}, its dependencies need {need} ({why})")
    failed |= not ok
if failed:
    sys.exit("a crate declares a rust-version older than its dependencies need")
print("every crate's rust-version covers its dependency tree")
