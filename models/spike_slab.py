r"""Spike-and-slab likelihoods with exact evidence: a narrow Gaussian spike inside a wide Gaussian slab.

The textbook case where a thermodynamic (tempering) path has a first-order phase transition
(Skilling 2006, "Nested sampling for general Bayesian computation", Bayesian Analysis 1, Sec. 7):
as the inverse temperature :math:`\beta` grows, the tempered posterior jumps from the slab to the
spike, and an annealing run that crosses the jump without mixing finds one of the two components
(a factor of about 2 in :math:`Z` when they carry equal posterior mass).

The model
---------
In :math:`d` dimensions, prior :math:`\theta \sim N(0, \sigma_0^2 I)` and the likelihood (a
``pm.Potential``)

.. math::  L(\theta) = w\, N(\theta; 0, s_1^2 I) + (1 - w)\, N(\theta; 0, s_2^2 I),
           \qquad s_1 \ll s_2 .

The evidence is a sum of two Gaussian integrals, :math:`\int N(\theta; 0, \sigma_0^2 I) N(\theta; 0, s^2 I)\,
d\theta = N(0; 0, (\sigma_0^2 + s^2) I)`, so

.. math::  Z = w\,(2\pi(\sigma_0^2 + s_1^2))^{-d/2} + (1 - w)\,(2\pi(\sigma_0^2 + s_2^2))^{-d/2}.

The two terms are the components' posterior masses (times :math:`Z`); :func:`spike_slab` sets
:math:`w` from ``spike_mass``, the spike's share of the posterior. The tests check the closed form
against a 1-D quadrature over the radius (the prior's :math:`\lVert\theta\rVert/\sigma_0` has a
:math:`\chi_d` law and :math:`L` depends on :math:`\lVert\theta\rVert` alone).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import special

__all__ = ["SpikeSlab", "spike_slab", "spike_slab_log_z", "spike_weight", "spike_mass", "radial_log_z",
           "SPIKE_SLAB_CASES"]


class SpikeSlab(NamedTuple):
    """A spike-and-slab model (module docstring) and its exact log evidence."""

    name: str
    model: object
    log_z: float
    dim: int
    spike_sd: float
    slab_sd: float
    weight: float
    prior_sd: float


def _log_component(dim: int, prior_sd: float, sd: float) -> float:
    return -0.5 * dim * math.log(2.0 * math.pi * (prior_sd**2 + sd**2))


def spike_weight(dim: int, spike_sd: float, slab_sd: float, spike_mass: float, prior_sd: float = 1.0) -> float:
    """The likelihood weight ``w`` whose spike carries ``spike_mass`` of the posterior (module docstring)."""
    a = _log_component(dim, prior_sd, spike_sd)
    b = _log_component(dim, prior_sd, slab_sd)
    # w e^a / (w e^a + (1 - w) e^b) = m  <=>  w / (1 - w) = m / (1 - m) e^(b - a)
    log_odds = math.log(spike_mass / (1.0 - spike_mass)) + b - a
    return float(special.expit(log_odds))


def spike_mass(dim: int, spike_sd: float, slab_sd: float, weight: float, prior_sd: float = 1.0) -> float:
    """The spike's share of the posterior under the likelihood weight ``weight`` (inverse of :func:`spike_weight`)."""
    a = math.log(weight) + _log_component(dim, prior_sd, spike_sd)
    b = math.log1p(-weight) + _log_component(dim, prior_sd, slab_sd)
    return float(special.expit(a - b))


def spike_slab_log_z(dim: int, spike_sd: float, slab_sd: float, weight: float, prior_sd: float = 1.0) -> float:
    """Exact log Z (module docstring)."""
    return float(np.logaddexp(math.log(weight) + _log_component(dim, prior_sd, spike_sd),
                              math.log1p(-weight) + _log_component(dim, prior_sd, slab_sd)))


def log_likelihood(theta, spike_sd: float, slab_sd: float, weight: float) -> np.ndarray:
    """``log L`` at the rows of ``theta`` (shape ``(..., d)``), written from the module docstring."""
    theta = np.asarray(theta, dtype=float)
    d = theta.shape[-1]
    r2 = np.sum(theta**2, axis=-1)
    spike = math.log(weight) - 0.5 * d * math.log(2 * math.pi * spike_sd**2) - 0.5 * r2 / spike_sd**2
    slab = math.log1p(-weight) - 0.5 * d * math.log(2 * math.pi * slab_sd**2) - 0.5 * r2 / slab_sd**2
    return np.logaddexp(spike, slab)


def radial_log_z(dim: int, spike_sd: float, slab_sd: float, weight: float, prior_sd: float = 1.0) -> float:
    """The log Z by 1-D adaptive quadrature over the radius (a check of :func:`spike_slab_log_z` that does not use the
    Gaussian integrals): :math:`Z = E[L(\\sigma_0 R)]`, :math:`R \\sim \\chi_d`, split at the spike's and the
    slab's scales so QUADPACK sees both.
    """
    from scipy import integrate, stats

    def integrand(r):
        x = np.zeros(dim)
        x[0] = prior_sd * r
        return math.exp(float(log_likelihood(x, spike_sd, slab_sd, weight)) + stats.chi.logpdf(r, dim) - shift)

    shift = float(log_likelihood(np.zeros(dim), spike_sd, slab_sd, weight))
    cuts = sorted({0.0, *(c * s / prior_sd for s in (spike_sd, slab_sd) for c in (1.0, 4.0, 12.0)), 40.0})
    total = sum(integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-11, limit=200)[0]
                for a, b in zip(cuts[:-1], cuts[1:]))
    return math.log(total) + shift


def spike_slab(dim: int, spike_sd: float = 0.01, slab_sd: float = 0.1, spike_mass: float = 0.5,
               prior_sd: float = 1.0, name: str | None = None) -> SpikeSlab:
    """The PyMC model (``theta`` of shape ``(dim,)``; the likelihood a ``pm.Potential``) and its exact log Z."""
    import pymc as pm
    import pytensor.tensor as pt

    weight = spike_weight(dim, spike_sd, slab_sd, spike_mass, prior_sd)
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, prior_sd, shape=dim)
        r2 = pt.sum(theta**2)
        spike = math.log(weight) - 0.5 * dim * math.log(2 * math.pi * spike_sd**2) - 0.5 * r2 / spike_sd**2
        slab = math.log1p(-weight) - 0.5 * dim * math.log(2 * math.pi * slab_sd**2) - 0.5 * r2 / slab_sd**2
        pm.Potential("spike_slab", pt.logaddexp(spike, slab))
    log_z = spike_slab_log_z(dim, spike_sd, slab_sd, weight, prior_sd)
    return SpikeSlab(name or f"spike_slab_d{dim}", model, log_z, dim, spike_sd, slab_sd, weight, prior_sd)


#: Named cases, dimension 2-20: ``name -> (dim, spike_sd, slab_sd, spike_mass)``. ``d10`` is Skilling's widths
#: (spike 0.01 inside slab 0.1, equal posterior masses); the spike is narrower against the slab as ``d`` grows so the
#: jump stays a jump.
SPIKE_SLAB_CASES = {
    "spike_slab_d2": (2, 0.01, 0.3, 0.5),
    "spike_slab_d5": (5, 0.02, 0.2, 0.5),
    "spike_slab_d10": (10, 0.01, 0.1, 0.5),
    "spike_slab_d20": (20, 0.05, 0.3, 0.5),
}


def case(name: str) -> SpikeSlab:
    """One of :data:`SPIKE_SLAB_CASES`."""
    dim, spike_sd, slab_sd, mass = SPIKE_SLAB_CASES[name]
    return spike_slab(dim, spike_sd, slab_sd, mass, name=name)
