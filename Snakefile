# attnsim: Monte Carlo tests of softmax attention's robustness to logit noise and of the
# information content of its weights (README.md). The workflow's table of contents is
# workflow/Snakefile (its rules in workflow/rules/), where the installed package finds it too;
# this file runs it from the repository's top level (`snakemake --cores all`).


include: "workflow/Snakefile"


# Snakemake takes the default target from the top-level file: the same as workflow/'s `all`.
rule default:
    default_target: True
    input:
        all_targets,
