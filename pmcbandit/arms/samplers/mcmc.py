"""One short run of a PyMC step method (NUTS, Metropolis, slice) as one pull of a posterior-expectation arm.

A pull is an independent replicate of what ``pm.sample(tune=T, draws=D, chains=1)`` computes:
a jittered start, ``T`` warm-up iterations with the step method's adaptation switched on, ``D``
iterations after ``stop_tuning()``, and the value

.. math:: \\hat\\mu = \\frac1D \\sum_{i=T+1}^{T+D} f(\\theta_i),

the Markov chain Monte Carlo estimate of :math:`E_\\pi[f(\\theta)]` (Robert & Casella 2004,
Ch. 6). Replicates from independent seeds are i.i.d., so the variance of :math:`\\hat\\mu`, and
with a cost the efficiency :math:`1/(\\mathrm{Var}\\,\\hat\\mu \\times \\text{cost})` of a sampler
(Neufeld et al. 2014, Sec. 2: an arm's loss is its variance times its cost), is learnt from
pulls. :math:`\\hat\\mu` is consistent as ``D`` grows, with a bias from the finite warm-up (the
start is not a posterior draw): a short run measures that too, as part of its error.

**Compiled once.** The step method's compiled functions are built when the arm is: NUTS's
joint log-density-and-gradient (``model.logp_dlogp_function``) is passed to a fresh
``pm.NUTS(potential=..., logp_dlogp_func=...)`` on every pull (constructing it compiles
nothing), so each pull starts from an untuned sampler exactly as ``pm.sample`` builds one
(``init="jitter+adapt_diag"``: a diagonal mass matrix adapted from the start point); a
Metropolis or slice step method is built once and its ``sampling_state`` (proposal scale,
slice widths, tuning counters) is restored to the untuned one before every pull. The loop is
PyMC's own (``pymc.sampling.mcmc._iter_sample``) without the trace backend: the chain's set-up
(``setup_chain`` in PyMC 6, ``set_rng`` in PyMC 5: :func:`pmcbandit._compat.setup_step_chain`),
``reset_tuning``, ``step`` ``T + D`` times with ``stop_tuning`` after ``T``.

**Randomness.** The pull's Generator is split with ``spawn(3)``: the jitter of the start (seeds
drawn from the first child, PyMC's ``U(-1, 1)`` on the unconstrained scale, redrawn up to 10
times while the log density is not finite, as ``pm.sample``), the step method's generator (the
second) and NUTS's mass-matrix potential (the third).

**Threads.** Pulls of one arm run one at a time (a lock): the compiled functions and the step
method's state are shared by its pulls.
"""

from __future__ import annotations

import threading

import numpy as np

from pmcbandit._compat import setup_step_chain

from pmcbandit.arms.base import Arm
from pmcbandit.arms.samplers._quantity import Quantity, check_sampler_model

__all__ = ["MCMCArm", "MCMC_SAMPLERS"]

MCMC_SAMPLERS = ("nuts", "metropolis", "slice")
_JITTER_RETRIES = 10


class _Counted:
    """A compiled function that counts its calls (``weight`` density evaluations per call)."""

    def __init__(self, fn, weight: int = 1):
        self.fn, self.weight, self.count = fn, weight, 0

    def __call__(self, *args, **kwargs):
        self.count += self.weight
        return self.fn(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.fn, name)


class MCMCArm(Arm):
    """Posterior expectation from one short ``pm.NUTS`` / ``pm.Metropolis`` / ``pm.Slice`` run per pull.

    The step methods are PyMC's: the no-U-turn sampler with dual-averaging step size (Hoffman &
    Gelman 2014, Alg. 6) and a diagonal mass matrix adapted during warm-up; random-walk
    Metropolis (Metropolis et al. 1953), one variable at a time, its proposal scale tuned every
    100 warm-up iterations; univariate slice sampling with stepping out and shrinkage (Neal 2003,
    Sec. 4), its widths tuned during warm-up.

    Parameters
    ----------
    model : pymc.Model
        Continuous free variables (see :func:`pmcbandit.arms.samplers.sampler_arms`).
    quantity : str, callable or Quantity
        The expectation :math:`E_\\pi[f(\\theta)]`, see :mod:`pmcbandit.arms.samplers._quantity`.
    sampler : {"nuts", "metropolis", "slice"}
    tune, draws : int
        Warm-up iterations (``>= 0``) and kept iterations (``>= 1``) of one pull.
    cost : {"cpu_seconds", "gradient_evals", "logp_evals"}
        ``"cpu_seconds"``: CPU seconds of the pull (:func:`time.process_time`). ``"gradient_evals"`` (NUTS only):
        joint log-density-and-gradient evaluations, warm-up included. ``"logp_evals"`` (Metropolis,
        slice only): log-density evaluations, warm-up included. Declared in :attr:`cost_unit`.
    name : str, optional
        Defaults to ``"<sampler>-t<tune>-d<draws>"`` followed by any step keyword as ``-<key><value>``.
    compile_kwargs : dict, optional
        Passed to PyTensor when the log density (and its gradient) is compiled, e.g.
        ``{"mode": "NUMBA"}`` for PyTensor's numba backend instead of its C backend (the default).
    **step_kwargs
        Passed to the step method (``target_accept``, ``max_treedepth``, ``scaling``, ``w``, ...).

    Notes
    -----
    Diagnostics per pull (floats), NUTS: ``n_grad`` (evaluations: one per leapfrog step, which
    PyMC reports as ``tree_size``, plus one at the start of each iteration), ``divergences``
    (after warm-up), ``mean_tree_depth``, ``accept_rate`` (mean ``mean_tree_accept``) and
    ``step_size`` (after warm-up). Metropolis: ``logp_evals`` (a proposal evaluates PyMC's compiled
    ``logp(q) - logp(q0)``, two densities) and ``accept_rate``. Slice: ``logp_evals`` and
    ``evals_per_update`` (per coordinate update, Neal 2003, Fig. 3 and 5). Counts are of calls
    of the compiled functions. A non-finite estimate (a quantity that is infinite or NaN at a
    draw) raises ``FloatingPointError``.
    """

    log_scale = False
    family = "mcmc"

    def __init__(self, model, quantity, sampler: str = "nuts", *, tune: int = 500, draws: int = 500,
                 cost: str = "cpu_seconds", name: str | None = None, compile_kwargs: dict | None = None,
                 **step_kwargs):
        import pymc as pm
        from pymc.initial_point import make_initial_point_fn

        from pmcbandit._validation import check_choice, check_positive

        door = "MCMCArm"
        model = check_sampler_model(model, door)
        self.sampler = check_choice(sampler, MCMC_SAMPLERS, "sampler", door)
        self.tune = int(check_positive(tune, "tune", door, integer=True, allow_zero=True))
        self.draws = int(check_positive(draws, "draws", door, integer=True))
        self.cost = check_choice(cost, ("cpu_seconds", "gradient_evals", "logp_evals"), "cost", door)
        if (cost == "gradient_evals") != (sampler == "nuts") and cost != "cpu_seconds":
            raise ValueError(
                f"The 'cost' parameter of {door} must be 'cpu' or the unit of the {sampler!r} sampler "
                f"({'gradients' if sampler == 'nuts' else 'logp_evals'}): a gradient and a log-density "
                f"evaluation are different units. Got {cost!r} instead."
            )
        self.cost_unit = cost
        self.model = model
        self.quantity = quantity if isinstance(quantity, Quantity) else Quantity(model, quantity, door)
        self.step_kwargs = dict(step_kwargs)
        self.diagnostics = {
            "nuts": ("n_grad", "divergences", "mean_tree_depth", "accept_rate", "step_size"),
            "metropolis": ("logp_evals", "accept_rate"),
            "slice": ("logp_evals", "evals_per_update"),
        }[sampler] + self.quantity.component_names
        self.components = self.quantity.component_names
        # Compiled PyTensor functions and the step method's state are not thread-safe: pulls of
        # one arm from several threads (pmcbandit's ThreadExecutor) run one at a time.
        self._lock = threading.Lock()
        self._vars = list(model.value_vars)
        self._initial_point = model.initial_point()
        self._start_fn = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs), return_transformed=True)
        compile_kwargs = dict(compile_kwargs or {})
        self._logp = model.compile_logp(**compile_kwargs)
        if sampler == "nuts":
            fn = model.logp_dlogp_function(self._vars, ravel_inputs=True, initial_point=self._initial_point,
                                           **compile_kwargs)
            fn.trust_input = True
            # The leapfrog integrator calls the compiled function directly (not fn.__call__).
            self._counter = fn._pytensor_function = _Counted(fn._pytensor_function)
            self._logp_dlogp = fn
            self._new_nuts(self._initial_point, np.random.default_rng(0))  # rejects bad step kwargs now
        else:
            cls = pm.Metropolis if sampler == "metropolis" else pm.Slice
            self._step = cls(self._vars, model=model, initial_point=self._initial_point, **step_kwargs)
            self._counters = []
            for method in getattr(self._step, "methods", [self._step]):
                attr, weight = ("delta_logp", 2) if sampler == "metropolis" else ("logp", 1)
                counted = _Counted(getattr(method, attr), weight)
                setattr(method, attr, counted)
                self._counters.append(counted)
            self._untuned = self._step.sampling_state
        extra = "".join(f"-{k}{v}" for k, v in sorted(self.step_kwargs.items()))
        self.name = f"{sampler}-t{self.tune}-d{self.draws}{extra}" if name is None else str(name)

    def _new_nuts(self, start, rng: np.random.Generator):
        import pymc as pm
        from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

        mean = self.quantity.ravel(start)
        step_rng, potential_rng = rng.spawn(2)
        # pm.sample's "jitter+adapt_diag": the adaptation starts at the start point, unit variances.
        potential = QuadPotentialDiagAdapt(mean.size, mean, np.ones_like(mean), 10, rng=potential_rng)
        return pm.NUTS(self._vars, model=self.model, potential=potential, logp_dlogp_func=self._logp_dlogp,
                       initial_point=self._initial_point, rng=step_rng, **self.step_kwargs)

    def _start(self, rng: np.random.Generator):
        seeds = rng.integers(2**30, size=_JITTER_RETRIES + 1)
        for seed in seeds:
            point = self._start_fn(int(seed))
            if np.isfinite(self._logp(point)):
                return point
        self.model.check_start_vals(point)  # raises with PyMC's description of the bad terms
        return point

    def draw(self, rng: np.random.Generator):
        with self._lock:
            return self._run(rng)

    def _run(self, rng: np.random.Generator):
        X, stats = self.chain(rng)
        values = self.quantity(X)
        estimate = float(values.mean())
        if not np.isfinite(estimate):
            raise FloatingPointError(
                f"arm {self.name!r}: the quantity {self.quantity.label!r} is not finite at some draw of the run"
            )
        info, evals = self._info(stats)
        if self.components:
            info.update(zip(self.components, self.quantity.components(X).tolist()))
        return np.array([estimate]), info, (None if self.cost == "cpu_seconds" else float(evals))

    def chain(self, rng: np.random.Generator):
        """One run from a jittered start: the kept draws (rows of the unconstrained vector) and the
        step statistics of every iteration, warm-up included (not thread-safe: :meth:`draw` locks).
        """
        start_rng, step_rng = rng.spawn(2)
        point = self._start(start_rng)
        if self.sampler == "nuts":
            step = self._new_nuts(point, step_rng)
            self._counter.count = 0
        else:
            step = self._step
            step.sampling_state = self._untuned
            setup_step_chain(step, step_rng, self.tune, self.draws)
            for counted in self._counters:
                counted.count = 0
        if hasattr(step, "reset_tuning"):
            step.reset_tuning()
        if self.tune == 0:
            step.stop_tuning()
        X = np.empty((self.draws, self.quantity.dim))
        stats = []
        for i in range(self.tune + self.draws):
            if i == self.tune and i > 0:
                step.stop_tuning()
            point, step_stats = step.step(point)
            if i >= self.tune:
                X[i - self.tune] = self.quantity.ravel(point)
            stats.append(step_stats)
        return X, stats

    def _info(self, stats):
        kept = stats[self.tune:]
        if self.sampler == "nuts":
            n_grad = float(self._counter.count)
            info = {
                "n_grad": n_grad,
                "divergences": float(sum(bool(s[0]["diverging"]) for s in kept)),
                "mean_tree_depth": float(np.mean([s[0]["depth"] for s in kept])),
                "accept_rate": float(np.mean([s[0]["mean_tree_accept"] for s in kept])),
                "step_size": float(kept[-1][0]["step_size"]),
            }
            return info, n_grad
        evals = float(sum(c.count for c in self._counters))
        if self.sampler == "metropolis":
            accept = [np.mean([m["accepted"] for m in s]) for s in kept]
            return {"logp_evals": evals, "accept_rate": float(np.mean(accept))}, evals
        updates = (self.tune + self.draws) * self.quantity.dim
        return {"logp_evals": evals, "evals_per_update": evals / updates}, evals
