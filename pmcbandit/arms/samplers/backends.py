"""NUTS backends as arms: which implementation of the no-U-turn sampler suits a model.

One pull is one independent chain of ``tune`` warm-up and ``draws`` kept iterations from its own
seed, and its value the chain's mean of the quantity, as for :class:`~pmcbandit.arms.samplers.mcmc.MCMCArm`,
so replicates stay i.i.d. The backends (:data:`NUTS_BACKENDS`):

``"pymc"``, ``"pymc-numba"``
    PyMC's NUTS (Hoffman & Gelman 2014) on its log density compiled by PyTensor's C backend (mode
    ``"CVM"``, PyTensor 2's default) or its numba backend (mode ``"NUMBA"``, PyTensor 3's default),
    named explicitly so each is the same on both lines (:class:`~pmcbandit.arms.samplers.mcmc.MCMCArm`
    with ``compile_kwargs``).
``"nutpie"``, ``"nutpie-lowrank"``
    nutpie's NUTS (Seyboldt et al. 2025): :func:`nutpie.compile_pymc_model` once per arm, then
    ``nutpie.sample(compiled, chains=1, seed=...)`` per pull; a diagonal mass matrix adapted from
    draws and gradients, or its low-rank modification (``low_rank_modified_mass_matrix=True``).
``"numpyro"``, ``"blackjax"``
    numpyro's or blackjax's NUTS on the log density PyMC converts to JAX, the chain compiled once
    (:mod:`pmcbandit.arms.samplers._jax_chain`).

**Compile time.** An arm builds its sampler in :meth:`NUTSBackendArm.warm_up` (or its first
pull, on a worker) and reuses it for every pull; :attr:`NUTSBackendArm.compile_seconds` is the wall
time of that build plus the first, compiling call of a short chain from a fixed seed (numba and JAX
compile on the first call), measured once and reported apart from the per-pull cost, which then
excludes it (:func:`pmcbandit.compare_samplers` reports both).

**Optional packages.** nutpie, numpyro and blackjax come with ``pip install "pmcbandit[samplers]"``;
:func:`backend_missing` names what a backend lacks.
"""

from __future__ import annotations

import importlib.util
import inspect
import threading
import time

import numpy as np

from pmcbandit.arms.base import Arm
from pmcbandit.arms.samplers._quantity import Quantity, check_sampler_model

__all__ = ["NUTSBackendArm", "NUTS_BACKENDS", "backend_missing", "installed_backends"]

NUTS_BACKENDS = ("pymc", "pymc-numba", "nutpie", "nutpie-lowrank", "numpyro", "blackjax")
#: The packages each backend imports beyond pmcbandit's own dependencies.
_PACKAGES = {"pymc": (), "pymc-numba": (), "nutpie": ("nutpie",), "nutpie-lowrank": ("nutpie",),
             "numpyro": ("jax", "numpyro"), "blackjax": ("jax", "blackjax")}
#: The short chain (tune, draws) that warm-up runs once so the first call's compilation is set-up.
_WARM_CHAIN = (5, 5)


def backend_missing(backend: str) -> tuple[str, ...]:
    """The packages ``backend`` needs that are not installed (``()`` when it can run)."""
    return tuple(p for p in _PACKAGES[backend] if importlib.util.find_spec(p) is None)


def installed_backends() -> tuple[str, ...]:
    """The backends of :data:`NUTS_BACKENDS` whose packages are installed, in that order."""
    return tuple(b for b in NUTS_BACKENDS if not backend_missing(b))


def require_backend(backend: str, door: str = "sampler_arms") -> None:
    """``ImportError`` naming the extra when ``backend``'s packages are missing."""
    missing = backend_missing(backend)
    if missing:
        raise ImportError(f"The {backend!r} sampler of {door} needs {', '.join(missing)}, which is not installed: "
                          f"pip install \"pmcbandit[samplers]\" (or pip install {' '.join(missing)}).")


class NUTSBackendArm(Arm):
    """Posterior expectation from one chain of a NUTS backend per pull (module docstring).

    Parameters
    ----------
    model : pymc.Model
        Continuous free variables (:func:`pmcbandit.arms.samplers.sampler_arms`).
    quantity : str, callable or Quantity
        The expectation, see :mod:`pmcbandit.arms.samplers._quantity`.
    backend : str
        One of :data:`NUTS_BACKENDS`.
    tune, draws : int
        Warm-up iterations (``>= 1``) and kept iterations (``>= 1``) of one pull.
    name : str, optional
        Defaults to ``"<backend>-t<tune>-d<draws>"`` followed by any keyword as ``-<key><value>``.
    **kwargs
        ``target_accept`` (every backend); PyMC's other NUTS keywords for ``"pymc"``/``"pymc-numba"``;
        :func:`nutpie.sample` keywords for the nutpie backends.

    Attributes
    ----------
    compile_seconds : float or None
        Wall seconds of the one-off build and first compiling call (``None`` until warmed up).

    Notes
    -----
    Diagnostics per pull (floats): ``n_grad`` (gradient evaluations, warm-up included, as each
    library counts its leapfrog steps), ``divergences`` (kept iterations), ``divergent_fraction``
    (their share of the kept iterations) and ``chain_variance`` (the variance of the quantity over the
    chain's kept draws), which with the pull's value gives the potential scale reduction across
    pulls (:mod:`pmcbandit.compare.gate`).
    """

    log_scale = False
    family = "mcmc"

    def __init__(self, model, quantity, backend: str, *, tune: int = 500, draws: int = 500, name: str | None = None,
                 **kwargs):
        from pmcbandit._validation import check_choice, check_positive

        door = "NUTSBackendArm"
        self.model = check_sampler_model(model, door)
        self.backend = check_choice(backend, NUTS_BACKENDS, "backend", door)
        require_backend(self.backend, door)
        self.tune = int(check_positive(tune, "tune", door, integer=True))
        self.draws = int(check_positive(draws, "draws", door, integer=True))
        self.quantity = quantity if isinstance(quantity, Quantity) else Quantity(model, quantity, door)
        self.kwargs = dict(kwargs)
        if self.backend in ("numpyro", "blackjax") and set(self.kwargs) - {"target_accept"}:
            raise ValueError(f"The 'kwargs' parameter of {door} must hold only 'target_accept' for the "
                             f"{self.backend!r} backend. Got {sorted(self.kwargs)!r} instead.")
        self.components = self.quantity.component_names
        self.diagnostics = ("n_grad", "divergences", "divergent_fraction", "chain_variance") + self.components
        self.cost_unit = "cpu_seconds"
        self.compile_seconds: float | None = None
        self._runner = None
        self._lock = threading.Lock()
        extra = "".join(f"-{k}{v}" for k, v in sorted(self.kwargs.items()))
        self.name = f"{self.backend}-t{self.tune}-d{self.draws}{extra}" if name is None else str(name)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_runner"], state["_lock"], state["compile_seconds"] = None, None, None  # rebuilt where it runs
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        with self._lock:
            self._build()

    def _build(self):
        if self._runner is None:
            start = time.perf_counter()
            runner = _RUNNERS[self.backend](self)
            self._runner = runner
            self.compile_seconds = time.perf_counter() - start
        return self._runner

    def chain(self, rng: np.random.Generator):
        """One chain from ``rng``: its kept draws (rows of the unconstrained vector), the divergent kept
        iterations and the gradient evaluations (what a pull summarises).
        """
        with self._lock:
            return self._build().run(rng)

    def draw(self, rng: np.random.Generator):
        X, divergences, n_grad = self.chain(rng)
        values = self.quantity(X)
        estimate = float(values.mean())
        if not np.isfinite(estimate):
            raise FloatingPointError(
                f"arm {self.name!r}: the quantity {self.quantity.label!r} is not finite at some draw of the run")
        info = {"n_grad": float(n_grad), "divergences": float(divergences),
                "divergent_fraction": float(divergences) / self.draws,
                "chain_variance": float(values.var(ddof=1)) if values.size > 1 else float("nan")}
        if self.components:
            info.update(zip(self.components, self.quantity.components(X).tolist()))
        return np.array([estimate]), info


class _PyMCRunner:
    def __init__(self, arm: NUTSBackendArm):
        from pmcbandit.arms.samplers.mcmc import MCMCArm

        # PyTensor's modes by name: "CVM" (C thunks in a VM, PyTensor 2's default) and "NUMBA" (PyTensor 3's
        # default), so each backend is the same on both lines.
        compile_kwargs = {"mode": "NUMBA" if arm.backend == "pymc-numba" else "CVM"}
        self._arm = MCMCArm(arm.model, arm.quantity, "nuts", tune=arm.tune, draws=arm.draws,
                            compile_kwargs=compile_kwargs, **arm.kwargs)
        # A short chain from a fixed seed: numba compiles on the first call.
        self._arm.tune, self._arm.draws = _WARM_CHAIN
        try:
            self._arm.chain(np.random.default_rng(0))
        finally:
            self._arm.tune, self._arm.draws = arm.tune, arm.draws

    def run(self, rng):
        X, stats = self._arm.chain(rng)
        info, n_grad = self._arm._info(stats)
        return X, info["divergences"], n_grad


class _NutpieRunner:
    def __init__(self, arm: NUTSBackendArm):
        import nutpie

        self._nutpie = nutpie
        self._dim = arm.quantity.dim
        self._kwargs = dict(arm.kwargs, chains=1, progress_bar=False, store_unconstrained=True)
        if arm.backend == "nutpie-lowrank":
            # nutpie >= 0.16 names the choice `adaptation`; earlier releases had a flag.
            if "adaptation" in inspect.signature(nutpie.sample).parameters:
                self._kwargs["adaptation"] = "low_rank"
            else:
                self._kwargs["low_rank_modified_mass_matrix"] = True
        self._tune, self._draws = arm.tune, arm.draws
        self._compiled = nutpie.compile_pymc_model(arm.model)
        self._sample(0, *_WARM_CHAIN)

    def _sample(self, seed, tune, draws):
        trace = self._nutpie.sample(self._compiled, tune=tune, draws=draws, seed=int(seed), **self._kwargs)
        stats = _group(trace, "sample_stats")
        X = np.asarray(stats["unconstrained_draw"].values, dtype=np.float64).reshape(draws, -1)
        if X.shape[1] != self._dim:
            raise RuntimeError(f"nutpie returned {X.shape[1]} unconstrained coordinates, the model has {self._dim}")
        n_grad = float(np.sum(stats["n_steps"].values))
        warm = _group(trace, "warmup_sample_stats")
        if warm is not None:
            n_grad += float(np.sum(warm["n_steps"].values))
        return X, int(np.sum(stats["diverging"].values)), n_grad

    def run(self, rng):
        return self._sample(rng.integers(2**31 - 1), self._tune, self._draws)


def _group(trace, name: str):
    """A group of nutpie's trace (ArviZ 1 ``DataTree`` or ArviZ 0.x ``InferenceData``), or ``None``."""
    from pmcbandit._compat import group, group_names

    return group(trace, name) if name in group_names(trace) else None


class _JaxRunner:
    def __init__(self, arm: NUTSBackendArm):
        from pymc.initial_point import make_initial_point_fn

        from pmcbandit.arms.samplers._jax_chain import JaxChain

        q = arm.quantity
        self._quantity = q
        self._start = make_initial_point_fn(model=arm.model, jitter_rvs=set(arm.model.free_RVs),
                                            return_transformed=True)
        self._chain = JaxChain(arm.model, q.slices, q.shapes, arm.backend, arm.tune, arm.draws,
                               float(arm.kwargs.get("target_accept", 0.8)))
        self._chain.run(0, q.ravel(arm.model.initial_point()))  # the first call of a compiled function loads it

    def run(self, rng):
        # pm.sample's "jitter+adapt_diag" start: U(-1, 1) jitter of the initial point, unconstrained.
        start_seed, chain_seed = rng.integers(2**31 - 1, size=2)
        start = self._quantity.ravel(self._start(int(start_seed)))
        return self._chain.run(int(chain_seed), start)


_RUNNERS = {"pymc": _PyMCRunner, "pymc-numba": _PyMCRunner, "nutpie": _NutpieRunner,
            "nutpie-lowrank": _NutpieRunner, "numpyro": _JaxRunner, "blackjax": _JaxRunner}
