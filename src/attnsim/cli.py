"""Command line: `attnsim simulate|collect|figures` for the workflow, `query|show|summary` for people."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from attnsim.errors import AttnsimError

DEFAULT_STORE = Path("results/store")


def _simulate(args) -> None:
    from attnsim.tuning import tune_allocator

    tune_allocator()  # before numpy allocates anything big: keeps freed temporaries in the heap
    from attnsim.simulate import run_chunk

    run_chunk(args.spec, args.output, threads=args.threads)


def _collect(args) -> None:
    from attnsim.summarise import collect

    collect(args.experiment, args.chunks, args.output)


def _figures(args) -> None:
    from attnsim.figures.render import render

    render(args.summary, args.outdir, args.figure)


def _query(args) -> None:
    from attnsim import query

    frame = query.run(args.store, args.sql)
    text = query.emit(frame, args.format, args.output)
    if text is not None:
        print(text)


def _show(args) -> None:
    from attnsim.status import show

    print(show(args.config, args.store))


def _summary(args) -> None:
    from attnsim.config import load_file
    from attnsim.status import run_summary

    print(run_summary(load_file(args.config), args.store, elapsed=args.elapsed))


def _schema(args) -> None:
    from attnsim.kinds import KINDS
    from attnsim.store import schema_markdown

    text = "\n".join(schema_markdown(kind) for kind in ([args.kind] if args.kind else KINDS))
    if args.readme:
        update_readme(args.readme, text)
    else:
        print(text)


README_MARKERS = ("<!-- columns:start", "<!-- columns:end -->")


def update_readme(path: Path, text: str) -> None:
    """Replace the generated column tables between the README's markers."""
    readme = path.read_text()
    start = readme.index(README_MARKERS[0])
    start = readme.index("\n", start) + 1
    end = readme.index(README_MARKERS[1])
    path.write_text(readme[:start] + "\n" + text + "\n" + readme[end:])


def _claims(args) -> None:
    import json

    from attnsim import claims
    from attnsim.config import load_file

    if args.experiments:
        experiments, meta = json.loads(args.experiments), {}
    else:
        settings = load_file(args.config)
        experiments = {name: e.kind for name, e in settings.experiments.items()}
        meta = {"config_hash": settings.config_hash, "seed": settings.seed}
    rows = claims.evaluate(args.store, experiments)
    if args.write:
        claims.write(rows, args.write, {"experiments": json.dumps(experiments), **meta})
    print(claims.markdown(rows) if args.markdown else claims.short(rows))


def _check(args) -> None:
    from attnsim.config import load_file

    settings = load_file(args.config)
    print(f"{args.config}: valid ({len(settings.experiments)} experiments)")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="attnsim", description=__doc__)
    top.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def store_option(p):
        p.add_argument("--store", type=Path, default=DEFAULT_STORE, help="result store (default: %(default)s)")

    def config_option(p):
        p.add_argument("--config", type=Path, default=Path("config.yaml"), help="sweep configuration (default: %(default)s)")

    p = sub.add_parser("query", help="run SQL (DuckDB) over the store; `attnsim query 'SHOW TABLES'` lists the views")
    p.add_argument("sql")
    p.add_argument("--format", default="table", help="table (default), csv, json or parquet")
    p.add_argument("--output", type=Path, help="write to this file instead of stdout (required for parquet)")
    store_option(p)
    p.set_defaults(func=_query)

    p = sub.add_parser("show", help="experiments in the config and how many of their points are done")
    config_option(p)
    store_option(p)
    p.set_defaults(func=_show)

    p = sub.add_parser("summary", help="the end-of-run summary")
    config_option(p)
    store_option(p)
    p.add_argument("--elapsed", type=float, help="wall time of the run in seconds, to print")
    p.set_defaults(func=_summary)

    p = sub.add_parser("run", help="snakemake --cores all --rerun-incomplete, recovering from a killed run; extra arguments go to snakemake", add_help=False)
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda args: None)  # handled before parsing

    p = sub.add_parser("claims", help="the claims table: prediction vs measurement and a verdict per claim")
    config_option(p)
    store_option(p)
    p.add_argument("--experiments", help="(workflow) experiment name -> kind as JSON, instead of --config")
    p.add_argument("--write", type=Path, help="also write claims.parquet, claims.md and claims.html into this folder")
    p.add_argument("--markdown", action="store_true", help="print the full Markdown table")
    p.set_defaults(func=_claims)

    p = sub.add_parser("schema", help="print the store's columns as Markdown tables")
    p.add_argument("--kind", help="only this experiment kind")
    p.add_argument("--readme", type=Path, help="rewrite the generated section of this README instead of printing")
    p.set_defaults(func=_schema)

    p = sub.add_parser("check-config", help="validate a config file and exit")
    p.add_argument("config", type=Path, nargs="?", default=Path("config.yaml"))
    p.set_defaults(func=_check)

    p = sub.add_parser("simulate", help="(workflow) simulate one chunk of grid points")
    p.add_argument("--spec", required=True, help="chunk spec (JSON) as planned by the workflow")
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=_simulate)

    p = sub.add_parser("collect", help="(workflow) summarise an experiment's chunks")
    p.add_argument("--experiment", required=True, help="experiment settings (JSON)")
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("chunks", nargs="*", type=Path)
    p.set_defaults(func=_collect)

    p = sub.add_parser("figures", help="(workflow) draw an experiment's figures from its summary")
    p.add_argument("--summary", required=True, type=Path)
    p.add_argument("--outdir", required=True, type=Path, help="writes <figure>.png and <figure>.pdf here")
    p.add_argument("--figure", action="append", help="only this figure (repeatable; default: all of the kind's)")
    p.set_defaults(func=_figures)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:  # everything after `run` belongs to snakemake, flags included
        from attnsim.runner import run

        return run(argv[1:])
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose or args.command in ("simulate", "collect", "figures") else logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if getattr(args, "threads", 1) < 1:
        print("attnsim: error: --threads must be >= 1", file=sys.stderr)
        return 2
    try:
        args.func(args)
    except AttnsimError as error:
        print(f"attnsim: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
