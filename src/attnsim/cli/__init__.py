"""What a person runs: the `attnsim` command (`main`, which imports each subcommand's stage
lazily), `attnsim run` (`runner`: Snakemake with the project's defaults) and its progress lines
(`progress`), and `attnsim embed` (`embed`)."""
