"""The default evidence pool on spike-and-slab likelihoods (:mod:`models.spike_slab`), where a tempering path has a
first-order phase transition and annealing finds one of the two components: at fixed seeds, either the answer is
within 4 of its standard errors of the exact log Z or its interval status is not ``"ok"``."""

import warnings

import numpy as np
import pytest

import pmcbandit as pb
from models import spike_slab as ss

#: (case, spike's share of the posterior, seed). At equal shares a miss of either component is off by log 2, and
#: both families can find the same-sized half and agree on log Z - log 2 within their SEs: the check counts only
#: when the other family's SE can show such an error (``pmcbandit.result_messages.CHECK_RESOLUTION``).
CASES = [
    ("spike_slab_d2", 0.5, 1),
    ("spike_slab_d5", 0.5, 1),
    ("spike_slab_d10", 0.8, 1),
    ("spike_slab_d10", 0.2, 1),
    ("spike_slab_d10", 0.5, 1),  # AIS on the slab agrees with laplace-t20 on the spike only within its wide SE
    ("spike_slab_d20", 0.5, 1),  # pilot-t20 and ais-8000 agree on one half; the scale-mix arm sees both
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


def test_the_pool_mixes_a_spike_and_a_slab_the_set_up_saw_at_different_scales():
    """The mode search centres the Laplace fit on the spike, the posterior pilot's draws sit in the slab: the pool
    adds one t mixture over both (``scale-mix``); on a Gaussian posterior the two fits agree and it adds none."""
    case = ss.spike_slab(5, 0.02, 0.2, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)
        arms = pb.evidence_arms(case.model, ais_steps=(), pilot_is=True, prior=False)
    by_name = {a.name: a for a in arms}
    assert {"laplace-t", "pilot-t", "scale-mix"} <= set(by_name)
    mix = by_name["scale-mix"]
    spike, slab = by_name["laplace-t"].modes.modes[0], by_name["pilot-t"].modes.modes[0]
    assert len(mix.modes.modes) == 2 and mix.mode_weights == pytest.approx([0.5, 0.5])
    assert np.allclose(mix.modes.modes[0].precision, spike.precision)
    assert np.allclose(mix.modes.modes[1].precision, slab.precision)
    gaussian = ss.spike_slab(5, 0.2, 0.2 + 1e-9, 0.5)  # one scale: spike and slab the same Gaussian
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)
        names = [a.name for a in pb.evidence_arms(gaussian.model, ais_steps=(), pilot_is=True, prior=False)]
    assert "pilot-t" in names and "scale-mix" not in names


def _setup_arms(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)
        return {a.name: a for a in pb.evidence_arms(model, ais_steps=(), prior=False, nested=False, pilot_is=False)}


def test_a_ladder_of_scales_finds_the_slab_the_laplace_fit_at_the_spike_misses():
    """Both Laplace arms pass their set-up k-hat check on the spike alone; the ladder's set-up draws show their
    estimate too low, so the pool adds it, and its weights are unbiased for the exact Z (within 4 SEs over 30
    pulls), where the light-tailed Laplace arm's read about half of it."""
    import math

    from pmcbandit.evidence.importance import ladder_scales
    from tests.tolerance import assert_within_se

    case = ss.case("spike_slab_d10")
    arms = _setup_arms(case.model)
    assert {"laplace-t", "laplace-t20", "scale-ladder"} <= set(arms)
    ladder, laplace = arms["scale-ladder"], arms["laplace-t20"]
    spike = laplace.modes.modes[0]
    rungs = ladder.modes.modes
    ratio = math.sqrt(rungs[0].precision[0, 0] / rungs[-1].precision[0, 0])
    assert 50 < ratio < 200  # the prior's scale (sd 1) over the spike's (sd 0.01)
    assert len(rungs) == ladder_scales(ratio, 10).size == 1 + math.ceil(math.sqrt(10) * math.log(ratio))
    np.testing.assert_allclose(rungs[0].precision, spike.precision)
    rng = np.random.default_rng(4)
    w = np.exp(np.concatenate([ladder.log_weights(child, 1000) for child in rng.spawn(30)]) - case.log_z)
    assert_within_se(w.mean(), 1.0, w.std(ddof=1) / math.sqrt(w.size))
    half = np.exp(laplace.log_weights(np.random.default_rng(5), 30_000) - case.log_z).mean()
    assert 0.4 < half < 0.6


def test_no_ladder_where_the_posterior_has_one_scale():
    gaussian = ss.spike_slab(10, 0.05, 0.05 + 1e-9, 0.5)
    assert "scale-ladder" not in _setup_arms(gaussian.model)
