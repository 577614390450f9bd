#!/usr/bin/env python3
"""Checks that the top-level modules of a crate import one another without a cycle.

For each crate named on the command line (default: the server, the core and the CLI),
every `crate::NAME` path in a top-level module's files (the module's file, or its
directory) is an edge from that module to `NAME`. Paths inside `#[cfg(test)]` test
modules (a `mod tests` block or a `tests/` file) are not counted: a test may reach
anywhere. Prints each cycle found and exits 1 if there is one.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT = ["agui-sdk-server", "agui-sdk-core", "agui-sdk-cli"]
PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
USE_GROUP = re.compile(r"\buse\s+crate::\{([^;]*)\};", re.S)


def strip_tests(text):
    """The text without `#[cfg(test)] mod NAME { ... }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    pattern = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    return "".join(out)


def modules(src):
    """Top-level module name -> its files (tests excluded)."""
    mods = {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if entry in ("lib.rs", "main.rs"):
            continue
        if entry.endswith(".rs"):
            mods.setdefault(entry[:-3], []).append(path)
        elif os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = [d for d in dirnames if d != "tests"]
                for f in filenames:
                    if f.endswith(".rs") and f != "tests.rs":
                        mods.setdefault(entry, []).append(os.path.join(dirpath, f))
    return mods


def edges(mods):
    graph = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            text = strip_tests(open(f, encoding="utf-8").read())
            names = set(PATH.findall(text))
            for group in USE_GROUP.findall(text):
                names.update(re.findall(r"(?:^|[,{]\s*)([a-z_][a-z0-9_]*)", group))
            for n in names:
                if n in graph and n != m:
                    graph[m].add(n)
    return graph


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    crates = sys.argv[1:] or DEFAULT
    failed = False
    for crate in crates:
        graph = edges(modules(os.path.join(ROOT, "crates", crate, "src")))
        found = cycles(graph)
        for comp in found:
            failed = True
            inner = {m: sorted(n for n in graph[m] if n in comp) for m in comp}
            detail = "; ".join(f"{m} -> {', '.join(ns)}" for m, ns in inner.items())
            print(f"{crate}: import cycle among {', '.join(comp)} ({detail})")
        if not found:
            print(f"{crate}: no import cycle among {len(graph)} top-level modules")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
