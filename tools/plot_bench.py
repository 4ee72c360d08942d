#!/usr/bin/env python3
"""Draws SVG charts from the tables dist-bench prints, and train_mlp's training curves.

  tools/plot_bench.py [-o DIR] [--format svg|png] FILE...

Each FILE is a saved output of one of these programs (several tables may share a file;
distrun's "[0] " line prefixes are removed):

  dist-bench [--quick] [--no-input] [--max-bytes N]      in-process all-reduce tables
  distrun -n 2 -- dist-bench --multi-worker [...]         multi-worker all-reduce, broadcast
                                                          and all-gather tables, raw Gloo
  tools/mpi_bench/run_vader.sh [...] [--collective C]     Open MPI vader's reference
  train_mlp --all --csv FILE                              per-epoch training curves (CSV)

It writes, for the tables it finds (a chart is skipped when its table is absent; a line
when its column is):

  allreduce_in_process_busbw.svg / _latency.svg     the library, its _into variant and the
                                                    plain thread reference, per replica count
  allreduce_multi_worker_busbw.svg / _latency.svg   shared memory, TCP, raw Gloo, Open MPI vader
  bcast_allgather_multi_worker_busbw.svg / _latency.svg   with vader's MPI_Bcast / MPI_Allgather
  training_curves.svg                               loss, accuracy, held-out accuracy per epoch

Bus bandwidth is computed from the median times as nccl-tests does (all-reduce: bytes / t
x 2(n-1)/n; broadcast: bytes / t; all-gather: bytes per rank / t x (n-1)), so every line of
a chart uses the same formula. Both axes are logarithmic. Needs matplotlib (Debian:
python3-matplotlib, which scripts/install-deps.sh installs). Exits 0 after writing at
least one chart, 1 when the inputs hold no table it knows, 2 on bad arguments and 3 when
matplotlib is missing.
"""

import argparse
import csv
import os
import re
import sys

# ---- Reading the tables ----

DISTRUN_PREFIX = re.compile(r"^\[(?:ps:)?\d+\] ")
SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

# Column names that contain a space, as the programs print them (tools/dist_bench/
# multi_worker_bench.cc, tools/mpi_bench/mpi_allreduce_bench.c). A header is split into
# these first, then at whitespace; a header that still does not match its rows is split
# by the rows' right-aligned column edges instead.
SPACED_NAMES = sorted(
    [
        "shm med(us)", "shm into(us)", "tcp med(us)", "gloo med(us)", "shm GB/s", "into GB/s",
        "wrap GB/s", "bcast lib(us)", "bcast wrap", "gather lib", "gather wrap", "bc lib GB/s",
        "bc wrap", "ag lib GB/s", "ag wrap", "mpi med(us)", "mpi p90(us)", "mpi busbw(GB/s)",
    ],
    key=len,
    reverse=True,
)


class Table:
    """One table: the comment lines above it, its column names and its rows (dicts)."""

    def __init__(self, context, columns, rows, source):
        self.context = context
        self.columns = columns
        self.rows = rows
        self.source = source

    def column(self, name):
        """(bytes, value) pairs of a numeric column, rows without a number left out."""
        size_name = self.columns[0]
        out = []
        for row in self.rows:
            value = to_float(row.get(name))
            if value is not None and row[size_name] is not None:
                out.append((row[size_name], value))
        return out


def to_float(text):
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None  # "-" (not measured), "skipped", ...


def data_tokens(line):
    """A data row's fields with their end columns; "8 B" / "64 KiB" is one size field."""
    tokens = [(m.group(0), m.end()) for m in re.finditer(r"\S+", line)]
    if len(tokens) >= 2 and tokens[1][0] in SIZE_UNITS and re.fullmatch(r"\d+", tokens[0][0]):
        tokens[0:2] = [(tokens[0][0] + " " + tokens[1][0], tokens[1][1])]
    return tokens


def parse_size(text):
    m = re.fullmatch(r"(\d+)(?: (B|KiB|MiB|GiB))?", text)
    if not m:
        return None
    return int(m.group(1)) * SIZE_UNITS[m.group(2) or "B"]


def split_header(header, row):
    """The column names of `header` ('#' already replaced by a space) for data row `row`."""
    text = header
    for name in SPACED_NAMES:
        text = text.replace(name, name.replace(" ", "\x00"))
    names = [word.replace("\x00", " ") for word in text.split()]
    if len(names) == len(row):
        return names
    # Fallback: the programs print header and rows with the same widths, so a name ends
    # where its column's numbers end (give or take an overflowing name).
    words = [(m.group(0), m.end()) for m in re.finditer(r"\S+", header)]
    edges = [end for _, end in row]
    names = [[] for _ in edges]
    for word, end in words:
        column = next((i for i, edge in enumerate(edges) if end <= edge + 1), len(edges) - 1)
        names[column].append(word)
    if any(not parts for parts in names):
        return None
    return [" ".join(parts) for parts in names]


def read_tables(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [DISTRUN_PREFIX.sub("", line.rstrip("\n")) for line in f]
    tables = []
    context = []  # comment lines since the last table
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("#"):
            i += 1
            continue
        # A header: comment lines (a units line may follow the names) and then data rows.
        j = i + 1
        while j < len(lines) and lines[j].startswith("#") and lines[j].strip("# ").startswith("("):
            j += 1
        first = data_tokens(lines[j]) if j < len(lines) and not lines[j].startswith("#") else []
        if not first or parse_size(first[0][0]) is None:
            context.append(line)
            i += 1
            continue
        columns = split_header(" " + line[1:], first)
        if columns is None:
            print(f"plot_bench: {path}: cannot match the header '{line.strip()}' to its rows; "
                  "table skipped", file=sys.stderr)
            context.append(line)
            i = j
            continue
        rows = []
        while j < len(lines) and lines[j].strip() and not lines[j].startswith("#"):
            fields = data_tokens(lines[j])
            if len(fields) == len(columns) and parse_size(fields[0][0]) is not None:
                row = {name: value for name, (value, _) in zip(columns, fields)}
                row[columns[0]] = parse_size(fields[0][0])
                rows.append(row)
            j += 1
        tables.append(Table(context, columns, rows, path))
        context = []
        i = j
    return tables


def first_match(pattern, lines):
    for line in lines:
        m = re.search(pattern, line)
        if m:
            return m
    return None


def classify(tables):
    """The tables by kind: in-process all-reduce per replica count, the multi-worker
    all-reduce and copy tables, and MPI's per collective and process count."""
    found = {"in_process": {}, "multi_worker": None, "copies": None, "mpi": {}}
    workers = None
    for table in tables:
        m = first_match(r"all-reduce: MirroredStrategy over .*\((\d+) replicas\)", table.context)
        if m:
            found["in_process"][int(m.group(1))] = table
            continue
        m = first_match(r"dist-bench --multi-worker .*across (\d+) workers", table.context)
        if m and "gloo med(us)" in table.columns:
            workers = int(m.group(1))
            found["multi_worker"] = (workers, table)
            continue
        if "bcast lib(us)" in table.columns:
            found["copies"] = (workers, table)
            continue
        m = first_match(r"mpi-allreduce-bench: .*; (\d+) processes; (MPI_\w+)", table.context)
        if m and "mpi med(us)" in table.columns:
            found["mpi"][(m.group(2), int(m.group(1)))] = table
    return found


# ---- Drawing ----

def busbw(points, ranks, collective):
    factor = {"allreduce": 2.0 * (ranks - 1) / ranks, "bcast": 1.0, "allgather": ranks - 1.0}[collective]
    return [(b, b / (us * 1e-6) * factor / 1e9) for b, us in points if us > 0]


def size_label(bytes_, _pos=None):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if bytes_ >= scale:
            return f"{bytes_ / scale:g} {unit}"
    return f"{bytes_:g} B"


def new_axes(plt, title, ylabel):
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    ax.set_xlabel("message size (float32, per rank)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    return fig, ax


FORMAT = ["svg"]  # --format


def savefig(fig, path):
    if FORMAT[0] == "svg":
        # Text stays text and no date is written: small files that change only with the data.
        fig.savefig(path, format="svg", metadata={"Date": None})
    else:
        fig.savefig(path, format="png", dpi=110)


def save(plt, fig, ax, out_dir, name, written):
    from matplotlib.ticker import NullLocator

    handles, _ = ax.get_legend_handles_labels()
    if not handles:
        plt.close(fig)
        return
    # A tick at each measured size (every second or third one where they crowd).
    sizes = sorted({x for line in ax.get_lines() for x in line.get_xdata()})
    step = (len(sizes) + 11) // 12
    ax.set_xticks(sizes[::step])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path = os.path.join(out_dir, name.replace(".svg", "." + FORMAT[0]))
    savefig(fig, path)
    plt.close(fig)
    written.append(path)


def draw_pair(plt, out_dir, stem, title, series, written):
    """series: (label, points [(bytes, us)], ranks, collective, style) per line."""
    fig, ax = new_axes(plt, title + ": bus bandwidth (higher is better)", "bus bandwidth (GB/s)")
    for label, points, ranks, collective, style in series:
        pts = busbw(points, ranks, collective)
        if pts:
            ax.plot(*zip(*pts), label=label, **style)
    save(plt, fig, ax, out_dir, stem + "_busbw.svg", written)
    fig, ax = new_axes(plt, title + ": median time per call (lower is better)", "time (µs)")
    for label, points, _ranks, _collective, style in series:
        pts = [(b, us) for b, us in points if us > 0]
        if pts:
            ax.plot(*zip(*pts), label=label, **style)
    save(plt, fig, ax, out_dir, stem + "_latency.svg", written)


LIBRARY = {"marker": "o", "linewidth": 2}
LIBRARY_INTO = {"marker": "s", "linestyle": "--"}
REFERENCE = {"marker": "^", "linestyle": ":", "color": "black"}
GLOO = {"marker": "v", "linestyle": ":", "color": "tab:gray"}
VADER = {"marker": "D", "linestyle": "-.", "color": "tab:purple"}


def draw_in_process(plt, found, out_dir, written):
    series = []
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    for k, (replicas, table) in enumerate(sorted(found["in_process"].items())):
        color = colors[k % len(colors)]
        series.append((f"library, {replicas} replicas", table.column("time(us)"), replicas,
                       "allreduce", dict(LIBRARY, color=color)))
        series.append((f"library _into, {replicas} replicas", table.column("into_us"), replicas,
                       "allreduce", dict(LIBRARY_INTO, color=color)))
        series.append((f"plain thread reference, {replicas} threads", table.column("ref_us"),
                       replicas, "allreduce", dict(REFERENCE, color=color, markerfacecolor="none")))
    if series:
        draw_pair(plt, out_dir, "allreduce_in_process",
                  "In-process all-reduce (MirroredStrategy, float32 SUM)", series, written)


def draw_multi_worker(plt, found, out_dir, written):
    series = []
    workers = None
    if found["multi_worker"]:
        workers, table = found["multi_worker"]
        series += [
            ("library, shared memory", table.column("shm med(us)"), workers, "allreduce",
             dict(LIBRARY, color="tab:blue")),
            ("library _into, shared memory", table.column("shm into(us)"), workers, "allreduce",
             dict(LIBRARY_INTO, color="tab:blue")),
            ("library _into, wrapped memory", table.column("wrap(us)"), workers, "allreduce",
             {"marker": "x", "linestyle": "--", "color": "tab:cyan"}),
            ("library, TCP (Gloo transport)", table.column("tcp med(us)"), workers, "allreduce",
             dict(LIBRARY, color="tab:orange")),
            ("raw Gloo ring all-reduce, TCP", table.column("gloo med(us)"), workers, "allreduce", GLOO),
        ]
    for (name, ranks), table in sorted(found["mpi"].items()):
        if name == "MPI_Allreduce" and (workers is None or ranks == workers):
            series.append((f"Open MPI vader MPI_Allreduce, {ranks} processes",
                           table.column("mpi med(us)"), ranks, "allreduce", VADER))
    if series:
        title = "All-reduce across processes"
        if workers:
            title += f" ({workers} workers, one host)"
        draw_pair(plt, out_dir, "allreduce_multi_worker", title, series, written)


def draw_copies(plt, found, out_dir, written):
    series = []
    workers = None
    if found["copies"]:
        workers, table = found["copies"]
        workers = workers or 2
        series += [
            ("broadcast, library", table.column("bcast lib(us)"), workers, "bcast",
             dict(LIBRARY, color="tab:blue")),
            ("broadcast, wrapped memory", table.column("bcast wrap"), workers, "bcast",
             dict(LIBRARY_INTO, color="tab:blue")),
            ("all-gather, library", table.column("gather lib"), workers, "allgather",
             dict(LIBRARY, color="tab:green")),
            ("all-gather, wrapped memory", table.column("gather wrap"), workers, "allgather",
             dict(LIBRARY_INTO, color="tab:green")),
        ]
    for (name, ranks), table in sorted(found["mpi"].items()):
        if workers is not None and ranks != workers:
            continue
        if name == "MPI_Bcast":
            series.append((f"Open MPI vader MPI_Bcast, {ranks} processes", table.column("mpi med(us)"),
                           ranks, "bcast", dict(VADER, color="tab:purple")))
        elif name == "MPI_Allgather":
            series.append((f"Open MPI vader MPI_Allgather, {ranks} processes",
                           table.column("mpi med(us)"), ranks, "allgather",
                           dict(VADER, color="tab:brown")))
    if series:
        title = "Broadcast and all-gather across processes"
        if workers:
            title += f" ({workers} workers)"
        draw_pair(plt, out_dir, "bcast_allgather_multi_worker", title, series, written)


# ---- Training curves (train_mlp --csv) ----

TRAINING_HEADER = ["strategy", "epoch", "loss", "accuracy", "held_out_accuracy"]
STRATEGY_LABELS = {
    "one_device": "OneDevice",
    "mirrored": "Mirrored",
    "multi_worker": "MultiWorkerMirrored",
    "parameter_server": "ParameterServer",
    "coordinator": "ClusterCoordinator",
}


def is_training_csv(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline().strip().split(",")
    return first[: len(TRAINING_HEADER)] == TRAINING_HEADER


def read_training(path):
    curves = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            curves.setdefault(row["strategy"], []).append(
                (int(row["epoch"]), float(row["loss"]), float(row["accuracy"]),
                 float(row["held_out_accuracy"])))
    return curves


def draw_training(plt, curves, out_dir, written):
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.6))
    titles = ["training loss", "training accuracy", "held-out accuracy"]
    # The synchronous strategies train the same weights, so their lines coincide: the
    # later ones are drawn thinner, with their own markers, on top.
    markers = ["o", "s", "^", "D", "v", "x"]
    for k, (strategy, points) in enumerate(curves.items()):
        points.sort()
        epochs = [p[0] for p in points]
        for column, ax in enumerate(axes):
            ax.plot(epochs, [p[column + 1] for p in points], marker=markers[k % len(markers)],
                    linewidth=max(3.0 - 0.5 * k, 0.8), markersize=max(7 - k, 3),
                    label=STRATEGY_LABELS.get(strategy, strategy), alpha=0.85)
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("epoch")
        ax.grid(True, alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    axes[2].legend(fontsize=8, loc="best")
    title = "train_mlp: the same MLP, data and seed under each strategy"
    synchronous = [s for s in ("one_device", "mirrored", "multi_worker") if s in curves]
    if len(synchronous) >= 2 and all(curves[s] == curves[synchronous[0]] for s in synchronous):
        title += " (" + ", ".join(STRATEGY_LABELS[s] for s in synchronous) + ": the same values)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "training_curves." + FORMAT[0])
    savefig(fig, path)
    plt.close(fig)
    written.append(path)


# ---- Main ----

def import_pyplot():
    """matplotlib's pyplot, or None. Debian's python3-matplotlib serves /usr/bin/python3: a
    python3 earlier on PATH (pyenv, a venv) without it runs this script there instead."""
    try:
        import matplotlib
    except ImportError:
        system_python = "/usr/bin/python3"
        if (os.path.realpath(sys.executable) != os.path.realpath(system_python)
                and os.access(system_python, os.X_OK)
                and not os.environ.get("PLOT_BENCH_REEXEC")):
            os.environ["PLOT_BENCH_REEXEC"] = "1"
            os.execv(system_python, [system_python] + sys.argv)
        return None
    matplotlib.use("agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: a few KB, not glyph paths
    matplotlib.rcParams["svg.hashsalt"] = "plot_bench"  # the same ids on every run
    import matplotlib.pyplot as plt

    return plt


def main(argv):
    parser = argparse.ArgumentParser(
        prog="plot_bench.py",
        description="SVG charts from dist-bench / mpi-allreduce-bench outputs and train_mlp --csv.")
    parser.add_argument("inputs", nargs="+", metavar="FILE",
                        help="saved outputs of dist-bench, dist-bench --multi-worker (under distrun), "
                             "run_vader.sh, or train_mlp's --csv file")
    parser.add_argument("-o", "--out", default="plots", metavar="DIR",
                        help="directory for the SVG files (created; default ./plots)")
    parser.add_argument("--format", choices=["svg", "png"], default="svg",
                        help="file format of the charts (default svg)")
    args = parser.parse_args(argv)
    FORMAT[0] = args.format

    tables = []
    curves = {}
    for path in args.inputs:
        if not os.path.isfile(path):
            parser.error(f"{path}: no such file")
        if is_training_csv(path):
            for strategy, points in read_training(path).items():
                curves.setdefault(strategy, []).extend(points)
        else:
            tables += read_tables(path)
    found = classify(tables)
    if not (found["in_process"] or found["multi_worker"] or found["copies"] or found["mpi"] or curves):
        print("plot_bench: no dist-bench, mpi-allreduce-bench or train_mlp --csv table in "
              + ", ".join(args.inputs), file=sys.stderr)
        return 1

    plt = import_pyplot()
    if plt is None:
        print("plot_bench: matplotlib is not installed for " + sys.executable
              + " (Debian: apt-get install python3-matplotlib, or scripts/install-deps.sh)",
              file=sys.stderr)
        return 3
    os.makedirs(args.out, exist_ok=True)
    written = []
    draw_in_process(plt, found, args.out, written)
    draw_multi_worker(plt, found, args.out, written)
    draw_copies(plt, found, args.out, written)
    if curves:
        draw_training(plt, curves, args.out, written)
    for path in written:
        print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
