"""Compiled log densities and exact prior draws of a PyMC model, on the unconstrained space.

The evidence arms estimate the marginal likelihood of a model *as written*,

.. math:: Z = \\int p(\\theta)\\, L(\\theta)\\, d\\theta ,

where :math:`p` is the joint density of the free random variables and
:math:`L` the product of the observed variables' densities and of
``exp(Potential)`` terms. They work in PyMC's unconstrained (transformed) space
:math:`x = g(\\theta)`, where the prior density of :math:`x` carries the
log-Jacobian of :math:`g^{-1}`, so :math:`Z` is unchanged by the change of
variables:

``logprior(x)``
    sum of the free variables' log densities plus the log-Jacobians
    (``model.logp(vars=model.free_RVs, jacobian=True)``), the normalised density
    of the forward-sampled prior mapped to :math:`x`;
``loglik(x)``
    sum of the observed variables' log densities plus every ``pm.Potential``
    (``model.logp(vars=model.observed_RVs + model.potentials)``).

**Potentials are part of the likelihood** (the tempered factor of an annealing
path, Neal 2001): forward sampling ignores them, so the exactly sampled base
distribution of AIS and prior importance sampling is the free variables' joint
prior alone, and the estimate is of :math:`Z = \\int p(\\theta) e^{\\sum
\\text{Potentials}} \\prod p(y\\mid\\theta)\\, d\\theta`.

Both terms are compiled into one PyTensor function of a flat vector ``x``
(:func:`pymc.pytensorf.join_nonshared_inputs`, in the order of
``model.value_vars``) with ``mode="NUMBA"``; its numba dispatcher
(``fn.vm.jit_fn``, an internal attribute of PyTensor's numba linker, read by
:func:`pmcbandit._compat.numba_jit_fn` and checked by ``tests/arms/evidence/test_model_density.py``)
is what the numba kernels of the arms call. Every function of the density's graphs is compiled through
:func:`~pmcbandit.arms.evidence._compiled.compile_cached`, so a later process that builds the same density loads
them from disk instead of rewriting the graphs again.

Prior draws come from a PyTensor forward-sampling graph of the free variables
batched over a symbolic number of draws, seeded from the caller's
:class:`numpy.random.Generator` on every call; data and dims are frozen as
constants (:func:`pymc.model.transform.optimization.freeze_dims_and_data`), so the
arm estimates the evidence of the data the model held when the arm was built.
"""

from __future__ import annotations

import time
import uuid
import warnings

import numpy as np
from numba.core.errors import NumbaWarning

from pmcbandit._compat import numba_jit_fn
from pmcbandit.arms.evidence._compiled import compile_cached
from pmcbandit.arms.evidence._initial_point import initial_point
from pmcbandit.arms.evidence._log_terms import log_terms, untraced
from pmcbandit.arms.evidence._prior_sampler import build_prior_sampler
from pmcbandit.arms.evidence._shipping import BUILT, custom_dispatch, register_custom
from pmcbandit.arms.evidence.modes import search_mode

__all__ = ["ModelDensity", "check_model", "rebuild_density"]

_CHECK_DRAWS = 64
#: Dimension from which the mode search's Hessians take their ``2 * dim`` gradients from the NUMBA
#: gradient (:attr:`ModelDensity.grad_jit_fn`, compiled for it) instead of the compiled PyTensor
#: function, whose per-call overhead then outweighs the NUMBA gradient's compilation
#: (``benchmarks/results/bench_mode_search.md``). Below it the NUMBA gradient serves once it is compiled
#: for something else (the evidence pool compiles it first where its HMC pilot will run).
NUMBA_HESSIAN_DIM = 100


def check_model(model, door: str = "ModelDensity"):
    """Reject models whose evidence the arms cannot estimate; return the frozen model.

    Raises ``TypeError`` for non-``pm.Model`` objects and ``ValueError`` for
    models without continuous free variables, without observed data (or a Potential), with
    discrete free variables, with
    missing (NaN) observed data or PyMC-imputed variables, with improper
    ``Flat``/``HalfFlat`` priors, or with shapes that are not fixed.
    """
    import pymc as pm
    from pymc.model.transform.optimization import freeze_dims_and_data

    if not isinstance(model, pm.Model):
        raise TypeError(
            f"The 'model' parameter of {door} must be a pymc.Model. Got {model!r} of type "
            f"{type(model).__name__} instead."
        )
    if not model.free_RVs:
        raise ValueError(
            f"The 'model' parameter of {door} must have at least one free random variable. "
            f"Got a model with none instead."
        )
    discrete = [rv.name for rv in model.free_RVs if rv.type.dtype.startswith(("int", "uint", "bool"))]
    if discrete:
        raise ValueError(
            f"The 'model' parameter of {door} must have only continuous free variables. "
            f"Got discrete free variables {discrete!r} instead."
        )
    if not model.observed_RVs and not model.potentials:
        raise ValueError(
            f"The 'model' parameter of {door} must have observed data (or a Potential) for its evidence to "
            f"be defined. Got a model with free variables {[rv.name for rv in model.free_RVs]!r} and no "
            "observed variable instead."
        )
    names = {rv.name for rv in model.basic_RVs}
    imputed = [
        rv.name[: -len("_unobserved")]
        for rv in model.free_RVs
        if rv.name.endswith("_unobserved") and rv.name[: -len("_unobserved")] + "_observed" in names
    ]
    if imputed:
        raise ValueError(
            f"The 'model' parameter of {door} must have observed data without missing values. "
            f"Got NaN-imputed observed variables {imputed!r} instead (drop the missing rows)."
        )
    flat = [
        rv.name
        for rv in model.free_RVs
        if type(rv.owner.op).__name__ in ("FlatRV", "HalfFlatRV")
    ]
    if flat:
        raise ValueError(
            f"The 'model' parameter of {door} must have a proper prior that PyMC can "
            f"forward-sample. Got improper Flat/HalfFlat free variables {flat!r} instead."
        )
    # Initial values only seed optimisers and MCMC, never the evidence; PyMC refuses to
    # convert models that set them, so they are cleared for the conversion and restored.
    initvals = dict(model.rvs_to_initial_values)
    try:
        model.rvs_to_initial_values.update(dict.fromkeys(initvals))
        frozen = freeze_dims_and_data(model)
    finally:
        model.rvs_to_initial_values.update(initvals)
    for rv in frozen.observed_RVs:
        data = frozen.rvs_to_values[rv]
        value = getattr(data, "data", None)
        if value is None and hasattr(data, "get_value"):
            value = data.get_value()
        if value is not None and np.issubdtype(np.asarray(value).dtype, np.floating):
            if np.isnan(np.asarray(value)).any():
                raise ValueError(
                    f"The 'model' parameter of {door} must have observed data without missing "
                    f"values. Got NaN in the data of {rv.name!r} instead."
                )
    for rv in frozen.free_RVs:
        if rv.type.shape is None or any(s is None for s in rv.type.shape):
            raise ValueError(
                f"The 'model' parameter of {door} must have free variables of fixed shape. "
                f"Got {rv.name!r} with shape {rv.type.shape} instead."
            )
    return frozen


class ModelDensity:
    """Log prior and log likelihood of a PyMC model on the unconstrained space, compiled once.

    Parameters
    ----------
    model : pymc.Model
        A model with continuous free variables of fixed shape and a proper,
        forward-sampleable prior (see :func:`check_model`).
    check_draws : int
        Number of prior draws (from a fixed internal seed; no global state)
        used to check that the densities are usable: ``logprior`` must be finite
        at every draw, ``loglik`` must never be ``NaN`` or ``+inf`` and must be
        finite at one draw at least (a likelihood that is ``-inf`` on part of the
        prior's support is allowed: those draws get weight zero).

    Attributes
    ----------
    model : pymc.Model
        The model with data and dims frozen as constants.
    value_names : tuple of str
        Names of the unconstrained value variables, in the order of ``x``.
    slices : dict of str to slice
        Where each value variable lies in the flat vector ``x``.
    shapes : dict of str to tuple
        Their shapes.
    dim : int
        Length of ``x``.
    initial_x : ndarray of shape (dim,)
        The model's initial point (``model.initial_point()``, evaluated by
        :func:`~pmcbandit.arms.evidence._initial_point.initial_point`) as a flat vector ``x``, read once here: where
        :func:`~pmcbandit.arms.evidence.modes.search_mode` starts by default.
    point_fn : pytensor.compile.function.types.Function
        ``point_fn(x) -> [logprior, loglik]``, NUMBA mode.
    jit_fn : numba dispatcher
        ``point_fn``'s numba dispatcher: ``jit_fn(x) -> (logprior, loglik)`` as 0-d arrays,
        callable from ``@njit`` code.
    grad_jit_fn : numba dispatcher
        ``grad_jit_fn(x) -> (logprior, loglik, grad_logprior, grad_loglik)`` (two 0-d and two
        ``(dim,)`` arrays), the values and gradients (:func:`pytensor.grad`, reverse mode) of
        both terms from one NUMBA-mode function of the same graphs, callable from ``@njit``
        code; compiled on first access (:meth:`value_and_grad_terms`), so densities whose arms
        use no gradient never build it.
    vectorised_prior : bool
        ``True`` when prior draws are made by one batched graph (the normal case);
        ``False`` when the model's random variables could not be batched and one
        compiled draw is made per sample.
    eval_seconds : float
        Wall seconds of one ``(logprior, loglik)`` evaluation through ``jit_fn``
        (:func:`time.perf_counter`), measured at construction on the ``check_draws``
        prior draws after ``jit_fn`` and the row loop are compiled: the fastest of
        three timed passes of the numba row loop over all of them, divided by their
        number (the fastest pass is the least disturbed by other processes). It
        predicts the cost of an evaluation-bound arm, e.g. an AIS pull of ``n_steps``
        annealing steps costs about ``n_steps * evaluations per step * eval_seconds``.

    Notes
    -----
    Model evidence as :math:`Z=\\int p(\\theta)L(\\theta)d\\theta` is the
    normalising constant of Neufeld et al. (2014), App. G; the transformed-space
    prior includes :math:`\\log|\\partial g^{-1}/\\partial x|`.

    Pickling (how the process and Dask executors ship evidence arms, :mod:`pmcbandit.runtime.executors.worker`)
    keeps only the frozen ``pm.Model`` (it needs cloudpickle), the density functions PyMC
    registered for Op types made at run time (``pm.CustomDist``), and a token drawn at
    construction; unpickling compiles the density once per process and token, so all the arms
    of a pool unpickled in one worker share one density, as they do in the driver.
    """

    def __init__(self, model, *, check_draws: int = _CHECK_DRAWS):
        import pytensor
        from pymc.pytensorf import join_nonshared_inputs

        self.model = model = check_model(model)
        value_vars = list(model.value_vars)
        self.value_names = tuple(v.name for v in value_vars)
        point = initial_point(model)  # model.initial_point(), without compiling a function for it
        self.shapes = {name: tuple(np.shape(point[name])) for name in self.value_names}
        self.slices = {}
        start = 0
        for name in self.value_names:
            size = int(np.prod(self.shapes[name], dtype=int))
            self.slices[name] = slice(start, start + size)
            start += size
        self.dim = start
        self.initial_x = np.concatenate([np.ravel(point[n]) for n in self.value_names]).astype(np.float64)
        self._laplace_fn = None
        self._grad_fn = None
        self._grad_failed = False  # numba could not compile the gradient (the mode search tries once)
        self._batch_terms = {}  # compile mode -> compile_logp_terms_batch's function, shared by every arm
        with untraced():
            logprior, loglik = log_terms(model)  # one derivation of both terms' graphs
            (logprior, loglik), x = join_nonshared_inputs(point, [logprior, loglik], value_vars)
            outputs = [pytensor.tensor.cast(o, "float64") for o in (logprior, loglik)]
            self._x, self._graphs = x, outputs
            # PyMC's compile turns parameter checks into -inf (rather than raising), as in sampling.
            self.point_fn = compile_cached([x], outputs, mode="NUMBA")
            self._sample, self.vectorised_prior = build_prior_sampler(model, self.value_names)
        self.point_fn.trust_input = True
        self.jit_fn = numba_jit_fn(self.point_fn)
        self._check(check_draws)
        self._check_draws = check_draws
        self._token = uuid.uuid4().hex
        BUILT[self._token] = self

    def __reduce__(self):
        return rebuild_density, (self._token, self.model, self._check_draws, custom_dispatch(self.model))

    @property
    def terms_fn(self):
        """``jit_fn`` as a C function of :data:`~pmcbandit.arms.evidence._kernels.TERMS_SIG`, what the cached kernels
        call (:func:`~pmcbandit.arms.evidence._kernels.terms_cfunc`); built on first use and again whenever
        ``jit_fn`` is replaced.
        """
        from pmcbandit.arms.evidence._kernels import terms_cfunc

        built = self.__dict__.get("_terms")
        if built is None or built[0] is not self.jit_fn:
            built = (self.jit_fn, terms_cfunc(self.jit_fn, self.dim))
            self.__dict__["_terms"] = built
        return built[1]

    def _check(self, n: int) -> None:
        from pmcbandit.arms.evidence._kernels import eval_terms_rows

        x = self.sample_prior(np.random.default_rng(20140621), n)
        with warnings.catch_warnings():
            # PyTensor's NUMBA mode asks numba to cache the model's function on disk; with data held
            # as constant arrays numba cannot and warns. Only the on-disk cache is lost.
            warnings.filterwarnings("ignore", message="Cannot cache compiled function", category=NumbaWarning)
            lp, ll = self.logp_terms_batch(x)  # compiles jit_fn and the row loop for it
        passes = []
        for _ in range(3):
            start = time.perf_counter()
            eval_terms_rows(self.terms_fn, x)
            passes.append(time.perf_counter() - start)
        self.eval_seconds = min(passes) / max(n, 1)
        bad = ~np.isfinite(lp)
        if bad.any():
            raise ValueError(
                "The 'model' parameter of ModelDensity must have a finite log prior density at "
                f"its prior draws. Got logprior={lp[bad][0]!r} at the unconstrained point "
                f"{dict(self.unravel(x[bad][0]))!r} instead."
            )
        if np.isnan(ll).any() or np.isposinf(ll).any():
            raise ValueError(
                "The 'model' parameter of ModelDensity must have a log likelihood that is not "
                f"NaN or +inf at its prior draws. Got {ll[np.isnan(ll) | np.isposinf(ll)][0]!r} "
                "instead."
            )
        if not np.isfinite(ll).any():
            raise ValueError(
                "The 'model' parameter of ModelDensity must have a finite log likelihood at some "
                f"prior draw. Got -inf at all {n} checked draws instead (data outside the "
                "support of the model?)."
            )

    def sample_prior(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` exact prior samples, mapped to the unconstrained space: shape ``(n, dim)``.

        Seeded from ``rng`` (children from :meth:`numpy.random.Generator.spawn`);
        bit-identical for equal seeds. Not thread-safe: the compiled sampler's
        shared RNGs are reseeded on every call.
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError(
                "The 'rng' parameter of ModelDensity.sample_prior must be a "
                f"numpy.random.Generator. Got {rng!r} instead."
            )
        x = self._sample(rng, int(n))
        return np.ascontiguousarray(x, dtype=np.float64).reshape(int(n), self.dim)

    @staticmethod
    def outside_float_range(x: np.ndarray) -> np.ndarray:
        r"""Rows of ``x`` (shape ``(n, dim)``) with a non-finite coordinate: prior draws whose constrained
        value floating point cannot hold (a positive quantity that underflows to 0 has unconstrained value
        ``-inf``; one that overflows, ``+inf``).

        **Rule.** The model's density cannot be evaluated at such a point (PyMC returns ``-inf`` or NaN
        there, e.g. a Poisson term :math:`0 \cdot \log 0`), so an importance arm gives it weight 0 and
        counts it in its ``outside_float_range`` diagnostic. The estimate then leaves out the part of
        :math:`Z` over the region floating point cannot represent: its prior mass times the likelihood
        there, which is what a draw of that region would have carried. A NaN at a point inside the float
        range is still a fault (:mod:`pmcbandit.runtime.faults`).
        """
        return ~np.isfinite(x).all(axis=1)

    def logp_terms(self, x) -> tuple[float, float]:
        """``(logprior(x), loglik(x))`` at one unconstrained point (through ``jit_fn``)."""
        lp, ll = self.jit_fn(np.ascontiguousarray(x, dtype=np.float64))
        return float(lp), float(ll)

    def logp_terms_batch(self, x) -> tuple[np.ndarray, np.ndarray]:
        """``(logprior, loglik)`` at each row of ``x`` (shape ``(n, dim)``), in a numba loop."""
        from pmcbandit.arms.evidence._kernels import eval_terms_rows

        x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1, self.dim)
        out = eval_terms_rows(self.terms_fn, x)
        return out[:, 0].copy(), out[:, 1].copy()

    def compile_logp_batch(self, mode: str | None = None):
        """Compile ``X -> logprior(x_i) + loglik(x_i)`` over the rows ``x_i`` of ``X`` (shape ``(n, dim)``).

        One PyTensor function of the whole batch
        (:func:`pytensor.graph.replace.vectorize_graph` of the point graph), compiled in
        ``mode`` (``None``: PyTensor's default C backend). A graph with an Op that has no
        batched form (e.g. a Scan) falls back to the numba row loop of
        :meth:`logp_terms_batch`.
        """
        import pytensor.tensor as pt
        from pytensor.graph.replace import vectorize_graph

        with untraced():
            xs = pt.matrix("x_batch", dtype=self._x.dtype)
            try:
                batch = vectorize_graph(self._graphs[0] + self._graphs[1], {self._x: xs})
            except NotImplementedError:

                def row_loop(x):
                    log_prior, log_lik = self.logp_terms_batch(x)
                    return log_prior + log_lik

                return row_loop
            return compile_cached([xs], batch, mode=mode)

    def compile_logp_terms_batch(self, mode: str | None = None):
        """Compile ``X -> (logprior(x_i), loglik(x_i))`` over the rows ``x_i`` of ``X`` (shape ``(n, dim)``).

        As :meth:`compile_logp_batch`, with the two terms as separate outputs (arrays of
        shape ``(n,)``), for proposals that contain the prior (a defensive mixture needs
        :math:`\\log p(x)` in :math:`\\log q(x)`). The same fallback to the numba row loop
        of :meth:`logp_terms_batch` for graphs without a batched form. Compiled once per ``mode``
        and shared by every caller (the importance-sampling arms of one pool call it in turn,
        never at the same time: they are not thread-safe).
        """
        if mode not in self._batch_terms:
            self._batch_terms[mode] = self._compile_terms_batch(mode)
        return self._batch_terms[mode]

    def _compile_terms_batch(self, mode):
        import pytensor.tensor as pt
        from pytensor.graph.replace import vectorize_graph

        with untraced():
            xs = pt.matrix("x_batch", dtype=self._x.dtype)
            try:
                batch = vectorize_graph(list(self._graphs), {self._x: xs})
            except NotImplementedError:
                return self.logp_terms_batch
            fn = compile_cached([xs], batch, mode=mode)

        def terms(x):
            log_prior, log_lik = fn(x)
            return np.asarray(log_prior, dtype=np.float64), np.asarray(log_lik, dtype=np.float64)

        return terms

    def laplace(self, beta: float = 1.0, x0=None, *, strict: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Mode and precision (negative Hessian) of ``logprior(x) + beta * loglik(x)``.

        The Laplace approximation (Kass & Raftery 1995, Sec. 4.1) in the unconstrained
        space, :math:`\\log\\pi_\\beta(x) \\approx \\log\\pi_\\beta(\\hat x)
        - \\tfrac12 (x-\\hat x)^\\top P\\, (x-\\hat x)` with

        .. math::

            \\hat x = \\arg\\max_x \\log\\pi_\\beta(x), \\qquad
            P = -\\nabla^2 \\log\\pi_\\beta(\\hat x).

        The mode is found by a trust-region Newton method with the exact compiled
        Hessian (``scipy.optimize.minimize(method="trust-exact")``; Nocedal & Wright
        2006, Alg. 4.1, Sec. 4.3), quadratically convergent on near-Gaussian
        posteriors; L-BFGS-B takes over if a Hessian on the way is not finite. Points
        where :math:`\\log\\pi_\\beta` is NaN or infinite count as outside the support.
        The compiled value, gradient and Hessian (``beta`` is an input) are built on the
        first call and shared by later ones (fits are not cached). The search itself is
        :func:`~pmcbandit.arms.evidence.modes.search_mode`, which reports the end point's
        state without raising; this method applies the rule of ``strict`` to it.

        Parameters
        ----------
        beta : float, default 1.0
            Inverse temperature: 1 is the posterior, 0 the prior.
        x0 : array_like of shape (dim,), optional
            Start of the search; the model's initial point by default.
        strict : bool, default True
            Rule for the degenerate cases. The end point is a mode when the optimiser
            reports success or :math:`\\max|\\nabla\\log\\pi_\\beta| \\le 10^{-6}
            \\max(1, |\\log\\pi_\\beta|)`. ``True``: no mode, or a :math:`P` that is not
            positive definite, raises ``ValueError``. ``False``: a ``RuntimeWarning``
            each, and the last iterate is used, with the eigenvalues of :math:`P`
            floored at :math:`10^{-8}` times the largest absolute one.

        Returns
        -------
        mode : ndarray of shape (dim,)
        precision : ndarray of shape (dim, dim)
            The symmetric matrix :math:`P`.

        Raises
        ------
        ValueError
            If :math:`\\log\\pi_\\beta(x_0)` is not finite, if the search ends at a
            non-finite point or Hessian, and in the ``strict`` cases above.
        """
        if not isinstance(strict, bool):
            raise TypeError(
                f"The 'strict' parameter of ModelDensity.laplace must be a bool. Got {strict!r} instead."
            )

        def degenerate(message, remedy):
            if strict:
                raise ValueError(message + ".")
            warnings.warn(f"{message}; {remedy}.", RuntimeWarning, stacklevel=4)

        start = "the model's initial point" if x0 is None else "x0"
        if x0 is not None:
            x0 = np.asarray(x0, dtype=np.float64)
            if x0.shape != (self.dim,):
                raise ValueError(
                    f"The 'x0' parameter of ModelDensity.laplace must have shape ({self.dim},). "
                    f"Got shape {x0.shape} instead."
                )
        end = search_mode(self, beta, x0)
        if not end.start_finite:
            raise ValueError(
                f"The 'x0' parameter of ModelDensity.laplace must be a point where logprior + "
                f"beta * loglik (beta={beta!r}) is finite. Got {start} {end.location!r}, where it is not "
                "finite, instead; set initvals so that the mode search can start."
            )
        mode, precision = end.location, end.precision
        if not end.finite:
            raise ValueError(
                f"The Laplace approximation at beta={beta!r} must have a finite mode, log density "
                f"and Hessian. Got mode={mode!r} ({end.message}) instead."
            )
        if not end.stationary:
            degenerate(
                f"The Laplace approximation at beta={beta!r} must be at a mode. Got a search that ended "
                f"at a non-stationary point ({end.message}; max |gradient| {end.grad_max:.3g}) instead",
                "the last iterate is used",
            )
        eigval, eigvec = np.linalg.eigh(precision)
        floor = 1e-8 * max(float(np.max(np.abs(eigval))), 1e-300)
        if eigval.min() <= (0.0 if strict else floor):
            degenerate(
                f"The Laplace approximation at beta={beta!r} must have a positive-definite precision "
                f"at the mode. Got eigenvalues {eigval!r} instead",
                f"they are floored at {floor!r}",
            )
            precision = (eigvec * np.maximum(eigval, floor)) @ eigvec.T
            precision = 0.5 * (precision + precision.T)
        return mode, precision

    def _laplace_functions(self):
        """``(value_and_grad(x, beta), hessian(x, beta))`` of ``logprior + beta * loglik``, compiled once.

        The value and gradient are one compiled PyTensor function (C backend, cached on disk by
        PyTensor across processes). The Hessian is the central difference of that gradient,
        column by column, :math:`H_{:,i} = (g(x + h_i e_i) - g(x - h_i e_i)) / (2 h_i)` with
        :math:`h_i = \\epsilon^{1/3}\\max(1, |x_i|)`, symmetrised: its error is
        :math:`O(h^2)` from the third derivatives plus :math:`O(\\epsilon |g| / h)` from rounding
        (Nocedal & Wright 2006, Sec. 8.1), far below what a Laplace proposal or a condition-number
        check can see. A symbolic Hessian would be exact, but its graph (a Jacobian of the gradient)
        compiles for longer than most runs last on models of a few hundred observations, while
        ``2 * dim`` gradient evaluations per Hessian are cheap. They are calls of the NUMBA
        gradient (:attr:`grad_jit_fn`, a smaller overhead per call) when it is already compiled, or
        from :data:`NUMBA_HESSIAN_DIM` dimensions on (compiled then: the PyTensor function's call
        overhead, ``2 * dim`` times per Hessian, would cost more); a model whose gradient numba
        cannot compile keeps the PyTensor one.
        """
        if self._laplace_fn is None:
            import pytensor
            import pytensor.tensor as pt

            with untraced():
                b = pt.scalar("beta", dtype="float64")
                target = self._graphs[0] + b * self._graphs[1]
                grad = pytensor.grad(target, self._x)
                value_and_grad = compile_cached([self._x, b], [target, grad])

            def hessian(x, beta):
                x = np.asarray(x, dtype=np.float64)
                step = np.cbrt(np.finfo(np.float64).eps) * np.maximum(1.0, np.abs(x))
                up, down = x + np.diag(step), x - np.diag(step)  # row i: x moved along coordinate i
                grad = self._hessian_gradient(value_and_grad)
                g_up = np.array([grad(u, beta) for u in up], dtype=np.float64)
                g_down = np.array([grad(v, beta) for v in down], dtype=np.float64)
                out = (g_up - g_down).T / (np.diag(up) - np.diag(down))
                return 0.5 * (out + out.T)

            self._laplace_fn = (value_and_grad, hessian)
        return self._laplace_fn

    def _hessian_gradient(self, value_and_grad):
        """``(x, beta) -> gradient`` for the Hessian's differences: through :attr:`grad_jit_fn` when it is compiled
        (compiled here from :data:`NUMBA_HESSIAN_DIM` dimensions, tried once), else ``value_and_grad``'s.
        """
        if self._grad_fn is None and self.dim >= NUMBA_HESSIAN_DIM and not self._grad_failed:
            try:
                self.grad_jit_fn
            except Exception:  # noqa: BLE001 (an Op numba cannot compile: the PyTensor gradient serves)
                self._grad_failed = True
        if self._grad_fn is None:
            return lambda u, beta: value_and_grad(u, beta)[1]

        def grad(u, beta):
            _, _, g_lp, g_ll = self.value_and_grad_terms(u)
            return g_lp + beta * g_ll

        return grad

    @property
    def grad_jit_fn(self):
        """The numba dispatcher of :meth:`value_and_grad_terms` (see the class attributes)."""
        return numba_jit_fn(self._grad_function())

    @property
    def grad_terms_fn(self):
        """``grad_jit_fn`` as a C function of :data:`~pmcbandit.arms.evidence._kernels.TERMS_SIG` (values, then both
        gradients; :func:`~pmcbandit.arms.evidence._kernels.grad_terms_cfunc`), what the cached HMC kernels call;
        built on first use and again whenever the gradient's dispatcher changes.
        """
        from pmcbandit.arms.evidence._kernels import grad_terms_cfunc

        fn = self.grad_jit_fn
        built = self.__dict__.get("_grad_terms")
        if built is None or built[0] is not fn:
            built = (fn, grad_terms_cfunc(fn, self.dim))
            self.__dict__["_grad_terms"] = built
        return built[1]

    def _grad_function(self):
        """``x -> [logprior, loglik, grad logprior, grad loglik]``, NUMBA mode, compiled once."""
        if self._grad_fn is None:
            import pytensor

            logprior, loglik = self._graphs
            with untraced():
                grads = [pytensor.tensor.cast(pytensor.grad(term, self._x), "float64") for term in (logprior, loglik)]
                fn = compile_cached([self._x], [logprior, loglik, *grads], mode="NUMBA")
            fn.trust_input = True
            with warnings.catch_warnings():
                # As in _check: numba cannot cache a function holding constant arrays on disk.
                warnings.filterwarnings("ignore", message="Cannot cache compiled function", category=NumbaWarning)
                fn.vm.jit_fn(np.zeros(self.dim))  # compiles the dispatcher for float64 vectors
            self._grad_fn = fn
        return self._grad_fn

    def value_and_grad_terms(self, x) -> tuple[float, float, np.ndarray, np.ndarray]:
        """``(logprior(x), loglik(x), grad logprior(x), grad loglik(x))`` at one unconstrained point.

        Through :attr:`grad_jit_fn`, built on the first call. The gradients are those of the
        compiled graphs (PyMC turns parameter checks into ``-inf`` values, whose gradients are
        whatever the graph's ``switch`` gives; callers treat a non-finite value as outside the
        support).
        """
        lp, ll, g_lp, g_ll = self.grad_jit_fn(np.ascontiguousarray(x, dtype=np.float64).reshape(self.dim))
        return float(lp), float(ll), np.array(g_lp, dtype=np.float64), np.array(g_ll, dtype=np.float64)

    def log_density_and_grad(self, x) -> tuple[float, np.ndarray]:
        """``(logprior(x) + loglik(x), its gradient)`` at one unconstrained point: through :attr:`grad_jit_fn` when
        it is already compiled, else the PyTensor function of :meth:`laplace` (compiled on first use), so a caller
        after a mode search compiles nothing more.
        """
        if self._grad_fn is not None:
            lp, ll, g_lp, g_ll = self.value_and_grad_terms(x)
            return lp + ll, g_lp + g_ll
        value, grad = self._laplace_functions()[0](np.asarray(x, dtype=np.float64).reshape(self.dim), 1.0)
        return float(value), np.array(grad, dtype=np.float64)

    def unravel(self, x) -> dict[str, np.ndarray]:
        """Split a flat unconstrained vector into ``{value_name: array}``."""
        x = np.asarray(x, dtype=np.float64)
        return {n: x[self.slices[n]].reshape(self.shapes[n]) for n in self.value_names}

    def __repr__(self) -> str:
        return f"ModelDensity(value_names={self.value_names!r}, dim={self.dim})"


def rebuild_density(token: str, model, check_draws: int, custom=()):
    """The density of ``token`` in this process (how a :class:`ModelDensity` unpickles): compiled from
    ``model`` the first time, after re-registering the densities of its run-time Op types
    (:func:`~pmcbandit.arms.evidence._shipping.register_custom`).
    """
    density = BUILT.get(token)
    if density is None:
        register_custom(custom)
        density = ModelDensity(model, check_draws=check_draws)
        del BUILT[density._token]
        density._token = token
        BUILT[token] = density
    return density
