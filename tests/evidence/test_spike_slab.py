"""The default evidence pool on spike-and-slab likelihoods (:mod:`models.spike_slab`), where a tempering path has a
first-order phase transition and annealing finds one of the two components: at fixed seeds, either the answer is
within 4 of its standard errors of the exact log Z or its interval status is not ``"ok"``."""

import warnings

import pytest

import pmcbandit as pb
from models import spike_slab as ss

#: (case, spike's share of the posterior, seed). At equal shares a miss of either component is off by log 2.
#: At equal shares both families can find the same-sized half and agree on log Z - log 2, so the cross-family
#: check passes a wrong answer: these cases need an estimator family that neither tempers nor centres on what the
#: set-up found (strict: they fail the day the pool answers them).
_BOTH_HALVES = "both families read log Z - log 2 at this seed and agree (%s), so the check passes a wrong answer"
CASES = [
    ("spike_slab_d2", 0.5, 1),
    ("spike_slab_d5", 0.5, 1),
    ("spike_slab_d10", 0.8, 1),
    ("spike_slab_d10", 0.2, 1),
    pytest.param("spike_slab_d10", 0.5, 1, marks=pytest.mark.xfail(
        strict=True, reason=_BOTH_HALVES % "laplace-t20 on the spike, ais-400 on the slab")),
    pytest.param("spike_slab_d20", 0.5, 1, marks=pytest.mark.xfail(
        strict=True, reason=_BOTH_HALVES % "pilot-t20 and ais-8000 in one component")),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, mass, seed", CASES)
def test_no_wrong_answer_is_marked_ok(name, mass, seed):
    dim, spike_sd, slab_sd, _ = ss.SPIKE_SLAB_CASES[name]
    case = ss.spike_slab(dim, spike_sd, slab_sd, mass, name=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)
        res = pb.estimate_evidence(case.model, budget=pb.Pulls(400), random_seed=seed, progressbar=False)
    z = (res.log_z - case.log_z) / res.log_z_se
    assert abs(z) < 4 or res.interval_status != "ok", (name, mass, seed, z, res.interval_status, res.summary())
