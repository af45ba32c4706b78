"""Fused CIR path kernel: the recursion of :mod:`models.cir` with the normals drawn in-loop.

The PyTensor scan graph of :mod:`models.cir` takes a ``(n_steps, n_paths)`` matrix of
standard normals drawn beforehand with NumPy; drawing and storing that matrix costs more than
the recursion itself (NumPy's vectorised ziggurat runs at ~6e7 normals/s on the 2-core test
machine, ``benchmarks/results/bench_cir.md``). This kernel draws each normal with the same
:class:`numpy.random.Generator` *inside* a numba loop (numba re-implements NumPy's ziggurat on
the Generator's bit generator, so the stream and its order are exactly those of
``rng.standard_normal((n_steps, n_paths))``) and advances every path as it goes. The result is
identical to the graph's on the same Generator state (tested to 1e-12), at several times the
throughput.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["fused_caplet_paths"]


@nb.njit(cache=True)
def fused_caplet_paths(rng, n_steps, n_paths, theta, strike, r0, eta, kappa, sigma, maturity, nominal):
    """Simulate ``n_paths`` CIR paths under the drift-θ proposal; return ``(w·P, P, S)``.

    Euler scheme with full truncation, ε_t = z_t + θ√Δ with z_t ~ N(0, 1) drawn from ``rng``
    in step-major order: r_t = r_{t−1} + (η − κ r_{t−1}) Δ + σ √(max(r_{t−1}, 0) Δ) ε_t.
    Per path: P = M max(r_n − K, 0) exp(−Δ((r₀ + r_n)/2 + Σ_{t=1}^{n−1} r_t)),
    S = Σ_t ε_t and the likelihood ratio w = exp(−θ√Δ S + θ² T / 2)
    (Neufeld et al. 2014, Sec. 6.2 / App. F; derivation in :mod:`models.cir`).
    """
    dt = maturity / n_steps
    mu = theta * np.sqrt(dt)
    r = np.full(n_paths, r0)
    s = np.zeros(n_paths)
    inner = np.zeros(n_paths)
    for _ in range(n_steps):
        for p in range(n_paths):
            e = rng.standard_normal() + mu
            r_prev = r[p]
            r_next = r_prev + (eta - kappa * r_prev) * dt + sigma * np.sqrt(max(r_prev, 0.0) * dt) * e
            r[p] = r_next
            s[p] = s[p] + e
            inner[p] = inner[p] + r_next
    weighted = np.empty(n_paths)
    payoff = np.empty(n_paths)
    log_w_shift = theta * theta * maturity / 2.0
    for p in range(n_paths):
        r_n = r[p]
        # inner sums r_1..r_n; the trapezoid weighs r_n by 1/2, hence r_n/2 - r_n.
        log_d = -dt * ((r0 + r_n) / 2.0 + inner[p] - r_n)
        payoff[p] = nominal * max(r_n - strike, 0.0) * np.exp(log_d)
        weighted[p] = payoff[p] * np.exp(-mu * s[p] + log_w_shift)
    return weighted, payoff, s
