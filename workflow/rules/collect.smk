localrules:
    collect,


# Per-point summary (mean, SE, 95% CI, theory) of an experiment's current grid.
rule collect:
    input:
        chunks=experiment_chunks,
        folder=experiment_folder,
    output:
        "results/store/summary/kind={kind}/experiment={experiment}/summary.parquet",
    log:
        "results/logs/collect/{experiment}-{kind}.log",
    benchmark:
        "results/benchmarks/collect/{experiment}-{kind}.tsv"
    priority: PRIORITY["collect"]
    params:
        experiment=experiment_json,
    shell:
        "attnsim collect --experiment {params.experiment:q} --output {output:q} {input.chunks:q} > {log:q} 2>&1"
