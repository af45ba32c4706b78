r"""Spike-and-slab likelihoods with exact evidence: the textbook phase transition of thermodynamic integration.

:math:`\theta \sim N(0, \sigma_p^2 I_d)` and the likelihood (a ``pm.Potential``, so the model has no data)

.. math:: L(\theta) = w\,N(\theta; 0, s_1^2 I_d) + (1 - w)\,N(\theta; 0, s_2^2 I_d),

a narrow spike (:math:`s_1`) inside a wide slab (:math:`s_2`). Along the annealing path
:math:`p\,L^\beta` the mass moves from the slab to the spike abruptly at some :math:`\beta`: a first-order
phase transition (Skilling 2006, "Nested sampling for general Bayesian computation", Bayesian Analysis 1),
so an annealing run finds one component and can miss the other's share of :math:`Z`. Each
component integrates in closed form, :math:`\int N(\theta; 0, s^2 I) N(\theta; 0, \sigma_p^2 I)\,d\theta
= N(0; 0, (s^2 + \sigma_p^2) I_d)`, so

.. math:: Z = w\,(2\pi(s_1^2 + \sigma_p^2))^{-d/2} + (1 - w)\,(2\pi(s_2^2 + \sigma_p^2))^{-d/2}.
"""

from __future__ import annotations

import numpy as np

__all__ = ["spike_slab", "spike_slab_log_z"]


def _check(dim, w, s_spike, s_slab, prior_sd):
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"The 'dim' parameter of spike_slab must be an int >= 1. Got {dim!r} instead.")
    if not 0.0 < w < 1.0:
        raise ValueError(f"The 'w' parameter of spike_slab must be in (0, 1). Got {w!r} instead.")
    for name, value in (("s_spike", s_spike), ("s_slab", s_slab), ("prior_sd", prior_sd)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"The '{name}' parameter of spike_slab must be > 0 and finite. Got {value!r} instead.")


def spike_slab_log_z(dim: int, w: float = 0.5, s_spike: float = 0.1, s_slab: float = 1.0,
                     prior_sd: float = 5.0) -> float:
    """The exact :math:`\\log Z` of :func:`spike_slab` with these settings (module docstring)."""
    _check(dim, w, s_spike, s_slab, prior_sd)
    spike = np.log(w) - 0.5 * dim * np.log(2.0 * np.pi * (s_spike**2 + prior_sd**2))
    slab = np.log1p(-w) - 0.5 * dim * np.log(2.0 * np.pi * (s_slab**2 + prior_sd**2))
    return float(np.logaddexp(spike, slab))


def spike_slab(dim: int, w: float = 0.5, s_spike: float = 0.1, s_slab: float = 1.0, prior_sd: float = 5.0):
    """``(pm.Model, exact log Z)`` of the spike-and-slab likelihood in ``dim`` dimensions (module docstring).

    The free variable is ``theta`` (shape ``(dim,)``); the likelihood is the Potential ``"loglik"``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    _check(dim, w, s_spike, s_slab, prior_sd)
    f = np.float64  # float64 constants: PyTensor would store a float literal that float32 holds as float32
    with pm.Model() as model:
        theta = pm.Normal("theta", f(0.0), f(prior_sd), shape=(dim,))
        r2 = pt.sum(theta**2)
        spike = f(np.log(w) - 0.5 * dim * np.log(2.0 * np.pi * s_spike**2)) - r2 * f(0.5 / s_spike**2)
        slab = f(np.log1p(-w) - 0.5 * dim * np.log(2.0 * np.pi * s_slab**2)) - r2 * f(0.5 / s_slab**2)
        pm.Potential("loglik", pt.logaddexp(spike, slab))
    return model, spike_slab_log_z(dim, w, s_spike, s_slab, prior_sd)

