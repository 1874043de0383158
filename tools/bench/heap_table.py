#!/usr/bin/env python3
"""Tables of docs/results-heap.md from the JSON files of scripts/bench-heap.sh.

Each file is one nodecoll-bench run of one configuration (MPI, heap on or off, CMA on or
off).  Repetitions of a configuration give ranges: every cell is "median (lowest-highest)"
over them, a ratio taken within each run before.
"""
import json
import sys
from collections import defaultdict

CONFIGS = [("off", "auto"), ("on", "auto"), ("off", "off"), ("on", "off")]
HEADS = {("off", "auto"): "heap off, CMA on", ("on", "auto"): "heap on, CMA on",
         ("off", "off"): "heap off, CMA off", ("on", "off"): "heap on, CMA off"}


def size_text(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def setting(run, name, default):
    for word in run["settings"].split():
        key, _, value = word.partition("=")
        if key == name:
            return value
    return default


def config_of(run):
    heap = "on" if run["heap_buffers"] else "off"
    return heap, setting(run, "NODECOLL_CMA", "auto")


def mpi_of(run):
    return "Open MPI" if run["mpi"].startswith("Open MPI") else "MPICH"


def span(values, fmt):
    values = sorted(v for v in values if v is not None)
    if not values:
        return "–"
    lo, hi, mid = values[0], values[-1], values[len(values) // 2]
    if fmt.format(lo) == fmt.format(hi):
        return fmt.format(lo)
    return f"{fmt.format(mid)} ({fmt.format(lo)}-{fmt.format(hi)})"


def limits_tables(runs_by_mpi):
    lines = []
    for mpi, runs in runs_by_mpi.items():
        sizes = [256 << 10, 1 << 20, 4 << 20, 16 << 20]
        lines += [f"**{mpi}** ({len(runs)} runs): GB/s, node rank 1 copying node rank 0's buffer, "
                  "against one core's hot memcpy", "",
                  "| size | memcpy | CMA read | CMA / memcpy | shared-mapping read | mapping / memcpy |",
                  "|---|---|---|---|---|---|"]
        for s in sizes:
            rows = [m for run in runs for m in run["limits"]["memcpy"] if m["bytes"] == s]
            if not rows:
                continue
            mem = [m["hot_gbs"] for m in rows]
            cma = [m.get("read_cma_gbs") for m in rows]
            mapped = [m.get("read_map_gbs") for m in rows]
            lines.append(f"| {size_text(s)} | {span(mem, '{:.1f}')} | {span(cma, '{:.1f}')} | "
                         f"{span([c / m * 100 for c, m in zip(cma, mem) if c], '{:.0f}')} % | "
                         f"{span(mapped, '{:.1f}')} | "
                         f"{span([r / m * 100 for r, m in zip(mapped, mem) if r], '{:.0f}')} % |")
        lines.append("")
    return lines


def point_tables(runs_by_mpi):
    lines = []
    for mpi, runs in runs_by_mpi.items():
        cells = defaultdict(list)
        algs = defaultdict(set)
        for run in runs:
            for r in run["results"]:
                key = (r["coll"], r["bytes"], config_of(run))
                cells[key].append(r)
                algs[key].add(r["algorithms"])
        colls = list(dict.fromkeys(r["coll"] for run in runs for r in run["results"]))
        sizes = sorted({r["bytes"] for run in runs for r in run["results"]})
        lines += [f"**{mpi}**: x host (speedup over the host MPI in the same run), % of the bound, "
                  "nodecoll's algorithm", "",
                  "| collective | size | " + " | ".join(HEADS[c] for c in CONFIGS) + " |",
                  "|---|---|" + "---|" * len(CONFIGS)]
        for coll in colls:
            for s in sizes:
                row = []
                for c in CONFIGS:
                    rs = cells.get((coll, s, c), [])
                    if not rs:
                        row.append("–")
                        continue
                    row.append(f"{span([r['speedup'] for r in rs], '{:.2f}')}x, "
                               f"{span([r['pct_bound'] for r in rs], '{:.0f}')} %, "
                               f"{'/'.join(sorted(algs[(coll, s, c)]))}")
                lines.append(f"| {coll} | {size_text(s)} | " + " | ".join(row) + " |")
        lines.append("")
    return lines


def main(paths):
    runs_by_mpi = defaultdict(list)
    for path in paths:
        with open(path) as f:
            run = json.load(f)
        runs_by_mpi[mpi_of(run)].append(run)
    print("\n".join(limits_tables(runs_by_mpi) + point_tables(runs_by_mpi)))


if __name__ == "__main__":
    main(sys.argv[1:])
