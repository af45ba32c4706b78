"""One NUTS chain of numpyro or blackjax on a PyMC model's log density, compiled once by JAX.

``pm.sample(nuts_sampler="numpyro")`` traces and compiles its sampler on every call, so an arm
that called it once per pull would pay the compilation on every pull. Here the model's log
density is converted once with PyMC's public helper :func:`pymc.sampling.jax.get_jaxified_logp`,
and the whole chain — warm-up with adaptation, then the kept draws, under
:func:`jax.lax.scan` — is one function compiled ahead of time (``jax.jit(...).lower(...).compile()``)
for the arm's ``tune`` and ``draws``; a pull calls the compiled function with its own key and
start point.

* numpyro (Phan et al. 2019): the functional NUTS of :func:`numpyro.infer.hmc.hmc`, whose
  ``sample_kernel`` adapts the step size (dual averaging) and a diagonal mass matrix (windowed,
  as Stan) during the first ``tune`` iterations.
* blackjax (Cabezas et al. 2024): :func:`blackjax.window_adaptation` for ``tune`` iterations
  (Stan's windowed adaptation), then :func:`blackjax.nuts` with the adapted parameters.

**XLA flags.** Importing :mod:`pymc.sampling.jax` sets ``XLA_FLAGS`` to ask for 100 virtual CPU
devices. :func:`import_pymc_jax` restores the variable as it was right after the import, before
JAX creates its backend, so neither this process's JAX nor worker processes started later see
the flag. The import also switches JAX to 64-bit floats (``jax_enable_x64``), which the chains use.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["JaxChain", "import_pymc_jax"]


def import_pymc_jax():
    """:mod:`pymc.sampling.jax`, imported with ``XLA_FLAGS`` left as it was (module docstring)."""
    saved = os.environ.get("XLA_FLAGS")
    import pymc.sampling.jax as pmjax

    if saved is None:
        os.environ.pop("XLA_FLAGS", None)
    else:
        os.environ["XLA_FLAGS"] = saved
    return pmjax


class JaxChain:
    """A compiled chain ``run(seed, start) -> (draws, divergences, gradient evaluations)``.

    Parameters
    ----------
    model : pymc.Model
    slices, shapes : dict
        Layout of the flat unconstrained vector (:class:`~pmcbandit.arms.samplers._quantity.Quantity`).
    backend : {"numpyro", "blackjax"}
    tune, draws : int
    target_accept : float
        Target acceptance statistic of the step-size adaptation (0.8 as in both libraries).
    """

    def __init__(self, model, slices, shapes, backend: str, tune: int, draws: int, target_accept: float = 0.8):
        pmjax = import_pymc_jax()
        import jax
        import jax.numpy as jnp

        names = [v.name for v in model.value_vars]
        logp = pmjax.get_jaxified_logp(model, negative_logp=True)
        point = model.initial_point()
        x0 = np.concatenate([np.ravel(point[n]) for n in names]).astype(np.float64)

        def unravel(x):
            return [x[slices[n]].reshape(shapes[n]) for n in names]

        # The helper's sign convention is checked against PyMC's own log density, not assumed.
        reference = float(model.compile_logp()(point))
        sign = 1.0 if np.isclose(float(logp(unravel(jnp.asarray(x0)))), reference, rtol=1e-6, atol=1e-8) else -1.0

        def logdensity(x):
            return sign * logp(unravel(x))

        chain = _numpyro_chain if backend == "numpyro" else _blackjax_chain
        fn = jax.jit(lambda key, start: chain(logdensity, key, start, tune, draws, target_accept))
        self._compiled = fn.lower(jax.random.PRNGKey(0), jnp.asarray(x0)).compile()
        self._key = jax.random.PRNGKey
        self._asarray = jnp.asarray

    def run(self, seed: int, start: np.ndarray):
        X, diverging, steps = self._compiled(self._key(int(seed)), self._asarray(start, dtype=np.float64))
        return np.asarray(X, dtype=np.float64), int(np.sum(diverging)), float(np.sum(steps))


def _numpyro_chain(logdensity, key, start, tune, draws, target_accept):
    import jax
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(potential_fn=lambda x: -logdensity(x), algo="NUTS")
    init_key, _ = jax.random.split(key)
    state = init_kernel(start, num_warmup=tune, rng_key=init_key, target_accept_prob=target_accept)

    def one(s, _):
        s = sample_kernel(s)
        return s, (s.z, s.diverging, s.num_steps)

    _, (xs, diverging, steps) = jax.lax.scan(one, state, None, length=tune + draws)
    return xs[tune:], diverging[tune:], steps


def _blackjax_chain(logdensity, key, start, tune, draws, target_accept):
    import blackjax
    import jax
    import jax.numpy as jnp

    warm_key, draw_key = jax.random.split(key)
    warm = blackjax.window_adaptation(blackjax.nuts, logdensity, target_acceptance_rate=target_accept)
    (state, params), warm_info = warm.run(warm_key, start, num_steps=tune)
    kernel = blackjax.nuts(logdensity, **params)

    def one(s, k):
        s, info = kernel.step(k, s)
        return s, (s.position, info.is_divergent, info.num_integration_steps)

    _, (xs, diverging, steps) = jax.lax.scan(one, state, jax.random.split(draw_key, draws))
    tune_steps = jnp.sum(warm_info.info.num_integration_steps) if tune > 0 else 0
    return xs, diverging, jnp.sum(steps) + tune_steps
