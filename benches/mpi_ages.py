#!/usr/bin/env python3
"""Bytes the processes of a solve over MPI sent each other, age by age, from their
`solve --trace-memory FILE` traces (process R writes FILE.R; its last column is the bytes it
has sent so far).

    benches/mpi_ages.py FILE NP [--top F]

Prints a row an age and pass (age, boards of the age over every process, bytes sent by all
of them during it, bytes a board), then, over the ages holding the top fraction F (default
0.5) of the boards, the median bytes a board of each pass, and how evenly the parts split
the ages (from the forward rows, so a job stopped once its forward pass is done will do):
`lockstep` is the sum over the ages of the fullest part's boards over the sum of the mean
part's, as benches/mpi_balance.sql computes it from a finished solve's files. The forward pass's bytes of age n
are those sent between its row and the one before (routing its afterstates); the backward
pass's, those sent during its five phases (the values asked of others and answered).
"""
import argparse
import csv
import statistics


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def per_age(rows):
    """{(pass, age): (boards this process holds, bytes sent during it)}."""
    out = {}
    last = 0
    for r in rows:
        sent = int(r["sent_bytes"])
        key = (r["pass"], int(r["age"]))
        boards = int(r["states"]) + int(r["afterstates"])
        b, s = out.get(key, (0, 0))
        # The forward row is the age's only one; the backward has five, of equal counts.
        out[key] = (boards, s + sent - last)
        last = sent
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("np", type=int)
    ap.add_argument("--top", type=float, default=0.5)
    args = ap.parse_args()
    total = {}
    split = {}
    for rank in range(args.np):
        for key, (boards, sent) in per_age(rows_of(f"{args.trace}.{rank}")).items():
            if key[0] == "forward":
                split.setdefault(key[1], []).append(boards)
            b, s = total.get(key, (0, 0))
            total[key] = (b + boards, s + sent)
    print("pass\tage\tboards\tbytes\tbytes_per_board")
    for (p, age), (boards, sent) in sorted(total.items(), key=lambda kv: (kv[0][0] != "forward", kv[0][1])):
        print(f"{p}\t{age}\t{boards}\t{sent}\t{sent / boards if boards else 0:.2f}")
    for p in ("forward", "backward"):
        ages = sorted(((b, s) for (q, _), (b, s) in total.items() if q == p and b), reverse=True)
        whole = sum(b for b, _ in ages)
        kept, held = [], 0
        for b, s in ages:
            if held >= args.top * whole:
                break
            kept.append(s / b)
            held += b
        if not kept:
            continue
        print(f"# {p}: {len(kept)} ages hold {args.top:.0%} of the boards; bytes a board "
              f"there: median {statistics.median(kept):.2f}, {min(kept):.2f} to {max(kept):.2f}; "
              f"whole pass {sum(s for _, s in ages) / whole:.2f}")

    big = max(sum(b) for b in split.values()) / 10
    fullest = sum(max(b) for b in split.values())
    mean = sum(sum(b) / args.np for b in split.values())
    worst = max(max(b) * args.np / sum(b) for b in split.values() if sum(b) >= big)
    print(f"# split over {args.np} parts: lockstep {fullest / mean:.3f}, worst of the big ages "
          f"{worst:.3f}")


if __name__ == "__main__":
    main()
