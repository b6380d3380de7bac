#!/usr/bin/env python3
"""Build one small-board goal table with the 2048EndgameTablebase native core, headless.

Replicates what the desktop app does when you press "build" for a pattern of category
"variant" (backend/handlers/settings.py -> engine_core/BookBuilder.v_start_build):
    formation_core.run_pattern_build(seed_boards, PatternSpec, RunOptions)
with the pattern metadata parsed from docs_and_configs/patterns_config.json exactly as
Config.load_patterns_from_file does and the app's default settings (Config.SingletonConfig).

usage:  peer_build.py build BOARD GOAL OUTDIR     (BOARD: 2x4 | 3x3, GOAL: tile, e.g. 1024)
        peer_build.py value BOARD GOAL OUTDIR     (read back the built table: start values)
"""
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("PEER_SRC", "/var/tmp/peer-src")
sys.path.insert(0, HERE)  # stub Config (logger) for the core's debug_log
sys.path.insert(1, SRC)   # package native_core/ holding formation_core*.so


def pattern_meta(board):
    """Config.load_patterns_from_file, for one pattern."""
    with open(os.path.join(SRC, "docs_and_configs", "patterns_config.json"), encoding="utf-8") as f:
        data = json.load(f)[board]
    masks = [int(m, 16) for m in data.get("valid pattern", [])]
    target_pos = int(data.get("target pos", "0xffffffffffffffff"), 16)
    shifts = [4 * i for i in range(16) if (target_pos >> (4 * i)) & 0xF == 0xF]
    seeds = [int(s, 16) for s in data.get("seed boards", ["0xffffffff"])]

    def tile_sum(b):
        return sum(1 << ((b >> (4 * i)) & 0xF) for i in range(16) if (b >> (4 * i)) & 0xF)

    s0 = tile_sum(seeds[0])
    seeds = [b for b in seeds if tile_sum(b) == s0]
    return dict(masks=masks, shifts=shifts, seeds=seeds, tile_sum=s0,
                canonical=data.get("canonical mode", "identity"),
                extra_steps=int(data.get("extra steps", 36)),
                category=data.get("category", "others"))


def run_params(board, goal):
    meta = pattern_meta(board)
    assert meta["category"] == "variant", meta["category"]
    target = goal.bit_length() - 1
    assert 1 << target == goal
    # BookBuilder._steps_and_docheck
    steps = int(goal / 2 + meta["extra_steps"])
    docheck_step = int(goal / 2) - meta["tile_sum"] % goal // 2
    return meta, target, steps, docheck_step


def build(board, goal, outdir):
    from native_core import formation_core as fc

    meta, target, steps, docheck_step = run_params(board, goal)
    spec = fc.PatternSpec()
    spec.name = board
    spec.pattern_masks = meta["masks"]
    spec.success_shifts = meta["shifts"]
    spec.symm_mode = {"identity": 0, "full": 1, "diagonal": 2, "horizontal": 3,
                      "min33": 4, "min24": 5, "min34": 6}[meta["canonical"]]

    o = fc.RunOptions()  # BookBuilder._build_native_run_options with the app's default config
    o.target = target
    o.steps = steps
    o.docheck_step = docheck_step
    o.pathname = os.path.join(outdir, f"{board}_{goal}_")  # the GUI's "<folder>/<pattern>_<tile>_"
    o.is_free = True          # v_start_build passes is_free=True, is_variant=True
    o.is_variant = True
    o.spawn_rate4 = 0.1
    o.success_rate_dtype = "uint32"
    o.deletion_threshold = 0.0
    o.compress = False
    o.compress_temp_files = False
    o.optimal_branch_only = False
    o.chunked_solve = False
    o.direct_io = True
    o.direct_io_queue_depth = 16
    o.direct_io_chunk_mib = 8
    # the app uses max(4, min(32, os.cpu_count())) = 4 on a 2-core machine; we default to 2
    o.num_threads = int(os.environ.get("PEER_THREADS", "2"))

    print(f"# {board}->{goal}: target=2^{target} steps={steps} docheck_step={docheck_step} "
          f"symm={meta['canonical']} shifts={meta['shifts']} seeds={[hex(s) for s in meta['seeds']]} "
          f"threads={o.num_threads}", file=sys.stderr)
    seeds = np.asarray(meta["seeds"], dtype=np.uint64)
    t0 = time.perf_counter()
    for attempt in range(2):  # BookBuilder._run_with_single_resume_retry
        try:
            fc.run_pattern_build(seeds, spec, o)
            break
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip()
            if attempt or not (msg.startswith("length multiplier")
                               or msg == "The length multiplier is not big enough. Please restart."):
                raise
    t1 = time.perf_counter()
    with open("/proc/self/maps") as f:
        xss = "bookgen_native.so" in f.read()
    print(f"# run_pattern_build: {t1 - t0:.3f} s; bookgen_native.so loaded: {xss}", file=sys.stderr)


# ---- reading the table back (untimed): value of the game's start ---------------------------

def cells_of(seed):
    """playable cells (row, col) of the 4x4 embedding: nibble (3-r)*4+(3-c) is not a wall (0xF)"""
    return [(r, c) for r in range(4) for c in range(4) if (seed >> (4 * ((3 - r) * 4 + (3 - c)))) & 0xF != 0xF]


def decode(b):
    return [[(b >> (4 * ((3 - r) * 4 + (3 - c)))) & 0xF for c in range(4)] for r in range(4)]


def encode(g):
    b = 0
    for r in range(4):
        for c in range(4):
            b |= g[r][c] << (4 * ((3 - r) * 4 + (3 - c)))
    return b


def slide(line):
    """WallMergePolicy on one line, towards index 0 (15 = wall)"""
    out = [0] * 4
    i = 0
    while i < 4:
        if line[i] == 15:
            out[i] = 15
            i += 1
            continue
        j = i
        while j < 4 and line[j] != 15:
            j += 1
        w, merged = i, False
        for k in range(i, j):
            v = line[k]
            if not v:
                continue
            if w > i and not merged and out[w - 1] == v:
                out[w - 1] += 1
                merged = True
            else:
                out[w] = v
                w += 1
                merged = False
        i = j
    return out


def moves(b):
    g = decode(b)
    res = []
    for d in range(4):
        h = [[0] * 4 for _ in range(4)]
        for k in range(4):
            if d == 0:   line = g[k][:]
            elif d == 1: line = g[k][::-1]
            elif d == 2: line = [g[r][k] for r in range(4)]
            else:        line = [g[r][k] for r in range(4)][::-1]
            s = slide(line)
            for idx in range(4):
                if d == 0:   h[k][idx] = s[idx]
                elif d == 1: h[k][3 - idx] = s[idx]
                elif d == 2: h[idx][k] = s[idx]
                else:        h[3 - idx][k] = s[idx]
        res.append(encode(h))
    return res


def canonical(b, cells):
    """min over the symmetries of the playable rectangle (8 for 3x3, 4 for 2x4) = min33 / min24"""
    r0, c0 = min(r for r, _ in cells), min(c for _, c in cells)
    H, W = max(r for r, _ in cells) - r0 + 1, max(c for _, c in cells) - c0 + 1
    g = decode(b)
    sub = [[g[r0 + i][c0 + j] for j in range(W)] for i in range(H)]
    variants = []
    for t in range(8):
        s = sub
        if t & 4:
            s = [list(x) for x in zip(*s)]  # transpose
        if t & 2:
            s = s[::-1]
        if t & 1:
            s = [row[::-1] for row in s]
        if len(s) != H:
            continue
        h = [row[:] for row in g]
        for i in range(H):
            for j in range(W):
                h[r0 + i][c0 + j] = s[i][j]
        variants.append(encode(h))
    return min(variants)


def value(board, goal, outdir):
    meta, target, steps, _ = run_params(board, goal)
    seed = meta["seeds"][0]
    cells = cells_of(seed)
    pathname = os.path.join(outdir, f"{board}_{goal}_")
    dt = np.dtype([("board", "<u8"), ("rate", "<u4")])
    layers = {}

    def lookup(b, i):
        if i not in layers:
            a = np.fromfile(f"{pathname}{i}.book", dtype=dt)
            layers[i] = dict(zip(a["board"].tolist(), a["rate"].tolist()))
        return layers[i].get(canonical(b, cells), 0) / 4e9

    def state_value(b, i):  # before the move: best afterstate (same tile sum, layer i)
        return max([lookup(m, i) for m in moves(b) if m != b] or [0.0])

    n = len(cells)
    total = 0.0
    two2 = []
    for a in range(n):
        for c in range(n):
            if a == c:
                continue
            for va, pa in ((1, 0.9), (2, 0.1)):
                for vc, pc in ((1, 0.9), (2, 0.1)):
                    g = decode(seed)
                    g[cells[a][0]][cells[a][1]] = va
                    g[cells[c][0]][cells[c][1]] = vc
                    v = state_value(encode(g), ((1 << va) + (1 << vc)) // 2)
                    total += v * pa * pc / (n * (n - 1))
                    if va == vc == 1:
                        two2.append(v)
    empty = lookup(seed, 0)
    print(f"# {board}->{goal} peer values: initial distribution {total:.6f}; "
          f"two 2-tiles (uniform) {sum(two2) / len(two2):.6f}; empty board (layer 0) {empty:.6f}; "
          f"horizon: layers {steps - 2},{steps - 1} (tile sum {2 * (steps - 2)},{2 * (steps - 1)}) "
          f"are terminal: 1 if the goal is on the board, else 0", file=sys.stderr)


if __name__ == "__main__":
    mode, board, goal, outdir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    {"build": build, "value": value}[mode](board, goal, outdir)
