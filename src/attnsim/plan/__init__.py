"""Stage 2, the plan: expand each experiment's grid columnwise (`grid`), match the store's finished
points, estimate each point's cost (`cost`), cut the pending points into `ChunkSpec`s (`chunkspec`,
`sweep`) and check the jobs against a cluster's partitions (`cluster`)."""
