"""Where the set-up of one ``estimate_evidence`` call goes, by phase, in this process (warm caches after a first,
untimed call in another process): the wall seconds spent inside the set-up's main steps, each wrapped in a timer
(:data:`PHASES`; a nested step's seconds are also in its caller's), and the set-up seconds the result reports.

``case`` is ``conjugate`` (the suite's conjugate model, ``budget=5``) or ``pima50`` (Pima T = 50,
``budget=TargetSE(0.01)``), as in :mod:`benchmarks.bench_setup`. Run it from a checkout of each version to compare
(the package is imported from the current directory), once untimed first so that PyTensor's and numba's caches hold
what the case compiles::

    .venv/bin/python -m benchmarks.probe_setup_phases conjugate

It prints one line; it writes no results file. ``compile_loop`` is the process's first numba work (numba's own
initialisation and the loop's cached kernels); the rows that say ``compile`` are PyTensor compilations (their graph
rewrites, on a warm cache), and ``PyTensor compiles, all`` adds up every one the set-up makes (``pymc``'s
``compile``, which the package calls for each function).
"""

from __future__ import annotations

import functools
import importlib
import sys
import time
import warnings

#: (module, attribute, class or None, label) of the timed steps.
PHASES = (
    ("pmcbandit.evidence.estimate", "compile_loop", None, "compile_loop"),
    ("pmcbandit.evidence.estimate", "build_pool", None, "build_pool"),
    ("pmcbandit.evidence.pool", "density_for", None, "density"),
    ("pmcbandit.arms.evidence.model_density", "log_terms", None, "density: log_terms"),
    ("pmcbandit.arms.evidence.model_density", "build_prior_sampler", None, "density: prior sampler compile"),
    ("pmcbandit.arms.evidence.model_density", "_check", "ModelDensity", "density: check and eval timing"),
    ("pmcbandit.evidence.pool", "_laplace_arms", None, "laplace arms"),
    ("pmcbandit.arms.evidence.modes", "find_modes", None, "laplace arms: mode search"),
    ("pmcbandit.arms.evidence.model_density", "_laplace_functions", "ModelDensity",
     "laplace arms: value-and-gradient compile"),
    ("pmcbandit.arms.evidence.model_density", "_compile_terms_batch", "ModelDensity",
     "laplace arms: batch terms compile"),
    ("pmcbandit.evidence.pool", "nested_arm", None, "nested arm"),
    ("pmcbandit.evidence.pool", "_probe", None, "AIS probe"),
    ("pymc.pytensorf", "compile", None, "PyTensor compiles, all"),
)


def main(case: str) -> None:
    import pmcbandit as pb

    spent: dict[str, float] = {}
    for module, name, cls, label in PHASES:
        owner = importlib.import_module(module)
        owner = getattr(owner, cls) if cls else owner
        setattr(owner, name, _timed(getattr(owner, name), label, spent))
    if case == "conjugate":
        from models.evidence_suite import SUITE

        model, budget = SUITE["conjugate"]().model, 5.0
    elif case == "pima50":
        from models.pima import load_data, logistic_regression

        model, budget = logistic_regression(*load_data(50)), pb.TargetSE(0.01)
    else:
        raise SystemExit(f"error: case must be conjugate or pima50, not {case!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.estimate_evidence(model, budget=budget, random_seed=0, progressbar=False)
    phases = ", ".join(f"{label} {spent[label]:.3f}" for *_, label in PHASES if label in spent)
    print(f"{case}: set-up {res.settings['setup_seconds']:.3f} s; {phases}")


def _timed(fn, label: str, spent: dict):
    @functools.wraps(fn)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - start

    return timed


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "conjugate")
