# One job per experiment draws all of its figures (PNG and PDF) in one process: the plotting
# stack is imported once. Each PNG goes into the report with its own caption
# (workflow/report/<figure>.rst), grouped by experiment. One rule per kind, as kinds differ in
# their figures (figure names are unique across kinds, so every target has one rule).
for _kind, (_, _names) in FIGURES.items():

    rule:
        name:
            f"figures_{_kind}"
        input:
            summary_file,
        output:
            **{
                f"{_figure}_png": report(
                    f"results/figures/{{experiment}}/{_figure}.png",
                    caption=f"../report/{_figure}.rst",
                    category="{experiment}",
                    labels={"figure": _figure},
                )
                for _figure in _names
            },
            **{
                f"{_figure}_pdf": f"results/figures/{{experiment}}/{_figure}.pdf"
                for _figure in _names
            },
        log:
            "results/logs/figures/{experiment}.log",
        priority: PRIORITY["figures"]
        localrule: True
        params:
            outdir=lambda wildcards, output: Path(output[0]).parent,
        shell:
            "attnsim figures --summary {input:q} --outdir {params.outdir:q} > {log:q} 2>&1"
