# One job per run draws every experiment's figures (PNG and PDF): the plotting stack is
# imported once, and forked workers (one per thread) draw the experiments. Each PNG goes into the
# report with its own caption (the kind's report/<figure>.rst), grouped by experiment. The job
# waits for every summary (claims needs every figure anyway) and redraws all figures when one
# summary changes (a few seconds: benchmarks/RESULTS.md).
rule figures:
    input:
        all_summaries(),
    output:
        [
            report(
                RESULTS / f"figures/{_name}/{_figure}.png",
                caption=figure_caption(_name, _e.kind, _figure),
                category=_name,
                labels={"figure": _figure},
            )
            for _name, _e in SETTINGS.experiments.items()
            for _figure in get_kind(_e.kind).figures
        ],
        [
            RESULTS / f"figures/{_name}/{_figure}.pdf"
            for _name, _e in SETTINGS.experiments.items()
            for _figure in get_kind(_e.kind).figures
        ],
    log:
        RESULTS / "logs/figures.log",
    benchmark:
        RESULTS / "benchmarks/figures.tsv"
    priority: PRIORITY["figures"]
    localrule: True
    threads: figure_threads
    params:
        outdir=RESULTS / "figures",
    shell:
        "attnsim figures --outdir {params.outdir:q} --threads {threads} {input:q} > {log:q} 2>&1"
