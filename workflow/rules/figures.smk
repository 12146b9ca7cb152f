# One job per experiment draws its figures (PNG and PDF) from its summary, so a changed experiment
# redraws only its own. Only the figures its grid has something to show in are drawn and listed
# (Kind.figure_applies). A figure of the kind's verdicts (Kind.presentation.claims_figures) is
# drawn from the kind's judged claims file, so that experiment's job follows its kind's judge; a
# figure that shows a claim the config locates a boundary of (Kind.presentation.boundary_figures)
# draws it from its located file, so that experiment's job follows the boundary's rounds.
# Each PNG goes into the report with the kind's caption (report/<figure>.rst, which names the
# experiment through the wildcard), grouped by experiment.
for _name in SETTINGS.experiments:

    rule:
        name:
            f"figures_{_name}"
        input:
            summary=summary_of(_name),
            claims=figure_claims(_name),
            boundaries=figure_boundaries(_name),
        output:
            [
                report(
                    RESULTS / f"figures/{{experiment}}/{_figure}.png",
                    caption=figure_caption(_name, _figure),
                    category=_name,
                    labels={"figure": _figure},
                )
                for _figure in experiment_figures(_name)
            ],
            [
                RESULTS / f"figures/{{experiment}}/{_figure}.pdf"
                for _figure in experiment_figures(_name)
            ],
        log:
            RESULTS / "logs/figures/{experiment}.log",
        wildcard_constraints:
            experiment=_name,
        priority: PRIORITY["figures"]
        localrule: True
        conda:
            CONDA_ENV
        params:
            outdir=RESULTS / "figures" / _name,
            figures=figure_options(_name),
            claims=figure_claims_option(_name),
            boundaries=figure_boundaries_option(_name),
        shell:
            "attnsim figures --summary {input.summary:q} --outdir {params.outdir:q} "
            "{params.figures} {params.claims} {params.boundaries} > {log:q} 2>&1"
