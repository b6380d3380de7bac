#!/usr/bin/env python3
"""Writes reports/bench/scale.md from reports/bench/scale.tsv (called by benches/scale.sh).

The table is every measured big solve. The projections below it scale the measured rates and
bytes of the biggest solve measured to boards too big for this machine, and print every input
next to the result, so that a reader can redo the arithmetic or disagree with an assumption.
"""
import csv
import os
import sys

rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))


def boards(r):
    return int(r["states"]) + int(r["afterstates"])


def rate(r, s):
    """(after)states per second per core of a pass that took `s` seconds, in millions."""
    th = max(1, int(r["threads"]))
    return boards(r) / float(s) / th / 1e6 if float(s) >= 1 else None


def n(x):
    return f"{x:,.0f}"


print("# Big solves\n")
print("Written by `benches/scale.sh` from `reports/bench/scale.tsv` (one row per solve, release")
print("build without the reporting layer, this 2-core machine). Rates are (after)states per")
print("second per core: (states + afterstates) / pass seconds / threads. Output is every file")
print("of the data directory (Parquet, indexes, manifests); work is the peak of `.work/`;")
print("largest age is the most states of one age. A row of several variants solves them in")
print("one pass each way, and its output holds all of them. The processor is recorded since")
print("2026-11-27 (`f26` is AMD's family 26, Zen 5: 1 MiB of L2 a core, 32 MiB of L3); the rows")
print("before it ran on this 2-core kind of machine with another processor (from 2026-11-26 an")
print("EPYC of the Zen 3 family, 512 KiB of L2 a core), and are not to be compared with later")
print("rows as if the code alone had changed.\n")
print("| date | commit | board | variants | threads | wall s | forward s | backward s | states "
      "| afterstates | largest age | fwd M/s/core | bwd M/s/core | peak RSS MB | peak work MB "
      "| output MB | bytes/board out | load | processor |")
print("|" + "---|" * 19)
for r in rows:
    f, b = rate(r, r["forward_s"]), rate(r, r["backward_s"])
    v = r["variants"] + (f" {r['args']}" if r["args"] else "")
    big = r.get("max_age_states") or ""
    print(f"| {r['date']} | {r['commit']} | {r['board']} | {v} | {r['threads']} "
          f"| {float(r['wall_s']):.0f} | {float(r['forward_s']):.0f} "
          f"| {float(r['backward_s']):.0f} | {n(int(r['states']))} | {n(int(r['afterstates']))} "
          f"| {n(int(big)) if big else '—'} | {f'{f:.2f}' if f else '—'} "
          f"| {f'{b:.2f}' if b else '—'} | {r['peak_rss_mb']} | {r['peak_work_mb']} "
          f"| {r['output_mb']} | {int(r['output_mb']) * 2**20 / max(1, boards(r)):.1f} "
          f"| {r['load']} | {r.get('cpu') or '—'} |")

# The basis of a projection: the biggest solve measured on the same board (either orientation),
# else the biggest of any board; one that knows its largest age, one variant, no `--discount`.
# Among equally big solves the latest wins, unless other work took a core's worth of its machine
# (load above threads + 1) and a quieter one exists. Only solves on the processor of the latest
# quiet row (the machine the projections are for) are bases, where it has any: a solve that
# shared its machine is a record, not a rate to scale, while a quiet one exists.
measured = [r for r in rows if r.get("max_age_states") and "," not in r["variants"]
            and "discount" not in r["variants"] + r["args"]]


def is_quiet(r):
    return float(r["load"] or "inf") <= int(r["threads"]) + 1


quiet_rows = [r for r in measured if is_quiet(r)]
here = quiet_rows[-1].get("cpu") if quiet_rows else (rows[-1].get("cpu") if rows else None)
# PROJECT_ON names another processor of the table to project for (e.g. the one whose
# compact solves are the bases, when the latest quiet row's processor has none).
here = os.environ.get("PROJECT_ON") or here
if here and any(r.get("cpu") == here for r in measured):
    measured = [r for r in measured if r.get("cpu") == here]


def compact(r):
    return "--layout compact" in r["args"]


def policy(r):
    return "--layout policy" in r["args"]


def basis_for(shapes, pick=lambda r: True):
    for pool in ([r for r in measured if r["board"] in shapes and pick(r)],
                 [r for r in measured if pick(r)]):
        if pool:
            top = max(boards(r) for r in pool)
            tied = [r for r in pool if boards(r) == top]
            quiet = [r for r in tied if is_quiet(r)]
            return (quiet or tied)[-1]
    return None


if not measured:
    sys.exit(0)
print("\n## Projections\n")
print("Each projection scales the measured rates and bytes of one solve (its basis) to a board")
print("too big to solve here. Assumptions: rates scale linearly with cores (measured on 2 cores")
print("only); memory follows the largest age, because the backward pass holds the tables and")
print("records of a few neighbouring ages: where two solves of the board and layout at one commit")
print("differ enough in their largest age (both of 2^22 states or more, where the value tables")
print("are perfect hashes as on the big boards), the bytes a state of it are their difference over the")
print("difference in states, plus a fixed part (batches and buffers of fixed size), else their")
print("ratio in the basis (which counts the fixed part once a state); every forward layer stays")
print("in `.work/` until the solve ends. Output is projected for both layouts: the full one (Parquet and indexes) from the")
print("bytes a board of a full solve, the compact one (`--layout compact`: afterstate ids and")
print("values, no Parquet) from the bits an afterstate id of a compact solve plus the value")
print("width of the projected variant (an upper bound: each age takes only the bits its largest")
print("value needs). What a peak is made of, phase by phase, and a projection of 4x3's largest")
print("age from a fit over the phases of many ages of one solve (not two whole-run peaks):")
print("`memory.md`.\n")


# States an age from which the backward pass's tables are perfect hashes (`PERFECT_FROM` in
# src/solver/table/mod.rs).
PERFECT_FROM = 1 << 22


def memory_model(shapes, pick):
    """Peak memory as fixed bytes plus bytes a state of the largest age, from two solves of the
    same board (either orientation) and layout at one commit whose largest ages differ by half
    or more (the latest such pair): the slope is what a state of the largest age adds, the rest
    (work batches and buffers of fixed size, the allocator's own) does not grow with the board.
    Both largest ages must hold 2^22 states or more, where the backward pass's value tables are
    perfect hashes as they are on the big boards (smaller layers get open-addressing tables
    of two to three times the bytes an id, which would flatten the slope).
    None if no such pair was measured."""
    pool = [r for r in measured if r["board"] in shapes and pick(r)
            and int(r["max_age_states"]) >= PERFECT_FROM]
    for r in reversed(pool):
        smaller = [q for q in pool if q["commit"] == r["commit"]
                   and int(q["max_age_states"]) * 1.5 <= int(r["max_age_states"])]
        if smaller:
            q = max(smaller, key=lambda q: int(q["max_age_states"]))
            mb = lambda x: int(x["peak_rss_mb"]) * 2**20
            slope = (mb(r) - mb(q)) / (int(r["max_age_states"]) - int(q["max_age_states"]))
            return slope, mb(r) - slope * int(r["max_age_states"]), q, r
    return None


def memory_text(model, largest):
    """The projected peak (GiB) of a model and how it was reached."""
    slope, fixed, q, r = model
    gib = (fixed + slope * largest) / 2**30
    return gib, (f"{slope:.0f} bytes a state of the largest age plus {fixed / 2**20:,.0f} MB, "
                 f"from {q['board']} `{q['variants']}{' ' + q['args'] if q['args'] else ''}` "
                 f"({q['peak_rss_mb']} MB at {n(int(q['max_age_states']))} states) and "
                 f"`{r['variants']}{' ' + r['args'] if r['args'] else ''}` ({r['peak_rss_mb']} MB "
                 f"at {n(int(r['max_age_states']))}), both at {r['commit']}")


def project(title, shapes, states, afterstates, largest, cores, mem_gib, disk_gb, note, targets,
            value_bits, value_why, other_id_bits=None):
    b = basis_for(shapes, lambda r: not compact(r) and not policy(r))
    c = basis_for(shapes, lambda r: compact(r) and r.get("id_bits"))
    fwd, bwd = rate(b, b["forward_s"]), rate(b, b["backward_s"])
    rss_per_state = int(b["peak_rss_mb"]) * 2**20 / int(b["max_age_states"])
    work_bits = int(b["peak_work_mb"]) * 2**20 * 8 / boards(b)
    out_bytes = int(b["output_mb"]) * 2**20 / boards(b)
    if afterstates is None:
        afterstates = round(states * int(b["afterstates"]) / int(b["states"]))
        note += (f"; afterstates estimated at {afterstates / states:.2f} a state, the ratio of "
                 "the basis")
    total = states + afterstates
    tf = total / (fwd * 1e6 * cores) / 3600
    tb = total / (bwd * 1e6 * cores) / 3600
    mem = largest * rss_per_state / 2**30
    full_model = memory_model(shapes, lambda r: not compact(r))
    if full_model:
        mem, mem_why = memory_text(full_model, largest)
    work = total * work_bits / 8 / 1e9
    out = total * out_bytes / 1e9
    print(f"### {title}\n")
    print(f"{cores} cores, {mem_gib} GiB, {disk_gb:,} GB of disk. {n(states)} states + "
          f"{n(afterstates)} afterstates, largest age {n(largest)} states ({note}).\n")
    print(f"Basis: {b['board']} `{b['variants']}` of {b['date']} ({b['commit']}"
          f"{', ' + b['cpu'] if b.get('cpu') else ''}): forward "
          f"{fwd:.2f} M and backward {bwd:.2f} M boards/s/core; peak RSS {rss_per_state:.0f} "
          f"bytes a state of its largest age ({b['peak_rss_mb']} MB over "
          f"{n(int(b['max_age_states']))}); work {work_bits:.1f} bits a board; output "
          f"{out_bytes:.1f} bytes a board.\n")
    if full_model:
        print(f"Peak memory: {mem_why} (the ratio of the basis alone, {rss_per_state:.0f} bytes "
              f"a state, would count the fixed part once a state: "
              f"{largest * rss_per_state / 2**30:.0f} GiB).\n")
    compact_out, mem_c = None, mem
    if c:
        id_bits = float(c["id_bits"])
        compact_out = afterstates * (id_bits + value_bits) / 8 / 1e9
        cf, cb = rate(c, c["forward_s"]), rate(c, c["backward_s"])
        tcf = total / (cf * 1e6 * cores) / 3600
        tcb = total / (cb * 1e6 * cores) / 3600
        c_rss = int(c["peak_rss_mb"]) * 2**20 / int(c["max_age_states"])
        mem_c = largest * c_rss / 2**30
        c_model = memory_model(shapes, lambda r: compact(r))
        c_mem_text = f"its peak RSS, {c_rss:.0f} bytes a state of its largest age, gives {mem_c:.0f} GiB"
        if c_model:
            mem_c, why = memory_text(c_model, largest)
            c_mem_text = f"peak memory {mem_c:.0f} GiB: {why}"
        print(f"Compact layout: {id_bits:.1f} bits an afterstate id, measured on {c['board']} "
              f"`{c['variants']} {c['args']}` of {c['date']} ({c['commit']}), plus "
              f"{value_bits} bits a value ({value_why}). That solve's rates, forward "
              f"{cf:.2f} M and backward {cb:.2f} M boards/s/core (no Parquet to write), give "
              f"{tcf:.1f} h + {tcb:.1f} h = {tcf + tcb:.1f} h; {c_mem_text}.")
        if other_id_bits:
            bits, why = other_id_bits
            o = afterstates * (bits + value_bits) / 8
            print(f"At {bits} bits an id ({why}) the compact output is {o / 1e9:,.0f} GB "
                  f"({o / 2**40:.2f} TiB).")
        print()
    print("| forward h | backward h | total h | peak memory GiB | peak work GB | output GB "
          "| work + output GB | fits | compact output GB (TiB) | work + compact GB | fits compact |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|")

    def fits(disk, mem=mem):
        short = [] if mem <= mem_gib else ["memory"]
        short += [] if disk <= disk_gb else ["disk"]
        return 'yes' if not short else 'no: ' + ', '.join(short)
    cells = "| — | — | — |"
    if compact_out is not None:
        cells = (f"| {compact_out:,.0f} ({compact_out * 1e9 / 2**40:.2f}) "
                 f"| {work + compact_out:,.0f} | {fits(work + compact_out, mem_c)} |")
    print(f"| {tf:.1f} | {tb:.1f} | {tf + tb:.1f} | {mem:.0f} | {work:,.0f} | {out:,.0f} "
          f"| {work + out:,.0f} | {fits(work + out)} {cells}\n")
    # The policy layout: its bytes a state from the policy solve measured (any processor:
    # bytes do not depend on it), scaled to the board's states.
    pol = [r for r in rows if policy(r) and r.get("output_mb")]
    if pol:
        p = pol[-1]
        bits = int(p["output_mb"]) * 2**20 * 8 / int(p["states"])
        size = states * bits / 8
        print(f"Policy layout (`--layout policy`): {bits:.2f} bits a state measured on "
              f"{p['board']} `{p['variants']}` of {p['date']} ({p['commit']}: "
              f"{p['output_mb']} MB over {n(int(p['states']))} states), so {size / 2**30:,.0f} GiB "
              f"for this board's {n(states)} states; its work files and memory as in the table.\n")
    budgeted(states, afterstates, largest, cores, mem_gib, disk_gb)
    print(f"Targets: {targets}.\n")


def budgeted(states, afterstates, largest, cores, mem_gib, disk_gb):
    """The policy layout within a memory budget (`solve --memory`), from the latest such solve:
    its rates and work bits a state, and the memory `solver::plan` models for the largest age
    valued a chunk at a time (tables of ages n + 2 and n + 4 and of the afterstates at 11.62
    bytes an id with f64 values, 7.17 with fixed point, the afterstates made again within the
    cap of an eighth of the budget's ids, 0.75 GiB fixed)."""
    runs = [r for r in rows if policy(r) and "--memory" in r["args"] and r.get("peak_work_mb")]
    if not runs:
        return
    r = runs[-1]
    fwd, bwd = rate(r, r["forward_s"]), rate(r, r["backward_s"])
    work_bits = int(r["peak_work_mb"]) * 2**20 * 8 / int(r["states"])
    out_bits = int(r["output_mb"]) * 2**20 * 8 / int(r["states"])
    a_ratio = afterstates / states
    total = states + afterstates
    budget = mem_gib * 2**30
    cap = budget / 12 / 8

    def need(per_id):
        a = largest * a_ratio
        remake = (min(cap, a) * 8 + 2 * a) * 1.25
        return per_id * (2 * largest + a) + remake + 0.75 * 2**30
    coding, mem = "f64", need(11.62)
    if mem > budget:
        coding, mem = "fixed point", need(7.17)
    work = states * work_bits / 8 / 1e9
    out = states * out_bits / 8 / 1e9
    values = 3 * 8 * largest / 1e9
    tf = total / (fwd * 1e6 * cores) / 3600
    tb = total / (bwd * 1e6 * cores) / 3600
    print(f"Within a budget (`--layout policy --memory {mem_gib}G`), from {r['board']} "
          f"`{r['variants']} {r['args']}` of {r['date']} ({r['commit']}, {r['cpu']}, load "
          f"{r['load']}): forward {fwd:.2f} M and backward {bwd:.2f} M boards/s/core give "
          f"{tf:.1f} h + {tb:.1f} h = {tf + tb:.1f} h on {cores} cores of that processor; "
          f"tables in {coding}, the largest age valued a chunk at a time needs about "
          f"{mem / 2**30:.1f} GiB ({'fits' if mem <= budget else 'does not fit'}); work "
          f"{work_bits:.1f} bits a state ({work:,.0f} GB, states only), policy {out_bits:.2f} "
          f"bits a state ({out:,.0f} GB), the values of three ages {values:,.0f} GB: at most "
          f"{work + out + values:,.0f} GB of disk at once "
          f"({'fits' if work + out + values <= disk_gb else 'does not fit'} {disk_gb:,} GB).\n")


project("Full 4x3, expectation, on a 16-core workstation", ("4x3", "3x4"),
        1_152_817_492_752, 739_648_886_170, 297_784_736, 16, 64, 4_000,
        "counts and largest age: Kaneko & Yamashita, who took 25 h + 40 h on 16 cores",
        "< 24 h; ≤ 16 GiB; output ≤ 4 TiB (the paper's size) with a compact layout",
        32, "points at 2^-16: values below 65,536, as the paper's 32-bit values",
        (16.6, "the measured basis has ages up to 460 only; Kaneko & Yamashita's Elias-Fano "
         "sets took 1.4 TiB for all 739.6 G afterstates"))
project("4x4 `goal-64`, on this machine", ("4x4",), 40_652_843_433, None, 856_000_000, 2, 24, 80,
        "live states and largest age as published",
        "run it here, discounted, if it fits",
        33, "probabilities at 2^-32: 1 is 2^32")
