"""AIS with Hamiltonian Monte Carlo transitions, in numba, and the pilot run that tunes them.

One chain (Neal 2001, Sec. 2): draw :math:`x_0` from the prior, then for :math:`j = 1..n`

.. math:: \\log w \\mathrel{+}= (\\beta_j - \\beta_{j-1})\\, \\ell(x_{j-1}),
   \\qquad x_j \\sim T_j(x_{j-1}, \\cdot) \\ (j < n),

with :math:`T_j` one HMC move (Neal 2011, Sec. 5.3.2) on the tempered density
:math:`\\log\\pi_j(x) = \\log p(x) + \\beta_j \\ell(x)`: a momentum
:math:`r = M_j^{1/2} z` with the diagonal mass matrix :math:`M_j = \\mathrm{diag}(1/v_j)`
and whitened momentum :math:`z \\sim N(0, I)`, ``n_leapfrog`` leapfrog steps of size
:math:`\\epsilon_j u` (:math:`u \\sim U(1 - J, 1 + J)`, :data:`JITTER` :math:`J`, drawn per move:
a jitter that avoids periodic trajectories, Neal 2011, Sec. 5.4.2.2), and a
Metropolis accept/reject on the change of :math:`H(x, r) = -\\log\\pi_j(x) + \\tfrac12
r^\\top M_j^{-1} r`, the momentum negated on rejection. The whitened momentum is partially
refreshed, :math:`z \\leftarrow \\alpha z + \\sqrt{1-\\alpha^2}\\,\\xi` with
:math:`\\xi\\sim N(0, I)` and ``persistence`` :math:`\\alpha` (Horowitz 1991; Neal 2011,
Sec. 5.5.3): :math:`\\alpha = 0` is standard HMC; :math:`\\alpha > 0` lets a chain that lags
behind a contracting target keep moving in the same direction across temperatures. The
augmented state :math:`(x, z)` has the target :math:`\\pi_j(x)\\,N(z; 0, I)`, whose
:math:`z`-part is the same at every temperature, so the AIS weights are those of :math:`x`
alone. The leapfrog map is volume-preserving and reversible with the momentum
flip, so every move leaves :math:`\\pi_j` invariant for any fixed :math:`(\\epsilon_j, v_j)` and
jitter (a mixture of invariant kernels is invariant); the AIS weights are then unbiased
(Neal 2001, Sec. 2-3). With ``n_leapfrog = 1`` and no persistence the move is MALA (the
Metropolis-adjusted Langevin algorithm; Neal 2011, Sec. 5.5.3).

The tempered gradient :math:`\\nabla\\log p + \\beta_j\\nabla\\ell` comes from the model's
``grad_jit_fn(x) -> (logprior, loglik, grad_logprior, grad_loglik)``
(:attr:`~pmcbandit.arms.evidence.model_density.ModelDensity.grad_jit_fn`), which the kernels call as the C
function :attr:`~pmcbandit.arms.evidence.model_density.ModelDensity.grad_terms_fn` (one signature for every model,
so the kernels are compiled once and cached on disk; :mod:`pmcbandit.arms.evidence._kernels`). The current point's
values and gradients are carried along, so a move costs ``n_leapfrog`` evaluations. A proposal
whose tempered density or gradient is not finite is rejected (outside the support); at
:math:`\\beta = 0` the likelihood and its gradient are not used. A chain whose weight becomes
zero stops early; its log weight is ``-inf``, still an unbiased estimate.

:func:`hmc_moves` runs ``n_iter`` moves at one fixed temperature on a set of chains and reports
each move's acceptance probability; the arm's pilot run
(:func:`~pmcbandit.arms.evidence.ais.tune_hmc`) calls it to adapt the step sizes and mass matrices before
any pull.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.arms.evidence._kernels import eval_terms, std_normal, uniform

__all__ = ["ais_hmc_serial", "ais_hmc_parallel", "hmc_moves", "JITTER"]

#: Half-width of the uniform jitter of the step size: :math:`\\epsilon u`, :math:`u \\sim U(1 - J, 1 + J)`.
JITTER = 0.5


@numba.njit(inline="always")
def _tempered(lp, ll, beta):
    if beta == 0.0:
        return lp
    return lp + beta * ll


@numba.njit(inline="always")
def _grad(g_lp, g_ll, i, beta):
    if beta == 0.0:
        return g_lp[i]
    return g_lp[i] + beta * g_ll[i]


@numba.njit(cache=True)
def _eval(grad_fn, x, beta, g_lp, g_ll):
    """Values at ``x`` and the gradients of both terms (into ``g_lp``, ``g_ll``).

    ``ok`` is False when the tempered density or gradient is not finite.
    """
    d = x.shape[0]
    buf = np.empty(2 + 2 * d)
    eval_terms(grad_fn, x, buf)
    lpv = buf[0]
    llv = buf[1]
    ok = np.isfinite(_tempered(lpv, llv, beta))
    for i in range(d):
        g_lp[i] = buf[2 + i]
        g_ll[i] = buf[2 + d + i]
        if not np.isfinite(_grad(g_lp, g_ll, i, beta)):
            ok = False
    return lpv, llv, ok


@numba.njit(cache=True)
def _hmc_move(grad_fn, x, cur, g_lp, g_ll, z, beta, eps, inv_mass, n_leapfrog, persistence, s, work):
    """One HMC move at ``beta`` from ``x`` (values ``cur = [lp, ll]``, gradients ``g_lp``, ``g_ll``,
    whitened momentum ``z``).

    ``x``, ``cur``, ``g_lp`` and ``g_ll`` are updated in place on acceptance and ``z`` always;
    ``work`` is a ``(4, dim)`` work array. Returns (acceptance probability, accepted, evaluations).
    """
    d = x.shape[0]
    xp, gp_lp, gp_ll, r = work[0], work[1], work[2], work[3]
    step = eps * (1.0 - JITTER + 2.0 * JITTER * uniform(s))
    fresh = np.sqrt(1.0 - persistence * persistence)
    kinetic0 = 0.0
    for i in range(d):
        z[i] = persistence * z[i] + fresh * std_normal(s)
        r[i] = z[i] / np.sqrt(inv_mass[i])
        kinetic0 += z[i] * z[i]
        xp[i] = x[i]
        gp_lp[i] = g_lp[i]
        gp_ll[i] = g_ll[i]
    lp = cur[0]
    ll = cur[1]
    ok = True
    evals = 0
    for _ in range(n_leapfrog):
        for i in range(d):
            r[i] += 0.5 * step * _grad(gp_lp, gp_ll, i, beta)
            xp[i] += step * inv_mass[i] * r[i]
        lp, ll, ok = _eval(grad_fn, xp, beta, gp_lp, gp_ll)
        evals += 1
        if not ok:
            break
        for i in range(d):
            r[i] += 0.5 * step * _grad(gp_lp, gp_ll, i, beta)
    u = uniform(s)  # drawn whatever the outcome, so a stream's use does not depend on the path
    if not ok:
        _flip(z)
        return 0.0, False, evals
    kinetic1 = 0.0
    for i in range(d):
        kinetic1 += inv_mass[i] * r[i] * r[i]
    log_alpha = _tempered(lp, ll, beta) - _tempered(cur[0], cur[1], beta) - 0.5 * (kinetic1 - kinetic0)
    if not np.isfinite(log_alpha):  # NaN energy: reject
        _flip(z)
        return 0.0, False, evals
    prob = 1.0 if log_alpha >= 0.0 else np.exp(log_alpha)
    if np.log(u) < log_alpha:
        for i in range(d):
            x[i] = xp[i]
            g_lp[i] = gp_lp[i]
            g_ll[i] = gp_ll[i]
            z[i] = r[i] * np.sqrt(inv_mass[i])
        cur[0] = lp
        cur[1] = ll
        return prob, True, evals
    _flip(z)
    return prob, False, evals


@numba.njit(inline="always")
def _flip(z):
    for i in range(z.shape[0]):
        z[i] = -z[i]


def _ais_hmc(grad_fn, x0, betas, eps, mass_index, inv_mass, n_leapfrog, persistence, seeds, log_w, evals, accepts,
             ll_end):
    n_chains, d = x0.shape
    n = betas.shape[0] - 1
    for c in numba.prange(n_chains):
        x = x0[c].copy()
        s = seeds[c].copy()
        g_lp = np.empty(d)
        g_ll = np.empty(d)
        work = np.empty((4, d))
        z = np.empty(d)
        for i in range(d):
            z[i] = std_normal(s)
        cur = np.empty(2)
        cur[0], cur[1], _ = _eval(grad_fn, x, 1.0, g_lp, g_ll)
        count = 1
        acc = 0
        lw = 0.0
        for j in range(1, n + 1):
            db = betas[j] - betas[j - 1]
            if db != 0.0:
                lw += db * cur[1]
            if lw == -np.inf or j == n:
                break
            _, moved, used = _hmc_move(grad_fn, x, cur, g_lp, g_ll, z, betas[j], eps[j], inv_mass[mass_index[j]],
                                       n_leapfrog, persistence, s, work)
            count += used
            acc += moved
        log_w[c] = lw
        evals[c] = count
        accepts[c] = acc
        ll_end[c] = cur[1]  # the log likelihood at the chain's final state, where its last weight factor was read


ais_hmc_serial = numba.njit(parallel=False, cache=True)(_ais_hmc)
ais_hmc_parallel = numba.njit(parallel=True, cache=True)(_ais_hmc)


@numba.njit(cache=True)
def hmc_moves(grad_fn, x, z, beta, eps, inv_mass, n_leapfrog, persistence, n_iter, seeds, accept_prob):
    """``n_iter`` HMC moves at ``beta`` for every row of ``x`` and whitened momentum ``z`` (updated in place).

    ``accept_prob[c, t]`` receives the acceptance probability of chain ``c``'s move ``t``
    (0 for a proposal outside the support); ``seeds`` (``(n_chains, 4)``) are advanced in place,
    so successive calls continue the streams. Returns the number of evaluations.
    """
    n_chains, d = x.shape
    total = 0
    g_lp = np.empty(d)
    g_ll = np.empty(d)
    work = np.empty((4, d))
    cur = np.empty(2)
    for c in range(n_chains):
        xc = x[c]
        s = seeds[c]
        cur[0], cur[1], ok = _eval(grad_fn, xc, beta, g_lp, g_ll)
        total += 1
        for t in range(n_iter):
            if not ok:
                accept_prob[c, t] = 0.0
                continue
            prob, _, used = _hmc_move(grad_fn, xc, cur, g_lp, g_ll, z[c], beta, eps, inv_mass, n_leapfrog,
                                      persistence, s, work)
            accept_prob[c, t] = prob
            total += used
    return total
