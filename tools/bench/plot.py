#!/usr/bin/python3
"""Turn nodecoll-bench JSON files into PNG plots and a Markdown report.

usage: plot.py [--out REPORT.md] [--img-dir DIR] [--command TEXT] [--seconds S] RUN.json...

Each JSON file is one run (one MPI, one rank count).  Per collective one PNG: latency
against message size (nodecoll, host MPI, lower bound) and speedup against size, one
column per MPI.  The report embeds them with a summary table.
"""
import argparse
import glob
import io
import json
import math
import os
import re
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

DPI = 80  # with the palette in save(), about 30 KB a PNG: the images are committed
RUN_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
              "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]


def mpi_name(library):
    """'Open MPI v4.1.4, package: ...' -> 'Open MPI 4.1.4'; 'MPICH Version: 4.0.2' -> 'MPICH 4.0.2'."""
    m = re.match(r"\s*(Open MPI|MPICH|Intel\(R\) MPI|MVAPICH2?)\D*([\d.]+)", library)
    return f"{m.group(1)} {m.group(2)}" if m else library.split(",")[0]


def run_label(run):
    label = f"{mpi_name(run['mpi'])} np={run['ranks']}"
    return label + " (oversubscribed)" if run["oversubscribed"] else label


def size_text(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def load(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            run = json.load(f)
        # The report compares blocking calls; results of other call forms (--mode, format 1
        # files written before --mode have no "mode") would be drawn over them.
        run["results"] = [r for r in run["results"] if r.get("mode", "blocking") == "blocking"]
        run["label"] = run_label(run)
        run["mpi_short"] = mpi_name(run["mpi"])
        runs.append(run)
    return runs


def series(run, coll):
    """Results of one collective in one run, grouped by (dtype, root), sorted by size."""
    groups = OrderedDict()
    for r in run["results"]:
        if r["coll"] == coll:
            groups.setdefault((r["dtype"], r["root"]), []).append(r)
    for rs in groups.values():
        rs.sort(key=lambda r: r["bytes"])
    return groups


def collectives(runs):
    seen = OrderedDict()
    for run in runs:
        for r in run["results"]:
            seen[r["coll"]] = True
    return list(seen)


def mpi_columns(runs):
    cols = OrderedDict()
    for run in runs:
        cols.setdefault(run["mpi_short"], []).append(run)
    return cols


def series_name(run, key, groups):
    extra = "" if len(groups) == 1 else f" {key[0]} root={key[1]}"
    return f"np={run['ranks']}{' oversub.' if run['oversubscribed'] else ''}{extra}"


def plot_series(ax_lat, ax_speed, rs, color, name):
    x = [r["bytes"] for r in rs]
    for key, style, alpha in (("nodecoll_us", "o-", 1.0), ("host_us", "x--", 0.7)):
        ax_lat.plot(x, [r[key]["max"] for r in rs], style, color=color, ms=3, alpha=alpha)
        # the middle half of the rounds: how much a number can be trusted
        ax_lat.fill_between(x, [r[key]["q1"] for r in rs], [r[key]["q3"] for r in rs],
                            color=color, alpha=0.12, lw=0)
    bound = [r["bound_us"] for r in rs]
    if all(b is not None for b in bound):
        ax_lat.plot(x, bound, ":", color=color, lw=1)
    ax_speed.plot(x, [r["speedup"] for r in rs], "o-", color=color, ms=3, label=name)
    if all("speedup_q1" in r for r in rs):
        ax_speed.fill_between(x, [r["speedup_q1"] for r in rs], [r["speedup_q3"] for r in rs],
                              color=color, alpha=0.15, lw=0)


def style_legend(ax):
    """Line styles say what a line is; colours (legend below) say which run."""
    handles = [matplotlib.lines.Line2D([], [], color="k", ls=ls, marker=m, ms=3, label=lab)
               for ls, m, lab in (("-", "o", "nodecoll"), ("--", "x", "host MPI"),
                                  (":", "", "lower bound"))]
    ax.legend(handles=handles, fontsize=7)


def size_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: size_text(int(v))))
    ax.grid(True, which="major", alpha=0.3)


def speed_axis(ax):
    """Log scale: 4x faster and 4x slower are the same distance from 1x."""
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:g}x" if v >= 1 else f"1/{1 / v:g}x"))
    ax.axhline(1.0, color="gray", lw=1)
    ax.set_ylabel("speedup (host / nodecoll)")
    low, high = ax.get_ylim()  # at least 0.5x..2x, so that a flat line still has a scale
    ax.set_ylim(min(low, 0.5), max(high, 2.0))


def measured_floor(runs, coll):
    """Latency axis bottom: a bound far below every measurement would only squash the plot."""
    lows = [r[k]["max"] for run in runs for r in results_of(run, coll)
            for k in ("nodecoll_us", "host_us") if r[k]["max"]]
    return min(lows) / 4 if lows else None


def save(fig, path):
    """A 64-colour palette PNG is a third of matplotlib's RGBA one and looks the same."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, dpi=DPI, format="png")
    plt.close(fig)
    try:
        from PIL import Image
    except ImportError:
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        return
    Image.open(buf).convert("RGB").quantize(colors=64).save(path, optimize=True)


def plot_sized(coll, runs, path):
    cols = mpi_columns(runs)
    fig, axes = plt.subplots(2, len(cols), figsize=(max(6.4, 5.2 * len(cols)), 6.4), squeeze=False,
                             sharex=True)
    for c, (mpi, col_runs) in enumerate(cols.items()):
        ax_lat, ax_speed = axes[0][c], axes[1][c]
        lines = [(run, key, rs) for run in col_runs for key, rs in series(run, coll).items()]
        for i, (run, key, rs) in enumerate(lines):
            name = series_name(run, key, series(run, coll))
            plot_series(ax_lat, ax_speed, rs, RUN_COLORS[i % len(RUN_COLORS)], name)
        ax_lat.set_yscale("log")
        ax_lat.set_ylim(bottom=measured_floor(col_runs, coll))
        ax_lat.set_title(f"{coll} — {mpi}", fontsize=10)
        ax_lat.set_ylabel("latency per call [µs]")
        style_legend(ax_lat)
        speed_axis(ax_speed)
        ax_speed.set_xlabel("message size [bytes]")
        ax_speed.legend(fontsize=7)
        for ax in (ax_lat, ax_speed):
            size_axis(ax)
    save(fig, path)


def plot_sizeless(coll, runs, path):
    """Barrier has no size: bars per run instead of lines."""
    fig, (ax_lat, ax_speed) = plt.subplots(1, 2, figsize=(10, 3.6))
    labels, width = [run["label"] for run in runs], 0.27
    first = [next((r for r in run["results"] if r["coll"] == coll), None) for run in runs]
    xs = range(len(runs))
    for j, (what, key) in enumerate((("nodecoll", "nodecoll_us"), ("host", "host_us"))):
        ax_lat.bar([x + (j - 1) * width for x in xs],
                   [r[key]["max"] if r else 0 for r in first], width, label=what)
    ax_lat.bar([x + width for x in xs], [(r["bound_us"] or 0) if r else 0 for r in first], width,
               label="bound", color="lightgray")
    ax_speed.bar(list(xs), [r["speedup"] if r else 0 for r in first], 0.5, color="tab:blue")
    speed_axis(ax_speed)
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency per call [µs]")
    for ax in (ax_lat, ax_speed):
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7, rotation=12)
        ax.grid(True, axis="y", alpha=0.3)
    ax_lat.set_title(coll, fontsize=10)
    ax_lat.legend(fontsize=7)
    save(fig, path)


# ---- Markdown ------------------------------------------------------------------------------

def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def is_noisy(r):
    """The tool's own flag (files from before it existed count as clean)."""
    return r.get("noisy", False)


def pct_text(p):
    return "<1%" if p < 1 else f"{p:.0f}%"


def ratio_at(r):
    """'0.97x at 8' (bytes): a speedup and where it was measured."""
    return f"{r['speedup']:.2f}x at {size_text(r['bytes'])}"


def summary_cell(rs):
    """Geometric mean, worst and best speedup over the clean sizes; the worst noisy size too
    when it is lower, so that no slowdown hides behind the noise flag."""
    if not rs:
        return "–"
    checks = rs
    noisy = [r for r in rs if is_noisy(r)]
    rs = [r for r in rs if not is_noisy(r)] or rs
    speed = [r["speedup"] for r in rs]
    bound = [r["pct_bound"] for r in rs if r["pct_bound"] is not None]
    text = f"**{geomean(speed):.2f}x**"
    if len(rs) > 1:
        worst = min(rs, key=lambda r: r["speedup"])
        text += f", worst **{ratio_at(worst)}**, best {max(speed):.2f}x"
    if bound:
        text += f"; bound: up to {pct_text(max(bound))}"
    if noisy and noisy != rs:
        text += f"; {len(noisy)} noisy size{'s' if len(noisy) > 1 else ''} left out"
        low = min(noisy, key=lambda r: r["speedup"])
        if low["speedup"] < min(speed):
            text += f" (lowest {ratio_at(low)})"
    if any(r["check"] == "failed" for r in checks):
        text += " **CHECK FAILED**"
    return text


def algorithms(runs, coll):
    names = OrderedDict()
    for run in runs:
        for r in run["results"]:
            if r["coll"] == coll:
                for a in r["algorithms"].split("+"):
                    names[a] = True
    return ", ".join(names) or "–"


def results_of(run, coll):
    return [r for r in run["results"] if r["coll"] == coll]


def summary_table(runs, colls):
    head = "| collective | " + " | ".join(run["label"] for run in runs) + " | nodecoll path |"
    lines = [head, "|---" * (len(runs) + 2) + "|"]
    for coll in colls:
        cells = [summary_cell(results_of(run, coll)) for run in runs]
        lines.append(f"| {coll} | " + " | ".join(cells) + f" | {algorithms(runs, coll)} |")
    return lines


def size_row_cell(r):
    if not r:
        return "–"
    pct = "" if r["pct_bound"] is None else f", {pct_text(r['pct_bound'])}"
    noisy = " noisy" if is_noisy(r) else ""
    return (f"{r['speedup']:.2f}x ({r['nodecoll_us']['max']:.3g} / {r['host_us']['max']:.3g} µs"
            f"{pct}){noisy}")


def size_table(runs, coll):
    by_run = [{r["bytes"]: r for r in results_of(run, coll)} for run in runs]
    common = set.intersection(*(set(d) for d in by_run if d)) if any(by_run) else set()
    shown = sorted(common | {max(d) for d in by_run if d})  # every run has a number
    lines = ["| size | " + " | ".join(run["label"] for run in runs) + " |",
             "|---" * (len(runs) + 1) + "|"]
    for s in shown:
        lines.append(f"| {size_text(s)} | " + " | ".join(size_row_cell(d.get(s)) for d in by_run) + " |")
    return lines


def limits_table(runs):
    lines = ["| run | cache-line round trip | memcpy 1 core hot / cold | "
             f"memcpy all cores hot / cold | single-copy read CMA / shared mapping |", "|---|---|---|---|---|"]
    for run in runs:
        lim = run["limits"]
        rows = {m["bytes"]: m for m in lim["memcpy"]}

        def at(size, key):
            m = rows.get(size)
            return f"{m[key]:.1f}" if m else "–"

        probe = [s for s in (4096, 1 << 20, 16 << 20) if s in rows]
        one = "; ".join(f"{size_text(s)}: {at(s, 'hot_gbs')} / {at(s, 'cold_gbs')}" for s in probe)
        allc = "; ".join(f"{size_text(s)}: {at(s, 'hot_all_gbs')} / {at(s, 'cold_all_gbs')}"
                         for s in probe)
        reads = "; ".join(f"{size_text(s)}: {at(s, 'read_cma_gbs')} / {at(s, 'read_map_gbs')}"
                          for s in probe if rows[s].get("read_map_gbs"))
        rtt = "–" if lim["rtt_ns"] is None else f"{lim['rtt_ns']:.0f} ns"
        if lim.get("rtt_median_ns") and lim["rtt_median_ns"] > 1.2 * lim["rtt_ns"]:
            rtt += f" (median {lim['rtt_median_ns']:.0f} ns)"
        lines.append(f"| {run['label']} | {rtt} | {one} | {allc} ({lim['copiers']} cores) | {reads or '–'} |")
    return lines


def header(runs, args):
    first = runs[0]
    mpis = "; ".join(OrderedDict((f"{r['mpi']} (MPI {r['mpi_standard']})", 0) for r in runs))
    settings = sorted({r["settings"] or "defaults" for r in runs})
    lines = ["# nodecoll benchmark results", ""]
    if args.command:
        lines += [f"Produced by `{args.command}` on {first['date'][:10]}"
                  + (f", in {args.seconds / 60:.1f} minutes (install, build and sweep)."
                     if args.seconds else "."), ""]
    lines += ["| | |", "|---|---|",
              f"| machine | {first['cpu']}, {first['cores']} cores, "
              f"LLC {first['llc_bytes'] >> 20} MiB |",
              f"| MPI | {mpis} |",
              f"| nodecoll | {first['nodecoll'] or 'not linked (A/A test: both columns are the host MPI)'}"
              f", settings: {', '.join(settings)} |",
              f"| buffers | {'off-cache' if first['off_cache'] else 'hot (reused)'}, op {first['op']} |",
              ""]
    return lines


def noise_note(runs):
    """Where nodecoll hands the call to the host MPI, both columns run the same code: the
    spread of those ratios is the noise floor of the measurement on this machine."""
    same = sorted(r["speedup"] for run in runs if not run["oversubscribed"]
                  for r in run["results"]
                  if r["algorithms"] in ("none", "-") and r["speedup"] and not is_noisy(r))
    if len(same) < 10:
        return []
    lo, hi = same[len(same) // 20], same[-1 - len(same) // 20]
    return [f"Noise floor: where nodecoll passes the call to the host MPI (path `none`), both "
            f"columns run the same code; at one rank per core 90% of those ratios lie between "
            f"{lo:.2f}x and {hi:.2f}x. Differences inside that band are not significant.", ""]


def focused_reports(md_dir):
    """Links to the hand-written reports next to this one (results-*.md): measurements this
    sweep does not make (other tools, settings, APIs), which a new sweep must not erase."""
    found = sorted(glob.glob(os.path.join(md_dir, "results-*.md")))
    if not found:
        return []
    lines = ["## Focused measurements", "",
             "Measured with other tools or settings, each report naming its commands:", ""]
    for path in found:
        with open(path) as f:
            title = f.readline().lstrip("# ").strip()
        lines.append(f"- [{title}]({os.path.basename(path)})")
    return lines + [""]


def report(runs, colls, images, args):
    md_dir = os.path.dirname(os.path.abspath(args.out))
    lines = header(runs, args)
    lines += ["## Summary", "",
              "Speedup is host MPI time / nodecoll time (above 1: nodecoll is faster): geometric "
              "mean over message sizes, the worst size with its speedup, and the best speedup. "
              "\"% of bound\" is the best fraction of "
              "the physical lower bound reached (docs/benchmark.md explains the bound). Times are "
              "per call, slowest rank, median over rounds; a speedup is the median over rounds "
              "of host / nodecoll within the round. A size is *noisy* when the middle half of "
              "those per-round ratios spans more than a factor 1.3 (something else ran on the "
              "machine); noisy sizes stay in the tables below but not in these summaries, which "
              "name the lowest noisy speedup where it is below the worst clean one. Sizes are "
              "in bytes (K, M: binary).", ""]
    lines += summary_table(runs, colls) + [""] + noise_note(runs)
    lines += ["## Physical limits (measured in each run)", "",
              "memcpy and single-copy reads (node rank 1 copying node rank 0's buffer: CMA, or "
              "loads from a shared mapping as through the shared heap) in GB/s at 4 KiB; 1 MiB; "
              "16 MiB. The round trip is the lowest of the "
              "measurements made at start-up and, when every rank has a core, after every "
              "point (their median in parentheses when it is higher by a fifth or more).",
              ""]
    lines += limits_table(runs) + [""]
    lines += ["## Per collective", "",
              "Cells: speedup (nodecoll / host µs per call, % of bound). Full data: the JSON and "
              "CSV files next to the images.", ""]
    for coll in colls:
        rel = os.path.relpath(images[coll], md_dir)
        lines += [f"### {coll}", "", f"![{coll}]({rel})", ""] + size_table(runs, coll) + [""]
    lines += focused_reports(args.focused_dir or md_dir)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="JSON files written by nodecoll-bench --json")
    ap.add_argument("--out", default="results.md", help="Markdown report to write")
    ap.add_argument("--img-dir", default=None, help="where PNGs go (default: next to --out)")
    ap.add_argument("--focused-dir", default=None,
                    help="where the hand-written results-*.md reports live (default: next to --out)")
    ap.add_argument("--command", default="", help="command line named in the report header")
    ap.add_argument("--seconds", type=float, default=0, help="duration named in the header")
    args = ap.parse_args(argv)
    img_dir = args.img_dir or os.path.dirname(os.path.abspath(args.out))
    os.makedirs(img_dir, exist_ok=True)
    runs = load(args.runs)
    colls = collectives(runs)
    images = {}
    for coll in colls:
        images[coll] = os.path.join(img_dir, f"{coll}.png")
        sized = any(r["bytes"] for run in runs for r in results_of(run, coll))
        (plot_sized if sized else plot_sizeless)(coll, runs, images[coll])
    report(runs, colls, images, args)
    print(f"plot.py: {args.out} and {len(images)} plots in {img_dir}")


if __name__ == "__main__":
    main(sys.argv[1:])
