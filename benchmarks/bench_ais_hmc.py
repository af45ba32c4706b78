"""AIS with HMC transitions vs slice and IMH on two hierarchical models: variance x cost per estimate.

Run: ``.venv/bin/python -m benchmarks.bench_ais_hmc [--seconds 20]``. Writes
``benchmarks/results/bench_ais_hmc.md``.

Models (defined here, with their exact log evidence):

``hier100`` (dim 102)
    Centred hierarchical normal with 100 groups: :math:`\\mu\\sim N(0,5^2)`,
    :math:`\\tau\\sim\\text{HalfCauchy}(5)`, :math:`\\theta_j\\sim N(\\mu,\\tau^2)`,
    :math:`y_j\\sim N(\\theta_j, s_j^2)`; data drawn once from ``default_rng([20141010, 100])``
    (:math:`\\mu = 1`, :math:`\\tau = 0.5`, :math:`s_j \\sim U(0.5, 2)`). Reference: :math:`\\theta`
    integrated analytically (:math:`y_j \\mid \\mu,\\tau \\sim N(\\mu, \\tau^2 + s_j^2)`), then
    :math:`\\mu` (:math:`y\\mid\\tau \\sim N(0, D_\\tau + 25\\,\\mathbf 1\\mathbf 1^\\top)`, by the
    matrix determinant lemma), then :math:`\\tau` by 1-D adaptive quadrature (QUADPACK), checked
    by Gauss-Legendre in the HalfCauchy CDF :math:`s = \\tfrac2\\pi\\arctan(\\tau/5)`.
``gamma_poisson20`` (dim 22)
    :math:`a\\sim\\text{Gamma}(2, 1)`, :math:`b\\sim\\text{Gamma}(2, 1)`,
    :math:`\\lambda_j\\sim\\text{Gamma}(a, b)`, :math:`y_j\\sim\\text{Poisson}(\\lambda_j t_j)` for 20
    rates with exposures :math:`t_j\\sim U(0.5, 5)`; data from ``default_rng([20141010, 20])``.
    Reference: :math:`\\lambda` integrated analytically (negative binomial), then 2-D tensor
    Gauss-Legendre in :math:`(\\log a, \\log b)`, checked by refinement.

Each arm makes one-chain AIS estimates (``n_chains`` chains per pull, one weight each) in
round-robin blocks inside one process, so machine load hits all arms alike; the cost is CPU
seconds per estimate (``time.process_time`` around the pull, divided by its chains). The
relative variance is ``var(w) / Z^2`` of the estimates' weights :math:`w` against the reference
:math:`Z`; ``relvar x cost`` is what the bandit minimises (Neufeld et al. 2014, Sec. 3), and
``se(log Z) at T s`` is the SE of one arm's mean over ``T`` CPU seconds,
``sqrt(relvar x cost / T)``. The ``z`` column is ``(log mean w - log Z) / se`` of the
estimates made here. Heavy-tailed weights make the sample variance an underestimate; the
Pareto k-hat of each arm's weights is reported (above 0.7 the variance is not to be trusted).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from scipy import integrate, special

import pmcbandit  # noqa: F401  (configures PyTensor before pymc)
from benchmarks._common import machine, utc_now, write_section

HIER_J, HIER_MU_SD, HIER_TAU_BETA = 100, 5.0, 5.0
GP_J = 20
_F = np.float64


# --- models and references -----------------------------------------------------------------
def hier_data() -> tuple[np.ndarray, np.ndarray]:
    """``(y, s)`` of the 100-group model (module docstring), rounded to 6 decimals."""
    gen = np.random.default_rng([20141010, 100])
    s = gen.uniform(0.5, 2.0, HIER_J)
    theta = 1.0 + 0.5 * gen.normal(size=HIER_J)
    y = theta + s * gen.normal(size=HIER_J)
    return np.round(y, 6), np.round(s, 6)


def hier_model():
    import pymc as pm

    y, s = hier_data()
    with pm.Model() as model:
        mu = pm.Normal("mu", _F(0.0), _F(HIER_MU_SD))
        tau = pm.HalfCauchy("tau", _F(HIER_TAU_BETA))
        theta = pm.Normal("theta", mu, tau, shape=HIER_J)
        pm.Normal("y", theta, s, observed=y)
    return model


def hier_log_marginal(tau: float, y: np.ndarray, s: np.ndarray) -> float:
    """:math:`\\log N(y; 0, D_\\tau + c\\mathbf 1\\mathbf 1^\\top)`, :math:`D_\\tau = \\mathrm{diag}(\\tau^2 + s^2)`."""
    c = HIER_MU_SD**2
    dvec = tau * tau + s * s
    inv = 1.0 / dvec
    k = 1.0 + c * inv.sum()
    logdet = np.log(dvec).sum() + math.log(k)
    quad = (y * y * inv).sum() - c * (y * inv).sum() ** 2 / k
    return -0.5 * (y.size * math.log(2 * math.pi) + logdet + quad)


def _log_half_cauchy(t: float) -> float:
    return math.log(2.0 / (math.pi * HIER_TAU_BETA)) - math.log1p((t / HIER_TAU_BETA) ** 2)


def hier_log_z() -> tuple[float, float]:
    """Reference log Z of ``hier100`` and the difference between its two quadratures."""
    y, s = hier_data()
    grid = np.exp(np.linspace(-12, 6, 4001))
    peak = max(hier_log_marginal(t, y, s) + _log_half_cauchy(t) for t in grid)

    def f(t):
        return math.exp(hier_log_marginal(t, y, s) + _log_half_cauchy(t) - peak)

    mode = grid[int(np.argmax([f(t) for t in grid]))]
    val = sum(integrate.quad(f, a, b, limit=400, epsabs=0, epsrel=1e-12)[0]
              for a, b in ((0.0, mode), (mode, 10 * mode)))
    val += integrate.quad(f, 10 * mode, np.inf, limit=400, epsabs=0, epsrel=1e-12)[0]
    quadpack = peak + math.log(val)
    # Gauss-Legendre in s = (2/pi) arctan(tau / beta): the HalfCauchy prior is uniform in s.
    nodes, weights = np.polynomial.legendre.leggauss(200)
    total = []
    edges = np.linspace(0.0, 1.0, 65)
    for lo, hi in zip(edges[:-1], edges[1:]):
        u = 0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)
        taus = HIER_TAU_BETA * np.tan(0.5 * np.pi * u)
        total.extend(np.log(0.5 * (hi - lo) * weights) + np.array([hier_log_marginal(t, y, s) for t in taus]))
    legendre = float(special.logsumexp(total))
    return quadpack, abs(quadpack - legendre)


def gp_data() -> tuple[np.ndarray, np.ndarray]:
    """``(counts, exposures)`` of the Gamma-Poisson model (module docstring)."""
    gen = np.random.default_rng([20141010, 20])
    t = np.round(gen.uniform(0.5, 5.0, GP_J), 6)
    lam = gen.gamma(3.0, 1.0 / 1.5, GP_J)
    return gen.poisson(lam * t), t


def gp_model():
    import pymc as pm

    y, t = gp_data()
    with pm.Model() as model:
        a = pm.Gamma("a", alpha=_F(2.0), beta=_F(1.0))
        b = pm.Gamma("b", alpha=_F(2.0), beta=_F(1.0))
        lam = pm.Gamma("lam", alpha=a, beta=b, shape=GP_J)
        pm.Poisson("y", lam * t, observed=y)
    return model


def _gp_log_joint(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """log p(y | a, b) p(a) p(b) a b at ``a = e^u``, ``b = e^v`` (lambda integrated out)."""
    y, t = gp_data()
    a, b = np.exp(u)[..., None], np.exp(v)[..., None]
    lik = (y * np.log(t) - special.gammaln(y + 1) + a * np.log(b) - special.gammaln(a)
           + special.gammaln(a + y) - (a + y) * np.log(b + t)).sum(axis=-1)
    prior = 2 * u - np.exp(u) + 2 * v - np.exp(v)  # Gamma(2, 1) densities times the Jacobians a, b
    return lik + prior


def gp_log_z() -> tuple[float, float]:
    """Reference log Z of ``gamma_poisson20`` and the change under refinement."""

    def tensor(nodes, panels, lo=-10.0, hi=8.0):
        x, w = np.polynomial.legendre.leggauss(nodes)
        edges = np.linspace(lo, hi, panels + 1)
        pts = np.concatenate([0.5 * (b - a) * x + 0.5 * (b + a) for a, b in zip(edges[:-1], edges[1:])])
        wts = np.concatenate([0.5 * (b - a) * w for a, b in zip(edges[:-1], edges[1:])])
        uu, vv = np.meshgrid(pts, pts, indexing="ij")
        return float(special.logsumexp(_gp_log_joint(uu, vv) + np.log(wts)[:, None] + np.log(wts)[None, :]))

    coarse, fine = tensor(40, 12), tensor(60, 20, -12.0, 10.0)
    return fine, abs(fine - coarse)


# --- measurement ---------------------------------------------------------------------------
def _arms(model, steps: dict, n_chains: int):
    from pmcbandit.arms.evidence import AISArm, ModelDensity

    density = ModelDensity(model)
    arms, skipped = [], []
    for name, (transition, n, kwargs) in steps.items():
        start = time.process_time()
        try:
            arm = AISArm(density, n_steps=n, n_chains=n_chains, transition=transition, name=name, **kwargs)
        except ValueError as err:
            skipped.append((name, str(err).split(".")[0]))
            continue
        arms.append((arm, time.process_time() - start))
    return density, arms, skipped


def measure(model, log_z: float, steps: dict, seconds: float, n_chains: int, seed: int = 0):
    """Round-robin pulls until each arm has used about ``seconds`` CPU seconds; one row per arm."""
    from pmcbandit.stats.psis import pareto_khat

    density, arms, skipped = _arms(model, steps, n_chains)
    rng = np.random.default_rng(seed)
    logs = {arm.name: [] for arm, _ in arms}
    spent = dict.fromkeys(logs, 0.0)
    accept = {arm.name: [] for arm, _ in arms}
    while min(spent.values()) < seconds:
        for arm, _ in arms:
            if spent[arm.name] >= seconds:
                continue
            start = time.process_time()
            pull = arm.pull(rng)
            spent[arm.name] += time.process_time() - start
            logs[arm.name].append(pull.values)
            accept[arm.name].append(pull.info["accept_rate"])
    rows = []
    for arm, setup in arms:
        lw = np.concatenate(logs[arm.name])
        r = np.exp(lw - log_z)
        relvar = float(r.var(ddof=1))
        own = float(r.var(ddof=1) / r.mean() ** 2) if r.mean() > 0 else math.inf
        cost = spent[arm.name] / lw.size
        mean = float(r.mean())
        se = float(r.std(ddof=1) / math.sqrt(r.size))
        log_mean = math.log(mean) if mean > 0 else -math.inf
        rows.append(dict(
            arm=arm.name, steps=arm.n_steps, setup=setup, estimates=lw.size, cost=cost, relvar=relvar,
            vxc=relvar * cost, own=own, se30=math.sqrt(own * cost / 30.0),
            median=float(np.median(lw - log_z)), log_z=log_z + log_mean,
            log_se=se / mean if mean > 0 else math.inf, z=(log_mean / (se / mean)) if mean > 0 else -math.inf,
            khat=float(pareto_khat(lw)), accept=float(np.mean(accept[arm.name])),
        ))
    return density, rows, skipped


def _table(rows) -> str:
    head = ("| arm | steps | setup CPU s | estimates | CPU s / estimate | relvar | relvar x cost | own relvar "
            "| se(log Z) at 30 s | log Z estimate ± se | z | median | k-hat | accept |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        lines.append(
            f"| {r['arm']} | {r['steps']} | {r['setup']:.1f} | {r['estimates']} | {r['cost']:.3g} | {r['relvar']:.3g} "
            f"| {r['vxc']:.3g} | {r['own']:.3g} | {r['se30']:.3g} | {r['log_z']:.3f} ± {r['log_se']:.3f} | {r['z']:.2f} "
            f"| {r['median']:.2f} "
            f"| {r['khat']:.2f} | {r['accept']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="CPU seconds of estimates per arm")
    parser.add_argument("--chains", type=int, default=2, help="chains (estimates) per pull")
    args = parser.parse_args(argv)
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"] * 3
    sections = []
    hier_ref, hier_err = hier_log_z()
    gp_ref, gp_err = gp_log_z()
    arms = {
        "ais-slice-400": ("slice", 400, {}),
        "ais-slice-2000": ("slice", 2000, {}),
        "ais-imh-2000": ("imh", 2000, {}),
        "ais-hmc-2000": ("hmc", 2000, {}),
        "ais-hmc-2000-p0": ("hmc", 2000, {"hmc_persistence": 0.0}),
        "ais-hmc-8000": ("hmc", 8000, {}),
        "ais-hmc-8000-p0": ("hmc", 8000, {"hmc_persistence": 0.0}),
    }
    suites = [("hier100", hier_model, hier_ref, hier_err, arms), ("gamma_poisson20", gp_model, gp_ref, gp_err, arms)]
    for name, build, ref, err, steps in suites:
        density, rows, skipped = measure(build(), ref, steps, args.seconds, args.chains)
        text = [f"### {name} (dim {density.dim}); exact log Z = {ref:.6f} (quadratures differ by {err:.1e})", "",
                _table(rows)]
        for arm, why in skipped:
            text.append(f"\n{arm}: not built ({why}).")
        sections.append("\n".join(text))
        print(sections[-1], flush=True)
    after = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"] * 3
    body = "\n\n".join(sections)
    markdown = f"""## AIS transitions on hierarchical models: HMC vs slice vs IMH

Command: `.venv/bin/python -m benchmarks.bench_ais_hmc --seconds {args.seconds:g} --chains {args.chains}`;
{machine()}; {utc_now()}; load average {' '.join(load)} before, {' '.join(after)} after (2 cores shared
with other jobs: compare the arms of one table, all measured side by side in the same process).
Cost = CPU seconds per estimate (one chain); relvar = var(w)/Z^2 against the exact Z; setup = CPU
seconds of building the arm (the HMC pilot run, the IMH Laplace fits, the timing probe) on an
already compiled density. HMC arms: 5 leapfrog steps, target acceptance 0.8, momentum
persistence 0.9 (the defaults), or full momentum refreshment (``-p0``, standard HMC). `own relvar` is var(w)/mean(w)^2, what
the bandit sees, and `se at 30 s` is computed from it; `median` is the median of log w - log Z
(how far a typical chain's estimate lies from the truth).

{body}
"""
    print(write_section("bench_ais_hmc", markdown))


if __name__ == "__main__":
    main()
