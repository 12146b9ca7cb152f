"""Stage 3, the run: `simulate` one chunk into the store, `collect` an experiment's chunks into its
summary, `runner` (`attnsim run`: Snakemake with the project's defaults), `status` (`attnsim show`
and the run's closing summary) and `tuning` (the allocator setting every job makes first)."""
