"""The simulate and collect jobs import no pandas (~0.27 CPU-s a process, ~40 processes a run),
and `attnsim.store.arrays`, through which they build and read Arrow data instead of pyarrow's
conversions, gives what pyarrow's conversions give."""

from __future__ import annotations

import copy
import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from attnsim.kinds import all_kinds, get_kind
from attnsim.store import arrays, integrity

KINDS = sorted(name for name, kind in all_kinds().items() if kind.example)

JOBS = """
import sys
from attnsim.cli.main import main

spec, chunk, experiment, summary, resources = sys.argv[1:]
main(["simulate", "--spec-file", spec, "--output", chunk, "--resources", resources])
main(["collect", "--experiment-file", experiment, "--output", summary, chunk])
print("pandas imported" if "pandas" in sys.modules else "")
"""


@pytest.mark.parametrize("kind", KINDS)
def test_a_simulate_and_a_collect_job_import_no_pandas(kind, tmp_path, request):
    from attnsim.config.load import load
    from attnsim.plan.sweep import experiment_json, plan_experiment

    resources = tmp_path / "resources"
    if get_kind(kind).assets.names:  # the real-model kinds read the test cache's assets
        resources = request.getfixturevalue("minilm_dir").parent
        request.getfixturevalue("glove_dir")

    example = copy.deepcopy(dict(get_kind(kind).example))
    example["trials"] = 4
    settings = load({"seed": 3, "experiments": {kind: {"kind": kind, **example}}})
    plan = plan_experiment(settings, kind, tmp_path / "store")
    # collect refuses a grid with points missing from the store: one chunk is the whole grid
    assert len(plan.pending) == 1, "the example sweep should fit one chunk"
    spec = tmp_path / "spec.json"
    spec.write_text(plan.spec(plan.pending[0]).to_json())
    experiment = tmp_path / "experiment.json"
    experiment.write_text(experiment_json(settings, kind))
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            JOBS,
            str(spec),
            str(tmp_path / "c.parquet"),
            str(experiment),
            str(tmp_path / "s.parquet"),
            str(resources),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"{kind}: {result.stdout.strip()}"


def same(a: pa.Array, b: pa.Array) -> bool:
    """Equal type, nulls and bytes (NaN included, which Arrow's `equals` calls unequal)."""
    return a.type == b.type and integrity.column_digest(a) == integrity.column_digest(b)


@pytest.mark.parametrize(
    "values, type_",
    [
        (np.array([1.5, math.nan, -math.inf, 0.0]), pa.float64()),
        (np.array([1.5, 2.5], dtype=np.float32), pa.float32()),
        (np.array([3, -1, 2**40]), pa.int64()),
        (np.array([7, 0], dtype=np.int32), pa.int32()),
        (np.array([True, False, True] * 5), pa.bool_()),
        (np.zeros(0), pa.float64()),
    ],
)
def test_from_numpy_is_pa_array(values, type_):
    assert same(arrays.from_numpy(values, type_), pa.array(values, type_))


@pytest.mark.parametrize(
    "values, type_",
    [
        ([0.5, None, math.nan, 3], pa.float64()),
        ([16, None, 16], pa.int64()),
        ([True, None, False], pa.bool_()),
        ([None, None], pa.float64()),
        ([np.float64(0.25), np.int64(4)], pa.float64()),
        (["a", None, "ü€", ""], pa.string()),
        (["x", "y"], pa.large_string()),
        ([], pa.string()),
        (np.array([1.0, 2.0]), pa.float64()),
        (np.array([1, 2]), pa.float64()),  # ints as floats: through pa.array's conversion
        ([1.5, 2], pa.int64()),  # not integers: pa.array decides (and refuses)
        ([[1, 2], None], pa.list_(pa.int64())),
        ([None, True], pa.bool_()),
        ([2**60, 1], pa.float64()),  # not exact as a float: pa.array decides
        (["a", 1], pa.float64()),
        ([0.5] * 1000 + [None], pa.float64()),
    ],
)
def test_from_values_is_pa_array(values, type_):
    try:
        expected = pa.array(values, type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as error:
        with pytest.raises(type(error)):
            arrays.from_values(values, type_)
        return
    assert same(arrays.from_values(values, type_), expected)


def test_strings_and_scalars_and_repeats():
    assert same(arrays.strings(["ab", None, "c"]), pa.array(["ab", None, "c"], pa.string()))
    assert arrays.scalar(-1, pa.int32()).equals(pa.scalar(-1, pa.int32()))
    assert arrays.scalar('", "', pa.large_string()).equals(pa.scalar('", "', pa.large_string()))
    assert same(
        arrays.repeated(["p1", "p22"], [2, 3], pa.string()),
        pa.array(["p1", "p1", "p22", "p22", "p22"], pa.string()),
    )
    assert same(arrays.repeated([0.5, 2.0], [1, 2], pa.float64()), pa.array([0.5, 2.0, 2.0]))
    assert same(
        arrays.repeated(["a", "bc"], [2, 1], pa.large_string()),
        pa.array(["a", "a", "bc"], pa.large_string()),
    )


@pytest.mark.parametrize(
    "array",
    [
        pa.array([1.0, math.nan, 3.0, 4.0]).slice(1, 2),
        pa.array([True, False, True, True, False, True, False, False, True, True]).slice(3, 6),
        pa.chunked_array([pa.array([1, 2]), pa.array([3])]),
        pa.chunked_array([pa.array([5], pa.int32())]),
        pa.chunked_array([], pa.float64()),
        pa.array([], pa.bool_()),
        pa.array([1.0, None]),  # nulls: pyarrow's own conversion (NaN for the null)
        pa.array(["a", "b"]),  # strings: pyarrow's own conversion
    ],
)
def test_to_numpy_is_pyarrows_to_numpy(array):
    got = arrays.to_numpy(array)
    expected = array.to_numpy() if isinstance(array, pa.ChunkedArray) else array.to_numpy(False)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected, equal_nan=got.dtype.kind == "f")
