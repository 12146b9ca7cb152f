"""Kinds declare, the engine judges (issue 38): no kind module assigns a verdict, builds a result
with one, or edits evidence text; every kind's evidence claim (and the plugin example's) declares
its alternative with a reason."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from helpers.configs import REPO

import attnsim
from attnsim.claims.engine import ClaimSpec
from attnsim.kinds import all_kinds

KINDS = Path(attnsim.__file__).parent / "kinds"
FORBIDDEN = {
    "assigns a verdict": re.compile(r"\.verdict\s*=(?!=)"),
    "passes a verdict": re.compile(r"\bverdict\s*=(?!=)"),
    "edits evidence": re.compile(r"\.evidence\s*(\+=|=(?!=))"),
    "rewrites evidence": re.compile(r"evidence[\w\]\)'\"]*\.replace\("),
    # a rule applied outside the engine is a second judge, however its result is worded
    "applies a rule": re.compile(r"\b(equivalence_verdict|one_sided_verdict|combine_verdicts)\("),
}
# a plugin's claims module is held to the same rules
PLUGIN_CLAIMS = REPO / "tests/plugin_example/src/attnsim_plugin_example/claims.py"


def kind_sources() -> list[Path]:
    return sorted(KINDS.rglob("*.py"))


@pytest.mark.parametrize(
    "path", [*kind_sources(), PLUGIN_CLAIMS], ids=lambda p: str(p.relative_to(REPO))
)
def test_no_kind_module_sets_a_verdict_or_edits_evidence(path):
    text = path.read_text()
    found = [f"{what}: {m.group(0)!r}" for what, rx in FORBIDDEN.items() for m in rx.finditer(text)]
    assert not found, f"{path}: {found}"


def test_the_walk_catches_what_it_forbids():
    for line in (
        "c.verdict = 'holds'",
        "Claim(verdict='x')",
        "c.evidence += 'x'",
        "claim.evidence = claim.evidence.replace('a', 'b')",
        "mark = equivalence_verdict(lo, hi, 1.0, 0.1)",
    ):
        assert any(rx.search(line) for rx in FORBIDDEN.values()), line
    assert not any(rx.search("if c.verdict == 'holds':") for rx in FORBIDDEN.values())


def plugin_specs() -> tuple[ClaimSpec, ...]:
    """The plugin example's claims, loaded from its file (the plugin is not installed here)."""
    found = importlib.util.spec_from_file_location("plugin_example_claims", PLUGIN_CLAIMS)
    assert found and found.loader
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module.CLAIMS


def declared_specs() -> list[ClaimSpec]:
    kinds = sorted(all_kinds().items())
    builtin = [spec for _, kind in kinds for spec in kind.submodule("claims").CLAIMS]
    return builtin + list(plugin_specs())


@pytest.mark.parametrize("spec", declared_specs(), ids=lambda s: s.claim_id)
def test_claims_are_declarations_with_alternatives_and_reasons(spec):
    assert isinstance(spec, ClaimSpec)
    assert spec.regime.reason.startswith("docs/science.md §")
    if spec.role == "evidence":
        assert spec.alternative and spec.alternative.text and spec.alternative.reason
    elif spec.role == "sanity":
        assert spec.alternative is None
    else:  # a check: its alternative optional (NaN allowed), its reason saying why it is one
        assert spec.alternative is None or spec.alternative.reason


def test_subjects_and_axes_are_the_kinds_own_parameters():
    """A claim's subject is a value of one of its kind's parameters (and a registered one where
    the parameter has choices), its axis one of its parameters; a family groups claims of one
    kind, each about another subject."""
    families: dict[str, set[str]] = {}
    for _, kind in sorted(all_kinds().items()):
        params = {p.name: p for p in kind.schema.params}
        for spec in kind.submodule("claims").CLAIMS:
            assert not spec.axis or spec.axis in params, (spec.claim_id, spec.axis)
            if spec.subject is None:
                assert not spec.family or spec.family == spec.claim_id, spec.claim_id
                continue
            param = params.get(spec.subject.what)
            assert param is not None, (spec.claim_id, spec.subject)
            assert not param.choices or spec.subject.name in param.choices, spec.claim_id
            subjects = families.setdefault(f"{kind.name}/{spec.family}", set())
            assert spec.subject.name not in subjects, spec.claim_id
            subjects.add(spec.subject.name)
    assert {"normaliser_attention/normaliser_bias", "noisy_attention/delta_method"} <= set(families)
