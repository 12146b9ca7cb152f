# One job per chunk of grid points: per-trial rows into the store.
rule simulate:
    input:
        chunk_assets,
    output:
        "results/store/trials/kind={kind}/experiment={experiment}/chunk-{chunk}.parquet",
    log:
        "results/logs/simulate/{experiment}/{kind}-{chunk}.log",
    benchmark:
        "results/benchmarks/simulate/{experiment}/{kind}-{chunk}.tsv"
    priority: chunk_priority
    threads: 1
    resources:
        mem_mb=chunk_mem_mb,
        runtime=chunk_runtime,
    params:
        spec=chunk_spec,
    shell:
        "attnsim simulate --spec {params.spec:q} --output {output:q} --threads {threads} --resources resources > {log:q} 2>&1"
