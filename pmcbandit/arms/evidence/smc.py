"""PyMC's sequential Monte Carlo sampler as an evidence arm.

One pull is one independent run of :func:`pymc.sample_smc` (one chain), and its
value is the run's final ``log_marginal_likelihood``, i.e. :math:`\\log\\hat Z`
with :math:`\\hat Z = \\prod_{s} \\frac1N \\sum_i w^{(s)}_i` the product over
tempering stages of the mean incremental weights (Del Moral, Doucet & Jasra,
2006; PyMC's tempering follows Ching & Chen, 2007). This lets a bandit compare
the tool PyMC users already run against the other estimators of Z
(Neufeld et al., 2014, Sec. 6.3 allocate among estimators of the evidence).

**Bias.** With a tempering schedule and MCMC kernels fixed in advance,
:math:`\\hat Z` is unbiased (Del Moral, 2004, Feynman-Kac formulae, Ch. 7;
Del Moral, Doucet & Jasra, 2006). PyMC chooses each temperature from the current
particles (bisection to an ESS threshold) and tunes the kernel's proposal from
them too, so the estimator is consistent as the number of particles grows but
biased at any finite size (``benchmarks/results/bench_laplace_smc.md`` measures it on the
Pima model), and :math:`E[\\log\\hat Z] \\le \\log E[\\hat Z]` adds the usual Jensen gap
on the log scale. :attr:`SMCArm.unbiased` is ``False``; a combiner that assumes unbiased
arms should weigh that.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

import numpy as np

from pmcbandit._validation import check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.arms.evidence.model_density import check_model

__all__ = ["SMCArm", "quiet_pymc"]

_KERNELS = ("IMH", "MH")


@contextlib.contextmanager
def quiet_pymc(level: int = logging.ERROR):
    """Silence PyMC's log messages and Python warnings inside the block only.

    The ``"pymc"`` logger's level is raised to ``level`` and restored on exit
    (child loggers such as ``pymc.smc.sampling`` inherit it); warnings are
    suppressed with :func:`warnings.catch_warnings`, which restores the filters.
    No handler or global logging configuration is changed.
    """
    logger = logging.getLogger("pymc")
    previous = logger.level
    logger.setLevel(max(level, logger.getEffectiveLevel()))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(previous)


class SMCArm(Arm):
    """One independent ``pm.sample_smc`` run per pull; value = its :math:`\\log\\hat Z`.

    Parameters
    ----------
    model : pymc.Model
        Model with continuous free variables and no missing observations.
    draws : int, default 2000
        Number of particles (``pm.sample_smc``'s ``draws``).
    kernel : {"IMH", "MH"} or SMC kernel class, default "IMH"
        ``pm.smc.IMH`` (independence Metropolis-Hastings with a Gaussian fit to the
        particles, PyMC's default) or ``pm.smc.MH``, or any subclass of
        ``pymc.smc.kernels.SMC_KERNEL``.
    name : str, optional
        Defaults to ``"smc-<draws>"`` (``"smc-mh-<draws>"`` for the MH kernel).
    **kernel_kwargs
        Passed to ``pm.sample_smc`` (``threshold``, ``correlation_threshold``, ...).

    Attributes
    ----------
    unbiased : bool
        ``False``: ``exp(value)`` is a consistent but biased estimate of Z (see the
        module docstring), unlike the importance-sampling and AIS arms.
    log_scale : bool
        ``True``: each value is :math:`\\log \\hat Z`.

    Notes
    -----
    Each pull seeds ``pm.sample_smc`` with ``int(rng.integers(2**31 - 1))`` drawn
    from the pull's Generator (the same Generator state gives the same value), runs
    one chain on one core without progress bar or convergence checks, and silences
    PyMC's logging and warnings for the duration of the run only
    (:func:`quiet_pymc`). The run recompiles the model each time, as a user calling
    ``pm.sample_smc`` repeatedly would, and that cost is part of the measured CPU
    time; it asks for a ``MultiTrace`` (``return_inferencedata=False``), which skips
    the InferenceData conversion a default call pays for (a few tens of ms). A NaN
    :math:`\\log\\hat Z` raises ``FloatingPointError``.
    """

    log_scale = True
    unbiased = False
    diagnostics = ("n_stages", "final_accept_rate")
    family = "annealing"

    def __init__(self, model, draws: int = 2000, kernel="IMH", *, name: str | None = None, **kernel_kwargs):
        import pymc as pm
        from pymc.smc.kernels import SMC_KERNEL

        door = "SMCArm"
        model = check_model(model, door)
        self.draws = int(check_positive(draws, "draws", door, integer=True))
        if isinstance(kernel, str):
            if kernel not in _KERNELS:
                raise ValueError(
                    f"The 'kernel' parameter of {door} must be one of {_KERNELS} or an SMC "
                    f"kernel class. Got {kernel!r} instead."
                )
            kernel_cls = getattr(pm.smc, kernel)
        elif isinstance(kernel, type) and issubclass(kernel, SMC_KERNEL):
            kernel_cls = kernel
        else:
            raise TypeError(
                f"The 'kernel' parameter of {door} must be one of {_KERNELS} or an SMC kernel "
                f"class. Got {kernel!r} instead."
            )
        reserved_names = (
            "chains", "cores", "random_seed", "model", "draws", "kernel", "return_inferencedata",
            "progressbar", "compute_convergence_checks", "start", "idata_kwargs",
        )
        for reserved in reserved_names:
            if reserved in kernel_kwargs:
                raise ValueError(
                    f"The {reserved!r} parameter of {door} is set by the arm (one chain, one "
                    f"core, seeded per pull). Got {reserved}={kernel_kwargs[reserved]!r} instead."
                )
        self.model = model
        self.kernel = kernel_cls
        self.kernel_kwargs = dict(kernel_kwargs)
        if name is None:
            prefix = "smc" if kernel_cls is pm.smc.IMH else f"smc-{kernel_cls.__name__.lower()}"
            name = f"{prefix}-{self.draws}"
        if not isinstance(name, str) or not name:
            raise TypeError(f"The 'name' parameter of {door} must be a non-empty str. Got {name!r} instead.")
        self.name = name

    def draw(self, rng: np.random.Generator):
        import pymc as pm

        seed = int(rng.integers(2**31 - 1))
        with quiet_pymc():
            trace = pm.sample_smc(
                draws=self.draws,
                kernel=self.kernel,
                chains=1,
                cores=1,
                progressbar=False,
                compute_convergence_checks=False,
                return_inferencedata=False,
                random_seed=seed,
                model=self.model,
                **self.kernel_kwargs,
            )
        report = trace.report
        log_z = float(np.asarray(report.log_marginal_likelihood, dtype=np.float64).ravel()[-1])
        if np.isnan(log_z):
            raise FloatingPointError(f"arm {self.name!r}: pm.sample_smc returned a NaN log marginal likelihood")
        accept = np.asarray(getattr(report, "accept_rate", [np.nan]), dtype=np.float64).ravel()
        info = {
            "n_stages": float(len(np.ravel(report.beta))),
            "final_accept_rate": float(accept[-1]) if accept.size else float("nan"),
        }
        return np.array([log_z]), info
