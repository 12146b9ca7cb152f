localrules:
    collect,


def collect_threads(wildcards):
    """2 for an experiment of 10^7 trial rows or more (a second thread reads and checks the next
    row group while one is summarised: the million preset's collect); else 1, so that the small
    experiments' collects run side by side."""
    plan = PLANS[wildcards.experiment]
    return 2 if plan.n_points * (plan.trials or 1) >= 10**7 else 1


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
    threads: collect_threads
    priority: PRIORITY["collect"]
    params:
        settings=experiment_json,  # not on the command line: reruns the summary when they change
        spec=experiment_spec,  # the same settings as a file, written at the run's start
    shell:
        "attnsim collect --experiment-file {params.spec:q} --output {output:q} --threads {threads} "
        "{input.chunks:q} > {log:q} 2>&1"
