localrules:
    collect,
    rebuild,


# Per-point summary (mean, SE, 95% CI, theory) of an experiment's current grid. No benchmark file
# here, nor for the judge, figures and claims jobs: the job server runs them (Snakemake's benchmark
# would measure only the command handing the job over), and its polling of every process cost the
# run ~0.15 CPU-s a job; each logs its own time and CPU ("ran in ... CPU-s").
rule collect:
    input:
        chunks=experiment_chunks,
        folder=experiment_folder,
        rebuild=summary_rebuild,
    output:
        RESULTS / "store/summary/kind={kind}/experiment={experiment}/summary.parquet",
    log:
        RESULTS / "logs/collect/{experiment}-{kind}.log",
    priority: PRIORITY["collect"]
    conda:
        CONDA_ENV
    threads: collect_threads
    params:
        settings=experiment_json,  # not on the command line: reruns the summary when they change
        spec=experiment_spec,  # the same settings as a file, written at the run's start
    shell:
        "attnsim collect --experiment-file {params.spec:q} --output {output:q} --threads {threads} "
        "{input.chunks:q} > {log:q} 2>&1"


# The marker of a summary behind its plan (common.smk's behind_marker): made, kept as collect's
# input until the next rebuild.
rule rebuild:
    output:
        RESULTS / "rebuild/{experiment}-{why}",
    log:
        RESULTS / "logs/rebuild/{experiment}-{why}.log",
    conda:
        CONDA_ENV
    shell:
        "touch {output:q} > {log:q} 2>&1"
