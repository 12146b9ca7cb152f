# One job per chunk of grid points: per-trial rows into the store. The chunk's spec file is
# written by the submitting run at its start (not an input: a dry run writes nothing).
rule simulate:
    input:
        chunk_assets,
    output:
        RESULTS
        / "store/trials/kind={kind}/experiment={experiment}/chunk-{chunk}.parquet",
    log:
        RESULTS / "logs/simulate/{experiment}/{kind}-{chunk}.log",
    benchmark:
        RESULTS / "benchmarks/simulate/{experiment}/{kind}-{chunk}.tsv"
    priority: chunk_priority
    conda:
        CONDA_ENV
    threads: chunk_threads
    resources:
        mem_mb=chunk_mem_mb,
        runtime=chunk_runtime,
    params:
        spec_file=chunk_spec_path,
    shell:
        "attnsim simulate --spec-file {params.spec_file:q} --output {output:q} --threads {threads} --resources resources > {log:q} 2>&1"
