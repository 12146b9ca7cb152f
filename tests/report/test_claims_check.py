"""What `cite`, `claims --diff`, `verify` and the run's summary check of claims.parquet before they
print (issue 52 item 3): a verdict edited into a file whose checksums were rewritten to match, a
flipped bit, a pandas round-trip, a query's output in its place, and summaries changed since the
claims were judged are each one line naming the file; an untouched table passes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers import small_store
from helpers.configs import small_config

from attnsim.cli.main import main
from attnsim.errors import StoreError
from attnsim.report import claims_check
from attnsim.store import parquet as store

VERDICTS = ("holds", "fails", "inconclusive", "outside regime", "not measured")
UNJUDGED = {"outside regime", "not measured"}  # no data either way: not told apart


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("check") / "results"
    small_store.make(small_config(), results)
    return results


@pytest.fixture
def results(made, tmp_path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(made, copy)
    return copy


def rewrite(path: Path, change) -> None:
    """Apply `change` to the rows of the claims table and write it back re-signed (its checksums
    recomputed to match, as a deliberate edit would), provenance otherwise kept."""
    table = pq.read_table(path)
    rows = change(table.to_pylist())
    meta = store.read_meta(path)
    meta.pop("content_sha256")
    edited = table.from_pylist(rows, schema=table.schema.remove_metadata())
    store.write_atomic(edited, path, meta)


def cite(results: Path, claim: str, capsys) -> tuple[int, str, str]:
    code = main(["cite", claim, "--store", str(results / "store")])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(err: str) -> str:
    assert err.startswith("attnsim: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_an_untouched_table_passes(results):
    rows = claims_check.checked(results / "claims.parquet", results / "store")
    assert rows and {r["verdict"] for r in rows} >= {"holds", "inconclusive"}


def test_every_edited_verdict_is_refused_by_cite(results, capsys):
    """The issue's case: `cite` printed `verdict: **holds**` from a table whose verdict was
    edited, where `verify` refused it. Every change of any row's verdict into another one is now
    refused (the two verdicts without data, outside regime and not measured, aside)."""
    path = results / "claims.parquet"
    rows = pq.read_table(path).to_pylist()
    target = next(r for r in rows if r["verdict"] == "inconclusive")["claim_id"]
    for index, row in enumerate(rows):
        for verdict in VERDICTS:
            if verdict == row["verdict"] or {verdict, row["verdict"]} <= UNJUDGED:
                continue
            edited = [dict(r) for r in rows]
            edited[index]["verdict"] = verdict
            with pytest.raises(StoreError, match=f"claim {row['claim_id']} says {verdict!r}"):
                claims_check.check_verdicts(edited, path)
    rewrite(
        path, lambda rs: [r | {"verdict": "holds"} if r["claim_id"] == target else r for r in rs]
    )
    code, out, err = cite(results, target, capsys)
    assert code == 2 and out == "" and f"claim {target} says 'holds'" in one_line_error(err)
    assert main(["verify", str(results / "store")]) == 1  # verify refuses the same file


def test_a_design_allows_only_what_a_wider_interval_can_decide(results):
    path = results / "claims.parquet"
    rows = pq.read_table(path).to_pylist()
    inconclusive = next(r for r in rows if r["verdict"] == "inconclusive")
    held = next(r for r in rows if r["verdict"] == "holds" and r["points"])
    # a wider interval may leave undecided what the 95% one decides, never the other way round
    claims_check.check_verdicts([held | {"verdict": "inconclusive"}], path, [held["claim_id"]])
    with pytest.raises(StoreError):
        claims_check.check_verdicts(
            [inconclusive | {"verdict": "holds"}], path, [inconclusive["claim_id"]]
        )


@pytest.mark.parametrize("command", ["cite", "verify", "diff", "summary"])
def test_a_flipped_bit_is_one_line(results, capsys, command):
    """The issue's case: a flipped bit in claims.parquet ended `verify` and `cite` in `OSError:
    Unexpected end of stream`."""
    path = results / "claims.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x04
    path.write_bytes(bytes(data))
    store_arg = str(results / "store")
    if command == "summary":
        code = main(["summary", "--configfile", str(results / "config.yaml"), "--store", store_arg])
        out = capsys.readouterr().out
        assert code == 0 and f"claims not shown: {path}: " in out and "holds" not in out
        return
    argv = {
        "cite": ["cite", "delta_method_gaussian", "--store", store_arg],
        "verify": ["verify", store_arg],
        "diff": ["claims", "--store", store_arg, "--diff", str(path)],
    }[command]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and one_line_error(err).startswith(f"attnsim: error: {path}: ")


def test_a_pandas_round_trip_is_named_as_such(results, capsys):
    """The issue's case: `verify` blamed "an older attnsim" for a table pandas had rewritten."""
    path = results / "claims.parquet"
    pd.read_parquet(path).to_parquet(path)
    for argv in (
        ["verify", str(results / "store")],
        ["cite", "next_order_theory", "--store", str(results / "store")],
    ):
        assert main(argv) == 2
        err = one_line_error(capsys.readouterr().err)
        assert "no attnsim provenance" in err and "older attnsim" not in err


def test_a_query_output_in_its_place_is_refused(results, capsys):
    """The issue's case: `query --output results/claims.parquet` was allowed and `cite` then died
    with a TypeError. The query now refuses to write there; a table put there by other means is
    one line for cite."""
    path = results / "claims.parquet"
    before = path.read_bytes()
    sql = "SELECT point_id FROM robustness LIMIT 3"
    code = main(
        [
            "query",
            sql,
            "--store",
            str(results / "store"),
            "--workspace",
            str(results),
            "--output",
            str(path),
        ]
    )
    assert code == 2 and path.read_bytes() == before
    assert "one of the workspace's own files" in one_line_error(capsys.readouterr().err)
    from attnsim.store import query

    query.write(results / "store", sql, output=path)  # what the check stops, done directly
    code, out, err = cite(results, "next_order_theory", capsys)
    assert code == 2 and out == "" and one_line_error(err)


def test_summaries_changed_since_the_claims_were_judged_are_named(results, capsys):
    summary = next((results / "store" / "summary").rglob("summary.parquet"))
    meta = store.read_meta(summary)
    table = store.read_table(summary)
    meta.pop("content_sha256")
    column = table.column_names.index("n_trials")
    table = table.set_column(column, "n_trials", [[v + 1 for v in table["n_trials"].to_pylist()]])
    store.write_atomic(table.replace_schema_metadata(None), summary, meta)
    code, out, err = cite(results, "delta_method_gaussian", capsys)  # a claim that read it
    assert code == 2 and "judged on summaries that have changed since" in one_line_error(err)


def test_the_declarations_load_without_ml_dtypes_or_idle_blas_threads():
    """`declared_specs` (the run's summary, `verify`, `cite`) imports every kind's claims: in a
    process with OpenBLAS's default threads, without importing ml-dtypes (a claim's tolerance
    needs a format's significand bits alone) and with the one eigen-solve the declarations need
    (normaliser_temperature's reference gap) run on one BLAS thread, the same nodes as a job's."""
    import os
    import subprocess
    import sys

    code = """
import sys, numpy as np
from threadpoolctl import threadpool_limits
from attnsim.report.claims_check import declared_specs
from attnsim.theory import normalisers
specs = declared_specs()
with threadpool_limits(limits=1, user_api="blas"):
    nodes = np.polynomial.legendre.leggauss(normalisers.SPHERE_NODES)
cached = normalisers._legendre(normalisers.SPHERE_NODES)
print(len(specs), "ml_dtypes" in sys.modules, normalisers._legendre.cache_info().hits > 0,
      all(a.tobytes() == b.tobytes() for a, b in zip(nodes, cached)))
"""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    count, ml_dtypes, computed_before, same = out.stdout.split()
    assert int(count) > 100 and ml_dtypes == "False" and computed_before == "True"
    assert same == "True"
