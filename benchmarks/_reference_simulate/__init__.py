"""Frozen copy of the replicated-run simulator's Thompson and KL-UCB paths, timed beside the package's by
``benchmarks.bench_simulator``. Not part of the package."""

from benchmarks._reference_simulate.core import simulate

__all__ = ["simulate"]
