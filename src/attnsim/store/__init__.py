"""The result store: Hive-partitioned Parquet with typed schemas and provenance (`parquet`), and
read-only SQL over it (`query`)."""
