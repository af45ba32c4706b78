"""delta-correctness, measured: the radii hold uniformly in time, and the faithful algorithms err at most delta.

Error rates are judged by their one-sided 95 % Clopper–Pearson upper bound. Every check is run
beside a mutation that must make it fail, so the test can fail.

* Radius level (default suite): the finite-LIL radius of Lemma 2.1 is crossed, at some time up to
  the horizon, by at most :math:`c_\\epsilon\\omega^{1+\\epsilon}` of the paths of i.i.d. Gaussian
  means; a quarter of it is crossed by more.
* Algorithm level (``slow``): 1000 simulated runs per faithful algorithm at delta = 0.1 on a small
  instance; the mutation divides the radius by 8 (the algorithm is built with sigma / 8 while the
  rewards keep sigma) and must fail the check. A radius merely halved is not a mutation these checks
  can see: the LIL bound and the faithful algorithms' analyses are loose by more than a factor 2 in
  the radius, so a halved radius still meets the guarantees at any affordable number of runs
  (``benchmarks/results/bench_identification.md`` reports the halved radius's error rates).
"""

import numpy as np
import pytest

from pmcbandit.identification import get_identifier
from pmcbandit.identification.radii import c_epsilon, lil
from pmcbandit.identification.simulate import simulate_stopping
from tests.tolerance import error_rate_upper as _upper


def _crossing_rate(scale: float, omega: float, eps: float, paths: int = 2000, horizon: int = 4000, seed: int = 0):
    """Share of paths whose running mean exceeds ``scale * U(t, omega)`` at some t <= horizon (sigma = 1)."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, horizon + 1)
    bound = scale * np.array([lil(i, omega, 1.0, eps) for i in t])
    crossed = 0
    for _ in range(paths // 500):
        means = np.cumsum(rng.standard_normal((500, horizon)), axis=1) / t
        crossed += int((means > bound).any(axis=1).sum())
    return crossed, paths


def test_the_lil_radius_holds_uniformly_in_time_and_a_quarter_of_it_does_not():
    eps = 0.1
    omega = (0.05 / c_epsilon(eps)) ** (1 / (1 + eps))  # Lemma 2.1's bound is 0.05
    crossed, paths = _crossing_rate(1.0, omega, eps)
    assert _upper(crossed, paths) <= 0.05
    crossed_quarter, _ = _crossing_rate(0.25, omega, eps)
    assert _upper(crossed_quarter, paths) > 0.05 and crossed_quarter / paths > 0.05


ALGORITHMS = ["lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb", "lil_ucb"]
MEANS = np.array([0.5, 0.4, 0.3])


def _error_rate(name: str, sigma: float, runs: int = 1000):
    kw = dict(delta=0.1, sigma=sigma)
    if name != "lil_ucb":
        kw["k"] = 1
    res = simulate_stopping(get_identifier(name, **kw), MEANS, reps=runs, scale=0.5, random_seed=2017)
    assert res.stopped.all()
    return int((~res.correct).sum()), runs


@pytest.mark.slow
@pytest.mark.parametrize("name", ALGORITHMS)
def test_faithful_algorithms_err_at_most_delta(name):
    errors, runs = _error_rate(name, 0.5)
    assert _upper(errors, runs) <= 0.1, (name, errors)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALGORITHMS)
def test_the_check_fails_when_the_radius_is_cut_to_an_eighth(name):
    errors, runs = _error_rate(name, 0.5 / 8)
    assert _upper(errors, runs) > 0.1, (name, errors)
