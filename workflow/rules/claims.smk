localrules:
    claims,


# The claims table (prediction, measurement with 95% CI, verdict) from every experiment's summary.
rule claims:
    input:
        all_summaries(),
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
    params:
        experiments=experiments_json(),
    shell:
        "attnsim claims --experiments {params.experiments:q} --store results/store --write results > {log:q} 2>&1"
