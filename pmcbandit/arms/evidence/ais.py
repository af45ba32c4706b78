"""The annealed importance sampling arm (Neal 2001; Neufeld et al. 2014, Sec. 6.3 and App. G).

One pull runs ``n_chains`` independent AIS chains from the exactly sampled
prior to the posterior along the geometric path
:math:`\\pi_\\beta \\propto p(x)\\,L(x)^{\\beta}` and returns their log weights
:math:`\\log w_c`, each the log of an unbiased estimate of the evidence
:math:`Z` (``log_scale = True``: pmcbandit averages :math:`w_c`, not
:math:`\\log w_c`).
"""

from __future__ import annotations

import numbers
import time

import numpy as np

from pmcbandit._validation import check_choice, check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.arms.evidence._kernels import chain_seeds
from pmcbandit.arms.evidence.model_density import ModelDensity

__all__ = ["AISArm", "annealing_schedule", "PROBE_STEPS"]

SCHEDULES = ("power4", "linear")
TRANSITIONS = ("slice", "imh")
COSTS = ("cpu_seconds", "logp_evals")
#: Annealing steps of the short timed run that predicts a pull's duration (``AISArm.step_seconds``).
PROBE_STEPS = 32


def annealing_schedule(n_steps: int, kind: str = "power4") -> np.ndarray:
    """Inverse temperatures :math:`0 = \\beta_0 < \\dots < \\beta_n = 1` (``n_steps + 1`` values).

    ``"power4"``: :math:`\\beta_j = (j/n)^4`, the *power of 4* heuristic of
    Kuss & Rasmussen (2005) used by Neufeld et al. (2014), App. G (whose
    :math:`n` counts temperatures, ours counts increments, so ``ais-n`` has
    :math:`n+1` temperatures); ``"linear"``: :math:`\\beta_j = j/n`. The
    endpoints are exactly 0 and 1.
    """
    check_positive(n_steps, "n_steps", "annealing_schedule", integer=True)
    check_choice(kind, SCHEDULES, "kind", "annealing_schedule")
    betas = np.arange(n_steps + 1, dtype=np.float64) / n_steps
    if kind == "power4":
        betas = betas**4
    betas[0], betas[-1] = 0.0, 1.0
    return betas


def _check_schedule(schedule, n_steps):
    owner = "AISArm"
    if isinstance(schedule, str):
        check_choice(schedule, SCHEDULES, "schedule", owner)
        n = 2000 if n_steps is None else check_positive(n_steps, "n_steps", owner, integer=True)
        return annealing_schedule(int(n), schedule)
    betas = np.asarray(schedule, dtype=np.float64)
    ok = (
        betas.ndim == 1
        and betas.size >= 2
        and np.all(np.isfinite(betas))
        and betas[0] == 0.0
        and betas[-1] == 1.0
        and np.all(np.diff(betas) >= 0.0)
    )
    if not ok:
        raise ValueError(
            "The 'schedule' parameter of AISArm must be 'power4', 'linear' or a non-decreasing "
            f"1-D array starting at exactly 0 and ending at exactly 1. Got {schedule!r} instead."
        )
    if n_steps is not None and n_steps != betas.size - 1:
        raise ValueError(
            "The 'n_steps' parameter of AISArm must be None or len(schedule) - 1 = "
            f"{betas.size - 1} when a schedule array is given. Got {n_steps!r} instead."
        )
    return np.ascontiguousarray(betas)


class AISArm(Arm):
    """Annealed importance sampling estimates of the evidence of a PyMC model.

    Parameters
    ----------
    model : pymc.Model or ModelDensity
        The model (continuous free variables, forward-sampleable prior); pass a
        :class:`ModelDensity` to share one compiled density among arms.
    n_steps : int, optional
        Number of annealing increments :math:`n` (default 2000 for a named
        schedule; ``len(schedule) - 1`` for an array).
    n_chains : int
        Independent chains (log weights) per pull.
    schedule : {"power4", "linear"} or array_like
        Inverse temperatures, see :func:`annealing_schedule`.
    transition : {"slice", "imh"}
        ``"slice"``: one coordinate-wise slice-sampling sweep per temperature
        (Neal 2003; the paper's choice). ``"imh"``: one independence Metropolis
        move from the interpolated Laplace Student-t proposal
        (:mod:`~pmcbandit.arms.evidence.imh_kernel`), for near-Gaussian posteriors.
    slice_width : float or array_like
        Initial bracket width ``w`` of the slice sampler, per coordinate if an array.
    max_stepout : int
        Neal's (2003) limit ``m`` on stepping-out steps.
    imh_df : int
        Degrees of freedom of the IMH Student-t proposal (0: Gaussian). On Pima
        T=50 (``benchmarks/bench_ais.py``) the variance x cost per estimate was
        0.040 / 0.059 / 0.080 for df = 0 / 10 / 5 (acceptance 0.97 / 0.80 / 0.69);
        10 keeps heavier tails than the Laplace fit for non-Gaussian posteriors
        at a small price.
    cost : {"cpu_seconds", "logp_evals"}
        Measured CPU seconds (default, as the paper) or the number of log-density
        evaluations (deterministic, for reproducible benchmarks).
    parallel : bool
        Run the chains on numba threads (``prange``): the same values (each chain
        has its own stream), similar CPU cost, lower wall time when
        ``n_chains`` is a multiple of the thread count. Do not pull a parallel
        arm from several Python threads at once under numba's default
        ``workqueue`` threading layer, which is not thread-safe.
    name : str, optional
        Defaults to ``f"ais-{n_steps}"`` (``f"ais-imh-{n_steps}"`` for IMH).

    Notes
    -----
    Per chain: :math:`x_0 \\sim p`, :math:`\\log w = \\sum_{j=1}^{n}
    (\\beta_j-\\beta_{j-1})\\,\\ell(x_{j-1})` with :math:`x_j \\sim T_j(x_{j-1},\\cdot)`
    (Neal 2001, Sec. 2; Neufeld et al. 2014, App. G); with ``n_steps = 1`` this
    is prior importance sampling. Diagnostics per pull: ``logp_evals`` (total
    density evaluations), ``evals_per_update`` (per coordinate update for
    slice, per move for IMH), ``accept_rate`` (IMH; 1 for slice) and
    ``log_w_var`` (variance of the chains' log weights; NaN for one chain).
    A ``NaN`` log weight (a model whose density is NaN somewhere on the path)
    raises ``FloatingPointError``; ``-inf`` (zero weight) is a valid value.

    ``expected_seconds`` (the predicted wall time of one pull, for the run's guards,
    :mod:`pmcbandit.runtime.guards`) is ``n_steps * step_seconds``, with ``step_seconds`` the wall time
    per annealing step of timed runs of :data:`PROBE_STEPS` steps on the same kind of schedule
    at construction (the mean of three; the steps of a power-of-4 schedule of any length spread
    over the temperatures alike, so the per-step cost carries over). It includes what a model
    evaluation alone does not: the sampler's own work and how many evaluations a step takes
    on this model.
    """

    log_scale = True
    diagnostics = ("logp_evals", "evals_per_update", "accept_rate", "log_w_var")
    family = "annealing"
    importance_weights = True
    thread_safe = False  # the density's prior sampler reseeds shared random states per call

    def __init__(
        self,
        model,
        n_steps: int | None = None,
        n_chains: int = 4,
        schedule="power4",
        transition: str = "slice",
        slice_width=0.5,
        max_stepout: int = 100,
        imh_df: int = 10,
        cost: str = "cpu_seconds",
        parallel: bool = False,
        name: str | None = None,
    ):
        owner = "AISArm"
        self.betas = _check_schedule(schedule, n_steps)
        self.n_steps = self.betas.size - 1
        self.n_chains = int(check_positive(n_chains, "n_chains", owner, integer=True))
        self.transition = check_choice(transition, TRANSITIONS, "transition", owner)
        self.cost = check_choice(cost, COSTS, "cost", owner)
        self.cost_unit = "logp_evals" if self.cost == "logp_evals" else "cpu_seconds"
        self.max_stepout = int(check_positive(max_stepout, "max_stepout", owner, integer=True))
        if not isinstance(parallel, bool):
            raise TypeError(f"The 'parallel' parameter of {owner} must be a bool. Got {parallel!r} instead.")
        self.parallel = parallel
        if isinstance(imh_df, bool) or not isinstance(imh_df, numbers.Integral) or imh_df < 0:
            raise ValueError(f"The 'imh_df' parameter of {owner} must be an int >= 0. Got {imh_df!r} instead.")
        self.imh_df = int(imh_df)
        # Cheap arguments are checked first: compiling the model takes seconds.
        self.density = model if isinstance(model, ModelDensity) else ModelDensity(model)
        try:
            width = np.asarray(slice_width, dtype=np.float64)
        except (TypeError, ValueError):
            width = np.full(0, np.nan)
        if width.ndim == 0:
            width = np.full(self.density.dim, float(width))
        if width.shape != (self.density.dim,) or not (np.all(np.isfinite(width)) and np.all(width > 0)):
            raise ValueError(
                f"The 'slice_width' parameter of {owner} must be > 0 and finite (a float or one "
                f"per coordinate, {self.density.dim}). Got {slice_width!r} instead."
            )
        self.slice_width = np.ascontiguousarray(width)
        if self.transition == "imh":
            self._proposal = self._fit_proposal()
        default = f"ais-{self.n_steps}" if self.transition == "slice" else f"ais-imh-{self.n_steps}"
        self.name = default if name is None else str(name)
        self._warm_up()
        self.step_seconds = self._probe_step_seconds(schedule if isinstance(schedule, str) else "linear")
        self.expected_seconds = self.n_steps * self.step_seconds

    def __setstate__(self, state):
        # Unpickled on a worker (pmcbandit.runtime.executors.worker): the density is rebuilt from its model;
        # compile the kernel here so that no pull pays numba's compile time.
        self.__dict__.update(state)
        self._warm_up()

    def _fit_proposal(self):
        from pmcbandit.arms.evidence.imh_kernel import interpolated_laplace

        density = self.density
        try:
            prior_fit = density.laplace(beta=0.0)
        except ValueError:
            # Priors without an interior mode (in x) get a moment-matched Gaussian.
            draws = density.sample_prior(np.random.default_rng(20140621), max(4096, 64 * density.dim))
            prior_fit = (draws.mean(axis=0), np.linalg.inv(np.atleast_2d(np.cov(draws, rowvar=False))))
        try:
            posterior_fit = density.laplace(beta=1.0, x0=prior_fit[0])
        except ValueError as err:
            raise ValueError(
                "The 'transition' parameter of AISArm must be 'slice' for a model without a "
                f"posterior mode of positive-definite curvature. Got 'imh' instead ({err})"
            ) from err
        return interpolated_laplace(prior_fit, posterior_fit, self.betas)

    def _kernel(self):
        if self.transition == "slice":
            from pmcbandit.arms.evidence.slice_kernel import ais_slice_parallel, ais_slice_serial

            return ais_slice_parallel if self.parallel else ais_slice_serial
        from pmcbandit.arms.evidence.imh_kernel import ais_imh_parallel, ais_imh_serial

        return ais_imh_parallel if self.parallel else ais_imh_serial

    def _run(self, x0, betas, seeds, proposal):
        c = x0.shape[0]
        log_w = np.empty(c)
        evals = np.empty(c, dtype=np.int64)
        accepts = np.zeros(c, dtype=np.int64)
        if self.transition == "slice":
            self._kernel()(self.density.jit_fn, x0, betas, self.slice_width, self.max_stepout, seeds,
                           log_w, evals)
        else:
            a, b, mu, prec = proposal
            self._kernel()(self.density.jit_fn, x0, betas, a, b, mu, prec, self.imh_df, seeds,
                           log_w, evals, accepts)
        return log_w, evals, accepts

    def _warm_up(self) -> None:
        """Compile the kernel on a 3-temperature run so pulls never pay numba's compile time."""
        rng = np.random.default_rng(0)
        x0 = self.density.sample_prior(rng, 1)
        betas = np.array([0.0, 0.5, 1.0])
        proposal = None
        if self.transition == "imh":
            a, b, mu, prec = self._proposal
            proposal = (a, b, mu[[0, self.n_steps // 2, -1]].copy(), prec[[0, self.n_steps // 2, -1]].copy())
        self._run(x0, betas, chain_seeds(rng, 1), proposal)

    def _probe_step_seconds(self, kind: str) -> float:
        """Wall seconds per annealing step of timed :data:`PROBE_STEPS`-step runs (mean of three: a
        step's cost varies from chain to chain, and the mean is what a budget pays).
        """
        rng = np.random.default_rng(1)
        betas = annealing_schedule(PROBE_STEPS, kind)
        proposal = None
        if self.transition == "imh":
            a, b, mu, prec = self._proposal
            idx = np.linspace(0, self.n_steps, PROBE_STEPS + 1).round().astype(np.int64)
            proposal = (a, b, mu[idx].copy(), prec[idx].copy())
        total = 0.0
        for _ in range(3):
            x0 = self.density.sample_prior(rng, self.n_chains)
            seeds = chain_seeds(rng, self.n_chains)
            start = time.perf_counter()
            self._run(x0, betas, seeds, proposal)
            total += time.perf_counter() - start
        return total / (3 * PROBE_STEPS)

    def draw(self, rng: np.random.Generator):
        x0 = self.density.sample_prior(rng, self.n_chains)
        seeds = chain_seeds(rng, self.n_chains)
        log_w, evals, accepts = self._run(x0, self.betas, seeds, getattr(self, "_proposal", None))
        if np.isnan(log_w).any():
            raise FloatingPointError(
                f"arm {self.name!r} produced a NaN log weight: the model's log density is NaN "
                "somewhere on the annealing path."
            )
        total = int(evals.sum())
        moves = self.n_chains * max(self.n_steps - 1, 0)
        if self.transition == "slice":
            per_update = (total - self.n_chains) / (moves * self.density.dim) if moves else float("nan")
            accept = 1.0
        else:
            per_update = (total - self.n_chains) / moves if moves else float("nan")
            accept = float(accepts.sum() / moves) if moves else float("nan")
        info = {
            "logp_evals": float(total),
            "evals_per_update": float(per_update),
            "accept_rate": accept,
            "log_w_var": float(np.var(log_w)) if log_w.size > 1 and np.isfinite(log_w).all() else float("nan"),
        }
        return log_w, info, (float(total) if self.cost == "logp_evals" else None)
