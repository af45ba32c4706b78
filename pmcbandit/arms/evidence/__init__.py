"""Evidence arms: estimators of the marginal likelihood Z of a PyMC model."""

from pmcbandit.arms.evidence.ais import AISArm, annealing_schedule, pilot_schedule
from pmcbandit.arms.evidence.model_density import ModelDensity, check_model
from pmcbandit.arms.evidence.laplace_is import LaplaceISArm
from pmcbandit.arms.evidence.modes import ModeSearch, NoInteriorModeError, find_modes
from pmcbandit.arms.evidence.nested import NestedArm
from pmcbandit.arms.evidence.prior_is import PriorISArm
from pmcbandit.arms.evidence.smc import SMCArm
from pmcbandit.arms.evidence.tempered_smc import TemperedSMCArm

__all__ = ["AISArm", "LaplaceISArm", "ModeSearch", "ModelDensity", "NestedArm", "NoInteriorModeError", "PriorISArm",
           "SMCArm", "TemperedSMCArm", "annealing_schedule", "check_model", "find_modes", "pilot_schedule"]
