"""models.spike_slab: the closed-form evidence is reproduced by a quadrature that does not use the Gaussian
integrals, the PyMC model's density is the one written in the module, and the weight gives the asked posterior
mass."""

import math

import numpy as np
import pytest
from scipy import stats

from models import spike_slab as ss


@pytest.mark.parametrize("name", sorted(ss.SPIKE_SLAB_CASES))
def test_closed_form_log_z_matches_the_radial_quadrature(name):
    dim, spike_sd, slab_sd, mass = ss.SPIKE_SLAB_CASES[name]
    w = ss.spike_weight(dim, spike_sd, slab_sd, mass)
    assert ss.radial_log_z(dim, spike_sd, slab_sd, w) == pytest.approx(ss.spike_slab_log_z(dim, spike_sd, slab_sd, w),
                                                                       abs=1e-8)


def test_the_weight_gives_the_spike_its_share_of_the_posterior():
    dim, spike_sd, slab_sd = 10, 0.01, 0.1
    for mass in (0.2, 0.5, 0.8):
        w = ss.spike_weight(dim, spike_sd, slab_sd, mass)
        spike = math.log(w) - 0.5 * dim * math.log(2 * math.pi * (1 + spike_sd**2))
        assert math.exp(spike - ss.spike_slab_log_z(dim, spike_sd, slab_sd, w)) == pytest.approx(mass, rel=1e-12)


@pytest.mark.parametrize("name", ["spike_slab_d2", "spike_slab_d10"])
def test_the_pymc_model_is_the_written_density(name):
    case = ss.case(name)
    logp = case.model.compile_logp(jacobian=True)
    rng = np.random.default_rng(3)
    for scale in (0.005, 0.05, 0.5):
        x = rng.normal(0.0, scale, case.dim)
        expected = stats.norm.logpdf(x).sum() + ss.log_likelihood(x, case.spike_sd, case.slab_sd, case.weight)
        assert float(logp({"theta": x})) == pytest.approx(float(expected), rel=1e-12, abs=1e-10)
