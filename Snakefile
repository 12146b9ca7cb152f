# attnsim: Monte Carlo tests of softmax attention's robustness to logit noise
# and of the information content of its weights. See README.md.

from snakemake.utils import min_version

min_version("9.0")


# A config file named with --configfile is the whole sweep (not merged into
# config.yaml); --config key=value overrides still apply on top of either.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/assets.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"


rule all:
    default_target: True
    input:
        all_targets,


# One onstart (Snakemake keeps only the last one registered): one run per store, refuse jobs no node can hold,
# sweep dead writers' temp files, write the pending chunks' spec files for their jobs.
onstart:
    lock_store()
    verify_assets()
    check_cluster_fit()
    sweep_dead_writers()
    write_chunk_specs()


onsuccess:
    remove_replaced_chunks()
    sweep_rebuild_markers()
    print_run_summary()
