"""Reference rows: a small sweep per kind, its digests per CPU class and its per-point values.

One file per kind, tests/data/reference_rows/<kind>.json:

- ``config``: the kind's reference sweep (a seed and experiments of that kind only);
- ``metrics``: the metrics hashed, in hashing order (a kind that gains a metric keeps its list);
- ``digests``: CPU class (attnsim.records.cpu.cpu_class, e.g. ``X86_V4-SkylakeX``) -> point id ->
  sha256 of the point's rows: bit-identity is checked on every class recorded here;
- ``values``: point id -> metric -> [finite trials, mean, min, median, max] over the finite
  trials, as computed on ``values_class``: on a class without digests the rows are checked
  against these within ``tolerance`` (docs/science.md §8.4);
- ``summary_digests``: CPU class -> point id -> sha256 of the point's summary row (collect's
  `summarise_chunks` of those rows) over ``summary_columns``: checked bit for bit on a recorded
  class (tests/kinds/test_reference_summaries.py);
- ``summary_values``: point id -> summary column -> value, as computed on ``values_class``: on a
  class without summary digests each summary is checked against these within ``tolerance``
  (`summary_within_tolerance`), never skipped.

Record (after a deliberate change of a kind's rows, with a new ``algorithm_version``):

    python -m tests.helpers.reference_rows record KIND [KIND ...]     # from the repository's root
    python -m tests.helpers.reference_rows record NEW_KIND --config sweep.yaml   # a kind's first
    file python -m tests.helpers.reference_rows check [KIND ...]           # what the test checks,
    as JSON

``record`` computes the rows on this machine at 1 and 2 threads (they must be equal), writes this
class's digests and the values, and keeps other classes' digests only if this class's digests
did not change (otherwise they are dropped and those classes are checked within the tolerance
until someone records them on such a machine). It records this machine's CPU class only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data" / "reference_rows"
DEFAULT_TOLERANCE = {"rtol": 1e-4}


def kind_names() -> list[str]:
    return sorted(p.stem for p in DATA.glob("*.json"))


def read(kind: str) -> dict:
    return json.loads((DATA / f"{kind}.json").read_text())


def _rounded(value: object) -> object:
    """Floats to 10 significant digits (other classes compare them within rtol 1e-4): the
    summaries' values of a large reference sweep stay well under a MiB in git."""
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def write(kind: str, reference: dict) -> Path:
    """The kind's file: one line per top-level entry's item, values compact."""
    path = DATA / f"{kind}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    rounded = {k: _rounded(v) if k == "summary_values" else v for k, v in reference.items()}
    path.write_text(json.dumps(rounded, sort_keys=True, separators=(",", ":")) + "\n")
    return path


_SWEPT: dict[tuple[str, int], list[tuple]] = {}  # one computation per sweep and thread count


def sweep(reference: dict, threads: int) -> list[tuple]:
    """(kind, experiment, points, results) per experiment of the reference sweep, computed as a
    job computes them (once per process: the rows' and the summaries' tests share it; read only)."""
    key = (json.dumps(reference["config"], sort_keys=True), threads)
    if key not in _SWEPT:
        _SWEPT[key] = _sweep(reference, threads)
    return _SWEPT[key]


def _sweep(reference: dict, threads: int) -> list[tuple]:
    from attnsim.config.load import load
    from attnsim.jobs.simulate import simulate_points
    from attnsim.kinds import get_kind
    from attnsim.records.grid import grid_columns, points_from_rows

    settings = load(reference["config"])
    out = []
    for experiment in settings.experiments.values():
        kind = get_kind(experiment.kind)
        use_assets(kind.assets.names)
        points = points_from_rows(kind, grid_columns(experiment).rows())  # as a job makes them
        results = simulate_points(kind, experiment.trial_settings, points, threads=threads)
        out.append((kind, experiment, points, results))
    return out


def use_assets(names) -> None:
    """Point the kernels at a verified copy of each asset a real-model kind reads: ./resources
    (or $ATTNSIM_RESOURCES) if it holds them, else the tests' cache (tests/helpers/assets.py),
    fetched there once. Without a copy and without network: skipped under pytest, else an exit."""
    from attnsim.errors import AssetError
    from attnsim.models import assets

    if not names:
        return
    for folder in (
        assets.resources_dir(),
        DATA.parents[2] / ".pytest_cache/d/attnsim-assets/resources",
    ):
        if all((folder / name).is_dir() for name in names):
            break
    try:
        for name in names:
            assets.fetch(name, folder)
    except AssetError as error:
        if "pytest" in sys.modules:
            import pytest

            pytest.skip(f"no {' or '.join(names)} asset: {error}")
        raise SystemExit(str(error)) from None
    assets.set_resources(folder)


def rows(reference: dict, threads: int, computed: list | None = None) -> dict:
    """point id -> metric -> (trials,) float64, for the reference sweep's recorded metrics."""
    out = {}
    for _kind, _experiment, points, results in computed or sweep(reference, threads):
        for point in points:
            out[point.id] = {
                m: np.ascontiguousarray(results[point.id][m], dtype=np.float64)
                for m in reference["metrics"]
            }
    return out


def summaries(computed: list, columns: list[str] | None = None) -> tuple[dict, list[str]]:
    """point id -> sha256 of its summary row as collect makes it (`summarise_chunks` of the rows),
    over `columns` (default: every column the summary has now), and those columns. Values are
    hashed through their JSON text (floats by repr: exact)."""
    rows_, names = summary_rows(computed, columns)
    out = {
        pid: hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()
        for pid, row in rows_.items()
    }
    return out, names


def summary_rows(computed: list, columns: list[str] | None = None) -> tuple[dict, list[str]]:
    """point id -> its summary row (column -> value) over `columns` (default: every column the
    summary has now), and those columns."""
    from attnsim.jobs.collect import summarise_chunks
    from attnsim.jobs.simulate import trials_table
    from attnsim.records.grid import grid_columns

    out, names = {}, columns
    for kind, experiment, points, results in computed:
        table = trials_table(kind, points, results)
        summary = summarise_chunks(
            kind,
            experiment.name,
            grid_columns(experiment),
            [table],
            experiment.trial_settings.target_se,
        )
        names = list(summary.column_names) if names is None else names
        for row in summary.select(names).to_pylist():
            out[row["point_id"]] = row
    return out, names or []


SUMMARY_SUFFIXES = ("_mean", "_se", "_ci_low", "_ci_high", "_min", "_max")


def summary_within_tolerance(got: dict, ref: dict, row_values: dict, rtol: float) -> list[str]:
    """The columns of one point's summary row outside the cross-class tolerance. A finite number
    must lie within rtol x its scale: the largest of its own magnitude, its family's (the
    estimate, SE and CI ends of one quantity, e.g. a median and its interval: an interval's end
    near zero moves in units of the estimate) and its metric's (the point's largest finite row
    magnitude, `within_tolerance`'s scale: an SE moves with the rows it is made of). Anything
    else (ids, strings, booleans, counts, NaN, infinities) must be equal."""
    failed = []
    for column, want in ref.items():
        have = got.get(column)
        if have == want or (isinstance(want, float) and math.isnan(want) and _is_nan(have)):
            continue
        if not (isinstance(want, float) and math.isfinite(want) and isinstance(have, float)):
            failed.append(column)
            continue
        scale = max(abs(want), _family_scale(column, ref), _metric_scale(column, row_values))
        if not abs(have - want) <= rtol * scale:
            failed.append(column)
    return failed


def _is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _family_scale(column: str, row: dict) -> float:
    base = next((column.removesuffix(s) for s in SUMMARY_SUFFIXES if column.endswith(s)), column)
    family = [row.get(base), *(row.get(base + s) for s in SUMMARY_SUFFIXES)]
    return max((abs(v) for v in family if isinstance(v, float) and math.isfinite(v)), default=0.0)


def _metric_scale(column: str, row_values: dict) -> float:
    metric = max((m for m in row_values if column.startswith(f"{m}_")), key=len, default=None)
    values = row_values.get(metric) if metric else None
    return max(abs(values[2]), abs(values[4])) if values and values[0] else 0.0


def digest(metrics: dict[str, np.ndarray], names: list[str]) -> str:
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update(metrics[name].tobytes())
    return h.hexdigest()


def point_values(values: np.ndarray) -> list[float]:
    """[finite trials, mean, min, median, max] over the finite trials (NaN when none)."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return [0, math.nan, math.nan, math.nan, math.nan]
    return [
        int(finite.size),
        float(finite.mean()),
        float(finite.min()),
        float(np.median(finite)),
        float(finite.max()),
    ]


def values_of(computed: dict, names: list[str]) -> dict:
    return {pid: {m: point_values(metrics[m]) for m in names} for pid, metrics in computed.items()}


def within_tolerance(got: list[float], ref: list[float], rtol: float) -> bool:
    """Same finite count; mean, min, median and max each within rtol x the point's largest finite
    magnitude of the metric (max(|min|, |max|) of the reference): docs/science.md §8.4."""
    if got[0] != ref[0]:
        return False
    if ref[0] == 0:
        return True
    scale = max(abs(ref[2]), abs(ref[4]))
    return all(abs(g - r) <= rtol * scale for g, r in zip(got[1:], ref[1:]))


def worst_difference(got: list[float], ref: list[float]) -> float:
    """The largest |difference| of mean/min/median/max in units of the point's scale (inf if the
    finite counts differ)."""
    if got[0] != ref[0]:
        return math.inf
    scale = max(abs(ref[2]), abs(ref[4])) if ref[0] else 0.0
    diffs = [abs(g - r) for g, r in zip(got[1:], ref[1:])] if ref[0] else [0.0]
    return max(diffs) / scale if scale else (0.0 if max(diffs) == 0 else math.inf)


def check(kind: str, threads: int = 1) -> dict:
    """What the test asserts, for one kind on this machine: a dict with ``class``, ``mode``
    ("digests" when this class is recorded, else "tolerance"), ``points``, ``failed`` (point ids),
    ``worst`` (largest difference in units of the scale, tolerance mode) and ``ids_match``."""
    from attnsim.records import cpu

    reference = read(kind)
    swept = sweep(reference, threads)
    computed = rows(reference, threads, swept)
    klass = cpu.cpu_class()
    recorded = reference["digests"].get(klass)
    out = {
        "kind": kind,
        "class": klass,
        "points": len(computed),
        "recorded_classes": sorted(reference["digests"]),
    }
    out |= _check_summaries(reference, swept, klass)
    if recorded is not None:
        got = {pid: digest(m, reference["metrics"]) for pid, m in computed.items()}
        out |= {
            "mode": "digests",
            "ids_match": set(got) == set(recorded),
            "failed": sorted(p for p in recorded if got.get(p) != recorded[p]),
        }
        return out
    rtol = reference.get("tolerance", DEFAULT_TOLERANCE)["rtol"]
    values = values_of(computed, reference["metrics"])
    failed, worst = [], 0.0
    for pid, metrics in reference["values"].items():
        if pid not in values:
            continue
        for metric, ref in metrics.items():
            worst = max(worst, worst_difference(values[pid][metric], ref))
            if not within_tolerance(values[pid][metric], ref, rtol):
                failed.append(f"{pid}:{metric}")
    out |= {
        "mode": "tolerance",
        "rtol": rtol,
        "ids_match": set(values) == set(reference["values"]),
        "failed": failed,
        "worst": worst,
    }
    return out


def _check_summaries(reference: dict, swept: list, klass: str) -> dict:
    """The summaries' check: ``summary_mode`` "digests" (bit for bit, this class recorded),
    "tolerance" (each value within the cross-class tolerance of ``summary_values``) or "none"
    (a file recorded before summary values: re-record it), with ``summary_failed`` and
    ``summary_ids_match``."""
    recorded = reference.get("summary_digests", {}).get(klass)
    if recorded is not None:
        got, _ = summaries(swept, reference["summary_columns"])
        return {
            "summary_mode": "digests",
            "summary_failed": sorted(p for p in recorded if got.get(p) != recorded[p]),
            "summary_ids_match": set(got) == set(recorded),
        }
    values = reference.get("summary_values")
    if values is None:
        return {"summary_mode": "none"}
    rtol = reference.get("tolerance", DEFAULT_TOLERANCE)["rtol"]
    got, _ = summary_rows(swept, reference["summary_columns"])
    failed = []
    for pid, want in sorted(values.items()):
        wrong = summary_within_tolerance(
            got.get(pid, {}), want, reference["values"].get(pid, {}), rtol
        )
        failed += [f"{pid}:{column}" for column in wrong]
    return {
        "summary_mode": "tolerance",
        "summary_failed": failed,
        "summary_ids_match": set(got) == set(values),
    }


def record(kind: str, config: dict | None = None, all_metrics: bool = False) -> str:
    """Record this CPU class's digests and the values of `kind`; returns what was done, one line."""
    from attnsim.kinds import get_kind
    from attnsim.records import cpu

    path = DATA / f"{kind}.json"
    if path.exists():
        reference = read(kind)
        if config is not None:
            reference["config"] = config
    elif config is None:
        raise SystemExit(
            f"{path}: no reference sweep for {kind!r} yet; give one with --config sweep.yaml"
        )
    else:
        reference = {"config": config, "digests": {}, "tolerance": dict(DEFAULT_TOLERANCE)}
    kinds = {e["kind"] for e in reference["config"]["experiments"].values()}
    if kinds != {kind}:
        raise SystemExit(
            f"{path}: the reference sweep of {kind!r} must hold experiments of that kind only, "
            f"not {sorted(kinds)}"
        )
    current = [m.name for m in get_kind(kind).schema.metrics]
    if all_metrics or "metrics" not in reference:
        reference["metrics"] = current
    swept = sweep(reference, 1)
    one, two = rows(reference, 1, swept), rows(reference, 2)
    digests = {pid: digest(m, reference["metrics"]) for pid, m in one.items()}
    if digests != {pid: digest(m, reference["metrics"]) for pid, m in two.items()}:
        raise SystemExit(
            f"{kind}: rows differ between 1 and 2 threads; a kernel must not depend on the thread "
            "count"
        )
    klass = cpu.cpu_class()
    old = reference["digests"].get(klass)
    dropped = []
    summary, columns = summaries(swept, reference.get("summary_columns"))
    if old != digests:
        dropped = sorted(c for c in reference["digests"] if c != klass)
        reference["digests"] = {}
    if reference.get("summary_digests", {}).get(klass) != summary:
        reference["summary_digests"] = {}  # summaries of other classes: recorded there again
    reference["digests"][klass] = digests
    reference["summary_columns"] = columns
    reference.setdefault("summary_digests", {})[klass] = summary
    notes = {
        c: n for c, n in reference.get("digests_notes", {}).items() if c in reference["digests"]
    }
    machine = cpu.provenance()
    notes[klass] = (
        f"computed on {machine['model']} (numpy {np.__version__} dispatch "
        f"{machine['numpy_dispatch']}, "
        f"{machine['blas']['internal_api']} {machine['blas']['version']} core "
        f"{machine['blas']['architecture']}), "
        "identical at 1 and 2 threads"
    )
    reference["digests_notes"] = notes
    reference["values"] = values_of(one, reference["metrics"])
    reference["summary_values"] = summary_rows(swept, columns)[0]
    reference["values_class"] = klass
    reference.setdefault("tolerance", dict(DEFAULT_TOLERANCE))
    write(kind, reference)
    note = (
        f"; dropped the changed rows' digests of {', '.join(dropped)} (checked within the "
        "tolerance until recorded there)"
        if dropped
        else ""
    )
    return f"{path.relative_to(DATA.parents[2])}: {len(digests)} points recorded for {klass}{note}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.helpers.reference_rows", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record this CPU class's digests and the values of KIND(s)")
    rec.add_argument("kinds", nargs="*", metavar="KIND", help="default: every kind with a file")
    rec.add_argument(
        "--config",
        help="a YAML or JSON sweep (seed, experiments of KIND) for a new or changed reference "
        "sweep",
    )
    rec.add_argument(
        "--all-metrics",
        action="store_true",
        help="hash every metric the kind has now (else keep the recorded list)",
    )
    chk = sub.add_parser("check", help="print what the test checks, as JSON; exit 1 on a failure")
    chk.add_argument("kinds", nargs="*", metavar="KIND")
    chk.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    kinds = args.kinds or kind_names()
    if args.command == "record":
        config = None
        if args.config:
            import yaml

            config = yaml.safe_load(Path(args.config).read_text())
            if len(kinds) != 1:
                raise SystemExit("--config applies to one KIND")
        for kind in kinds:
            print(record(kind, config, args.all_metrics))
        return 0
    results = [check(kind, args.threads) for kind in kinds]
    print(json.dumps(results, indent=1))
    return 1 if any(r["failed"] or not r["ids_match"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
