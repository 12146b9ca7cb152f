"""The repository explains itself: generated docs are current, and every link and citation resolves inside it."""

from __future__ import annotations

from conftest import REPO

from attnsim.store import schema_document


def test_results_schema_document_is_current():
    assert (REPO / "docs/results-schema.md").read_text() == schema_document(), "out of date: attnsim schema --write docs/results-schema.md"
