"""Stage 1, the config: read a YAML file (`yamlfile`), coerce numbers (`coerce`), check it against
the schema generated from the kinds' declarations (`schema.yaml` plus `Kind.schema.params`) and
turn it into the `Settings` record (`attnsim.records.experiment`) with `load`."""
