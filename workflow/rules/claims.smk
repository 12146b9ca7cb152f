localrules:
    claims,


# The claims table (prediction, measurement, verdict, threshold, figure) from every experiment's
# summary, and the trial rows of the kinds whose claims fit every run (escape times, right-
# censored); claims.html links to each claim's figure and embeds a copy of it for the report.
rule claims:
    input:
        summaries=all_summaries(),
        trials=claims_trial_chunks,
        figures=all_figure_pngs(),
    output:
        table=RESULTS / "claims.parquet",
        markdown=RESULTS / "claims.md",
        html=report(
            RESULTS / "claims.html", caption="../report/claims.rst", category="Claims"
        ),
    log:
        RESULTS / "logs/claims.log",
    benchmark:
        RESULTS / "benchmarks/claims.tsv"
    priority: PRIORITY["claims"]
    conda:
        CONDA_ENV
    threads: claims_threads
    params:
        experiments=experiments_json(),  # not on the command line: reruns the claims when they change
        workspace=RESULTS,
        run=SETTINGS.config_hash,  # the run's record (<workspace>/plan/provenance.json): every row
    shell:
        "attnsim claims --experiments-file {params.workspace:q}/plan/experiments.json "
        "--workspace {params.workspace:q} --run-file {params.workspace:q}/plan/provenance.json "
        "--write {params.workspace:q} --threads {threads} > {log:q} 2>&1"
