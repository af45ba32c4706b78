"""models.evidence_suite_peers: the nested samplers' likelihoods and prior transforms are the suite's PyMC models.

For every model: ``log_likelihood(T(u))`` is PyMC's observed log density at the parameters
``T(u)``, and ``T`` pushes the uniform distribution on the unit cube to PyMC's prior: the prior
density at ``T(u)`` is ``1 / |det dT/du|`` (change of variables), so ``-log|det dT/du|`` (central
differences) must be PyMC's prior log density (no Jacobian of PyMC's own transforms: constrained
values).
"""

import numpy as np
import pytest

from models import evidence_suite_peers as peers
from models import evidence_suite as es


def _compiled(model):
    """``(prior logp, likelihood logp)`` of constrained values, as functions of a flat parameter vector."""
    free = model.free_RVs
    prior = model.compile_logp(vars=free, jacobian=False, sum=True)
    lik = model.compile_logp(vars=model.observed_RVs, jacobian=False, sum=True)
    init = model.initial_point()
    names = [model.rvs_to_values[rv].name for rv in free]
    transforms = [model.rvs_to_transforms.get(rv) for rv in free]

    def point(x):
        out, start = {}, 0
        for rv, name, tr in zip(free, names, transforms):
            size = int(np.size(init[name]))
            value = x[start:start + size].reshape(np.shape(init[name]))
            start += size
            out[name] = value if tr is None else tr.forward(value, *rv.owner.inputs).eval()
        return out

    return (lambda x: float(prior(point(x)))), (lambda x: float(lik(point(x))))


def test_every_suite_model_has_a_problem():
    assert list(peers.PROBLEMS) == list(es.SUITE)
    with pytest.raises(ValueError, match="'name' parameter of problem"):
        peers.problem("funnel")


@pytest.mark.parametrize("name", list(es.SUITE))
def test_likelihood_and_prior_transform_are_pymc_model(name, rng):
    suite_model = es.SUITE[name]()
    spec = peers.problem(name)
    assert spec.dim == suite_model.dim
    prior_logp, lik_logp = _compiled(suite_model.model)
    for _ in range(3):
        u = rng.uniform(0.1, 0.9, size=spec.dim)
        x = spec.prior_transform(u)
        assert x.shape == (spec.dim,)
        np.testing.assert_allclose(spec.log_likelihood(x), lik_logp(x), rtol=1e-10, atol=1e-7)
        h = 1e-6
        jac = np.empty((spec.dim, spec.dim))
        for j in range(spec.dim):
            e = np.zeros(spec.dim)
            e[j] = h
            jac[:, j] = (spec.prior_transform(u + e) - spec.prior_transform(u - e)) / (2.0 * h)
        sign, logdet = np.linalg.slogdet(jac)
        assert sign != 0
        np.testing.assert_allclose(-logdet, prior_logp(x), rtol=0, atol=1e-5 * spec.dim)
    # Vectorised over rows, as nautilus calls them.
    u = rng.uniform(0.1, 0.9, size=(4, spec.dim))
    x = spec.prior_transform(u)
    np.testing.assert_allclose(x, [spec.prior_transform(row) for row in u], rtol=0, atol=1e-12)
    np.testing.assert_allclose(spec.log_likelihood(x), [spec.log_likelihood(row) for row in x], rtol=0, atol=1e-9)
