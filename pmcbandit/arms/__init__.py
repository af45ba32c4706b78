"""Arms: the estimators pmcbandit allocates among."""

from pmcbandit.arms.base import Arm, CallableArm, Pull
from pmcbandit.arms.pytensor_arm import PyTensorArm

__all__ = ["Arm", "CallableArm", "Pull", "PyTensorArm"]
