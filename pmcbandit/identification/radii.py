r"""Confidence radii for the mean of i.i.d. rewards: Hoeffding, empirical Bernstein, finite LIL.

Every radius ``u`` bounds the deviation of an arm's empirical mean :math:`\hat\mu_t` after
:math:`t` rewards from its mean :math:`\mu`: :math:`|\hat\mu_t - \mu| \le u` with the stated
probability. Rewards are :math:`\sigma`-sub-Gaussian (:math:`E e^{s(X-\mu)} \le e^{\sigma^2 s^2/2}`);
rewards bounded in :math:`[a, b]` are :math:`(b-a)/2`-sub-Gaussian (Hoeffding's lemma).

``hoeffding(t, delta, sigma)``
    :math:`\sigma\sqrt{2\log(1/\delta)/t}`: one-sided, at one fixed :math:`t`, probability
    :math:`1-\delta` (Hoeffding 1963, Thm 2).
``lucb_radius(t, round, delta, n_arms, sigma)``
    :math:`\sigma\sqrt{2\log(k_1 N r^4/\delta)/t}`, :math:`k_1 = 5/4`: the anytime radius of LUCB1
    (Kalyanakrishnan, Tewari, Auer & Stone 2012, Sec. 3, :math:`\beta(u, t)` with
    :math:`\sqrt{\ln(k_1 n t^4/\delta)/(2u)}` for rewards in [0, 1], i.e. :math:`\sigma = 1/2`),
    a union bound over arms and rounds :math:`r`.
``empirical_bernstein(t, delta, variance, width)``
    :math:`\sqrt{2\hat V_t\log(3/\delta)/t} + 3 R\log(3/\delta)/t` for rewards in a range of width
    :math:`R` with sample variance :math:`\hat V_t` (Audibert, Munos & Szepesvári 2009, Thm 1;
    the bound behind Mnih, Szepesvári & Audibert's 2008 EBStop), at one fixed :math:`t`.
``hoeffding_level(d, t, width)``, ``empirical_bernstein_level(d, t, variance, width)``
    the inverses: the probability :math:`\delta` at which the one-sided Hoeffding bound
    :math:`R\sqrt{\log(1/\delta)/2t}` (rewards in a range of width :math:`R`), or the empirical
    Bernstein bound above, equals a deviation :math:`d`: :math:`e^{-2td^2/R^2}`, and
    :math:`3e^{-x^2}` with :math:`x = \sqrt{\log(3/\delta)}` the positive root of
    :math:`(3R/t)x^2 + \sqrt{2\hat V/t}\,x - d = 0`; 1 when :math:`d \le 0`. Kalyanakrishnan &
    Stone (2010, Sec. 4) invert them to get each arm's :math:`\delta^c_{(i)}`.
``lil(t, omega, sigma, epsilon)``
    the finite law of the iterated logarithm (Jiang, Li & Qiao 2017, Lemma 2.1, from Jamieson,
    Malloy, Nowak & Bubeck 2014, Lemma 3), in the experiments' form (Jiang et al. Sec. 5) that adds
    2 inside the inner logarithm so it is defined for every :math:`t \ge 1` and :math:`\epsilon = 0`:

    .. math:: U(t, \omega) = (1+\sqrt\epsilon)\sqrt{\frac{2\sigma^2(1+\epsilon)}{t}
              \log\frac{\log((1+\epsilon)t + 2)}{\omega}}.

    With :math:`\epsilon \in (0, 1)` and :math:`\omega \in (0, \log(1+\epsilon)/e)`,
    :math:`\hat\mu_t - \mu \le U(t, \omega)` for all :math:`t \ge 1` at once with probability at
    least :math:`1 - c_\epsilon\omega^{1+\epsilon}`, :math:`c_\epsilon = \frac{2+\epsilon}{\epsilon}
    (1/\log(1+\epsilon))^{1+\epsilon}` (:func:`c_epsilon`); the "+2" only widens the radius.
    ``lil_lemma`` is the radius exactly as Lemma 2.1 states it (infinite where it is undefined);
    the algorithms use the "+2" form, as the paper's experiments do.

Parameterisations (:func:`lil_delta`): *faithful* — :math:`\epsilon \in (0, 1)` and the
algorithm's :math:`\delta` chosen so its theorem's error bound is at most the target :math:`\nu`
(:math:`c_\epsilon\delta \le \nu` for lil'RandLUCB, Thm 3.1; :math:`c_\epsilon\delta^{1+\epsilon}/N^\epsilon
\le \nu` for lil'CLUCB, Thm 4.1), with the admissibility condition :math:`\delta < \log(1+\epsilon)/e`
checked; *heuristic* — :math:`\epsilon = 0, \delta = \nu` (Jiang et al. Sec. 5, after Jamieson et
al. 2014), no guarantee.

All radii are numba-compiled scalar functions, so the identification kernels and the
stopping-time simulator call the same code.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["hoeffding", "lucb_radius", "empirical_bernstein", "hoeffding_level", "empirical_bernstein_level", "lil",
           "lil_lemma", "c_epsilon", "lil_delta",
           "check_lil", "LUCB_K1"]

#: The constant of LUCB1's radius (Kalyanakrishnan et al. 2012, Sec. 3).
LUCB_K1 = 1.25


@numba.njit(cache=True)
def hoeffding(t, delta, sigma):
    """:math:`\\sigma\\sqrt{2\\log(1/\\delta)/t}` (module docstring); ``inf`` for ``t = 0``."""
    if t <= 0:
        return np.inf
    return sigma * math.sqrt(2.0 * math.log(1.0 / delta) / t)


@numba.njit(cache=True)
def lucb_radius(t, rnd, delta, n_arms, sigma):
    """LUCB1's :math:`\\sigma\\sqrt{2\\log(k_1 N r^4/\\delta)/t}` at round ``rnd`` (module docstring)."""
    if t <= 0:
        return np.inf
    return sigma * math.sqrt(2.0 * math.log(LUCB_K1 * n_arms * float(rnd) ** 4 / delta) / t)


@numba.njit(cache=True)
def empirical_bernstein(t, delta, variance, width):
    """:math:`\\sqrt{2\\hat V\\log(3/\\delta)/t} + 3R\\log(3/\\delta)/t` (module docstring)."""
    if t <= 0:
        return np.inf
    log_term = math.log(3.0 / delta)
    return math.sqrt(2.0 * max(variance, 0.0) * log_term / t) + 3.0 * width * log_term / t


@numba.njit(cache=True)
def hoeffding_level(d, t, width):
    """:math:`e^{-2td^2/R^2}` for ``d > 0``, else 1: the inverse of the one-sided Hoeffding radius
    (module docstring).
    """
    if d <= 0.0 or t <= 0:
        return 1.0
    return math.exp(-2.0 * t * d * d / (width * width))


@numba.njit(cache=True)
def empirical_bernstein_level(d, t, variance, width):
    r""":math:`\min(1, 3e^{-x^2})`, :math:`x` the root of :math:`(3R/t)x^2 + \sqrt{2\hat V/t}\,x = d`
    (module docstring); the stable form :math:`x = 2d/(b + \sqrt{b^2 + 4ad})` of the quadratic formula.
    """
    if d <= 0.0 or t <= 0:
        return 1.0
    a = 3.0 * width / t
    b = math.sqrt(2.0 * max(variance, 0.0) / t)
    x = 2.0 * d / (b + math.sqrt(b * b + 4.0 * a * d))
    return min(1.0, 3.0 * math.exp(-x * x))


@numba.njit(cache=True)
def lil(t, omega, sigma, epsilon):
    """The finite-LIL radius :math:`U(t, \\omega)` with the "+2" of Jiang et al. Sec. 5 (module docstring)."""
    if t <= 0:
        return np.inf
    inner = math.log((1.0 + epsilon) * t + 2.0) / omega
    return (1.0 + math.sqrt(epsilon)) * math.sqrt(2.0 * sigma * sigma * (1.0 + epsilon) / t * math.log(inner))


@numba.njit(cache=True)
def lil_lemma(t, omega, sigma, epsilon):
    """Lemma 2.1's radius as stated, :math:`\\log\\log((1+\\epsilon)t)` without the "+2": ``inf`` where
    the inner logarithm is not above ``omega`` (small ``t``), where the bound says nothing.
    """
    if t <= 0:
        return np.inf
    outer = math.log((1.0 + epsilon) * t)
    if outer <= omega:
        return np.inf
    return (1.0 + math.sqrt(epsilon)) * math.sqrt(2.0 * sigma * sigma * (1.0 + epsilon) / t * math.log(outer / omega))


def c_epsilon(epsilon: float) -> float:
    """:math:`c_\\epsilon = \\frac{2+\\epsilon}{\\epsilon}(1/\\log(1+\\epsilon))^{1+\\epsilon}` (Lemma 2.1)."""
    return (2.0 + epsilon) / epsilon * (1.0 / math.log1p(epsilon)) ** (1.0 + epsilon)


def check_lil(delta: float, epsilon: float, door: str) -> None:
    """Lemma 2.1's conditions, ``ValueError`` naming the parameter otherwise: :math:`\\epsilon \\in [0, 1)`
    and, for :math:`\\epsilon > 0` (faithful), :math:`\\delta < \\log(1+\\epsilon)/e`.
    """
    if not (isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and 0.0 <= epsilon < 1.0):
        raise ValueError(f"The 'epsilon' parameter of {door} must be in [0, 1). Got {epsilon!r} instead.")
    if epsilon > 0.0 and not delta < math.log1p(epsilon) / math.e:
        raise ValueError(
            f"The 'delta' parameter of {door} must be < log(1 + epsilon) / e = {math.log1p(epsilon) / math.e:.6g} "
            f"for epsilon = {epsilon!r} (Jiang et al. 2017, Lemma 2.1). Got {delta!r} instead."
        )


def lil_delta(nu: float, epsilon: float, theorem: str = "randlucb", n_arms: int = 1) -> float:
    """The largest algorithm :math:`\\delta` whose error bound is at most the target ``nu``.

    ``theorem="randlucb"``: :math:`c_\\epsilon\\delta \\le \\nu` (Thm 3.1, lil'RandLUCB; also used for
    the other LUCB-type algorithms with LIL radii). ``"clucb"``: :math:`c_\\epsilon\\delta^{1+\\epsilon}
    /N^\\epsilon \\le \\nu` (Thm 4.1). ``epsilon = 0`` is the heuristic :math:`\\delta = \\nu`.
    The result is capped just below Lemma 2.1's :math:`\\log(1+\\epsilon)/e`.
    """
    if epsilon == 0.0:
        return float(nu)
    c = c_epsilon(epsilon)
    if theorem == "randlucb":
        delta = nu / c
    elif theorem == "clucb":
        delta = (nu * n_arms**epsilon / c) ** (1.0 / (1.0 + epsilon))
    else:
        raise ValueError(
            f"The 'theorem' parameter of lil_delta must be 'randlucb' or 'clucb'. Got {theorem!r} instead."
        )
    return float(min(delta, math.nextafter(math.log1p(epsilon) / math.e, 0.0)))
