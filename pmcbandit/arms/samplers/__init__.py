"""Posterior-expectation arms: one pull is one independent short run of a PyMC sampler.

:func:`sampler_arms` builds, for a PyMC model and a posterior expectation
:math:`E_\\pi[f(\\theta)]`, one arm per sampler setting: NUTS, Metropolis and slice runs of
``tune`` + ``draws`` iterations (:class:`~pmcbandit.arms.samplers.mcmc.MCMCArm`) and SMC runs of
``draws`` particles (:class:`~pmcbandit.arms.samplers.smc.SMCSamplerArm`), and chains of the NUTS
backends — PyMC's (C or numba), nutpie, numpyro, blackjax —
(:class:`~pmcbandit.arms.samplers.backends.NUTSBackendArm`). Each pull returns one
estimate of the expectation from its own seed, warm-up included, so replicates are i.i.d. and
a bandit or :func:`pmcbandit.compare_samplers` can learn each sampler's variance per unit of
cost (Neufeld et al. 2014, Sec. 2 and 5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pmcbandit.arms.base import Arm
from pmcbandit.arms.samplers._quantity import Quantity, check_sampler_model
from pmcbandit.arms.samplers.backends import (NUTS_BACKENDS, NUTSBackendArm, backend_missing, installed_backends,
                                              require_backend)
from pmcbandit.arms.samplers.mcmc import MCMC_SAMPLERS, MCMCArm
from pmcbandit.arms.samplers.smc import SMCSamplerArm
from pmcbandit.exceptions import log_notes

__all__ = ["sampler_arms", "pilot_scales", "MCMCArm", "SMCSamplerArm", "NUTSBackendArm", "SAMPLERS", "SAMPLER_COSTS",
           "NUTS_BACKENDS", "installed_backends", "check_sampler_model", "PILOT_TUNE", "PILOT_DRAWS", "PILOT_SEED"]

SAMPLERS = (*MCMC_SAMPLERS, "smc", *NUTS_BACKENDS)
#: The pilot run that fixes the coordinates' scales of the every-coordinate quantity.
PILOT_TUNE, PILOT_DRAWS, PILOT_SEED = 500, 500, 20_260_101
SAMPLER_COSTS = ("cpu_seconds", "gradient_evals", "logp_evals")
#: The cost unit each sampler can report besides CPU seconds.
_UNIT = {"nuts": "gradient_evals", "metropolis": "logp_evals", "slice": "logp_evals", "smc": "logp_evals",
         **{b: "cpu_seconds" for b in NUTS_BACKENDS}}
#: ``samplers="backends"``: every NUTS backend that is installed.
_EVERY_BACKEND = "backends"


#: Keywords the arms set themselves: one model, quantity and cost for the pool, a seed per pull.
_RESERVED = frozenset({"model", "quantity", "sampler", "cost", "vars", "rng", "random_seed", "initial_point",
                       "potential", "logp_dlogp_func", "start"})


def _is_pair(spec) -> bool:
    return (isinstance(spec, Sequence) and not isinstance(spec, str) and len(spec) == 2
            and isinstance(spec[0], str) and isinstance(spec[1], Mapping))


def _parse(samplers, cost: str) -> list[tuple[str, dict]]:
    message = ("The 'samplers' parameter of sampler_arms must be a non-empty sequence of sampler names "
               f"among {SAMPLERS} or (name, kwargs) pairs, or 'backends'. Got {samplers!r} instead.")
    if isinstance(samplers, str) and samplers == _EVERY_BACKEND:
        skipped = [f"NUTS backend {b!r} skipped: {', '.join(backend_missing(b))} not installed "
                   "(pip install \"pmcbandit[samplers]\")" for b in NUTS_BACKENDS if backend_missing(b)]
        log_notes(skipped)
        samplers = list(installed_backends())
    elif isinstance(samplers, str) or _is_pair(samplers):
        samplers = [samplers]
    if not isinstance(samplers, Sequence) or isinstance(samplers, str):
        raise TypeError(message)
    if not samplers:
        raise ValueError(message)
    specs = []
    for spec in samplers:
        if isinstance(spec, str):
            name, kwargs = spec, {}
        elif _is_pair(spec):
            name, kwargs = spec[0], dict(spec[1])
        else:
            raise TypeError(message)
        if name not in SAMPLERS:
            raise ValueError(f"The 'samplers' parameter of sampler_arms must name samplers among {SAMPLERS}. "
                             f"Got {name!r} in {samplers!r} instead.")
        reserved = sorted(_RESERVED & set(kwargs))
        if reserved:
            raise ValueError(f"The 'samplers' parameter of sampler_arms must not set {reserved} in a setting (the "
                             f"arm sets them; cost is sampler_arms' own parameter). Got {spec!r} instead.")
        if name in NUTS_BACKENDS:
            require_backend(name)  # asked for by name: a missing package is an error, before any compilation
        specs.append((name, kwargs))
    units = {name: _UNIT[name] for name, _ in specs}
    if cost != "cpu_seconds" and set(units.values()) != {cost}:
        raise ValueError(
            f"The 'cost' parameter of sampler_arms must be 'cpu_seconds' or a unit every sampler reports (a gradient "
            f"and a log-density evaluation are not the same price; units: {units}). Got {cost!r} instead."
        )
    return specs


def sampler_arms(model=None, quantity=None, samplers=("nuts", "metropolis", "slice", "smc"), *,
                 cost: str = "cpu_seconds") -> list[Arm]:
    """One posterior-expectation arm per sampler setting, for :func:`pmcbandit.compare_samplers`.

    Parameters
    ----------
    model : pymc.Model, optional
        ``None`` takes the model of the enclosing ``with pm.Model():`` block, as PyMC does
        (``sampler_arms(quantity="mu")`` inside it). A model with continuous free variables (SMC also
        needs a prior PyMC can forward-sample).
        The arms compile against the model's data containers: do not ``pm.set_data`` while they run.
    quantity : str, callable or None
        The expectation :math:`E_\\pi[f(\\theta)]`: the name of a free or deterministic variable
        (``"mu"``), of one element of an array variable (``"theta[2]"``, ``"L[0, 1]"``), or a callable
        ``f(point) -> float`` of a dict ``{variable name: value}`` of the free variables (constrained
        scale) and deterministics. ``None`` (the default): **every coordinate** of the unconstrained
        vector, each divided by its posterior standard deviation from one pilot NUTS run of
        :data:`PILOT_TUNE` + :data:`PILOT_DRAWS` iterations (seed :data:`PILOT_SEED`, so the scales
        are a fixed function of the model) made here; each arm then reports the run's scaled means
        as its :attr:`~pmcbandit.arms.base.Arm.components`, and :func:`pmcbandit.compare_samplers`
        ranks the samplers by :math:`1/(\\bar c \\sum_j \\mathrm{Var}(\\bar x_j)/\\sigma_j^2)`, the cost
        of one unit of :math:`(\\sum_j 1/\\mathrm{ESS}_j)^{-1}` — the harmonic mean of the
        coordinates' effective sample sizes per unit of cost, up to the factor :math:`d` — learned
        from :math:`d` degrees of freedom per pair of runs instead of one.
    samplers : sequence of str or (str, dict), or "backends"
        Names among ``"nuts"``, ``"metropolis"``, ``"slice"``, ``"smc"``, the NUTS backends
        ``"pymc"``, ``"pymc-numba"``, ``"nutpie"``, ``"nutpie-lowrank"``, ``"numpyro"``, ``"blackjax"``
        (:mod:`~pmcbandit.arms.samplers.backends`), or ``(name, kwargs)`` pairs
        with per-arm settings: ``tune``, ``draws`` (defaults 500 / 500) and step-method keywords for
        the MCMC samplers and backends; ``draws`` (default 500), ``kernel`` and kernel keywords for SMC; ``name``
        to override the arm's name. Names explain the setting: ``"nuts-t500-d500"``,
        ``"nuts-t500-d500-target_accept0.95"``, ``"smc-d1000"``, ``"nutpie-t500-d500"``.
        ``"backends"``: every NUTS backend whose packages are installed; the others are skipped with a
        note (logged at INFO on the ``pmcbandit`` logger). A backend named explicitly whose packages are
        missing raises ``ImportError``.
    cost : {"cpu_seconds", "gradient_evals", "logp_evals"}
        CPU seconds of a pull (default, comparable across samplers), or a count that is exact and
        reproducible: ``"gradient_evals"`` (log-density-and-gradient evaluations; NUTS only) or
        ``"logp_evals"`` (log-density evaluations; Metropolis, slice, SMC only). A count unit is
        refused for a pool where some sampler does not report it: a gradient costs several
        log-density evaluations, so the two counts cannot be compared. Every arm carries its unit
        as ``arm.cost_unit`` (``"cpu_seconds"``, ``"gradient_evals"``, ``"logp_evals"``).

    Returns
    -------
    list of Arm
        Linear-scale arms (``log_scale = False``), one estimate per pull, in the order of
        ``samplers``, sharing one compiled quantity.

    Raises
    ------
    ValueError
        A quantity the model lacks (the message lists the model's variables), an unknown sampler,
        a cost unit a sampler does not report, two settings with the same name.
    TypeError
        A ``model`` that is not a ``pm.Model``, a ``samplers`` entry that is neither a name nor a pair.
    ImportError
        A NUTS backend named in ``samplers`` whose packages are not installed (the message names the
        ``pmcbandit[samplers]`` extra).
    """
    from pmcbandit._validation import check_choice

    door = "sampler_arms"
    model = check_sampler_model(_context_model(model, door), door)
    cost = check_choice(cost, SAMPLER_COSTS, "cost", door)
    specs = _parse(samplers, cost)
    if quantity is None:
        shared_quantity = Quantity(model, None, door, scales=pilot_scales(model))
    else:
        shared_quantity = Quantity(model, quantity, door)
    arms: list[Arm] = []
    for name, kwargs in specs:
        if name == "smc":
            arms.append(SMCSamplerArm(model, shared_quantity, cost=cost, **kwargs))
        elif name in NUTS_BACKENDS:
            arms.append(NUTSBackendArm(model, shared_quantity, name, **kwargs))
        else:
            arms.append(MCMCArm(model, shared_quantity, name, cost=cost, **kwargs))
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ValueError(f"The 'samplers' parameter of sampler_arms must give arms distinct names (pass 'name' "
                         f"in a setting's kwargs). Got {names!r} instead.")
    return arms


def pilot_scales(model) -> np.ndarray:
    """Posterior standard deviation of every coordinate of the unconstrained vector, from one NUTS run
    of :data:`PILOT_TUNE` + :data:`PILOT_DRAWS` iterations seeded by :data:`PILOT_SEED` (a coordinate
    the run did not move gets scale 1). Any fixed positive scales make the every-coordinate
    efficiency well defined; these make each coordinate count as one effective sample size.
    """
    probe = Quantity(model, None, "sampler_arms", scales=np.ones(_dimension(model)))
    arm = MCMCArm(model, probe, "nuts", tune=PILOT_TUNE, draws=PILOT_DRAWS)
    X, _ = arm.chain(np.random.default_rng(PILOT_SEED))
    sd = X.std(axis=0, ddof=1)
    return np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)


def _dimension(model) -> int:
    point = model.initial_point()
    return int(sum(np.size(point[v.name]) for v in model.value_vars))


def _context_model(model, door: str):
    """``model``, or the model of the enclosing ``with pm.Model():`` block when ``None`` (PyMC's
    ``modelcontext``: the innermost block of nested ones).
    """
    if model is not None:
        return model
    import pymc as pm

    try:
        return pm.modelcontext(None)
    except TypeError:
        raise TypeError(f"The 'model' parameter of {door} must be a pymc.Model, or the call must be inside a "
                        "`with pm.Model():` block. Got None outside any model context instead.") from None
