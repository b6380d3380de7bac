#!/usr/bin/env python3
"""The policy layout's bits against the entropy of what it stores (reports/bench/policy.md).

Usage: benches/policy_bits.py MANIFEST.json ...   (manifests of policy solves, with or
without --reach; the symbol counts each age's policy entry records were counted over every
state of the age, reached or not)

Prints, in Markdown: per solve the share of live states with 1, 2, 3, 4 valid moves and with
tied optimal moves; the conditional entropy of the stored symbol under each scheme (the raw
move; the rank of the first optimal move among the valid ones under each rule of
rules::order, ties resolved to the smallest rank), per state of the whole space; the unary
code's bits and the files' bits; and for reach solves the states reached and their bits.
"""
import json
import math
import sys

FULL_4X3 = 1_152_817_492_752


def entropy_rows(rows):
    """H(symbol | row), summed over the rows (bits in all)."""
    h = 0.0
    for r in rows:
        t = sum(r)
        for c in r:
            if c:
                h -= c * math.log2(c / t)
    return h


def entropy_flat(rows):
    col = [sum(r[c] for r in rows) for c in range(4)]
    t = sum(col)
    return -sum(c * math.log2(c / t) for c in col if c)


def unary(rows):
    """Bits of the unary code cut short by the valid moves (rows: 2, 3, 4 moves)."""
    two, three, four = rows
    return (sum(two) + three[0] + 2 * (three[1] + three[2])
            + four[0] + 2 * four[1] + 3 * (four[2] + four[3]))


def load(path):
    m = json.load(open(path))
    by_moves = [0] * 5
    tied = 0
    first = [[0] * 4 for _ in range(3)]
    ranks = {}
    for a in m["ages"]:
        s = (a.get("policy") or {}).get("symbols")
        if not s:
            continue
        for i, x in enumerate(s["by_moves"]):
            by_moves[i] += x
        tied += s["tied"]
        for r in range(3):
            for c in range(4):
                first[r][c] += s["first"][r][c]
        for k, v in s["ranks"].items():
            acc = ranks.setdefault(k, [[0] * 4 for _ in range(3)])
            for r in range(3):
                for c in range(4):
                    acc[r][c] += v[r][c]
    policy = sum(a.get("policy", {}).get("file_bytes", 0) for a in m["ages"])
    total = sum(f["bytes"] for f in m["files"])
    reached = sum(a.get("n_reached", 0) for a in m["ages"])
    order = next((a["policy"].get("order") for a in m["ages"] if a.get("policy", {}).get("order")), "")
    return dict(m=m, by_moves=by_moves, tied=tied, first=first, ranks=ranks,
                policy=policy, total=total, reached=reached, order=order,
                reach=m["storage"].get("reach", False))


def main(paths):
    solves = [load(p) for p in paths]
    print("| board | variant | states | live | 1 / 2 / 3 / 4 moves (of live) | tied (of live) "
          "| H(move) | H(move \\| m) | log2 m | " + " | ".join(
              f"H(rank \\| m) {o}" for o in sorted(solves[0]["ranks"])) + " |")
    print("|---" * (9 + len(solves[0]["ranks"])) + "|")
    for d in solves:
        if d["reach"]:
            continue
        m, n = d["m"], d["m"]["n_states"]
        bm = d["by_moves"]
        live = sum(bm[1:])
        per = lambda bits: f"{bits / n:.4f}"
        logm = sum(bm[i] * math.log2(i) for i in range(2, 5))
        cells = [m["board"], m["variant"], f"{n:,}", f"{live / n:.3f}",
                 " / ".join(f"{bm[i] / live:.3f}" for i in range(1, 5)),
                 f"{d['tied'] / live:.3f}",
                 per(entropy_flat(d["first"])), per(entropy_rows(d["first"])), per(logm)]
        cells += [per(entropy_rows(d["ranks"][o])) for o in sorted(d["ranks"])]
        print("| " + " | ".join(cells) + " |")
    print()
    print("| board | variant | layout | order | states | unary bits | H(rank \\| m) of the order "
          "| policy files | all files | reached | bits a reached state | full 4x3 at these bits |")
    print("|---" * 12 + "|")
    for d in solves:
        m, n = d["m"], d["m"]["n_states"]
        o = d["order"]
        rows = d["ranks"].get(o)
        layout = "policy --reach" if d["reach"] else "policy"
        bits = d["total"] * 8 / n
        cells = [m["board"], m["variant"], layout, o, f"{n:,}",
                 f"{unary(rows) / n:.4f}" if rows and not d["reach"] else "—",
                 f"{entropy_rows(rows) / n:.4f}" if rows and not d["reach"] else "—",
                 f"{d['policy'] * 8 / n:.4f}", f"{bits:.4f}",
                 f"{d['reached'] / n:.3f}" if d["reach"] else "—",
                 f"{d['policy'] * 8 / d['reached']:.4f}" if d["reach"] else "—",
                 f"{bits * FULL_4X3 / 8 / 2**30:.0f} GiB"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
