# One job per experiment draws all of its figures (PNG and PDF) in one process: the plotting
# stack is imported once. Each PNG goes into the report with its own caption (the kind's
# report/<figure>.rst), grouped by experiment. One rule per kind, as kinds differ in their
# figures (figure names are unique across kinds, so every target has one rule).
for _kind in all_kinds().values():

    rule:
        name:
            f"figures_{_kind.name}"
        input:
            summary_file,
        output:
            **{
                f"{_figure}_png": report(
                    f"results/figures/{{experiment}}/{_figure}.png",
                    caption=str(_kind.caption(_figure)),
                    category="{experiment}",
                    labels={"figure": _figure},
                )
                for _figure in _kind.figures
            },
            **{
                f"{_figure}_pdf": f"results/figures/{{experiment}}/{_figure}.pdf"
                for _figure in _kind.figures
            },
        log:
            "results/logs/figures/{experiment}.log",
        benchmark:
            "results/benchmarks/figures/{experiment}.tsv"
        priority: PRIORITY["figures"]
        localrule: True
        params:
            outdir=lambda wildcards, output: Path(output[0]).parent,
        shell:
            "attnsim figures --summary {input:q} --outdir {params.outdir:q} > {log:q} 2>&1"
