"""models.spike_slab: the closed-form evidence against quadrature, and the PyMC model's density against its formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from models.evidence_suite import log_tensor_quadrature
from models.spike_slab import spike_slab, spike_slab_log_z


@pytest.mark.parametrize(("w", "s_spike", "s_slab", "prior_sd"), [(0.5, 0.1, 1.0, 5.0), (0.2, 0.3, 2.0, 1.5)])
def test_closed_form_matches_quadrature_in_two_dimensions(w, s_spike, s_slab, prior_sd):
    def log_f(x):
        r2 = np.sum(x**2, axis=-1)
        spike = np.log(w) + stats.norm.logpdf(x, 0, s_spike).sum(-1)
        slab = np.log1p(-w) + stats.norm.logpdf(x, 0, s_slab).sum(-1)
        return np.logaddexp(spike, slab) - r2 / (2 * prior_sd**2) - np.log(2 * np.pi * prior_sd**2)

    h = min(8 * s_slab, 8 * prior_sd)
    quad = log_tensor_quadrature(log_f, [-h, -h], [h, h], 64, panels=16)
    assert abs(quad - spike_slab_log_z(2, w, s_spike, s_slab, prior_sd)) < 1e-8


def test_model_density_is_the_formula():
    model, log_z = spike_slab(3)
    assert log_z == spike_slab_log_z(3)
    theta = np.array([0.05, -0.2, 0.1])
    logp = model.compile_logp()({"theta": theta})
    prior = stats.norm.logpdf(theta, 0, 5.0).sum()
    lik = np.logaddexp(np.log(0.5) + stats.norm.logpdf(theta, 0, 0.1).sum(),
                       np.log(0.5) + stats.norm.logpdf(theta, 0, 1.0).sum())
    assert abs(logp - (prior + lik)) < 1e-10


@pytest.mark.parametrize("bad", [{"dim": 0}, {"w": 1.0}, {"s_spike": 0.0}, {"prior_sd": np.inf}])
def test_bad_settings(bad):
    args = dict(dim=2, w=0.5, s_spike=0.1, s_slab=1.0, prior_sd=5.0) | bad
    with pytest.raises(ValueError, match="parameter of spike_slab must be"):
        spike_slab_log_z(**args)
