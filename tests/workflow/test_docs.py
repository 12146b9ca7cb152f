"""The repository explains itself: generated docs are current, and every link and citation resolves
inside it."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.configs import REPO

from attnsim.report.docgen import schema_document


def test_results_schema_document_is_current():
    assert (REPO / "docs/results-schema.md").read_text() == schema_document(), (
        "out of date: attnsim schema --write docs/results-schema.md"
    )


DOC_FILES = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "tests").glob("**/README.md")),
    *sorted((REPO / "benchmarks").glob("*.md")),
]
CODE_FILES = [
    p
    for d in ("src", "workflow", "tests", "benchmarks")
    for p in sorted((REPO / d).rglob("*"))
    if p.is_file()
    and p.suffix in (".py", ".smk", ".yaml", ".rst", ".sh", ".md")
    and "egg-info" not in str(p)
] + [REPO / "workflow/Snakefile", REPO / "config.yaml"]
SCIENCE = (REPO / "docs/science.md").read_text()


def test_every_relative_link_in_the_docs_resolves_inside_the_repository():
    broken = []
    for doc in DOC_FILES:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            if not path.exists() or REPO.resolve() not in path.parents:
                broken.append(f"{doc.relative_to(REPO)}: {target}")
    assert not broken, broken


def test_citations_of_the_science_document_resolve():
    """Code cites docs/science.md by section (§2.3); every cited section exists, nothing cites the
    old SCIENCE.md."""
    anchors = set(re.findall(r'<a id="s([0-9-]+)"></a>', SCIENCE))
    bad = []
    for path in CODE_FILES + DOC_FILES:
        if path == Path(__file__):
            continue
        text = path.read_text(errors="replace")
        if "SCIENCE.md" in text or "../shared" in text:
            bad.append(f"{path.relative_to(REPO)}: cites a file outside the repository")
        for ref in re.findall(
            r"docs/science\.md((?:\s*(?:§[0-9.]+(?:–§[0-9.]+)?[,;]?\s*(?:and\s*)?))*)", text
        ):
            for section in re.findall(r"§([0-9]+(?:\.[0-9]+)?)", ref):
                if section.replace(".", "-") not in anchors:
                    bad.append(
                        f"{path.relative_to(REPO)}: §{section} is not a section of docs/science.md"
                    )
        for cited in re.findall(r"\bdocs/[a-z0-9_-]+\.md", text):
            if not (REPO / cited).exists():
                bad.append(f"{path.relative_to(REPO)}: {cited} does not exist")
    assert not bad, bad


def test_shared_machinery_names_no_kind():
    """A kind is one package: outside its folder (and the configs that run it) no code names it."""
    from attnsim.kinds import all_kinds

    builtin = [k for k in all_kinds().values() if k.package.startswith("attnsim.kinds.")]
    shared = [
        p
        for p in (REPO / "src/attnsim").rglob("*")
        if p.is_file() and p.suffix in (".py", ".yaml", ".rst") and "/kinds/" not in str(p)
    ]
    shared += [p for p in (REPO / "src/attnsim/kinds").glob("*.py")]
    shared += [
        REPO / "workflow/Snakefile",
        *(REPO / "workflow/rules").glob("*.smk"),
        *(REPO / "workflow/report").glob("*.rst"),
    ]
    found = []
    for path in shared:
        text = path.read_text()
        found += [
            f"{path.relative_to(REPO)}: {kind.name}"
            for kind in builtin
            if re.search(rf"\b{kind.name}\b", text)
        ]
        names = "|".join(k.name for k in builtin)
        found += [
            f"{path.relative_to(REPO)}: {m}"
            for m in re.findall(rf"kind(?:\.name)?\s*==\s*['\"](?:{names})['\"]", text)
        ]
    assert not found, found


def test_the_tables_of_kinds_are_generated_from_the_declarations():
    """README.md's and docs/usage.md's tables of kinds come from the Kind declarations: adding a
    kind edits no other file by hand (`attnsim schema --update-docs` rewrites them)."""
    from attnsim.report.docgen import GENERATED, generated_part

    for relative, parts in GENERATED.items():
        text = (REPO / relative).read_text()
        for name, make in parts.items():
            assert generated_part(text, name) == make(), (
                f"{relative}: {name} out of date: attnsim schema --update-docs"
            )
