"""Store in, files out: the claims tables (`claims`, `claims_render`), the figure drivers
(`figures`, `figure_check`), a run's status (`status`) and the generated parts of the documents
(`docgen`)."""
