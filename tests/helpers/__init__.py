"""What the tests share: small configs and grids (`configs`), running the real workflow in a
scratch directory (`workflow`), the real-model assets as session fixtures (`assets`, loaded by
conftest.py) and the per-CPU-class reference rows (`reference_rows`). No test module imports
another; they import from here."""
