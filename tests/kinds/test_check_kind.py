"""`attnsim.testing.check_kind`, the conformance suite of a kind: every registered kind passes it
on its example experiment, and it refuses, naming the kind and the fault, a kernel whose rows
depend on the thread count or the chunking and declarations that contradict each other."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from attnsim.kinds import all_kinds, get_kind, registry
from attnsim.testing import KindCheckError, check_kind


@pytest.mark.parametrize("kind", sorted(all_kinds()))
def test_every_registered_kind_keeps_the_contract(kind, kind_assets, tmp_path):
    check_kind(kind, tmp_path)


def registered_as_itself(monkeypatch, kind):
    """`kind` in the registry under its own name, for this test only."""
    monkeypatch.setitem(registry()[0], kind.name, kind)
    return kind


def test_rows_that_depend_on_how_the_trials_are_run_are_refused(monkeypatch, tmp_path):
    base = get_kind("temperature_entropy")
    calls = itertools.count()

    def counting(rng, trials, points):
        """The kernel plus the number of blocks this process ran before: not a per-point stream."""
        out = base.compute.simulate_block(rng, trials, points)
        shift = next(calls)
        return [dict(m, gap=m["gap"] + shift) for m in out]

    compute = dataclasses.replace(base.compute, simulate_block=counting)
    kind = registered_as_itself(monkeypatch, dataclasses.replace(base, compute=compute))
    with pytest.raises(KindCheckError) as error:
        check_kind(kind, tmp_path, figures=False)
    assert str(error.value) == (
        "kind temperature_entropy: trial column 'gap' differs on 2 threads from 1 thread and 1 "
        "chunk"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda k: {"schema": dataclasses.replace(k.schema, main_metric="entropy_gap")},
            "main_metric 'entropy_gap' is not one of its metrics",
        ),
        (
            lambda k: {"schema": dataclasses.replace(k.schema, stream_params=("n", "dim"))},
            "stream parameter 'dim' is not one of its parameters",
        ),
        (
            lambda k: {"summary": dataclasses.replace(k.summary, finite_metrics=("gapp",))},
            "summary.finite_metrics names 'gapp', not one of its metrics",
        ),
        (
            lambda k: {"example": None},
            "declares no example experiment (Kind.example)",
        ),
        (
            lambda k: {"schema": dataclasses.replace(k.schema, run_columns=("escape",))},
            "schema.run_columns names 'escape', not one of its metrics",
        ),
        (
            lambda k: {
                "presentation": dataclasses.replace(k.presentation, claims_figures=("matrix",))
            },
            "presentation.claims_figures names 'matrix', not one of its figures",
        ),
    ],
)
def test_contradicting_declarations_are_named(monkeypatch, tmp_path, change, message):
    base = get_kind("temperature_entropy")
    kind = registered_as_itself(monkeypatch, dataclasses.replace(base, **change(base)))
    with pytest.raises(KindCheckError) as error:
        check_kind(kind, tmp_path, figures=False)
    assert str(error.value) == f"kind temperature_entropy: {message}"


def presentation(kind: str, boundary_figures: dict):
    base = get_kind(kind)
    shows = dataclasses.replace(base.presentation, boundary_figures=boundary_figures)
    return dataclasses.replace(base, presentation=shows)


@pytest.mark.parametrize(
    ("shows", "message"),
    [
        (
            {"no_such_claim": "delta_shortfall"},
            "presentation.boundary_figures['no_such_claim']: not a per-point claim of the kind",
        ),
        (
            {"delta_method_gaussian": "collapse"},
            "presentation.boundary_figures['delta_method_gaussian'] = 'collapse': not one of its "
            "figures showing the claim",
        ),
        (
            {"next_order_theory": "delta_shortfall"},
            "presentation.boundary_figures['next_order_theory']: delta_shortfall() takes no "
            "boundaries=",
        ),
    ],
)
def test_a_boundary_figure_must_show_a_per_point_claim_and_take_it(
    monkeypatch, tmp_path, shows, message
):
    """What the workflow reads (which figures jobs wait for a boundary) agrees with the claims
    and the figures code the job runs."""
    kind = registered_as_itself(monkeypatch, presentation("noisy_attention", shows))
    if "takes no" in message:  # a figure function without the parameter
        module = kind.submodule("figures")
        monkeypatch.setattr(module, "delta_shortfall", lambda summary: None)
    with pytest.raises(KindCheckError) as error:
        check_kind(kind, tmp_path, figures=False)
    assert str(error.value) == f"kind noisy_attention: {message}"


def test_a_kind_the_registry_does_not_know_is_named(tmp_path):
    kind = dataclasses.replace(get_kind("temperature_entropy"), name="unregistered")
    with pytest.raises(KindCheckError, match=r"^kind unregistered: not registered \("):
        check_kind(kind, tmp_path)
