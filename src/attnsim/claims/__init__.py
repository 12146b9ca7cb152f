"""Claims of the essay judged against the store: `engine` (verdicts), `io` (store in, files out),
`render` (tables)."""
