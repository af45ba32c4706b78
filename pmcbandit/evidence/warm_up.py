"""Compile, once per installation, the numba kernels every evidence run calls: ``pmcbandit warm-up``.

numba keeps the kernels it compiles in an on-disk cache (``cache=True``, beside each module in
``__pycache__``); the first run after an installation, with that cache empty, compiles them inside its own
set-up (seconds to tens of seconds on a small machine), and a later process loads them in milliseconds.
:func:`warm_up` runs that first run ahead of time: :func:`~pmcbandit.evidence.estimate_evidence` on a small
conjugate model (:math:`\\mu \\sim N(0, 1)`, twenty draws :math:`y_i \\sim N(\\mu, 1)`), with the default pool,
policy and reward, under a pull-count budget, so that it compiles what a default run compiles: the run
loop's kernels (policy, per-pull streams, Pareto :math:`\\hat k`), the importance arms' and the slice AIS
kernel, which serves every model (:mod:`pmcbandit.arms.evidence._kernels`). A model's own density is compiled
by PyTensor, which keeps its own cache; nothing here depends on a particular model.

``make install`` and ``make demo`` run it once after installing. It draws from no user stream and writes
nothing besides the caches.
"""

from __future__ import annotations

import time
import warnings

__all__ = ["warm_up", "WARM_UP_PULLS"]

#: Pulls of the warm-up run: every arm of the default pool is pulled at least once.
WARM_UP_PULLS = 30


def warm_up() -> float:
    """Run the warm-up evidence estimate (module docstring); the wall seconds it took."""
    import numpy as np
    import pymc as pm

    from pmcbandit.evidence.estimate import estimate_evidence
    from pmcbandit.runtime.budget import Pulls

    start = time.perf_counter()
    y = np.random.default_rng(0).normal(0.5, 1.0, size=20)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimate_evidence(model, budget=Pulls(WARM_UP_PULLS), random_seed=0, progressbar=False)
    return time.perf_counter() - start
