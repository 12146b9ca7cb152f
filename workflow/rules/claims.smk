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
        table="results/claims.parquet",
        markdown="results/claims.md",
        html=report(
            "results/claims.html", caption="../report/claims.rst", category="Claims"
        ),
    log:
        "results/logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    priority: PRIORITY["claims"]
    threads: claims_threads
    params:
        experiments=experiments_json(),  # not on the command line: reruns the claims when they change
    shell:
        "attnsim claims --experiments-file results/plan/experiments.json --store results/store "
        "--write results --threads {threads} > {log:q} 2>&1"
