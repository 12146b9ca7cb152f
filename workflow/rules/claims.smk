localrules:
    judge,
    claims,


# One kind's claims judged on the summaries of all its experiments (and the trial rows of the
# kinds whose claims fit every run: Kind.schema.run_columns), into the kind's claims file: a
# changed experiment re-judges its own kind only. The kind's figures of verdicts read this file
# (figures.smk), so no figure judges; the claims table is assembled from the files.
rule judge:
    input:
        summaries=kind_summaries,
        trials=kind_trial_chunks,
    output:
        RESULTS / "claims/{kind}.parquet",
    log:
        RESULTS / "logs/judge/{kind}.log",
    priority: PRIORITY["judge"]
    conda:
        CONDA_ENV
    params:
        experiments=kind_experiments_json,  # not on the command line: rejudges when they change
        designs=lambda wildcards: state_designs(),  # the claims' sequential designs (state.yaml)
        workspace=RESULTS,
    shell:
        "attnsim judge --kind {wildcards.kind} --experiments-file "
        "{params.workspace:q}/plan/experiments.json --workspace {params.workspace:q} "
        "--output {output:q} > {log:q} 2>&1"


# The claims table (prediction, measurement, verdict, threshold, figure) assembled from the kinds'
# claims files, with the claim every kind shares (the entropy bound, from the summaries' entropy
# columns) and the not-measured claims of the kinds the config does not run; claims.html links to
# each claim's figure and embeds a copy of it for the report.
rule claims:
    input:
        judged=[judged_claims(kind) for kind in sweep_kinds()],
        summaries=all_summaries(),
        figures=all_figure_pngs(),
        boundaries=boundaries_file(),
    output:
        table=RESULTS / "claims.parquet",
        markdown=RESULTS / "claims.md",
        html=report(
            RESULTS / "claims.html", caption="../report/claims.rst", category="Claims"
        ),
    log:
        RESULTS / "logs/claims.log",
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
