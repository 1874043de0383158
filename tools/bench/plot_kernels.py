#!/usr/bin/python3
"""Plot nodecoll-kernels --csv output: GB/s of each reduction kernel and of memcpy against
the vector size.  usage: plot_kernels.py KERNELS.csv OUT.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    sizes = [int(r["bytes"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name in rows[0].keys():
        if name == "bytes":
            continue
        style = dict(color="black", linewidth=2.5) if name == "memcpy" else dict(linewidth=1.2)
        ax.plot(sizes, [float(r[name]) for r in rows], marker="o", markersize=3, label=name, **style)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("vector size (bytes, each of in and inout)")
    ax.set_ylabel("GB/s of one vector (one core)")
    ax.set_title("reduction kernels (inout = in op inout) against memcpy")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=80)


if __name__ == "__main__":
    main()
