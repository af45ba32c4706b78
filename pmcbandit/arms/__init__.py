"""Arms: the estimators pmcbandit allocates among."""

from pmcbandit.arms.base import Arm, CallableArm, Pull
from pmcbandit.arms.pytensor_arm import PyTensorArm
from pmcbandit.arms.samplers import MCMCArm, SMCSamplerArm, sampler_arms

__all__ = ["Arm", "CallableArm", "Pull", "PyTensorArm", "MCMCArm", "SMCSamplerArm", "sampler_arms"]
