"""Thompson sampling with Bernoulli resampling (Agrawal & Goyal 2012; Neufeld et al. 2014, Alg. 2).

Each arm keeps Beta counts ``S_k`` (successes) and ``F_k`` (failures) under a
uniform ``Beta(1, 1)`` prior, the prior of the paper's experiments (Sec. 6.1).
A decision samples ``theta_k ~ Beta(S_k + 1, F_k + 1)`` for every arm and plays
``argmax_k theta_k`` (ties via :func:`~pmcbandit.policies.base.argmax_random`).
A reward comes back as the normalised ``r = 1 - loss/scale`` in ``[0, 1]``
(:mod:`pmcbandit.policies.base`) and is turned into a coin
``X_hat ~ Bernoulli(r)`` (Alg. 2, "Sample X_hat"): ``S_k += 1`` if it lands 1,
``F_k += 1`` otherwise. The posterior of ``theta_k`` is then exactly the
conjugate ``Beta(S_k + 1, F_k + 1)``, and the MSE-regret obeys bound (7) (Thm 4).

The coin uses the scale known when the reward arrives. Past coins are not
redrawn when an adaptive scale (the running maximum loss) grows later: an early
reward then counted as a success with a probability a little too high, which
only delays learning by the first few pulls; give ``scale=`` to ``policy`` when
the range is known and this never happens.

Re-centring (:mod:`pmcbandit.policies.centring`). When the centre of the squared loss
moves to the running mean, every past loss changes, and coins drawn under the
old centre would keep counting the old offset (failures come at a rate of
``E[loss]/scale`` per pull, so a few hundred early pulls far from the mean can
outweigh tens of thousands near it). At a re-centring, the counts are therefore
replaced by their expectation given the observations under the new centre and
scale (:func:`expected_counts_kernel`, the Rao-Blackwellised counts):
``F_k = L_k / s_k`` (``L_k`` the arm's loss sum), ``S_k = n_k - F_k``. The counts
are then fractional (float64); ``Beta(S_k + 1, F_k + 1)`` stays a proper
posterior, and between re-centrings Alg. 2's coins add whole successes and
failures. ``benchmarks/exp_reward_centre.py`` compares this with keeping the old
coins on Fig. 2's CIR pool (``benchmarks/RESULTS.md``).

Random numbers, in the order they are taken (the replicated-run simulator
reproduces live pull sequences from them):

* ``select`` (``sampler="numba"``, the default) takes **one** call
  ``rng.random(n_select_uniforms(K))``; :func:`select_kernel` turns that buffer
  into the decision.
* ``update`` takes **one** call ``rng.random()``; the coin is a success iff
  ``u < r`` (:func:`coin`).

Because both only call ``Generator.random`` (one 64-bit word per double), a
simulator can draw ``rng.random((T, n_select_uniforms(K) + 1))`` in one go:
row ``i`` holds decision ``i``'s buffer followed by the uniform of its coin.

How a buffer becomes ``K`` Beta draws (:func:`select_kernel`). Buffer slot 0 is
the tie-break uniform; the rest feed ``2K`` Gamma variates in arm order
(``G_a ~ Gamma(S_k + 1)`` then ``G_b ~ Gamma(F_k + 1)``, ``theta_k = G_a /
(G_a + G_b)``), each by Marsaglia & Tsang (2000) (exact for shape >= 1, which
holds here) with standard normals from Box-Muller pairs (the second normal of a
pair is kept for the next request). Without rejections every arm uses exactly 4
uniforms; :data:`SLACK_UNIFORMS` extra slots absorb the first rejections.
Should a decision still run out (about 3% of decisions for K = 16 arms with
all counts zero, where Marsaglia-Tsang rejects ~5% of proposals; none in 20,000
once every count is 5 or more), the kernel continues with a SplitMix64
stream seeded from the bits of the whole buffer -- deterministic in the buffer,
so the Generator's consumption per decision stays fixed and the choice is a
pure function of it. Every step is exact (no approximation of the Beta law);
the tests compare it with ``scipy.stats.beta`` and with the PyMC backend.

``sampler="pymc"`` draws the same posterior as PyMC distributions:
``pm.Beta.dist(alpha=S+1, beta=F+1)`` with ``alpha``/``beta`` PyTensor shared
variables, compiled once per number of arms by :func:`pymc.pytensorf.compile`;
each decision reseeds its RNG from ``rng.integers(2**63)`` and then takes one
``rng.random()`` for ties. It is the reference implementation (50-100 µs a
decision, against about 3 µs for the kernel; ``benchmarks/bench_policies.py``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from pmcbandit.policies.base import (
    BanditState,
    Policy,
    argmax_random,
    grown_scale,
    init_state,
    record_loss,
    recentre_state,
    to_loss_scale,
)

__all__ = [
    "BetaCounts",
    "SLACK_UNIFORMS",
    "UNIFORMS_PER_ARM",
    "n_select_uniforms",
    "beta_draws_kernel",
    "select_kernel",
    "scaled_select_kernel",
    "coin",
    "resample_kernel",
    "expected_counts_kernel",
    "policy",
]

#: Uniforms one arm consumes when no Gamma draw is rejected (2 Gammas x (1 normal + 1 uniform)).
UNIFORMS_PER_ARM = 4
#: Extra buffer slots per decision that absorb the first rejections.
SLACK_UNIFORMS = 8

_SAMPLERS = ("numba", "pymc")
_TWO_PI = 2.0 * np.pi
_INV_2_53 = 1.0 / 9007199254740992.0
_U64 = np.uint64


class BetaCounts(NamedTuple):
    """Thompson's extra state: per-arm resampled successes and failures (float64: whole numbers
    until a re-centring replaces them by their expectations)."""

    successes: np.ndarray
    failures: np.ndarray


def n_select_uniforms(n_arms: int) -> int:
    """Length of the uniform buffer one decision takes: ``1 + 4 K + 8``."""
    return 1 + UNIFORMS_PER_ARM * int(n_arms) + SLACK_UNIFORMS


# --- uniform source: the buffer, then a SplitMix64 fallback ---------------------------
# stream[0]: next buffer position; stream[1]: SplitMix64 state; stream[2]: 1 once seeded;
# stream[3]: 1 while a Box-Muller normal is cached (its value lives in cache[0]).


@numba.njit(cache=True, inline="always")
def _splitmix64(stream):
    stream[1] += _U64(0x9E3779B97F4A7C15)
    z = stream[1]
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


@numba.njit(cache=True)
def _next_uniform(uniforms, stream):
    pos = stream[0]
    if pos < uniforms.shape[0]:
        stream[0] = pos + _U64(1)
        return uniforms[pos]
    if stream[2] == _U64(0):
        # Seed from every slot: a deterministic function of what the Generator gave.
        h = _U64(0x6A09E667F3BCC909)
        for i in range(uniforms.shape[0]):
            stream[1] = h ^ _U64(uniforms[i] * 9007199254740992.0)
            h = _splitmix64(stream)
        stream[1] = h
        stream[2] = _U64(1)
    return (_splitmix64(stream) >> _U64(11)) * _INV_2_53


@numba.njit(cache=True)
def _next_normal(uniforms, stream, cache):
    if stream[3] == _U64(1):
        stream[3] = _U64(0)
        return cache[0]
    # 1 - u lies in (0, 1], so the log is finite.
    radius = np.sqrt(-2.0 * np.log(1.0 - _next_uniform(uniforms, stream)))
    angle = _TWO_PI * _next_uniform(uniforms, stream)
    cache[0] = radius * np.sin(angle)
    stream[3] = _U64(1)
    return radius * np.cos(angle)


@numba.njit(cache=True)
def _gamma(shape, uniforms, stream, cache):
    """Gamma(shape, 1) for shape >= 1 by Marsaglia & Tsang (2000), Sec. 4."""
    d = shape - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        x = _next_normal(uniforms, stream, cache)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = _next_uniform(uniforms, stream)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:  # squeeze: accepts ~98% without logs
            return d * v
        if np.log(u) < 0.5 * x2 + d * (1.0 - v + np.log(v)):
            return d * v


@numba.njit(cache=True)
def beta_draws_kernel(successes, failures, uniforms):
    """``theta_k ~ Beta(S_k + 1, F_k + 1)`` for every arm from one uniform buffer.

    Parameters
    ----------
    successes, failures : ndarray of float64, shape (K,)
    uniforms : ndarray of float64, shape (n_select_uniforms(K),)
        Uniforms in [0, 1); slot 0 is left for the tie-break of :func:`select_kernel`.

    Returns
    -------
    ndarray of float64, shape (K,)
    """
    stream = np.zeros(4, dtype=np.uint64)
    stream[0] = 1
    cache = np.zeros(1)
    k = successes.shape[0]
    theta = np.empty(k)
    for i in range(k):
        ga = _gamma(successes[i] + 1.0, uniforms, stream, cache)
        gb = _gamma(failures[i] + 1.0, uniforms, stream, cache)
        theta[i] = ga / (ga + gb)
    return theta


@numba.njit(cache=True)
def select_kernel(successes, failures, uniforms):
    """Thompson decision: argmax of posterior draws, ties by ``uniforms[0]`` (Alg. 2).

    ``uniforms`` must hold ``n_select_uniforms(K)`` values from
    ``Generator.random``; the result is a pure function of the three arrays.
    """
    return argmax_random(beta_draws_kernel(successes, failures, uniforms), uniforms[0])


@numba.njit(cache=True)
def scaled_select_kernel(successes, failures, scale, uniforms):
    """Thompson decision under per-arm ranges (App. B): argmax of ``scale[k] * (theta_k - 1)``.

    ``theta_k`` is a draw of arm ``k``'s mean normalised reward ``1 - loss/scale[k]``, so
    ``scale[k] * (theta_k - 1)`` is a draw of ``-E[loss_k]`` on the scale common to all arms
    (:func:`~pmcbandit.policies.base.to_loss_scale`, which also says what an arm whose range is
    still 0 gets). Same buffer and consumption as :func:`select_kernel`.
    """
    theta = beta_draws_kernel(successes, failures, uniforms)
    return argmax_random(to_loss_scale(theta, scale, theta.shape[0]), uniforms[0])


@numba.njit(cache=True)
def coin(r, u):
    """Resampled Bernoulli(``r``) outcome from the uniform ``u``: success iff ``u < r``."""
    return u < r


@numba.njit(cache=True)
def resample_kernel(successes, failures, arm, r, u):
    """In-place Alg. 2 update of the counts (for the simulator): coin, then ``S`` or ``F`` += 1."""
    if u < r:
        successes[arm] += 1
    else:
        failures[arm] += 1


@numba.njit(cache=True)
def expected_counts_kernel(n, loss_sum, scale, successes, failures):
    """Counts after a re-centring, in place: ``F_k = L_k / s_k``, ``S_k = n_k - F_k``.

    The expectation of Alg. 2's counts given the arm's losses under the new centre and
    scale (``E[coin] = 1 - loss/s``); an arm whose scale is 0 has only zero losses: all
    successes. ``F_k`` is capped at ``n_k`` against rounding.
    """
    for i in range(n.shape[0]):
        f = min(loss_sum[i] / scale[i], float(n[i])) if scale[i] > 0.0 else 0.0
        failures[i] = f
        successes[i] = float(n[i]) - f


class _PymcBeta:
    """``pm.Beta.dist`` over shared ``alpha``/``beta``, compiled once for ``K`` arms."""

    def __init__(self, n_arms: int):
        import pymc as pm
        import pytensor
        from pymc.pytensorf import compile as compile_pymc
        from pytensor.tensor.random.type import RandomGeneratorType

        self.alpha = pytensor.shared(np.ones(n_arms), name="alpha")
        self.beta = pytensor.shared(np.ones(n_arms), name="beta")
        theta = pm.Beta.dist(alpha=self.alpha, beta=self.beta)
        self.fn = compile_pymc([], theta, random_seed=0)
        self.rngs = [v for v in self.fn.get_shared() if isinstance(v.type, RandomGeneratorType)]

    def draw(self, successes, failures, rng: np.random.Generator) -> np.ndarray:
        from pymc.pytensorf import reseed_rngs

        self.alpha.set_value(successes + 1.0, borrow=True)
        self.beta.set_value(failures + 1.0, borrow=True)
        reseed_rngs(self.rngs, int(rng.integers(2**63)))
        return self.fn()


_PYMC_CACHE: dict[int, _PymcBeta] = {}


def _pymc_beta(n_arms: int) -> _PymcBeta:
    sampler = _PYMC_CACHE.get(n_arms)
    if sampler is None:
        sampler = _PYMC_CACHE[n_arms] = _PymcBeta(n_arms)
    return sampler


def policy(*, sampler: str = "numba", scale: float | None = None) -> Policy:
    """Thompson sampling (Alg. 2, Beta(1, 1) prior) as a :class:`~pmcbandit.policies.base.Policy`.

    Parameters
    ----------
    sampler : {"numba", "pymc"}
        Backend of the posterior draws: the exact numba kernel (default; fixed
        Generator consumption, see the module docstring) or the compiled PyMC
        ``Beta`` distribution (reference, 50-100 µs a decision).
    scale : float, optional
        Known loss range (``r = 1 - loss/scale``); by default the running maximum.
        ``init(n_arms, per_arm=True)`` gives each arm its own running maximum instead and
        compares ``scale[k] * (theta_k - 1)`` (App. B; :func:`scaled_select_kernel`).

    Notes
    -----
    Pending pulls do not change the posterior; concurrent decisions stay
    spread over the arms by the randomness of the draws.
    """
    if not isinstance(sampler, str) or sampler not in _SAMPLERS:
        raise ValueError(f"The 'sampler' parameter of thompson must be one of {_SAMPLERS}. Got {sampler!r} instead.")

    def init(n_arms: int, scale: float | None = scale, *, per_arm: bool = False) -> BanditState:
        counts = BetaCounts(np.zeros(n_arms), np.zeros(n_arms))
        return init_state(n_arms, scale, counts, per_arm=per_arm)

    if sampler == "numba":

        def select(rng: np.random.Generator, state: BanditState) -> int:
            successes, failures = state.extra
            uniforms = rng.random(n_select_uniforms(successes.shape[0]))
            if state.per_arm:
                return scaled_select_kernel(successes, failures, state.scale, uniforms)
            return select_kernel(successes, failures, uniforms)

    else:

        def select(rng: np.random.Generator, state: BanditState) -> int:
            successes, failures = state.extra
            theta = _pymc_beta(successes.shape[0]).draw(successes, failures, rng)
            if state.per_arm:
                theta = to_loss_scale(np.asarray(theta, dtype=np.float64), state.scale, theta.shape[0])
            return argmax_random(theta, rng.random())

    def update(rng, state: BanditState, arm: int, reward: float, cost: float = 0.0) -> BanditState:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(
                f"The 'rng' parameter of thompson.update must be a numpy.random.Generator "
                f"(it draws the Bernoulli resampling coin). Got {rng!r} instead."
            )
        loss = -float(reward)
        if not 0.0 <= loss < math.inf:
            return record_loss(state, arm, reward, cost)  # raises the standard error before any draw
        scale = grown_scale(state, arm, loss)
        r = 1.0 - loss / scale[arm] if scale[arm] > 0.0 else 1.0
        successes, failures = state.extra
        if rng.random() < r:
            successes = successes.copy()
            successes[arm] += 1
        else:
            failures = failures.copy()
            failures[arm] += 1
        return record_loss(state, arm, reward, cost, BetaCounts(successes, failures), scale)

    def recentre(state: BanditState, loss_sum, loss_sq_sum, max_loss) -> BanditState:
        state = recentre_state(state, loss_sum, loss_sq_sum, max_loss)
        k = state.n.shape[0]
        counts = BetaCounts(np.empty(k), np.empty(k))
        expected_counts_kernel(state.n, state.loss_sum, state.scale, counts.successes, counts.failures)
        return state._replace(extra=counts)

    return Policy(f"thompson[{sampler}]" if sampler != "numba" else "thompson", init, select, update,
                  ranges="per_arm", recentre=recentre, per_arm_ranges=True,
                  simulator_rule="thompson" if sampler == "numba" else None)
