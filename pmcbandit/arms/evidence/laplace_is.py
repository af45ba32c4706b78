"""Laplace-centred Student-t importance sampling of a PyMC model's evidence.

For a model with continuous free variables mapped to the unconstrained space
:math:`x \\in \\mathbb R^d` (PyMC's value variables, transforms applied), the
evidence is

.. math::

    Z = \\int p(\\theta)\\, p(y \\mid \\theta)\\, d\\theta
      = \\int \\tilde p(x)\\, dx, \\qquad
    \\log \\tilde p(x) = \\log p(\\theta(x)) + \\log p(y \\mid \\theta(x))
                        + \\log |\\det J_{\\theta}(x)|,

which is ``model.logp(jacobian=True)``. The proposal is a defensive mixture
(Hesterberg 1995) of multivariate Student-t distributions
:math:`t_\\nu(\\hat x_j, c\\, \\Sigma_j)` centred at the distinct modes :math:`\\hat x_j` of
:math:`\\log \\tilde p` found by a multi-start Newton search
(:mod:`pmcbandit.arms.evidence.modes`), with
:math:`\\Sigma_j = (-\\nabla^2 \\log \\tilde p(\\hat x_j))^{-1}` (the Laplace approximation),
an inflation factor :math:`c`, and a share :math:`\\alpha` of the prior. Each draw gives
the importance weight :math:`w = \\tilde p(x) / q(x)` with :math:`E_q[w] = Z`
(importance sampling, e.g. Robert & Casella 2004, Sec. 3.3), so every value of a
pull is the log of an unbiased estimate of Z; a pull is a batch, combined by
log-mean-exp (Neufeld et al., 2014, Sec. 6.3 treat each estimator of Z as an arm).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import gammaln, logsumexp

from pmcbandit._validation import check_choice, check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.stats.posterior_check import weighted_loglik
from pmcbandit.arms.evidence._draws import DrawReservoir, keep_draws
from pmcbandit.arms.evidence.model_density import ModelDensity, check_model
from pmcbandit.arms.evidence.modes import Mode, ModeSearch, NoInteriorModeError, find_modes

__all__ = ["LaplaceISArm", "MODE_WEIGHT_FLOOR", "moment_fit", "multivariate_t_logpdf_from_radius"]

#: Share of the t mixture spread evenly over the modes found, so none is starved by a poor
#: Laplace evidence: :math:`\pi_j \ge` ``MODE_WEIGHT_FLOOR / J``.
MODE_WEIGHT_FLOOR = 0.1


def multivariate_t_logpdf_from_radius(r2: np.ndarray, df: float, d: int, log_det_scale: float):
    """Log density of :math:`t_\\nu(\\mu, S)` at points with Mahalanobis radius ``r2``.

    .. math::

        \\log q = \\log\\Gamma(\\tfrac{\\nu+d}{2}) - \\log\\Gamma(\\tfrac{\\nu}{2})
        - \\tfrac d2 \\log(\\nu\\pi) - \\tfrac12 \\log|S|
        - \\tfrac{\\nu+d}{2} \\log\\bigl(1 + r^2/\\nu\\bigr),
        \\qquad r^2 = (x-\\mu)^\\top S^{-1} (x-\\mu).
    """
    const = (
        gammaln(0.5 * (df + d)) - gammaln(0.5 * df) - 0.5 * d * np.log(df * np.pi) - 0.5 * log_det_scale
    )
    return const - 0.5 * (df + d) * np.log1p(r2 / df)


class LaplaceISArm(Arm):
    """Importance sampling of Z with a defensive mixture of Student-t proposals at the posterior modes.

    The proposal is

    .. math::

        q(x) = (1-\\alpha) \\sum_{j=1}^J \\pi_j\\, t_\\nu(x;\\ \\hat x_j,\\ c\\,\\Sigma_j)
               + \\alpha\\, p(x),

    with :math:`\\hat x_j` the distinct interior modes of :math:`\\log\\tilde p` found by a
    multi-start Newton search (:func:`~pmcbandit.arms.evidence.modes.find_modes`),
    :math:`\\Sigma_j = P_j^{-1}` their Laplace covariances, :math:`c` the inflation,
    :math:`p` the model's prior density on the unconstrained space (log-Jacobian
    included; drawn exactly by :meth:`ModelDensity.sample_prior`) and :math:`\\alpha` the
    defensive share (Hesterberg 1995, "Weighted average importance sampling and
    defensive mixture distributions", Technometrics 37). The mode weights are
    the Laplace evidences :math:`\\hat Z_j` with a floor,

    .. math::

        \\pi_j = (1-\\epsilon)\\, \\frac{\\hat Z_j}{\\sum_k \\hat Z_k} + \\frac{\\epsilon}{J},
        \\qquad \\epsilon = 0.1 \\ (\\text{MODE_WEIGHT_FLOOR}),

    so every mode found gets at least :math:`\\epsilon/J` of the mixture (a Laplace
    evidence can be far off for a skewed mode). One pull draws ``batch_size`` i.i.d.
    points :math:`x_i \\sim q` (component labels i.i.d. from
    :math:`((1-\\alpha)\\pi_1, \\dots, (1-\\alpha)\\pi_J, \\alpha)`) and returns

    .. math::

        \\log w_i = \\log p(x_i) + \\log L(x_i) - \\log q(x_i),

    with :math:`\\log q` by log-sum-exp over the components; each is the log of an
    unbiased estimate of Z (importance sampling, Robert & Casella 2004, Sec. 3.3;
    ``log_scale`` arm). With :math:`\\alpha > 0`, :math:`q \\ge \\alpha p` bounds every
    weight, :math:`w \\le L(x)/\\alpha`, so the weights have finite variance whenever the
    likelihood is bounded, whatever the modes found; the price is at most a factor
    :math:`1/(1-\\alpha)` on :math:`E_q[w^2]` when the t mixture alone was already good
    (:math:`q \\ge (1-\\alpha) q_t`).

    Parameters
    ----------
    model : pymc.Model or ModelDensity
        Model with continuous free variables and no missing observations; a
        :class:`~pmcbandit.arms.evidence.model_density.ModelDensity` is built from it
        (see its requirements), or used as given, so that arms of one pool share its
        compiled functions (the Laplace fit's gradient and Hessian among them).
    batch_size : int, default 1000
        Draws per pull.
    df : float, default 5.0
        Degrees of freedom :math:`\\nu > 0` of the t components. A Student-t has
        polynomial tails, so :math:`\\tilde p / q` stays bounded (finite-variance
        weights) whenever the posterior's tails are exponential or lighter. A
        Gaussian proposal is not safe even for logistic regression: the logistic
        log likelihood is asymptotically linear, so far from the mode
        :math:`\\tilde p` decays like the prior while :math:`q` decays at the
        posterior precision :math:`\\Lambda`, and :math:`E_q[w^2]` is infinite once
        :math:`\\Lambda \\succ 2\\times` the prior precision in some direction
        (Pima, T=50: largest eigenvalue 49.6 > 2 x 20).
    inflation : float, default 1.2
        Factor :math:`c > 0` multiplying the Laplace covariances in the t scale
        matrices: over-dispersion covers skewed posteriors and a mode-curvature
        underestimate of the spread, which importance weights punish much more
        than over-dispersion.

        The price of this robustness: even for an exactly Gaussian posterior the
        heavy-tailed, inflated t proposal has a larger relative weight variance
        :math:`\\mathrm{Var}(w)/Z^2` than ``df=20, inflation=1.1``, and the gap grows
        with the dimension (``benchmarks/bench_laplace_smc.py`` measures both on Pima).
        The defaults favour safety; a pool can hold a lighter-tailed second arm and
        let the bandit pick.
    defensive : float, default 0.1
        The prior's share :math:`\\alpha \\in [0, 1)` of the proposal; 0 disables the
        defensive component (a pure t mixture).
    modes : ModeSearch, optional
        The result of :func:`~pmcbandit.arms.evidence.modes.find_modes` on the same
        density, so that arms of one pool share one search; searched here
        (``n_starts``, ``rng``) when ``None``. Or a :func:`moment_fit`: one component at
        a posterior mean with the posterior covariance in place of the Laplace one
        (moment-matched importance sampling), the mode weights then even and
        ``log_z_laplace`` NaN.
    n_starts : int, default 16
        Starts of the mode search when ``modes`` is ``None`` (1: the model's initial
        point only, the former single Laplace fit).
    rng : numpy.random.Generator, optional
        Stream of the prior-drawn starts of the search (see ``find_modes``; a fixed
        internal seed when ``None``).
    mode : str, optional
        PyTensor compilation mode of the batched log density (``None``: PyTensor's
        default C backend; ``"NUMBA"`` also works).
    cost : {"cpu_seconds", "logp_evals"}, default "cpu_seconds"
        Cost of a pull: measured CPU seconds, or the number of model log-density
        evaluations (``batch_size``; deterministic, for reproducible benchmarks;
        the mode search at construction is not charged).
    name : str, default "laplace-t"
        Arm name.

    Attributes
    ----------
    density : ModelDensity
        The compiled model (given, or built from ``model``).
    modes : ModeSearch
        The mode search the proposal is built on.
    mode_weights : ndarray, shape (J,)
        The floored Laplace-evidence weights :math:`\\pi_j`.
    location : ndarray, shape (d,)
        The mode :math:`\\hat x_1` with the highest Laplace evidence.
    covariance : ndarray, shape (d, d)
        Its Laplace covariance :math:`\\Sigma_1 = P_1^{-1}`.
    scale : ndarray, shape (d, d)
        Its t scale matrix ``inflation * covariance``.
    log_z_laplace : float
        Its Laplace approximation
        :math:`\\log\\tilde p(\\hat x_1) + \\tfrac d2\\log 2\\pi + \\tfrac12\\log|\\Sigma_1|`
        (deterministic, biased; a diagnostic only).
    expected_seconds : float
        Wall seconds of one warm-up :meth:`draw` made at construction, after
        compilation (:func:`time.perf_counter`).
    unbiased : bool
        ``True``: ``exp(values)`` are unbiased estimates of Z.

    Raises
    ------
    NoInteriorModeError
        (a ``ValueError``) when the mode search finds no interior mode (see
        ``find_modes``: e.g. a centred hierarchical model whose density grows without
        bound as a group scale goes to 0); its ``reason`` says what the search saw.
        No degenerate proposal is built.

    Notes
    -----
    Diagnostics per pull: ``ess_fraction`` (Kish's :math:`(\\sum w)^2/(n\\sum w^2)`),
    ``max_weight_fraction`` and ``defensive_weight_fraction``, the share of the pull's
    total weight carried by its prior draws. Its expectation is
    :math:`\\alpha \\int p\\, \\tilde p / q \\,/\\, Z`: about :math:`\\alpha` times the prior
    mass of the posterior's bulk when the t mixture covers the posterior (prior draws
    elsewhere weigh ~0), and large when prior draws find mass the t components miss
    (a mode the search did not find); ``outside_float_range``, the draws given weight 0 by the
    rule of :meth:`~pmcbandit.arms.evidence.model_density.ModelDensity.outside_float_range`
    (a prior draw of the defensive component that floating point cannot hold). A draw where
    the model log density is ``-inf`` gets weight 0; a NaN or ``+inf`` log density at any
    other draw raises ``FloatingPointError``, as no weight would be correct.
    """

    log_scale = True
    unbiased = True
    family = "importance"
    importance_weights = True
    thread_safe = False  # the density's prior sampler reseeds shared random states per call
    diagnostics = ("ess_fraction", "max_weight_fraction", "defensive_weight_fraction", "outside_float_range",
                   "post_loglik", "post_loglik_sd")

    def __init__(
        self,
        model,
        batch_size: int = 1000,
        df: float = 5.0,
        inflation: float = 1.2,
        *,
        defensive: float = 0.1,
        modes: ModeSearch | None = None,
        n_starts: int = 16,
        rng: np.random.Generator | None = None,
        mode: str | None = None,
        cost: str = "cpu_seconds",
        name: str = "laplace-t",
    ):
        door = "LaplaceISArm"
        self.batch_size = int(check_positive(batch_size, "batch_size", door, integer=True))
        self.df = float(check_positive(df, "df", door))
        self.inflation = float(check_positive(inflation, "inflation", door))
        self.defensive = float(check_positive(defensive, "defensive", door, allow_zero=True))
        if self.defensive >= 1.0:
            raise ValueError(f"The 'defensive' parameter of {door} must be in [0, 1). Got {defensive!r} instead.")
        self.cost = check_choice(cost, ("cpu_seconds", "logp_evals"), "cost", door)
        self.cost_unit = "logp_evals" if self.cost == "logp_evals" else "cpu_seconds"
        if not isinstance(name, str) or not name:
            raise TypeError(f"The 'name' parameter of {door} must be a non-empty str. Got {name!r} instead.")
        self.name = name
        if modes is not None and not isinstance(modes, ModeSearch):
            raise TypeError(
                f"The 'modes' parameter of {door} must be a ModeSearch (from find_modes) or None. "
                f"Got {modes!r} instead."
            )
        n_starts = int(check_positive(n_starts, "n_starts", door, integer=True))
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(
                f"The 'rng' parameter of {door} must be a numpy.random.Generator or None. Got {rng!r} instead."
            )
        # Cheap arguments are checked first: compiling the model takes seconds.
        self.density = model if isinstance(model, ModelDensity) else ModelDensity(check_model(model, door))
        self.model = self.density.model
        self.dim = self.density.dim
        if modes is None:
            modes = find_modes(self.density, n_starts, rng)
        elif any(m.location.shape != (self.dim,) for m in modes.modes):
            raise ValueError(
                f"The 'modes' parameter of {door} must be a mode search of this model (dimension "
                f"{self.dim}). Got modes of shape {modes.modes[0].location.shape} instead."
            )
        if not modes.interior:
            raise NoInteriorModeError(modes.reason)
        self._compile_mode = mode
        self._batch_terms = self.density.compile_logp_terms_batch(mode)
        self._set_proposal(modes)
        warm = np.random.default_rng(0)
        # The first, untimed call makes the first calls of the compiled functions; the second is a pull.
        for call in (lambda: self._log_weights(warm, 2), lambda: self.draw(warm)):
            start = time.perf_counter()
            try:
                call()
            except FloatingPointError:
                pass  # reported by the pulls themselves; the time spent is still the cost of one
        self.expected_seconds = time.perf_counter() - start
        self.draw_store = DrawReservoir()  # the timing pulls' draws are not the run's

    def _set_proposal(self, modes: ModeSearch) -> None:
        """Build the t mixture over ``modes`` (the proposal of the class docstring)."""
        self.modes = modes
        self._components = [_t_component(m.precision, m.location, self.inflation) for m in modes.modes]
        log_z = np.array([m.log_laplace for m in modes.modes])
        n_modes = len(modes.modes)
        # A moment fit (moment_fit) has no Laplace evidence: its components share evenly.
        share = np.exp(log_z - logsumexp(log_z)) if np.isfinite(log_z).all() else np.full(n_modes, 1.0 / n_modes)
        self.mode_weights = (1.0 - MODE_WEIGHT_FLOOR) * share + MODE_WEIGHT_FLOOR / n_modes
        probs = (1.0 - self.defensive) * self.mode_weights
        if self.defensive > 0.0:
            probs = np.append(probs, self.defensive)
        self._probs = probs / probs.sum()
        self._log_probs = np.log(self._probs)  # every share is > 0: floored modes, alpha only if > 0
        best = self._components[0]
        self.location, self.covariance, self.scale = modes.modes[0].location, best.covariance, best.scale
        self._chol, self._log_det_scale = best.chol, best.log_det_scale
        self.log_z_laplace = float(modes.modes[0].log_laplace)

    def with_modes(self, modes: ModeSearch, name: str | None = None) -> "LaplaceISArm":
        """A copy of this arm with its t mixture built over ``modes`` instead (e.g. a :func:`moment_fit`), sharing
        the compiled density, the settings and ``expected_seconds`` (a pull draws and evaluates as many points).
        The proposal must be fixed before the copy's first pull for its weights to stay unbiased.
        """
        if not isinstance(modes, ModeSearch) or any(m.location.shape != (self.dim,) for m in modes.modes):
            raise TypeError(f"The 'modes' parameter of LaplaceISArm.with_modes must be a ModeSearch of dimension "
                            f"{self.dim}. Got {modes!r} instead.")
        if not modes.interior:
            raise NoInteriorModeError(modes.reason)
        # Not copy.copy: it goes through __getstate__/__setstate__, which compile the batched density again.
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin._set_proposal(modes)
        twin.draw_store = DrawReservoir()
        if name is not None:
            twin.name = name
        return twin

    def weighted_draws(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(x, log_w)``: ``size`` i.i.d. proposal points (shape ``(size, d)``) and their log importance weights
        (``-inf`` where the point is outside the float range, :meth:`ModelDensity.outside_float_range`).
        """
        log_w, _, x, _, _ = self._log_weights(rng, size)
        return x, log_w

    def __getstate__(self):
        # The batched density is a compiled function: a worker compiles its own from the density
        # (which itself pickles as its pm.Model, ModelDensity "Pickling").
        state = dict(self.__dict__)
        state.pop("_batch_terms", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._batch_terms = self.density.compile_logp_terms_batch(self._compile_mode)
        try:
            self._log_weights(np.random.default_rng(0), 2)  # first calls of the compiled functions
        except FloatingPointError:
            pass

    def _draw_points(self, rng: np.random.Generator, size: int):
        """``(x, labels, log q(x) or None)``: i.i.d. draws from q and their components."""
        single = len(self._probs) == 1
        labels = np.zeros(size, dtype=np.intp) if single else rng.choice(len(self._probs), size=size, p=self._probs)
        x = np.empty((size, self.dim))
        log_q = None
        for j, comp in enumerate(self._components):
            idx = np.flatnonzero(labels == j) if not single else slice(None)
            n = size if single else idx.size
            if n:
                x[idx], r2 = comp.draw(rng, n, self.df)
                if single:
                    # One t component: its radius from the draw is exact, no whitening needed.
                    log_q = multivariate_t_logpdf_from_radius(r2, self.df, self.dim, comp.log_det_scale)
        if self.defensive > 0.0:
            idx = np.flatnonzero(labels == len(self._components))
            if idx.size:
                x[idx] = self.density.sample_prior(rng, idx.size)
        return x, labels, log_q

    def _log_q(self, x: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
        """:math:`\\log q(x)` by log-sum-exp over the t components and the prior."""
        terms = [lp + comp.log_pdf(x, self.df) for lp, comp in zip(self._log_probs, self._components)]
        if self.defensive > 0.0:
            terms.append(self._log_probs[-1] + log_prior)
        return logsumexp(np.vstack(terms), axis=0)

    def _draw_with_terms(self, rng: np.random.Generator, size: int):
        x, labels, log_q = self._draw_points(rng, size)
        log_prior, log_lik = self._batch_terms(x)
        if log_q is None:
            with np.errstate(invalid="ignore"):  # a NaN log prior fails the weight check instead
                log_q = self._log_q(x, log_prior)
        return x, labels, log_q, log_prior, log_lik

    def sample(self, rng: np.random.Generator, size: int):
        """Draw ``size`` i.i.d. proposal points; return ``(x, log q(x))``, ``x`` of shape (size, d).

        A t component draws :math:`x = \\hat x_j + L_j z \\sqrt{\\nu/u}`,
        :math:`z \\sim N(0, I)`, :math:`u \\sim \\chi^2_\\nu`, :math:`L_jL_j^\\top = c\\Sigma_j`;
        the defensive component draws from the prior. :math:`\\log q` needs
        :math:`\\log p(x)`, so the model is evaluated at the points.
        """
        x, _, log_q, _, _ = self._draw_with_terms(rng, size)
        return x, log_q

    def _log_weights(self, rng: np.random.Generator, size: int):
        x, labels, log_q, log_prior, log_lik = self._draw_with_terms(rng, size)
        log_p = log_prior + log_lik
        lost = self.density.outside_float_range(x)
        log_p[lost] = -np.inf
        bad = np.isnan(log_p) | (log_p == np.inf)
        if bad.any():
            raise FloatingPointError(
                f"arm {self.name!r}: the model log density is NaN or +inf at "
                f"{int(bad.sum())} of {size} proposal points (e.g. x={x[np.argmax(bad)]!r}); "
                "no importance weight is defined there"
            )
        with np.errstate(invalid="ignore"):  # -inf - (-inf) where the point is lost: set just below
            log_w = log_p - log_q
        log_w[lost] = -np.inf
        return log_w, labels == len(self._components), x, lost, log_lik

    def log_weights(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` i.i.d. log importance weights :math:`\\log\\tilde p(x_i) - \\log q(x_i)`, :math:`x_i \\sim q`."""
        return self._log_weights(rng, size)[0]

    def draw(self, rng: np.random.Generator):
        log_w, from_prior, x, lost, log_lik = self._log_weights(rng, self.batch_size)
        keep_draws(self, rng, x, log_w)  # posterior draws as a by-product (_draws; a child stream)
        top = float(np.max(log_w))
        if np.isfinite(top):
            # Weights relative to the largest, so nothing overflows: ESS = (sum w)^2 / sum w^2.
            w = np.exp(log_w - top)
            total = float(np.sum(w))
            ess_fraction = total * total / float(np.dot(w, w)) / w.size
            max_fraction = 1.0 / total
            defensive_fraction = float(np.sum(w[from_prior])) / total
        else:
            ess_fraction, max_fraction, defensive_fraction = 0.0, float("nan"), float("nan")
        info = {"ess_fraction": ess_fraction, "max_weight_fraction": max_fraction,
                "defensive_weight_fraction": defensive_fraction, "outside_float_range": float(lost.sum()),
                **weighted_loglik(log_w, log_lik)}
        return log_w, info, (float(self.batch_size) if self.cost == "logp_evals" else None)


def moment_fit(mean, cov, n_draws: int, source: str) -> ModeSearch:
    """A :class:`~pmcbandit.arms.evidence.modes.ModeSearch` of one component at a posterior ``mean`` with the inverse
    of ``cov`` as precision, for a :class:`LaplaceISArm` whose t proposal matches posterior moments instead of a
    mode's curvature (moment-matched importance sampling, as the proposal matched to the first two moments of
    posterior draws in Gronau et al. 2017, "A tutorial on bridge sampling", J. Math. Psych. 81).

    The moments must come from draws made before, and independently of, the arm's pulls (e.g. the HMC pilot,
    :attr:`~pmcbandit.arms.evidence.ais.HMCPilot.posterior_cov`): the proposal is then fixed and every weight
    :math:`\\tilde p(x)/q(x)` is still unbiased for Z. Where the posterior has tails heavier than the t's, or
    several modes the moments average over, the weights fail the Pareto k-hat check like any poor proposal's.

    Raises
    ------
    ValueError
        When ``cov`` is not a finite, positive-definite matrix of the mean's dimension (a coordinate the draws
        never moved), with ``source`` in the message.
    """
    mean = np.asarray(mean, dtype=np.float64)
    cov = np.atleast_2d(np.asarray(cov, dtype=np.float64))
    ok = cov.shape == (mean.size, mean.size) and np.isfinite(cov).all() and np.isfinite(mean).all()
    eigval = np.linalg.eigvalsh(cov) if ok else np.zeros(1)
    if not (ok and eigval.min() > 1e-12 * max(eigval.max(), 1e-300)):
        raise ValueError(f"no moment fit from {source}: its covariance is not finite and positive definite")
    precision = np.linalg.inv(cov)
    mode = Mode(mean, 0.5 * (precision + precision.T), float("nan"), float("nan"))
    return ModeSearch((mode,), True, f"moments of {n_draws} draws of {source}", 0, 0, 1, 0.0)


def _rows_times(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``a @ m.T`` for a thin ``a`` (n x d)."""
    if a.shape[0] <= 4096:
        return a @ m.T
    # Above this size NumPy's BLAS starts worker threads for the thin (n x d) product;
    # their spinning cost ~10x the CPU time of a single-threaded einsum.
    return np.einsum("ij,kj->ik", a, m)


class _TComponent:
    """One t component :math:`t_\\nu(\\hat x, c P^{-1})`: its Cholesky factor and whitening matrix."""

    def __init__(self, location, covariance, scale, chol, whiten, log_det_scale):
        self.location, self.covariance, self.scale = location, covariance, scale
        self.chol, self.whiten, self.log_det_scale = chol, whiten, log_det_scale

    def draw(self, rng, n, df):
        z = rng.standard_normal((n, self.location.size))
        s2 = df / rng.chisquare(df, n)
        x = self.location + _rows_times(z, self.chol) * np.sqrt(s2)[:, None]
        return x, np.einsum("ij,ij->i", z, z) * s2

    def log_pdf(self, x, df):
        white = _rows_times(x - self.location, self.whiten)
        r2 = np.einsum("ij,ij->i", white, white)
        return multivariate_t_logpdf_from_radius(r2, df, self.location.size, self.log_det_scale)


def _t_component(precision, location, inflation) -> _TComponent:
    eigval, eigvec = np.linalg.eigh(precision)
    cov = (eigvec / eigval) @ eigvec.T
    cov = 0.5 * (cov + cov.T)
    scale = inflation * cov
    chol = np.linalg.cholesky(scale)
    whiten = solve_triangular(chol, np.eye(chol.shape[0]), lower=True)
    log_det_scale = 2.0 * float(np.sum(np.log(np.diag(chol))))
    return _TComponent(np.asarray(location), cov, scale, chol, whiten, log_det_scale)
