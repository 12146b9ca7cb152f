# One rule per figure (a figure of an experiment, PNG and PDF), so that the report shows each
# with its own caption: workflow/report/<figure>.rst, grouped by experiment.
for _figure in ALL_FIGURES:

    rule:
        name:
            f"figure_{_figure}"
        input:
            summary_file,
        output:
            png=report(
                f"results/figures/{{experiment}}/{_figure}.png",
                caption=f"../report/{_figure}.rst",
                category="{experiment}",
                labels={"figure": _figure},
            ),
            pdf=f"results/figures/{{experiment}}/{_figure}.pdf",
        log:
            f"results/logs/figure/{{experiment}}-{_figure}.log",
        localrule: True
        params:
            figure=_figure,
        shell:
            "attnsim figures --summary {input:q} --figure {params.figure} --output {output.png:q} > {log:q} 2>&1"
