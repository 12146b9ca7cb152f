"""Stage 2, the plan: expand each experiment's grid, match the store's finished points, cut the
pending points into chunks (`sweep`, on the records of `attnsim.records`), price the run (`bill`)
and check the jobs against a cluster's partitions (`cluster`)."""
