"""`runner` (`attnsim run`: Snakemake with the project's defaults), `progress` (its progress lines)
and `embed` (`attnsim embed`)."""
