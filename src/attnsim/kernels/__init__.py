"""Batched Monte Carlo kernels: pure functions of arrays and a numpy Generator."""
