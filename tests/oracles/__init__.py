"""Slow, plainly written reference implementations that the fast kernels are tested against."""
