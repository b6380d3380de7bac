"""What a solve ran on one CPU while another idled, from `perf script -F time,cpu,comm,ip,sym`
on stdin (the call graphs of `perf record -a`): benches/idle.sh runs it. Argument: the solve's
command name as perf shows it."""
import bisect, collections, re, sys

ours = sys.argv[1]
by_cpu = collections.defaultdict(list)  # cpu -> [(time, comm, frames)]
cur = None
for line in sys.stdin:
    line = line.rstrip("\n")
    m = re.match(r"\s*(\S+)\s+\[(\d+)\]\s+([\d.]+):", line)
    if m:
        cur = (float(m.group(3)), m.group(1), [])
        by_cpu[int(m.group(2))].append(cur)
    elif cur is not None and line.strip():
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            cur[2].append(re.sub(r"\+0x[0-9a-f]+", "", parts[1]))

def key(frames):
    kept = [f for f in frames
            if not f.startswith(("rayon", "<rayon", "core::", "<core", "std::", "<std", "alloc::", "start_thread", "clone3"))
            and "{{closure}}" not in f]
    return " <- ".join(kept[:4]) or "(no frame of ours)"

idle = collections.Counter()
total = 0
cpus = sorted(by_cpu)
times = {c: [s[0] for s in by_cpu[c]] for c in cpus}
for c in cpus:
    for t, comm, _ in by_cpu[c]:
        if comm != "swapper":
            continue
        total += 1
        best = None
        for o in cpus:
            if o == c:
                continue
            i = bisect.bisect_left(times[o], t)
            for j in (i - 1, i):
                if 0 <= j < len(by_cpu[o]):
                    s = by_cpu[o][j]
                    if abs(s[0] - t) < 0.0006 and s[1] == ours:
                        best = s
        if best is not None:
            idle[key(best[2])] += 1
beside = sum(idle.values())
print(f"idle samples: {total}; with the solve running on another CPU: {beside}")
for k, v in idle.most_common(25):
    print(f"{v:6d}  {k}")
