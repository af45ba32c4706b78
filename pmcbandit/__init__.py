"""pmcbandit: bandit allocation among Monte Carlo estimators for PyMC users.

Public API: :func:`run` (allocate compute among arms and combine their
estimates), :func:`estimate_evidence` and :func:`evidence_arms` (model evidence
of any PyMC model), :func:`identify` (best-K identification), :func:`compare_samplers` (the most
efficient estimators, with confidence) and :func:`sampler_arms` (PyMC samplers as arms), :func:`identify_full_bandit`
(the best team of ``k`` arms from noisy sums), the arm classes, and :func:`get_policy`.
"""

from pmcbandit._compat import configure_pytensor_blas as _configure_pytensor_blas

_configure_pytensor_blas()

from pmcbandit.arms import Arm, CallableArm, Pull, PyTensorArm, sampler_arms  # noqa: E402
from pmcbandit.evidence import EvidenceResult, compare_models, ModelComparison, estimate_evidence, evidence_arms  # noqa: E402
from pmcbandit.runtime.budget import CpuSeconds, Pulls, TargetSE, WallSeconds  # noqa: E402
from pmcbandit.policies import POLICY_NAMES, get_policy  # noqa: E402
from pmcbandit.result import RunResult  # noqa: E402
from pmcbandit.exceptions import PmcBanditWarning  # noqa: E402
from pmcbandit.run import run  # noqa: E402
from pmcbandit.identification.identify import identify  # noqa: E402
from pmcbandit.identification.result import IdentificationResult  # noqa: E402
from pmcbandit.compare import ComparisonResult, compare_samplers  # noqa: E402
from pmcbandit.full_bandit import FullBanditResult, identify_full_bandit  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Arm",
    "CallableArm",
    "Pull",
    "PyTensorArm",
    "sampler_arms",
    "POLICY_NAMES",
    "get_policy",
    "run",
    "identify",
    "IdentificationResult",
    "compare_samplers",
    "ComparisonResult",
    "identify_full_bandit",
    "FullBanditResult",
    "estimate_evidence",
    "evidence_arms",
    "EvidenceResult",
    "compare_models",
    "ModelComparison",
    "read_run",
    "RunResult",
    "PmcBanditWarning",
    "Pulls",
    "CpuSeconds",
    "WallSeconds",
    "TargetSE",
]


def __getattr__(name: str):
    # read_run loads ArviZ, which ``import pmcbandit`` does not (PEP 562: resolved on first use).
    if name == "read_run":
        from pmcbandit.diagnostics.arviz_io import read_run

        return read_run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
