"""Closed-form predictions the pipeline overlays on its measurements (docs/science.md §2–§4)."""
