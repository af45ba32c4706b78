"""One run of PyMC's sequential Monte Carlo sampler as one pull of a posterior-expectation arm.

A pull runs the tempered SMC of ``pm.sample_smc`` (one chain of ``draws`` particles; Del Moral,
Doucet & Jasra 2006; PyMC's adaptive tempering after Ching & Chen 2007) from the prior to the
posterior and returns the mean of :math:`f` over the final particles,

.. math:: \\hat\\mu = \\frac1N \\sum_{i=1}^{N} f(\\theta^{(i)}_{\\beta=1}),

equally weighted after the last resampling and mutation. :math:`\\hat\\mu` is consistent as
:math:`N` grows and biased at finite :math:`N` (the temperatures and proposals are chosen from
the particles), as :class:`~pmcbandit.arms.evidence.SMCArm` explains for the evidence.

**Compiled once.** ``pm.sample_smc`` builds its kernel, compiling the prior and likelihood log
densities, on every call, and draws the initial particles with ``pm.draw``, which compiles a
forward-sampling function per call. Here the kernel (``pm.smc.IMH`` or ``pm.smc.MH``) is built
once with the arm and re-initialised per pull (``kernel.initialize(start, rng)``, PyMC's own
reset between chains), and the initial particles are exact prior draws from a forward sampler
compiled once (:func:`pmcbandit.arms.evidence._prior_sampler.build_prior_sampler`). The stage
loop is PyMC's (``pymc.smc.sampling._sample_smc_sequentially``): ``update_beta_and_weights`` then
``step`` (resample, tune, mutate) until :math:`\\beta = 1`. A pull's Generator is split with
``spawn(2)``: the initial particles and the kernel's generator.
"""

from __future__ import annotations

import threading

import numpy as np

from pmcbandit.arms.base import Arm
from pmcbandit.arms.samplers._quantity import Quantity, check_sampler_model
from pmcbandit.arms.samplers.mcmc import _Counted

__all__ = ["SMCSamplerArm"]

_KERNELS = ("IMH", "MH")


class SMCSamplerArm(Arm):
    """Posterior expectation from the final particles of one SMC run per pull.

    Parameters
    ----------
    model : pymc.Model
        Continuous free variables with a proper prior PyMC can forward-sample.
    quantity : str, callable or Quantity
        See :mod:`pmcbandit.arms.samplers._quantity`.
    draws : int
        Number of particles :math:`N`.
    kernel : {"IMH", "MH"}
        PyMC's independence (default) or random-walk Metropolis–Hastings mutation kernel.
    cost : {"cpu_seconds", "logp_evals"}
        CPU seconds (:func:`time.process_time`) or log-density evaluations: one per particle at
        the start and one per particle and mutation step (each evaluates PyMC's compiled prior
        and likelihood terms at one point). SMC takes no gradients.
    name : str, optional
        Defaults to ``"smc-d<draws>"`` (``"smc-mh-d<draws>"`` for the MH kernel), followed by any
        kernel keyword as ``-<key><value>``.
    **kernel_kwargs
        Passed to the kernel (``threshold``, ``correlation_threshold``).

    Notes
    -----
    Diagnostics per pull: ``logp_evals``, ``n_stages`` (tempering stages) and
    ``final_accept_rate`` (of the last mutation). A non-finite estimate raises
    ``FloatingPointError``.
    """

    log_scale = False
    family = "annealing"
    diagnostics = ("logp_evals", "n_stages", "final_accept_rate")

    def __init__(self, model, quantity, *, draws: int = 500, kernel: str = "IMH", cost: str = "cpu_seconds",
                 name: str | None = None, **kernel_kwargs):
        import pymc as pm

        from pmcbandit._validation import check_choice, check_positive
        from pmcbandit.arms.evidence._prior_sampler import build_prior_sampler

        door = "SMCSamplerArm"
        model = check_sampler_model(model, door)
        self.draws = int(check_positive(draws, "draws", door, integer=True))
        if self.draws < 2:
            raise ValueError(f"The 'draws' parameter of {door} must be >= 2 (SMC estimates a covariance "
                             f"from the particles). Got {draws!r} instead.")
        kernel = check_choice(kernel, _KERNELS, "kernel", door)
        if cost == "gradient_evals":
            raise ValueError(f"The 'cost' parameter of {door} must be 'cpu' or 'logp_evals' (SMC takes no "
                             f"gradients). Got {cost!r} instead.")
        self.cost = check_choice(cost, ("cpu_seconds", "logp_evals"), "cost", door)
        self.cost_unit = "cpu_seconds" if cost == "cpu_seconds" else "logp_evals"
        flat = [rv.name for rv in model.free_RVs if type(rv.owner.op).__name__ in ("FlatRV", "HalfFlatRV")]
        if flat:
            raise ValueError(f"The 'model' parameter of {door} must have a proper prior (SMC starts from prior "
                             f"draws). Got improper Flat/HalfFlat free variables {flat!r} instead.")
        self.model = model
        self.quantity = quantity if isinstance(quantity, Quantity) else Quantity(model, quantity, door)
        self.diagnostics = type(self).diagnostics + self.quantity.component_names
        self.components = self.quantity.component_names
        self.kernel_kwargs = dict(kernel_kwargs)
        self._kernel = getattr(pm.smc, kernel)(draws=self.draws, model=model, random_seed=0, **kernel_kwargs)
        self._lock = threading.Lock()  # the kernel's state is shared by the arm's pulls
        try:
            self._sample, _ = build_prior_sampler(model, self.quantity.value_names)
        except ValueError as err:
            raise ValueError(f"The 'model' parameter of {door} must have a prior that PyMC can forward-sample "
                             f"(SMC starts from prior draws). Got a model whose prior cannot be drawn "
                             f"({str(err).splitlines()[0]}) "
                             "instead.") from err
        extra = "".join(f"-{k}{v}" for k, v in sorted(self.kernel_kwargs.items()))
        prefix = "smc" if kernel == "IMH" else "smc-mh"
        self.name = f"{prefix}-d{self.draws}{extra}" if name is None else str(name)

    def draw(self, rng: np.random.Generator):
        with self._lock:
            return self._run(rng)

    def _run(self, rng: np.random.Generator):
        from pmcbandit.arms.evidence.smc import quiet_pymc

        start_rng, kernel_rng = rng.spawn(2)
        x0 = np.asarray(self._sample(start_rng, self.draws), dtype=np.float64).reshape(self.draws, -1)
        kernel = self._kernel
        with quiet_pymc():
            kernel.initialize(self.quantity.unravel_rows(x0), kernel_rng)
            counter = kernel.likelihood_logp_func = _Counted(kernel.likelihood_logp_func)
            stages = 0
            while kernel.beta < 1:
                kernel.update_beta_and_weights()
                stats = kernel.step()
                stages += 1
        values = self.quantity(kernel.tempered_posterior)
        estimate = float(values.mean())
        if not np.isfinite(estimate):
            raise FloatingPointError(
                f"arm {self.name!r}: the quantity {self.quantity.label!r} is not finite at some final particle"
            )
        evals = float(self.draws + counter.count)
        accept = stats.get("accept_rate", np.nan) if stages else np.nan
        info = {"logp_evals": evals, "n_stages": float(stages),
                "final_accept_rate": float(np.nan if accept is None else accept)}
        if self.components:
            info.update(zip(self.components, self.quantity.components(kernel.tempered_posterior).tolist()))
        return np.array([estimate]), info, (None if self.cost == "cpu_seconds" else evals)
