"""`python -m benchmarks [--quick]`: run every section, print the table, write latest.md and
latest.parquet."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from attnsim.jobs.tuning import tune_allocator
from benchmarks import (
    endtoend,
    kernels,
    locate_coverage,
    machine,
    overhead,
    scale,
    table,
    training,
    workflow,
)

RESULTS = Path(__file__).resolve().parent / "results"


def cpu_seconds() -> float:
    """User + sys seconds of this process and of the children it has waited for (every section's
    subprocesses): what a section costs, which a loaded machine moves less than wall time."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def header(info: dict[str, str], quick: bool, seconds: float | None = None) -> str:
    lines = [
        "# attnsim benchmarks"
        + (" (quick mode: tiny sizes, values not comparable)" if quick else ""),
        "",
        f"- machine: {info['cpu']}, {info['cores']} cores, {info['memory_gb']} GB; "
        f"{info['platform']}",
        f"- CPU class: {info['cpu_class']}: every timing below is of this class (docs/usage.md, "
        "Reproducibility)",
        f"- Python {info['python']}, numpy {info['numpy']}, BLAS {info['blas']}; attnsim "
        f"{info['attnsim']}",
        f"- run: {info['date']}"
        + (f", {seconds / 60:.1f} min" if seconds else "")
        + "; `python -m benchmarks"
        + (" --quick" if quick else "")
        + "`",
        "- kernels use every core (threads over trial blocks, BLAS on one thread each); naive "
        "loops one thread, BLAS on one thread and on numpy's default (the faster counts).",
        "  Shares of the machine bound: the kernel on one thread against the machine's one-core "
        "rates of the units its kind counts (`Compute.counts`), both in CPU time, same run.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every row once on tiny sizes, its values not compared (for CI): each rate timed "
        "once, the workflow rows on a few points, some runs up to their chunks",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=RESULTS,
        help=f"directory for latest.md and latest.parquet (default {RESULTS})",
    )
    parser.add_argument(
        "--cores",
        type=int,
        default=machine.cores(),
        help="threads for the kernels and --cores for Snakemake (default: all)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="only the scale rows (benchmarks/scale.py): planning 10k-1M points, job start-up, "
        "threads, the 10^8-row store",
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=Path(tempfile.gettempdir()) / "attnsim-scale",
        help="--scale: where the 10^8-row store is (built there once if missing; minutes)",
    )
    parser.add_argument(
        "--no-store", action="store_true", help="--scale: leave out the 10^8-row store rows"
    )
    parser.add_argument(
        "--slurm",
        action="store_true",
        help="--scale: also the SLURM start-up row (needs tests/slurm/local-cluster.sh up)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="a clone of an older attnsim with its environment in DIR/.venv (e.g. 9b9a604): the "
        "overhead rows run it side by side with this tree and give the ratios",
    )
    parser.add_argument(
        "--overhead",
        action="store_true",
        help="only the overhead rows (benchmarks/overhead.py): default run, nothing to do, a "
        "1-point change, the 10^7-point plan",
    )
    args = parser.parse_args(argv)
    if args.scale:
        return scale_main(args)
    tune_allocator()  # as every `attnsim simulate` job does
    started = time.perf_counter()
    info = machine.description()
    rows: list[table.Row] = []

    def section(name, fn, *fn_args):
        t, cpu = time.perf_counter(), cpu_seconds()
        print(f"[benchmarks] {name} ...", flush=True)
        rows.extend(fn(*fn_args))
        took = f"{time.perf_counter() - t:.1f} s, {cpu_seconds() - cpu:.1f} CPU-s"
        print(f"[benchmarks] {name}: {took}", flush=True)

    if args.overhead:
        section("overhead", overhead.overhead_rows, args.cores, args.quick, args.baseline)
        return finish(rows, args, info, started)
    section("machine limits", machine.measure_limits, args.cores, args.quick)
    section("machine limits, other CPU classes (emulated)", machine.class_rows, args.quick)
    section(
        "kernels vs naive loops",
        lambda: kernels.kernel_rows(kernels.measure_kernels(args.cores, args.quick), args.cores),
    )
    section("float32 against float64", kernels.precision_rows, args.quick)
    section("end to end on the noisy-attention point", endtoend.rows, args.cores, args.quick)
    section("training kernels vs naive loops", training.table_rows, args.quick)
    section("allocator tuning", kernels.allocator_rows, args.quick)
    section("memory per job", kernels.memory_rows, args.quick)
    section("default sweep", workflow.sweep_rows, args.cores, args.quick)
    section("10k grid", workflow.grid_rows, args.cores, args.quick)
    section("locating boundaries: coverage", locate_coverage.rows, args.quick)
    section("overhead", overhead.overhead_rows, args.cores, args.quick, args.baseline)
    return finish(rows, args, info, started)


def finish(rows: list[table.Row], args, info: dict[str, str], started: float) -> int:
    seconds = time.perf_counter() - started
    md, parquet = table.write(
        rows, args.output, header(info, args.quick, seconds), info | {"quick": str(args.quick)}
    )
    print()
    print(table.text(rows))
    print(f"\nwrote {md} and {parquet} ({seconds:.0f} s)")
    return 0


def scale_main(args) -> int:
    started = time.perf_counter()
    info = machine.description()
    print("[benchmarks] scale ...", flush=True)
    rows = scale.scale_rows(
        args.cores, args.quick, None if args.no_store else args.store, args.slurm
    )
    seconds = time.perf_counter() - started
    md, parquet = table.write(
        rows,
        args.output / "scale",
        header(info, args.quick, seconds).replace(
            "`python -m benchmarks", "`python -m benchmarks --scale"
        ),
        info,
    )
    print()
    print(table.text(rows))
    print(f"\nwrote {md} and {parquet} ({seconds:.0f} s)")
    return 0
