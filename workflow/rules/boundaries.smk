localrules:
    located,
    record_boundaries,


# A config's boundaries (`boundaries:`), each located in rounds (docs/science.md §7.9): a round
# computes the one request the last round left into the store (an experiment of role `locate`,
# never read by a claim), replays the method on the stored points and writes the next request,
# or the located boundary, to its file. The DAG reads only those files (`boundary_rounds`): the
# claims code runs in the jobs.
checkpoint locate_round:
    input:
        previous=previous_round,
    output:
        RESULTS / "locate/{boundary}/round-{round}.json",
    log:
        RESULTS / "logs/locate/{boundary}-{round}.log",
    conda:
        CONDA_ENV
    params:
        entry=boundary_entry,  # not on the command line: a changed boundary reruns its rounds
        workspace=RESULTS,
        previous=lambda wildcards, input: (
            f"--previous {shlex.quote(str(input.previous[0]))}"
            if input.previous
            else ""
        ),
    shell:
        "attnsim locate-round --boundary {wildcards.boundary} --round {wildcards.round} "
        "--plan {params.workspace:q}/plan/boundaries.json --workspace {params.workspace:q} {params.previous} "
        "--output {output:q} > {log:q} 2>&1"


# A boundary's last round, once its rounds are done (each boundary's rounds run on their own).
rule located:
    input:
        last_round,
    output:
        RESULTS / "locate/{boundary}/located.json",
    log:
        RESULTS / "logs/locate/{boundary}-located.log",
    conda:
        CONDA_ENV
    shell:
        "cp {input:q} {output:q} > {log:q} 2>&1"


# Every boundary's last round recorded in the workspace's state.yaml and boundaries.json, which
# the claims job reads to show each boundary beside its claim. A boundary is drawn once: in its
# claim's figure (figures.smk), or, where no figure of the run shows its claim, here as
# boundaries/<name>.png (the located points, the interval, the theory's prediction).
rule record_boundaries:
    input:
        located_files(),
    output:
        table=RESULTS / "boundaries.json",
        figures=boundary_figures(),
    log:
        RESULTS / "logs/boundaries.log",
    conda:
        CONDA_ENV
    params:
        workspace=RESULTS,
        draw=boundary_draw_option(),
    shell:
        "attnsim record-boundaries --workspace {params.workspace:q} --output {output.table:q} "
        "{params.draw} {input:q} > {log:q} 2>&1"
