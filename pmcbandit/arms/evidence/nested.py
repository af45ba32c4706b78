r"""The nested-sampling arm: every pull is one independent nested-sampling run (Skilling 2006).

A run starts from ``n_live`` exact prior draws on the unconstrained space and climbs the likelihood
by removing its lowest live points and replacing them by draws from the prior restricted above them
(:mod:`~pmcbandit.arms.evidence._nested_kernel`). It does not temper: it integrates over prior
volume, so a likelihood whose annealing path has a first-order phase transition (a narrow spike in a
wide slab, Skilling 2006) costs it nothing special, and it fails in ways of its own, unlike
the annealing and importance families: it is an estimator family of its own (``family = "nested"``).
"""

from __future__ import annotations

import time

import numpy as np

from pmcbandit._validation import check_choice, check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.arms.evidence._kernels import chain_seeds
from pmcbandit.arms.evidence.model_density import ModelDensity

__all__ = ["NestedArm", "DEFAULT_LIVE"]

#: Live points of a run, by default.
DEFAULT_LIVE = 32


class NestedArm(Arm):
    r"""Nested sampling of the evidence of a PyMC model, one independent run per pull.

    Parameters
    ----------
    model : pymc.Model or ModelDensity
        See :class:`~pmcbandit.arms.evidence.model_density.ModelDensity`.
    n_live : int
        Live points of a run (at least 4).
    n_replace : int, optional
        Live points removed and replaced per iteration, one at a time (the live count falls from
        ``n_live`` to ``n_live - n_replace + 1`` and is then refilled); their constrained moves are
        independent chains, run on numba threads when ``parallel``. Default ``max(1, n_live // 8)``; at
        most ``n_live - 2``. Each removal from :math:`n` live points shrinks the volume by :math:`1 - 1/n`,
        so ``n_replace > 1`` gives up a little precision per removal (the variance of
        :math:`\log X` per nat of depth is about :math:`1/n` averaged over the batch) for fewer passes over
        the live set.
    n_moves : int, optional
        Slice steps per replacement (Neal 2003, Sec. 4). Default ``max(20, 5 * dim)``: a step moves the
        point along one line, and the radius of a point in a :math:`d`-dimensional constrained region
        decorrelates in about :math:`d` of them. Too few steps leave each replacement near the survivor it
        copies, the live set drifts inwards and :math:`\hat Z` reads high (Notes).
    depth : float, optional
        The stopping rule (Notes): stop once the last removed point's likelihood times the estimated
        volume :math:`\hat X` falls below :math:`e^{-\mathrm{depth}}` times the evidence accumulated so
        far. Default ``10 + 3 * dim`` nats.
    max_kills : int
        Most removals of a run; a run that reaches it stops there, with its remainder (the estimate stays
        unbiased: a fixed bound is a stopping time).
    max_stepout : int
        Most stepping-out steps on each side of a slice step.
    runs : int
        Independent runs per pull (one value each).
    cost : {"cpu_seconds", "logp_evals"}
        Measured CPU seconds, or the number of density evaluations.
    parallel : bool
        Run an iteration's replacements on numba threads (``prange``): the same values (each live slot
        has its own stream).
    name : str, optional
        Defaults to ``f"nested-{n_live}"``.
    expected_seconds : float, optional
        Predicted wall seconds of a pull (as the default pool's sizing run predicts it,
        :func:`~pmcbandit.evidence.nested_pool.nested_arm`); ``None`` (default): the wall time of one pull
        timed at construction, after a compiling one.

    Notes
    -----
    **Estimator.** Write :math:`X(\lambda)` for the prior mass of :math:`\{L > \lambda\}`, so
    :math:`Z = \int_0^1 L\,dX`. With :math:`n` live points drawn independently from the prior restricted
    to :math:`\{L > \lambda\}`, of mass :math:`X`, the lowest sits at mass :math:`X V` with
    :math:`V \sim \mathrm{Beta}(n, 1)` (density :math:`n v^{n-1}`), and the other :math:`n - 1` are
    independent draws above it. The run keeps :math:`\hat X_0 = 1`, :math:`\hat Z_0 = 0` and, at the
    :math:`i`-th removal, from :math:`n_i` live points, at likelihood :math:`L_i`,

    .. math:: \hat Z_i = \hat Z_{i-1} + \hat X_{i-1} L_i / n_i, \qquad
              \hat X_i = \hat X_{i-1} (1 - 1/n_i),

    and stops after removal :math:`\tau` with :math:`\hat Z = \hat Z_\tau + \hat X_\tau \bar L_\tau`,
    :math:`\bar L_\tau` the mean likelihood of the live points left. **Under exact constrained-prior
    draws,** :math:`E[\hat Z] = Z` exactly, for any number of live points and any stopping time
    :math:`\tau` of the removed likelihoods. Proof: let :math:`\ell(v)` be the likelihood at mass
    :math:`vX` and :math:`\bar\ell(v) = v^{-1}\int_0^v \ell`; given a removal history, the live
    points are independent draws above the last threshold, so it suffices that one removal keeps
    :math:`\hat X_{i-1}\,\bar\ell(1)` in expectation:

    .. math:: E\Big[\frac{\ell(V)}{n} + \Big(1 - \frac1n\Big)\bar\ell(V)\Big]
              = \int_0^1 v^{n-1}\ell(v)\,dv + (n - 1)\int_0^1 v^{n-2}\!\int_0^v \ell(u)\,du\,dv
              = \int_0^1 \ell ,

    (swap the order of integration in the second term: :math:`(n-1)\int_u^1 v^{n-2} dv = 1 - u^{n-1}`),
    so :math:`\hat Z_i + \hat X_i\,\bar\ell_i` is a martingale in the removal history, with mean
    :math:`Z`, and by optional stopping (:math:`\tau` bounded by ``max_kills``) so is its value at
    :math:`\tau`, of which :math:`\hat Z` is a conditionally unbiased estimate (the survivors' mean
    likelihood). With one removal per iteration this is the nested-sampling estimator with volumes
    :math:`(1 - 1/N)^i` that Walter (2017, "Point process-based Monte Carlo estimation", Stat. Comput. 27;
    arXiv:1412.6368) proves unbiased: the removed levels of :math:`N` live points are those of :math:`N`
    parallel increasing random walks, whose count :math:`M` of levels below one of mass :math:`X` is Poisson
    with mean :math:`-N\log X`, so :math:`E[(1 - 1/N)^M] = X` for every level, and the untruncated sum is
    unbiased; here the sum stops at a stopping time and the survivors' remainder keeps it unbiased (the
    proof above). The volumes :math:`e^{-i/N}` of Skilling (2006), or the mean volumes
    :math:`E[X_i] = (N/(N+1))^i` (each removal shrinks the mass by a :math:`\mathrm{Beta}(N, 1)` factor of
    mean :math:`N/(N+1)`), do not give an unbiased sum: :math:`L_i` is a function of the random
    :math:`X_i`, and :math:`E[L(X_i)]\,E[X_{i-1} - X_i] \ne E[L(X_i)(X_{i-1} - X_i)]`. A value is
    :math:`\log\hat Z` (``log_scale = True``): pmcbandit averages :math:`\hat Z`, as it does AIS
    weights, so the pool combines runs by their mean, unbiased for :math:`Z`.

    **No Pareto** :math:`\hat k` **gate** (``importance_weights = False``). A run's :math:`\hat Z` is a
    weighted mean of likelihoods with weights summing to 1, so :math:`\hat Z \le L_{\max}`: for a
    bounded likelihood its variance is finite, whatever the posterior (Walter 2017 shows finite variance
    of the untruncated estimator as soon as the likelihood has a prior moment of an order above 1), unlike
    an importance weight, whose variance can be infinite and which the :math:`\hat k` check of
    :mod:`pmcbandit.stats.psis` is for. That check needs 100 weights before it speaks, and an arm of a
    checked pool with fewer gets no weight and stays out of the consistency test; a nested run with a
    few dozen live points costs as much as hundreds of annealing steps, so within the cross-check share of
    a 30 s budget the arm reaches some 40 to 70 runs. With the gate, on the 10-dimensional spike and slab
    (``models.spike_slab``) at 30 s, ``nested-8`` made 66 pulls, was ``"unchecked"``, and the answer rested
    on one AIS arm (status ``"ok"``, z = -16); without it, its 58 pulls entered the combination, the
    consistency test found the arms disagreeing, and the status was ``"random_effects"``, not ``"ok"``
    (``benchmarks/results/bench_phase_transition.md``, one seed each).

    **Stopping.** The rule reads only the removed likelihoods: stop after the first iteration whose
    last removal has :math:`\log L_i + \log\hat X_i < \log\hat Z_i - \mathrm{depth}`. Since
    :math:`\hat Z_i \le L_i (1 - \hat X_i)`, a run always goes at least ``depth`` nats of prior
    volume in; past the posterior's bulk it stops ``depth`` nats beyond where the posterior mass
    was found. A component hidden under a likelihood plateau farther in than that (a spike of
    width :math:`s_1` in a slab of width :math:`s_2` lies about :math:`d\log(s_2/s_1)` nats beyond
    the slab's bulk) is reached only through the remainder, whose live points land in it rarely:
    the estimate stays unbiased (and bounded by :math:`L_{\max}`) but skewed, and its sample variance
    understates the error until some run's live points land there.

    **Constrained moves and their bias.** A replacement is a copy of a random survivor moved by
    ``n_moves`` slice steps that leave the constrained prior invariant
    (:mod:`~pmcbandit.arms.evidence._nested_kernel`); its law is :math:`K^m(x_c, \cdot)`, not the
    constrained prior itself, and it depends on the survivor it started from. Where each of the
    :math:`\tau` replacements' laws is within total variation :math:`\varepsilon_i` of the constrained
    prior given the run so far, a coupling of every replacement with an exact draw agrees with
    probability at least :math:`1 - \sum_i \varepsilon_i`, so
    :math:`|E\hat Z - Z| \le \sup\hat Z \cdot \sum_i \varepsilon_i \le L_{\max}\sum_i \varepsilon_i`
    (the estimate is a weighted mean of likelihoods with weights summing to 1). The bound is not
    computable; the bias is measured instead on models with exact evidence
    (``benchmarks/results/bench_nested_bias.md``; ``tests/arms/evidence/test_nested.py`` checks the mean of
    :math:`\hat Z / Z` over many pulls against 1 within 4 standard errors). With 16 live points and the default
    moves, 400 runs gave a mean :math:`\hat Z / Z` of 1.018 ± 0.037 on the suite's conjugate model (3 dimensions),
    1.007 ± 0.037 and 0.966 ± 0.061 on Gaussian posteriors in 4 and 10 dimensions, and 0.981 ± 0.061 on the
    10-dimensional spike and slab; with 5 moves per replacement the same runs read 1.17 to 8.2 (z from +3.6 to +7.7),
    the live set drifting inwards. Salomone et al. (2018, "Unbiased and consistent nested sampling via sequential
    Monte Carlo", arXiv:1805.03924) reweight the same moves so that MCMC costs no bias at all, at the price
    of the nested structure; this arm keeps the nested estimator and its measured bias.

    Diagnostics per pull: ``logp_evals``, ``kills`` (removals), ``depth`` (:math:`-\log\hat X` at the
    stop, nats), ``stopped`` (the share of runs that stopped by the rule, not by ``max_kills``).
    """

    log_scale = True
    diagnostics = ("logp_evals", "kills", "depth", "stopped")
    family = "nested"
    importance_weights = False  # Notes: a run's Z-hat is bounded by the largest likelihood
    thread_safe = False  # the density's prior sampler reseeds shared random states per call

    def __init__(self, model, n_live: int = DEFAULT_LIVE, n_replace: int | None = None, n_moves: int | None = None,
                 depth: float | None = None, max_kills: int = 1_000_000, max_stepout: int = 10, runs: int = 1,
                 cost: str = "cpu_seconds", parallel: bool = False, name: str | None = None,
                 expected_seconds: float | None = None):
        door = "NestedArm"
        self.n_live = int(check_positive(n_live, "n_live", door, integer=True))
        if self.n_live < 4:
            raise ValueError(f"The 'n_live' parameter of {door} must be an int >= 4. Got {n_live!r} instead.")
        if n_replace is None:
            n_replace = max(1, self.n_live // 8)
        self.n_replace = int(check_positive(n_replace, "n_replace", door, integer=True))
        if self.n_replace > self.n_live - 2:
            raise ValueError(f"The 'n_replace' parameter of {door} must be an int in [1, n_live - 2 = "
                             f"{self.n_live - 2}]. Got {n_replace!r} instead.")
        if n_moves is not None:
            n_moves = int(check_positive(n_moves, "n_moves", door, integer=True))
        if depth is not None:
            depth = float(check_positive(depth, "depth", door))
        self.max_kills = int(check_positive(max_kills, "max_kills", door, integer=True))
        self.max_stepout = int(check_positive(max_stepout, "max_stepout", door, integer=True))
        self.runs = int(check_positive(runs, "runs", door, integer=True))
        self.cost = check_choice(cost, ("cpu_seconds", "logp_evals"), "cost", door)
        self.cost_unit = "logp_evals" if self.cost == "logp_evals" else "cpu_seconds"
        if not isinstance(parallel, bool):
            raise TypeError(f"The 'parallel' parameter of {door} must be a bool. Got {parallel!r} instead.")
        self.parallel = parallel
        if expected_seconds is not None:
            expected_seconds = float(check_positive(expected_seconds, "expected_seconds", door))
        if name is not None and not isinstance(name, str):
            raise TypeError(f"The 'name' parameter of {door} must be None or a str. Got {name!r} instead.")
        # Cheap arguments are checked first: compiling the model takes seconds.
        self.density = model if isinstance(model, ModelDensity) else ModelDensity(model)
        dim = self.density.dim
        self.n_moves = max(20, 5 * dim) if n_moves is None else n_moves
        self.depth = 10.0 + 3.0 * dim if depth is None else depth
        self.name = f"nested-{self.n_live}" if name is None else name
        self.warm_up()
        if expected_seconds is None:
            start = time.perf_counter()
            self.draw(np.random.default_rng(1))
            expected_seconds = time.perf_counter() - start
        self.expected_seconds = expected_seconds

    def __setstate__(self, state):
        # Unpickled on a worker: compile the kernel here so that no pull pays numba's compile time.
        self.__dict__.update(state)
        self.warm_up()

    def _kernel(self):
        from pmcbandit.arms.evidence._nested_kernel import nested_run_parallel, nested_run_serial

        return nested_run_parallel if self.parallel else nested_run_serial

    def _run(self, rng: np.random.Generator, max_kills: int) -> np.ndarray:
        """One run from ``rng``: the kernel's ``STATS`` (log Z, removals, evaluations, log X, stopped)."""
        density = self.density
        x = density.sample_prior(rng, self.n_live)
        lp, ll = density.logp_terms_batch(x)
        ll[density.outside_float_range(x)] = -np.inf
        if np.isnan(ll).any() or np.isnan(lp).any():
            raise FloatingPointError(f"arm {self.name!r}: the model's log density is NaN at a prior draw.")
        lab = rng.random(self.n_live)
        master = chain_seeds(rng, 1)[0]
        seeds = chain_seeds(rng, self.n_live)
        stats = np.empty(5)
        self._kernel()(density.terms_fn, x, lp, ll, lab, self.n_replace, self.n_moves, self.max_stepout,
                       self.depth, max_kills, master, seeds, stats)
        stats[2] += self.n_live
        return stats

    def warm_up(self) -> None:
        """Compile the kernel on a run of one iteration (a fixed internal seed; no pull's stream is drawn)."""
        self._run(np.random.default_rng(0), 1)

    def draw(self, rng: np.random.Generator):
        out = np.array([self._run(rng, self.max_kills) for _ in range(self.runs)])
        log_z = out[:, 0]
        if np.isnan(log_z).any():
            raise FloatingPointError(f"arm {self.name!r} produced a NaN log evidence.")
        evals = float(out[:, 2].sum())
        info = {
            "logp_evals": evals,
            "kills": float(out[:, 1].mean()),
            "depth": float(-out[:, 3].mean()),
            "stopped": float(out[:, 4].mean()),
        }
        return log_z, info, (evals if self.cost == "logp_evals" else None)
