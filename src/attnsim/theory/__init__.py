"""Closed-form predictions the pipeline overlays on its measurements (SCIENCE.md)."""
