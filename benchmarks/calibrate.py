"""The cost model's calibration (`attnsim.records.cost`, `src/attnsim/records/calibration.json`):
this machine's seconds per unit of work and one factor per kind, measured; and the model's error.

    python -m benchmarks.calibrate            # measure and print, per kind
    python -m benchmarks.calibrate --write    # ... and store them for this CPU class

How: the seconds per unit of `attnsim.kinds.base.Counts` (normals, exps, flops, casts, bytes,
calls, ...) are measured on one core (`benchmarks.machine.unit_seconds`, best of repeated calls,
before and after the kernels: the faster of the two). Each kind's kernels then run on its
calibration chunks (`chunks`: every experiment of the default config.yaml at a tenth of its
trials, and the kernel benchmark's large sizes), each in a fresh process as a simulate job runs
them (one thread, the allocator tuned, the kind's setup included), timed in CPU seconds of that
process. A kind's factor is the geometric mean of measured / counted seconds over its chunks (the
counts at the units' measured seconds); its error is measured / predicted after the factor, per
chunk. Chunks whose runs stop early (training with `stop: threshold`) are charged their whole
budget by the model: they are reported, not fitted.

Refresh after a kernel changes its algorithm or counts, or on a new CPU class (the table is keyed
by `attnsim.records.cpu.cpu_class`; a class it lacks plans with its fallback). Run it on a quiet
machine if you can: CPU time is robust to other processes, but not to their cache and memory
traffic (say what the load was: the table records the load average).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

from attnsim.kinds import get_kind
from attnsim.kinds.base import Counts
from attnsim.records import cost, cpu
from attnsim.records.grid import points_from_rows
from benchmarks.machine import BOUND_UNITS, unit_seconds

REPO = Path(__file__).resolve().parents[1]
# The calibration runs each default experiment at 1/10 and 1/3 of its trials (two sizes: the
# per-trial work and what does not grow with the trials, setup and blocks, both weigh in).
SHARES = (10, 3)
# The kernel benchmark's sizes (benchmarks/kernels.py), 8 points per stream: the large-n regime
# the default sweep does not reach.
LARGE = (
    ("noisy_attention", dict(n=16384, d=64, logit_scale=1.0, noise="gaussian", noise_draws=32),
     "noise_scale", (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0), 16),
    ("logit_entropy", dict(n=65536, d=64, logits="gaussian"),
     "scale", (0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0), 64),
    ("temperature_entropy", dict(n=16384, d=64),
     "tau", (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0), 256),
    ("init_gradient", dict(n=16384, d=64),
     "scale", (0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0), 16),
)  # fmt: skip

PROBE = textwrap.dedent(
    """
    import json, sys, time
    from attnsim.jobs.tuning import tune_allocator
    tune_allocator()
    from attnsim.jobs.simulate import simulate_points
    from attnsim.kinds import get_kind
    from attnsim.records.experiment import TrialSettings
    from attnsim.records.grid import points_from_rows
    name, rows, trials = json.loads(sys.argv[1])
    kind = get_kind(name)
    points = points_from_rows(kind, [tuple(r) for r in rows])
    started = time.process_time()
    simulate_points(kind, TrialSettings(1, trials), points, threads=1)
    print(time.process_time() - started)
    """
)


def chunks(shares: tuple[int, ...] = SHARES) -> list[dict]:
    """The calibration chunks: label, kind, the points' rows, trials, and whether to fit them;
    each default experiment at 1/share of its trials for each of `shares`."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    out = []
    for name, raw in config["experiments"].items():
        kind = get_kind(raw["kind"])
        grid = {p.name: raw["grid"].get(p.name, [p.default]) for p in kind.schema.params}
        rows = [tuple(r) for r in _product(kind, grid)]
        stops = "threshold" in grid.get("stop", [])
        for share in shares:
            out.append(
                dict(
                    label=f"{name}/{share}" if share > 1 else name,
                    kind=kind.name,
                    rows=rows,
                    trials=max(2, math.ceil(int(raw["trials"]) / share)),
                    fit=not stops,
                )
            )
    for kind_name, base, param, values, trials in LARGE if shares != (1,) else ():
        kind = get_kind(kind_name)
        rows = [
            tuple((base | {param: v}).get(p.name, p.default) for p in kind.schema.params)
            for v in values
        ]
        out.append(
            dict(label=f"{kind_name} n={base['n']}", kind=kind_name, rows=rows, trials=trials,
                 fit=True)
        )  # fmt: skip
    return out


def _product(kind, grid: dict) -> list[tuple]:
    import itertools

    return list(itertools.product(*(grid[p.name] for p in kind.schema.params)))


def counted(chunk: dict, per_unit: Counts | None) -> float:
    """The chunk's counted seconds at `per_unit`, uncalibrated: each point's own work, each stream's
    draws and setup once, POINT_SECONDS per point (`cost.point_seconds`, factor 1); None: the
    table's calibrated prediction for this machine's class."""
    kind = get_kind(chunk["kind"])
    points = points_from_rows(kind, chunk["rows"])
    total, streams = 0.0, set()
    for point in points:
        own, shared = cost.point_seconds(
            kind, point.params, chunk["trials"], chunk["trials"], per_unit=per_unit
        )
        total += own + cost.POINT_SECONDS + (0.0 if point.stream in streams else shared)
        streams.add(point.stream)
    return total


def measure(chunk: dict) -> float:
    """CPU seconds of the chunk's kernels in a fresh process (one thread)."""
    payload = json.dumps([chunk["kind"], [list(r) for r in chunk["rows"]], chunk["trials"]])
    run = subprocess.run(
        [sys.executable, "-c", PROBE, payload],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    return float(run.stdout.strip().splitlines()[-1])


def run_chunks(selected: list[dict], kinds: set[str] | None, quick: bool) -> list[dict]:
    results = []
    for chunk in selected:
        if kinds and chunk["kind"] not in kinds:
            continue
        if quick:
            chunk["trials"] = 2
        started = time.perf_counter()
        chunk["measured"] = measure(chunk)
        print(
            f"[calibrate] {chunk['label']}: {chunk['measured']:.2f} CPU-s "
            f"({time.perf_counter() - started:.1f} s)",
            flush=True,
        )
        results.append(chunk)
    return results


def calibrate(
    kinds: set[str] | None = None, quick: bool = False, measured: Path | None = None
) -> dict:
    """Measure units, run the chunks, fit the factors: the class's entry of calibration.json, with
    the chunks' numbers under "chunks". `measured`: a previous run's --json, whose kernels' CPU
    seconds are reused with the table's stored units (a refit after a change of counts only)."""
    load = os.getloadavg()[0]
    if measured is None:
        before = unit_seconds(1, quick, budget=0.05 if quick else 0.5)
        results = run_chunks(chunks((10,) if quick else SHARES), kinds, quick)
        after = unit_seconds(1, quick, budget=0.05 if quick else 0.5)
        per_unit = Counts(*(min(a, b) for a, b in zip(before.values(), after.values())))
    else:  # the stored units of this class, the kernels' seconds of that run
        old = {c["label"]: c for c in json.loads(measured.read_text())["chunks"]}
        results = [c | {"measured": old[c["label"]]["measured"]} for c in chunks()]
        results = [c for c in results if not kinds or c["kind"] in kinds]
        per_unit = cost.unit_seconds(cpu.cpu_class())
    factors, errors = {}, {}
    bound_units = Counts(
        *(v if u in BOUND_UNITS else 0.0 for u, v in zip(cost.UNITS, per_unit.values()))
    )
    for chunk in results:
        chunk["counted"] = counted(chunk, per_unit)
        points = len(chunk["rows"])
        chunk["bound"] = (counted(chunk, bound_units) - cost.POINT_SECONDS * points) / chunk[
            "measured"
        ]
    for kind in sorted({c["kind"] for c in results}):
        mine = [c for c in results if c["kind"] == kind]
        fitted = [c for c in mine if c["fit"]] or mine
        factor = math.exp(statistics.fmean(math.log(c["measured"] / c["counted"]) for c in fitted))
        factors[kind] = round(factor, 3)
        for c in mine:
            c["ratio"] = c["measured"] / (factor * c["counted"])
        ratios = [c["ratio"] for c in fitted]
        errors[kind] = [round(min(ratios), 2), round(statistics.median(ratios), 2),
                        round(max(ratios), 2)]  # fmt: skip
    return {
        "measured": f"{time.strftime('%Y-%m-%d')}, {cpu.cpu_model()}, load average {load:.1f} "
        f"at the start; `python -m benchmarks.calibrate`",
        "seconds": {unit: float(f"{v:.4g}") for unit, v in zip(cost.UNITS, per_unit.values())},
        "factors": factors,
        "errors": errors,
        "chunks": [
            {
                k: c[k]
                for k in ("label", "kind", "trials", "fit", "measured", "counted", "ratio", "bound")
            }
            | {"points": len(c["rows"])}
            for c in results
        ],
    }


def evaluate(kinds: set[str] | None = None, quick: bool = False) -> dict:
    """The table's predictions (this class, calibrated) against every default experiment at its
    full trials, each one chunk in a fresh process: the model's error on chunks it was not fitted
    on (the calibration runs a tenth and a third of the trials)."""
    results = run_chunks(chunks((1,)), kinds, quick)
    for chunk in results:
        chunk["counted"] = counted(chunk, None)
        chunk["ratio"] = chunk["measured"] / chunk["counted"]
    return {
        "measured": f"{time.strftime('%Y-%m-%d')}, {cpu.cpu_model()}, class "
        f"{cost.cost_class()}, load average {os.getloadavg()[0]:.1f} at the end",
        "chunks": [
            {k: c[k] for k in ("label", "kind", "trials", "fit", "measured", "counted", "ratio")}
            | {"points": len(c["rows"])}
            for c in results
        ],
    }


def dumps(table: dict) -> str:
    """calibration.json's text: indented, each [min, median, max] on one line."""
    text = json.dumps(table, indent=1)
    short_list = r"\[\n\s+([^\n]+),\n\s+([^\n]+?)(?:,\n\s+([^\n]+))?\n\s+\]"
    return re.sub(short_list, _one_line, text) + "\n"


def _one_line(match: re.Match) -> str:
    return "[" + ", ".join(g for g in match.groups() if g) + "]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.calibrate", description=__doc__)
    parser.add_argument("--write", action="store_true", help="store this class's entry")
    parser.add_argument("--kinds", nargs="*", help="only these kinds (default: all)")
    parser.add_argument("--quick", action="store_true", help="2 trials per chunk (a smoke test)")
    parser.add_argument("--json", type=Path, help="also write the full results here")
    parser.add_argument(
        "--refit", type=Path, help="reuse the kernels' CPU seconds of a previous --json"
    )
    parser.add_argument(
        "--evaluate",
        action="store_true",
        help="no fit: the stored table's predictions against the default experiments at full size",
    )
    args = parser.parse_args(argv)
    if args.evaluate:
        entry = evaluate(set(args.kinds or ()), args.quick)
        for c in entry["chunks"]:
            print(
                f"{c['kind']:24s} {c['label']:30s} measured {c['measured']:7.2f} predicted "
                f"{c['counted']:8.3f} measured/predicted {c['ratio']:5.2f}"
            )
        if args.json:
            args.json.write_text(json.dumps(entry, indent=1))
        return 0
    entry = calibrate(set(args.kinds or ()), args.quick, args.refit)
    print()
    for c in entry["chunks"]:
        print(
            f"{c['kind']:24s} {c['label']:30s} measured {c['measured']:7.2f} counted "
            f"{c['counted']:8.3f} measured/predicted {c['ratio']:5.2f} bound {c['bound']:4.0%}"
            + ("" if c["fit"] else
            " (not fitted: stops early)")
        )  # fmt: skip
    print()
    for kind, factor in entry["factors"].items():
        lo, mid, hi = entry["errors"][kind]
        print(f"{kind:24s} factor {factor:7.3f}  measured/predicted {lo:.2f} {mid:.2f} {hi:.2f}")
    if args.json:
        args.json.write_text(json.dumps(entry, indent=1))
    if args.write:
        table = json.loads(cost.CALIBRATION.read_text())
        klass = cpu.cpu_class()
        old = table["classes"].get(klass, {})
        kept = {k: v for k, v in old.get("factors", {}).items() if k not in entry["factors"]}
        entry["factors"] = dict(sorted((kept | entry["factors"]).items()))
        entry["errors"] = dict(sorted((old.get("errors", {}) | entry["errors"]).items()))
        entry.pop("chunks")
        table["classes"][klass] = old | entry  # "held_out" stays until --evaluate is redone
        cost.CALIBRATION.write_text(dumps(table))
        print(f"\nwrote {klass} to {cost.CALIBRATION}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
