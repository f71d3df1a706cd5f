#!/usr/bin/env python3
"""Medians of interleaved benchmark runs -> markdown table + one gnuplot PNG per rank count.
Input lines: '<lib> P=<p> bytes=<b> time_us=<t> algbw=<a> busbw=<bw>'."""
import re
import statistics
import subprocess
import sys

raw, reps, out = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for line in open(raw):
    m = re.match(r"(\S+) P=(\d+) bytes=(\d+) time_us=([\d.]+) algbw=([\d.]+) busbw=([\d.]+)", line)
    if m:
        lib, p, b, t, _, bw = m.groups()
        rows.setdefault((int(p), int(b)), {}).setdefault(lib, []).append((float(t), float(bw)))


def human(b):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return f"{b // k} {unit}"
    return f"{b} B"


libs = sorted({l for v in rows.values() for l in v}, key=lambda l: (l != "coral", l))
print(f"Medians of {reps} interleaved runs. busbw in GB/s = algbw * 2(P-1)/P; time in us.\n")
print("| P | size | " + " | ".join(f"{l} busbw / time" for l in libs) + " | coral / best peer busbw | coral / best peer time |")
print("|---" * (4 + len(libs)) + "|")
series = {}
for (p, b) in sorted(rows):
    med = {l: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for l, v in rows[(p, b)].items()}
    for l, (t, bw) in med.items():
        series.setdefault(p, {}).setdefault(l, []).append((b, bw))
    cells = [f"{med[l][1]:.3f} / {med[l][0]:.2f}" if l in med else "-" for l in libs]
    peers = [v for l, v in med.items() if l != "coral"]
    rb = rt = "-"
    if "coral" in med and peers:
        best_bw = max(x[1] for x in peers)
        best_t = min(x[0] for x in peers)
        rb = f"{med['coral'][1] / best_bw:.2f}x" if best_bw > 0 else "-"
        rt = f"{med['coral'][0] / best_t:.2f}x"
    print(f"| {p} | {human(b)} | " + " | ".join(cells) + f" | {rb} | {rt} |")

for p, libdata in series.items():
    script = [f"set terminal pngcairo size 900,560 noenhanced font 'sans,11'",
              f"set output '{out}/compare-P{p}.png'",
              f"set title 'all-reduce float32 sum, P={p} (medians of {reps})'",
              "set logscale x 2", "set format x '%.0b%B'", "set xlabel 'message size (bytes)'",
              "set ylabel 'bus bandwidth (GB/s)'", "set grid", "set key top left", "set yrange [0:*]"]
    plots = []
    for l, pts in libdata.items():
        fname = f"{out}/.P{p}-{l}.dat"
        with open(fname, "w") as f:
            for b, bw in sorted(pts):
                f.write(f"{b} {bw}\n")
        plots.append(f"'{fname}' using 1:2 with linespoints lw 2 title '{l}'")
    script.append("plot " + ", ".join(plots))
    try:
        subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
        print(f"\nplot: {out}/compare-P{p}.png")
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"\n(no plot for P={p}: {e})")
