"""Arms: the estimators pmcbandit allocates among.

Lives here: the arm protocol (:class:`Arm`, :class:`Pull`, :class:`CallableArm`,
:mod:`~pmcbandit.arms.base`), PyTensor-graph arms (:mod:`~pmcbandit.arms.pytensor_arm`), the evidence
arms of a PyMC model (:mod:`pmcbandit.arms.evidence`: AIS, Laplace-t and prior importance sampling,
SMC, nested sampling, mode search) and PyMC samplers as arms (:mod:`pmcbandit.arms.samplers`).

May import: the helpers (``pmcbandit._rng``, ``_validation``, ``_compat``, ``base``, ``exceptions``) and
:mod:`pmcbandit.stats`; never the runtime, the algorithm families, the doors or diagnostics.
"""

from pmcbandit.arms.base import Arm, CallableArm, Pull
from pmcbandit.arms.pytensor_arm import PyTensorArm
from pmcbandit.arms.samplers import MCMCArm, SMCSamplerArm, sampler_arms

__all__ = ["Arm", "CallableArm", "Pull", "PyTensorArm", "MCMCArm", "SMCSamplerArm", "sampler_arms"]
