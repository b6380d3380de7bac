#!/usr/bin/env python3
"""Where a big solve's memory goes, from its `solve --trace-memory` file.

Usage: benches/memory_fit.py TRACE [--label TEXT] [--min-states N] [--project STATES RATIO]

TRACE has a row per phase of an age (`pass age states afterstates phase peak_bytes
resident_bytes seconds`): one a forward age, five a backward age, each the process's peak
resident bytes during the phase (the kernel's peak is reset after each). Prints markdown:

- the whole-run peak and where it came;
- the peaks of the largest age's phases;
- per phase, a least-squares fit over the ages of at least N states (default 2^22, where the
  value tables are perfect hashes as on the big boards) of
    backward: peak = c + a * (S(n) + S(n+2)) + b * A(n)
    forward:  peak = c + a * (S(n) + S(n+2) + S(n+4))
  in MB and millions of (after)states (S states, A afterstates of an age); points more than
  120 MB above a first fit (a transient: something of another age still held) are left out
  of the second fit and listed;
- each fit at a largest age of STATES states with its neighbours alike and RATIO afterstates
  a state (default 4x3's: 297,784,736 states, Kaneko & Yamashita Fig. 1, and 0.6416, the
  ratio of the published totals).

Only the standard library (no numpy): the normal equations are solved by elimination.
"""

import argparse
import collections
import csv
import sys

MB = 1e6
TRANSIENT_MB = 120


def solve_normal(rows, ys):
    """Least squares: the coefficients c minimising |rows · c - ys|."""
    n = len(rows[0])
    a = [
        [sum(r[i] * r[j] for r in rows) for j in range(n)]
        + [sum(r[i] * y for r, y in zip(rows, ys))]
        for i in range(n)
    ]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(a[r][i]))
        a[i], a[p] = a[p], a[i]
        if a[i][i] == 0:
            raise ValueError("the ages do not vary enough to fit")
        for r in range(n):
            if r != i:
                f = a[r][i] / a[i][i]
                a[r] = [x - f * z for x, z in zip(a[r], a[i])]
    return [a[i][n] / a[i][i] for i in range(n)]


def robust_fit(points):
    """(coefficients, kept points, dropped points) of [(row, y, tag)]."""
    rows = [p[0] for p in points]
    ys = [p[1] for p in points]
    c = solve_normal(rows, ys)
    pred = lambda r: sum(x * y for x, y in zip(c, r))
    keep = [p for p in points if p[1] - pred(p[0]) < TRANSIENT_MB]
    dropped = [(p, p[1] - pred(p[0])) for p in points if p[1] - pred(p[0]) >= TRANSIENT_MB]
    c = solve_normal([p[0] for p in keep], [p[1] for p in keep])
    return c, keep, dropped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--label", default="")
    ap.add_argument("--min-states", type=int, default=1 << 22)
    ap.add_argument("--project", nargs=2, type=float, default=[297_784_736, 0.6416])
    args = ap.parse_args()

    states, afters = {}, {}
    forward = {}
    backward = collections.defaultdict(dict)
    # The backward pass's phases in the order the trace gives them (the solver names them).
    phases = []
    with open(args.trace, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            age = int(r["age"])
            peak = int(r["peak_bytes"]) / MB
            if r["pass"] == "forward":
                states[age] = int(r["states"])
                afters[age] = int(r["afterstates"])
                forward[age] = peak
            else:
                states.setdefault(age, int(r["states"]))
                afters.setdefault(age, int(r["afterstates"]))
                backward[age][r["phase"]] = peak
                if r["phase"] not in phases:
                    phases.append(r["phase"])
    if not forward and not backward:
        sys.exit(f"{args.trace}: no rows")
    S = lambda a: states.get(a, 0) / MB
    A = lambda a: afters.get(a, 0) / MB

    print(f"# Memory by phase{': ' + args.label if args.label else ''}\n")
    print(f"Written by `benches/memory_fit.py` from `{args.trace}`. MB = 10^6 bytes; peaks are")
    print("the process's resident peak during each phase (`solve --trace-memory`).\n")

    everything = [(p, "forward", a, "made") for a, p in forward.items()] + [
        (p, "backward", a, ph) for a, phs in backward.items() for ph, p in phs.items()
    ]
    top = max(everything)
    print(f"Whole-run peak: **{top[0]:,.0f} MB**, {top[1]} pass, age {top[2]} "
          f"({states.get(top[2], 0):,} states), phase \"{top[3]}\".\n")

    big = max(states, key=lambda a: (states[a], a))
    print(f"## The largest age: {big} ({states[big]:,} states, {afters[big]:,} afterstates)\n")
    print("| pass, phase | peak MB |\n|---|---:|")
    if big in forward:
        print(f"| forward, made | {forward[big]:,.0f} |")
    for ph in phases:
        if ph in backward.get(big, {}):
            print(f"| backward, {ph} | {backward[big][ph]:,.0f} |")

    target, ratio = args.project
    print(f"\n## Fits over the ages of {args.min_states:,} states or more\n")
    print("S: states of an age in millions, A: afterstates. Backward: peak = c + a·(S(n) + "
          "S(n+2)) + b·A(n); forward: peak = c + a·(S(n) + S(n+2) + S(n+4)).\n")
    print("| pass, phase | ages | c MB | a MB/M | b MB/M | largest residual MB | "
          f"at {target / 1e6:,.1f} M states MB | GiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    transients = []
    # An age whose ages n + 2 and n + 4 are not in the trace (a solve stopped early) is left out.
    fages = [a for a in forward if states[a] >= args.min_states and a + 4 in forward]
    if len(fages) >= 3:
        pts = [((1.0, S(a) + S(a + 2) + S(a + 4)), forward[a], (a, "made")) for a in fages]
        c, keep, dropped = robust_fit(pts)
        res = max(abs(p[1] - c[0] - c[1] * p[0][1]) for p in keep)
        at = c[0] + c[1] * 3 * target / MB
        print(f"| forward, made | {len(keep)} | {c[0]:,.0f} | {c[1]:.2f} | | {res:.0f} | "
              f"{at:,.0f} | {at * MB / 2**30:.1f} |")
        transients += [("forward", p[2], e) for p, e in dropped]
    bages = sorted(a for a in backward if states[a] >= args.min_states and a + 2 in states)
    for ph in phases:
        ages = [a for a in bages if ph in backward[a]]
        if len(ages) < 4:
            continue
        pts = [((1.0, S(a) + S(a + 2), A(a)), backward[a][ph], (a, ph)) for a in ages]
        c, keep, dropped = robust_fit(pts)
        res = max(abs(p[1] - sum(x * y for x, y in zip(c, p[0]))) for p in keep)
        at = c[0] + c[1] * 2 * target / MB + c[2] * ratio * target / MB
        print(f"| backward, {ph} | {len(keep)} | {c[0]:,.0f} | {c[1]:.2f} | {c[2]:.2f} | "
              f"{res:.0f} | {at:,.0f} | {at * MB / 2**30:.1f} |")
        transients += [("backward", p[2], e) for p, e in dropped]
    print(f"\nProjection: a largest age of {target:,.0f} states, its neighbours alike, "
          f"{ratio} afterstates a state.\n")
    if transients:
        print(f"Left out of the fits ({TRANSIENT_MB} MB or more above the first fit):\n")
        for pas, (a, ph), e in sorted(transients, key=lambda t: -t[2]):
            print(f"- {pas} age {a}, \"{ph}\": {e:,.0f} MB above")
    else:
        print(f"No age peaked {TRANSIENT_MB} MB or more above its fit.")


if __name__ == "__main__":
    main()
