"""Stage 3, the jobs a run is made of: `simulate` one chunk into the store (checking each block,
`validate`, and recording the machine's CPU class, `cpu`), `collect` an experiment's chunks into
its summary, and `tuning` (the allocator setting every job makes first)."""
