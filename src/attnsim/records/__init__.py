"""What every stage passes on, each record defined once: an experiment and the sweep's settings
(`experiment`), a grid as columns with its point ids (`grid`), a chunk, what one simulate job
computes (`chunk`), a chunk's cost and resources (`cost`), and the workspace's state record
(`state`: overrides, top-ups, each claim's sequential design, an operation in progress)."""
