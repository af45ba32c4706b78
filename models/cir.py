"""European caplet under the Cox-Ingersoll-Ross short rate: 16 importance-sampling arms.

The option-pricing experiment of Neufeld, Gyorgy, Schuurmans & Szepesvari (2014),
Sec. 6.2 and App. F, after Douc, Guillin, Marin & Robert (2007).

The model
---------
Cox–Ingersoll–Ross short rate, r₀ = 0.08, η = 0.016, κ = 0.2, σ = 0.02, maturity T = 1,
nominal M = 1000, n = 100 steps, Δ = T/n. Euler scheme with full truncation:
r_t = r_{t−1} + (η − κ r_{t−1}) Δ + σ √(max(r_{t−1}, 0) Δ) ε_t.
Discount by the trapezoidal rule D = exp(−Δ((r₀ + r_n)/2 + Σ_{t=1}^{n−1} r_t)); payoff
P = D · M · max(r_n − K, 0); target price E[P] with ε_t i.i.d. N(0, 1).
Arm k (θ_k = k/10, k = 0..15) shifts the driving Brownian motion by drift θ_k per unit time:
ε_t ~ N(θ_k √Δ, 1), and each path reports w·P with the exact likelihood ratio
w = exp(−θ_k √Δ Σ_t ε_t + θ_k² T / 2).

Why the drift is per unit time. App. F of the paper writes the proposal as
ε_t ~ N(θ, 1) per *step*. With n = 100 steps the sum Σ_t ε_t (standard deviation
√n = 10 under the target) is then shifted by nθ = 150 for θ = 1.5: a
15-standard-deviation shift, whose likelihood ratio has variance
exp(nθ²) − 1 = exp(225) − 1. Those arms are degenerate (every finite run reports
~0 with the rare astronomically large weight). A drift θ of the Brownian motion
per unit time is a per-step shift μ = θ√Δ, i.e. a total shift θ√T of the
normalised sum, Var(w) = exp(θ²T) − 1 ≤ e^{2.25} − 1 ≈ 8.5, and a shift of r_T of
about σ√r θ T ≈ 1.5 of its own standard deviations for θ = 1.5: the arms range
from plain Monte Carlo to a useful tilt towards the money, as the experiment
intends.

The likelihood ratio (derivation). With μ = θ√Δ the target density of the
normals is Π φ(ε_t) and the proposal's Π φ(ε_t − μ), so

    w = Π_t φ(ε_t)/φ(ε_t − μ) = exp(Σ_t [−ε_t²/2 + (ε_t − μ)²/2])
      = exp(−μ Σ_t ε_t + n μ²/2) = exp(−θ√Δ Σ_t ε_t + θ² T/2),

since n μ² = θ² n Δ = θ² T. Under the proposal Σ_t ε_t ~ N(nμ, n), hence
E[w] = exp(−nμ² + nμ²/2) · exp(nμ²/2) = 1, and E_q[w·P] = E_p[P] for every θ:
each arm is unbiased by itself. (App. F's ``exp(−Σ ε_t − nθ²/2)`` has the
signs and the factor θ misplaced; this is the exact ratio.)

Implementation
--------------
Two engines compute the same recursion on the same normals (tested equal to 1e-12):

- ``engine="graph"``: one PyTensor graph (a ``scan`` over the n steps, vectorised over the
  batch of paths) compiled once per process and mode and shared by every arm: θ, K and the
  model constants are inputs, so 16 arms (or several strikes) cost one compilation. The
  standard normals are drawn with the pull's :class:`numpy.random.Generator` and passed in.
  This is the model as a PyTensor graph, to inspect, compose or differentiate.
- ``engine="fused"`` (default): :func:`models.cir_kernel.fused_caplet_paths`, a numba loop that
  draws each normal from the same Generator (numba's re-implementation of NumPy's ziggurat:
  the same stream in the same step-major order) and advances the paths as it goes, so the
  ``(n, paths)`` normal matrix is never materialised.

Choices measured by :mod:`benchmarks.bench_cir` (``benchmarks/results/bench_cir.md``): the
fused kernel runs above 1e8 path-steps/s per core where the graph is bounded by NumPy's
vectorised normal generator (~6e7 normals/s on the test machine); for the graph the scan beats
an unrolled graph (a one-off prototype of 100 fused steps: ~100 s C compilation, 3.6e6
path-steps/s; the NUMBA backend rejects a 100-input fused loop), normals drawn inside the scan
are 4-15x slower than drawing them with NumPy, and the NUMBA backend is the default mode
because it is faster than the C backend for batches of 100-1000 paths.
:func:`simulate_paths_numpy` is an independent NumPy implementation of the same
recursion (test reference and benchmark baseline);
:func:`discounted_rate_moments` gives E[D] and E[D·r_n] of the discretised
scheme in closed form (the K = 0 check).
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from models.cir_kernel import fused_caplet_paths
from pmcbandit.arms.base import Arm
from pmcbandit._validation import param_message

__all__ = [
    "CIR_DEFAULTS",
    "CIRCapletArm",
    "caplet_arms",
    "simulate_paths_numpy",
    "discounted_rate_moments",
]

ENGINES = ("fused", "graph")
CIR_DEFAULTS = dict(r0=0.08, eta=0.016, kappa=0.2, sigma=0.02, maturity=1.0, nominal=1000.0, n_steps=100)


def _check_real(value, param, door, *, positive=False, nonneg=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(param_message(param, door, "a finite real number", value))
    if not np.isfinite(value):
        raise ValueError(param_message(param, door, "a finite real number", value))
    if positive and not value > 0:
        raise ValueError(param_message(param, door, "> 0", value))
    if nonneg and not value >= 0:
        raise ValueError(param_message(param, door, ">= 0", value))
    return float(value)


def _check_int(value, param, door, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(param_message(param, door, f"an int >= {minimum}", value))
    if value < minimum:
        raise ValueError(param_message(param, door, f"an int >= {minimum}", value))
    return int(value)


def _check_model(door, r0, eta, kappa, sigma, maturity, nominal, n_steps, strike=None):
    out = dict(
        r0=_check_real(r0, "r0", door, nonneg=True),
        eta=_check_real(eta, "eta", door, nonneg=True),
        kappa=_check_real(kappa, "kappa", door),
        sigma=_check_real(sigma, "sigma", door, nonneg=True),
        maturity=_check_real(maturity, "maturity", door, positive=True),
        nominal=_check_real(nominal, "nominal", door, positive=True),
        n_steps=_check_int(n_steps, "n_steps", door),
    )
    if strike is not None:
        out["strike"] = _check_real(strike, "strike", door, nonneg=True)
    return out


# ----------------------------------------------------------------------------- reference
def simulate_paths_numpy(
    eps,
    strike=0.08,
    theta=0.0,
    *,
    r0=0.08,
    eta=0.016,
    kappa=0.2,
    sigma=0.02,
    maturity=1.0,
    nominal=1000.0,
):
    """Weighted payoffs ``w·P`` of paths driven by given normals (plain NumPy loop).

    Parameters
    ----------
    eps : array_like, shape (n_steps, n_paths)
        The driving normals ε_t of each path, *already* drawn from the arm's
        proposal N(θ√Δ, 1) (N(0, 1) for θ = 0).
    strike : float
        K >= 0.
    theta : float
        Drift of the proposal per unit time; enters only the likelihood ratio
        w = exp(−θ√Δ Σ_t ε_t + θ²T/2).
    r0, eta, kappa, sigma, maturity, nominal : float
        Model constants (module docstring); ``n_steps = eps.shape[0]``.

    Returns
    -------
    ndarray, shape (n_paths,)
        ``w·D·M·max(r_n − K, 0)`` per path, Euler scheme with full truncation
        and trapezoidal discount as in the module docstring.
    """
    door = "simulate_paths_numpy"
    eps = np.asarray(eps, dtype=np.float64)
    if eps.ndim != 2 or eps.shape[0] < 1 or eps.shape[1] < 1:
        raise ValueError(param_message("eps", door, "a non-empty 2-D array (n_steps, n_paths)", eps.shape))
    p = _check_model(door, r0, eta, kappa, sigma, maturity, nominal, eps.shape[0], strike)
    theta = _check_real(theta, "theta", door)
    n = eps.shape[0]
    dt = p["maturity"] / n
    r = np.full(eps.shape[1], p["r0"])
    inner = np.zeros(eps.shape[1])
    for t in range(n):
        r = r + (p["eta"] - p["kappa"] * r) * dt + p["sigma"] * np.sqrt(np.maximum(r, 0.0) * dt) * eps[t]
        if t < n - 1:
            inner += r
    log_d = -dt * ((p["r0"] + r) / 2.0 + inner)
    log_w = -theta * np.sqrt(dt) * eps.sum(axis=0) + theta**2 * p["maturity"] / 2.0
    return p["nominal"] * np.maximum(r - p["strike"], 0.0) * np.exp(log_d + log_w)


def discounted_rate_moments(*, r0=0.08, eta=0.016, kappa=0.2, sigma=0.02, maturity=1.0, n_steps=100):
    """E[D] and E[D·r_n] of the discretised scheme, in closed form.

    Without truncation the Euler step is conditionally Gaussian with mean and
    variance affine in r_{t−1}, so E[exp(β r_t) | r_{t−1}] =
    exp(βηΔ + r_{t−1}(β(1−κΔ) + β²σ²Δ/2)) and E[exp(Σ_t a_t r_t + u r_n)] is
    exponential-affine in r₀ by backward recursion over β, with
    a_t = −Δ (t = 1..n−1), a_n = −Δ/2 and the factor exp(−Δ r₀/2). E[D] is its
    value at u = 0 and E[D·r_n] its derivative in u at 0 (propagated exactly
    alongside β). The payoff of a caplet struck at K = 0 is M·E[D·r_n].

    Full truncation changes a path only once some r_t < 0; with the default
    constants that needs a fall of r by about 14 standard deviations of r_T, so
    the formula is exact to far below any Monte Carlo error (it is *not* a check
    of the truncation branch).

    Returns
    -------
    bond, dr : float
        E[D] and E[D·r_n].
    """
    door = "discounted_rate_moments"
    p = _check_model(door, r0, eta, kappa, sigma, maturity, 1.0, n_steps)
    n = p["n_steps"]
    dt = p["maturity"] / n
    eta, kappa, s2 = p["eta"], p["kappa"], p["sigma"] ** 2
    beta, dbeta = -dt / 2.0, 1.0  # coefficient of r_n and its derivative in u
    log_a, dlog_a = 0.0, 0.0
    for t in range(n, 0, -1):
        log_a += beta * eta * dt
        dlog_a += dbeta * eta * dt
        a_prev = -dt if t > 1 else -dt / 2.0
        new_beta = a_prev + beta * (1.0 - kappa * dt) + beta * beta * s2 * dt / 2.0
        dbeta = dbeta * (1.0 - kappa * dt + beta * s2 * dt)
        beta = new_beta
    log_value = log_a + beta * p["r0"]
    bond = float(np.exp(log_value))
    return bond, float(bond * (dlog_a + dbeta * p["r0"]))


# ----------------------------------------------------------------------------- PyTensor graph
@functools.lru_cache(maxsize=None)
def _compiled_paths(mode: str):
    """Compile ``f(z, theta, strike, r0, eta, kappa, sigma, maturity, nominal) -> (wP, P, S)``.

    ``z`` (n_steps, n_paths) are N(0, 1) normals; ε = z + θ√Δ. Outputs per path:
    the weighted payoff w·P, the payoff P, and S = Σ_t ε_t (the sufficient
    statistic of every proposal's likelihood ratio, used by PMC).
    """
    import pytensor
    import pytensor.tensor as pt

    z = pt.matrix("z", dtype="float64")
    theta, strike, r0, eta, kappa, sigma, maturity, nominal = (
        pt.scalar(name, dtype="float64")
        for name in ("theta", "strike", "r0", "eta", "kappa", "sigma", "maturity", "nominal")
    )
    n = z.shape[0].astype("float64")
    dt = maturity / n
    mu = theta * pt.sqrt(dt)

    def step(z_t, r, s, inner, mu, dt, eta, kappa, sigma):
        e = z_t + mu
        r_next = r + (eta - kappa * r) * dt + sigma * pt.sqrt(pt.maximum(r, 0.0) * dt) * e
        return r_next, s + e, inner + r_next

    zeros = pt.zeros_like(z[0])
    r_path, s_path, inner_path = pytensor.scan(
        step,
        sequences=[z],
        outputs_info=[zeros + r0, zeros, zeros],
        non_sequences=[mu, dt, eta, kappa, sigma],
        return_list=True,
        return_updates=False,
    )
    r_n, s_n = r_path[-1], s_path[-1]
    # inner sums r_1..r_n; the trapezoid weighs r_n by 1/2, hence r_n/2 - r_n.
    log_d = -dt * ((r0 + r_n) / 2.0 + inner_path[-1] - r_n)
    payoff = nominal * pt.maximum(r_n - strike, 0.0) * pt.exp(log_d)
    log_w = -mu * s_n + theta**2 * maturity / 2.0
    weighted = payoff * pt.exp(log_w)
    fn = pytensor.function(
        [z, theta, strike, r0, eta, kappa, sigma, maturity, nominal],
        [weighted, payoff, s_n],
        mode=mode,
    )
    fn.trust_input = True
    return fn


class CIRCapletArm(Arm):
    """One importance-sampling estimator of the caplet price (drift θ per unit time).

    A pull simulates ``paths_per_pull`` paths under the proposal ε_t ~ N(θ√Δ, 1)
    and returns their weighted payoffs ``w·P`` (the observation is their mean).

    ``info`` carries the declared diagnostics ``mean_weight`` (batch mean of w,
    expectation 1) and ``frac_in_money`` (fraction of paths with r_n > K), plus,
    when ``pmc_info`` is true, three per-path arrays for
    :mod:`pmcbandit.policies.pmc` (not declared diagnostics: a run's history
    records only ``diagnostics``): ``pmc_h`` = P, ``pmc_stat`` = Σ_t ε_t and
    ``pmc_coef`` = the (K_arms, 2) rows ``(θ_j√Δ, θ_j²T/2)`` of the pool, so that
    log(q_j/p)(x) = θ_j√Δ·S(x) − θ_j²T/2 for every component j.

    Parameters
    ----------
    theta : float
        Drift per unit time.
    strike : float
        K >= 0.
    paths_per_pull : int
        Paths per pull (>= 1).
    cost : None, float or "paths"
        Cost of a pull: measured CPU seconds (None), a fixed number, or the
        number of paths (deterministic, for reproducible benchmarks).
    pool_thetas : sequence of float, optional
        The drifts of the whole pool (for ``pmc_coef``); defaults to ``[theta]``.
    pmc_info : bool
        Attach the per-path PMC arrays to ``info``.
    engine : {"fused", "graph"}
        The numba kernel with in-loop normals (default, fastest) or the PyTensor scan graph
        (module docstring); both give identical draws for the same Generator state.
    mode : str
        PyTensor compilation mode of the shared path graph (``engine="graph"``).
    **model
        r0, eta, kappa, sigma, maturity, nominal, n_steps (module docstring).
    """

    diagnostics = ("mean_weight", "frac_in_money")

    def __init__(self, theta, strike=0.08, paths_per_pull=1000, *, cost=None, pool_thetas=None,
                 pmc_info=True, engine="fused", mode="NUMBA", name=None, **model):
        door = "CIRCapletArm"
        if engine not in ENGINES:
            raise ValueError(param_message("engine", door, f"one of {ENGINES}", engine))
        params = {**CIR_DEFAULTS, **model}
        unknown = set(params) - set(CIR_DEFAULTS)
        if unknown:
            name = sorted(unknown)[0]
            raise TypeError(f"The {name!r} parameter of CIRCapletArm must be one of the model constants "
                            f"{tuple(CIR_DEFAULTS)}. Got {model[name]!r} instead.")
        self.params = _check_model(door, strike=strike, **params)
        self.theta = _check_real(theta, "theta", door)
        self.paths_per_pull = _check_int(paths_per_pull, "paths_per_pull", door)
        if cost is not None and cost != "paths":
            cost = _check_real(cost, "cost", door, nonneg=True)
        self.cost = cost
        pool = np.asarray([self.theta] if pool_thetas is None else pool_thetas, dtype=np.float64)
        dt = self.params["maturity"] / self.params["n_steps"]
        self.pmc_coef = np.column_stack([pool * np.sqrt(dt), pool**2 * self.params["maturity"] / 2.0])
        self._own_coef = (self.theta * np.sqrt(dt), self.theta**2 * self.params["maturity"] / 2.0)
        self.pmc_info = bool(pmc_info)
        self.engine = engine
        self.mode = mode
        self.name = name if name is not None else f"theta-{self.theta:.1f}"
        self._fn = _compiled_paths(mode) if engine == "graph" else None
        p = self.params
        values = (self.theta, p["strike"], p["r0"], p["eta"], p["kappa"], p["sigma"], p["maturity"], p["nominal"])
        # Converted once here, not per pull: plain floats for the numba kernel, 0-d arrays for the
        # compiled graph (trust_input skips PyTensor's conversion).
        if self._fn is None:
            self._args = (int(p["n_steps"]), self.paths_per_pull, *(float(v) for v in values))
        else:
            self._args = [np.asarray(v, dtype=np.float64) for v in values]

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) the fused kernel before a budget's clock starts.

        One path of one step on a throwaway Generator: numba compiles for the argument types, which
        are those of every pull, so the first pull of a run is not charged the compilation
        (:meth:`pmcbandit.arms.Arm.warm_up`). The graph engine is compiled when the arm is built.
        """
        if self._fn is None:
            fused_caplet_paths(np.random.default_rng(0), 1, 1, *self._args[2:])

    def draw(self, rng: np.random.Generator):
        if self._fn is None:
            weighted, payoff, stat = fused_caplet_paths(rng, *self._args)
        else:
            z = rng.standard_normal((self.params["n_steps"], self.paths_per_pull))
            weighted, payoff, stat = self._fn(z, *self._args)
        # w·P / P recovers w only in the money; the weight itself is exp(log w).
        log_w = -self._own_coef[0] * stat + self._own_coef[1]
        info = {
            "mean_weight": float(np.mean(np.exp(log_w))),
            "frac_in_money": float(np.mean(payoff > 0.0)),
        }
        if self.pmc_info:
            info["pmc_h"] = payoff
            info["pmc_stat"] = stat
            info["pmc_coef"] = self.pmc_coef
        cost = float(self.paths_per_pull) if self.cost == "paths" else self.cost
        return weighted, info, cost


def caplet_arms(
    strike=0.08,
    thetas=None,
    paths_per_pull=1000,
    *,
    r0=0.08,
    eta=0.016,
    kappa=0.2,
    sigma=0.02,
    maturity=1.0,
    nominal=1000.0,
    n_steps=100,
    cost=None,
    pmc_info=True,
    engine="fused",
    mode="NUMBA",
):
    """The pool of Sec. 6.2: one :class:`CIRCapletArm` per drift θ_k = k/10, k = 0..15.

    Parameters
    ----------
    strike : float
        K >= 0 (the paper uses 0.06, 0.07, 0.08).
    thetas : array_like, optional
        Drifts per unit time; default ``np.arange(16) / 10``. Names are
        ``"theta-{θ:.1f}"`` and must be distinct.
    paths_per_pull : int
        Paths simulated per pull; one pull is one observation (their mean).
    r0, eta, kappa, sigma, maturity, nominal, n_steps
        Model constants (module docstring).
    cost : None, float or "paths"
        See :class:`CIRCapletArm`.
    pmc_info : bool
        Attach the per-path arrays that :mod:`pmcbandit.policies.pmc` uses.
    engine : {"fused", "graph"}
        See :class:`CIRCapletArm`.
    mode : str
        PyTensor mode of the (shared, compiled once) path graph (``engine="graph"``).

    Returns
    -------
    list of CIRCapletArm
    """
    door = "caplet_arms"
    model = dict(r0=r0, eta=eta, kappa=kappa, sigma=sigma, maturity=maturity, nominal=nominal, n_steps=n_steps)
    _check_model(door, strike=strike, **model)
    _check_int(paths_per_pull, "paths_per_pull", door)
    if thetas is None:
        thetas = np.arange(16) / 10
    try:
        grid = np.asarray(thetas, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(param_message("thetas", door, "a 1-D array of finite reals", thetas)) from None
    if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)):
        raise ValueError(param_message("thetas", door, "a non-empty 1-D array of finite reals", thetas))
    arms = [
        CIRCapletArm(float(th), strike, paths_per_pull, cost=cost, pool_thetas=grid,
                     pmc_info=pmc_info, engine=engine, mode=mode, **model)
        for th in grid
    ]
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ValueError(param_message("thetas", door, "distinct to one decimal (arm names)", thetas))
    return arms
