"""Pareto k-hat (pmcbandit.stats.psis): equal to ArviZ's, exact under chunked accumulation, statistically right.

ArviZ is reached through its public API only (:func:`pmcbandit._compat.arviz_psis_khat`, ArviZ 0.x or 1.x,
whichever is installed); the GPD fit is checked against an independent transcription of Zhang & Stephens (2009)
with the weak prior of Vehtari et al. (2024), :func:`gpd_fit_reference`.
"""

from __future__ import annotations

import io
import math
import re

import numpy as np
import pytest

from pmcbandit._compat import arviz_psis_khat
from pmcbandit.stats.pareto_tail import (TAIL_SHAPE_CAP, _tail_fit, _top_sorted, smoothed_second_moment, tail_excess,
                                         tail_length, too_spread, variance_scale)
from pmcbandit.stats.psis import (KHAT_CAP, KHAT_CAP_COUNT, SPREAD_MIN_WEIGHTS, ArmReliability, WeightTails,
                                   khat_threshold, min_sample_size, pareto_khat)
from tests.tolerance import assert_within_se

MESSAGE = r"The '\w+' parameter of [\w.]+ must be .+\. Got .+ instead\."


def arviz_khat(log_weights: np.ndarray) -> float:
    return arviz_psis_khat(np.array(log_weights, dtype=float))


def gpd_fit_reference(exceedances: np.ndarray) -> tuple[float, float]:
    """Shape and scale of a generalized Pareto fit to sorted positive ``exceedances``: the profile-likelihood
    posterior mean of Zhang & Stephens (2009, Sec. 3: ``m = 30 + sqrt(n)`` grid points ``theta_j``, weights
    proportional to the profile likelihood), the scale ``sigma = -k / theta`` from the unadjusted shape, then the
    shape pulled towards 0.5 by a weak prior worth 10 observations (Vehtari et al. 2024)."""
    x = np.asarray(exceedances, dtype=np.float64)
    n = x.size
    m = 30 + int(math.sqrt(n))
    j = np.arange(1, m + 1, dtype=np.float64)
    theta = 1 / x[-1] + (1 - np.sqrt(m / (j - 0.5))) / (3 * x[int(n / 4 + 0.5) - 1])
    k = np.array([np.mean(np.log1p(-t * x)) for t in theta])
    profile = n * (np.log(-theta / k) - k - 1)
    weight = np.array([1 / np.sum(np.exp(profile - p)) for p in profile])
    keep = weight >= 10 * np.finfo(np.float64).eps
    weight = weight[keep] / weight[keep].sum()
    theta_hat = np.sum(theta[keep] * weight)
    k_hat = np.mean(np.log1p(-theta_hat * x))
    return (n * k_hat + 10 * 0.5) / (n + 10), -k_hat / theta_hat


def sample(kind: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """Log weights: log-normal, Pareto with shape k (log w = k * Exp(1)), |Student-t_3|, with zeros."""
    if kind == "lognormal":
        return 1.5 * rng.standard_normal(size)
    if kind.startswith("pareto"):
        return float(kind[len("pareto") :]) * rng.standard_exponential(size)
    if kind == "student_t":
        return np.log(np.abs(rng.standard_t(3, size)))
    if kind == "zeros":  # a third of the weights are exactly zero
        x = rng.standard_normal(size)
        x[rng.random(size) < 1 / 3] = -np.inf
        return x
    if kind == "ties":  # coarse log weights: many ties, also at the cutoff
        return np.round(rng.standard_normal(size), 1)
    raise ValueError(kind)


def reference_khat(x: np.ndarray) -> float:
    """k-hat of the reference fit to the exceedances over the (M+1)-th largest weight, M = ceil(min(S/5, 3 sqrt(S)))
    (weights tied with the cutoff, or below it after underflow, exceed it by nothing: not in the tail)."""
    top = np.sort(x[np.isfinite(x)])[-(tail_length(x.size) + 1):]
    exceedances = np.exp(top[1:] - top[-1]) - np.exp(top[0] - top[-1])
    with np.errstate(all="ignore"):
        return gpd_fit_reference(exceedances[exceedances > 0])[0]


KINDS = ["lognormal", "pareto0.2", "pareto0.5", "pareto0.8", "pareto1.2", "student_t", "zeros", "ties"]


# ArviZ 0.x keeps ceil(min(S/5, 3 sqrt(S))) weights in the tail, ArviZ 1.x floor(...): at these sizes the two
# agree (S/5 or 3 sqrt(S) is whole), so either version's k-hat is pmcbandit's to rounding.
@pytest.mark.parametrize("size", [30, 100, 900, 10**4])
def test_pareto_khat_matches_arviz(size):
    rng = np.random.default_rng(size)
    for kind in KINDS:
        x = sample(kind, size, rng)
        if kind == "ties":  # which of equal weights at the cutoff enter the tail differs between ArviZ versions
            continue
        expected = arviz_khat(x)
        assert math.isfinite(expected), kind
        assert pareto_khat(x) == pytest.approx(expected, abs=1e-8, rel=0), kind
        # Only relative weights matter: a common shift leaves k-hat unchanged.
        assert pareto_khat(x - 700.0) == pytest.approx(expected, abs=1e-8, rel=0), kind


@pytest.mark.parametrize("size", [30, 1000, 10**5])
def test_pareto_khat_is_the_gpd_fit_of_the_tail(size):
    """Every kind (ties included) and sizes where ArviZ's versions round the tail length apart: the reference fit
    of the exceedances over the (M+1)-th largest weight, M = ceil(min(S/5, 3 sqrt(S)))."""
    rng = np.random.default_rng(size + 1)
    for kind in KINDS:
        x = sample(kind, size, rng)
        assert pareto_khat(x) == pytest.approx(reference_khat(x), abs=1e-8, rel=0), kind


def test_pareto_khat_too_short_tail_is_inf():
    rng = np.random.default_rng(1)
    assert pareto_khat([0.3]) == math.inf  # ArviZ itself fails on one value
    for x in ([0.0, 1.0], rng.standard_normal(20), np.r_[np.full(50, -np.inf), 1.0, 2.0, 3.0, 4.0]):
        assert pareto_khat(x) == math.inf  # ArviZ 0.x says inf too; ArviZ 1.3 raises IndexError on these
    assert pareto_khat(np.full(500, -np.inf)) == math.inf  # all weights zero
    # Weights below the smallest double relative to the largest never enter the tail.
    far = np.r_[np.zeros(6), np.full(994, -800.0)]
    assert pareto_khat(far) == pytest.approx(reference_khat(far), abs=1e-8)


def test_tail_length_rule():
    assert [tail_length(s) for s in (5, 30, 100, 225, 226, 10**4)] == [1, 6, 20, 45, 46, 300]


def chunked(x: np.ndarray, sizes: list[int]):
    start = 0
    for size in sizes:
        yield x[start : start + size]
        start += size
    yield x[start:]


@pytest.mark.parametrize("capacity, size", [(64, 420), (256, 5000)])
def test_weight_tails_equals_pareto_khat_of_concatenation(capacity, size):
    rng = np.random.default_rng(capacity)
    x = sample("zeros", size, rng)
    chunkings = {
        "ones": [1] * size,
        "random": list(rng.integers(0, 40, size=size // 10)),
        "one": [size],
        "halves": [size // 2, 0, size // 2],
    }
    for name, sizes in chunkings.items():
        wt = WeightTails(2, capacity=capacity, min_weights=30, refit_growth=0.0)
        seen = 0
        for chunk in chunked(x, sizes):
            wt.add(1, chunk if chunk.size != 1 else float(chunk[0]))
            seen += chunk.size
            if seen >= 30 and (name != "ones" or seen % 37 == 0):
                assert tail_length(seen) + 1 <= capacity
                assert wt.khat(1) == pareto_khat(x[:seen]), (name, seen)
        assert wt.counts.tolist() == [0, size]
        kept = np.sort(wt._buf[1, : wt._fill[1]])[-capacity:]
        finite = np.sort(x[np.isfinite(x)])
        assert finite.size > 2 * capacity > wt._fill[1]  # compactions happened
        np.testing.assert_array_equal(kept, finite[-capacity:])  # exactly the top `capacity`
        assert math.isnan(wt.khat(0))


def test_weight_tails_capacity_caps_the_tail():
    rng = np.random.default_rng(7)
    capacity, x = 32, sample("pareto0.5", 2000, rng)
    wt = WeightTails(1, capacity=capacity, refit_growth=0.0)
    for chunk in np.array_split(x, 13):
        wt.add(0, chunk)
    assert tail_length(x.size) + 1 > capacity
    top = np.sort(x)[-capacity:]
    exceedances = np.exp(top[1:] - top[-1]) - np.exp(top[0] - top[-1])
    assert wt.khat(0) == pytest.approx(gpd_fit_reference(exceedances)[0], abs=1e-10)
    assert wt.khat(0) != pytest.approx(pareto_khat(x), abs=1e-3)


@pytest.mark.parametrize("k", [0.2, 0.5, 0.8, 1.2])
def test_khat_recovers_known_pareto_shape(k):
    # Above the (M+1)-th order statistic u, the M largest of a Pareto(1/k) sample are i.i.d.
    # GPD(shape k, scale k u) exceedances, whose shape estimate has asymptotic SE (1 + k)/sqrt(M)
    # (the GPD Fisher information; Zhang & Stephens' estimator is asymptotically as efficient).
    rng = np.random.default_rng(int(100 * k))
    size = 10**5
    wt = WeightTails(1)
    for chunk in np.array_split(k * rng.standard_exponential(size), 100):
        wt.add(0, chunk)
    m = tail_length(size)
    assert_within_se(wt.khat(0), k, (1 + k) / math.sqrt(m), f"k = {k}, M = {m}")


def test_thresholds():
    assert khat_threshold(100) == pytest.approx(0.5)
    assert khat_threshold(10) == pytest.approx(0.0)
    assert khat_threshold(1000) == pytest.approx(2 / 3)
    assert khat_threshold(2154) < 0.7 and khat_threshold(2155) == 0.7 and khat_threshold(10**7) == 0.7
    assert min_sample_size(0.5) == pytest.approx(100)
    assert min_sample_size(0.0) == pytest.approx(10)
    assert min_sample_size(0.7) == pytest.approx(10 ** (1 / 0.3))
    assert min_sample_size(1.0) == math.inf and min_sample_size(3) == math.inf
    for k in (0.1, 0.5, 0.65):
        assert khat_threshold(min_sample_size(k)) == pytest.approx(k)


def test_unreliable_rule():
    rng = np.random.default_rng(3)
    wt = WeightTails(3)
    wt.add(0, 0.9 * rng.standard_exponential(5000))  # k = 0.9 > 0.7: infinite variance
    wt.add(1, 0.5 * rng.standard_normal(5000))  # log-normal: k-hat near 0
    wt.add(2, 0.9 * rng.standard_exponential(99))  # too few weights to judge
    assert wt.unreliable(0) and not wt.unreliable(1) and not wt.unreliable(2)
    assert wt.threshold(0) == 0.7 and math.isnan(wt.khat(2))
    wt.add(2, 0.0)
    assert wt.threshold(2) == pytest.approx(0.5) and math.isfinite(wt.khat(2))
    khats = wt.khats()
    assert khats.shape == (3,) and khats[0] > 0.7 > 0.3 > khats[1]
    assert math.isnan(WeightTails(1).threshold(0))


def test_refit_schedule_is_deterministic_and_cached():
    rng = np.random.default_rng(11)
    x = sample("pareto0.5", 2000, rng)
    wt = WeightTails(1)  # refit_growth = 0.1
    wt.add(0, x[:1000])
    first = wt.khat(0)
    wt.add(0, x[1000:1099])
    assert wt.khat(0) == first and wt.fit_counts.tolist() == [1000]
    wt.add(0, x[1099:1100])
    assert wt.khat(0) == pareto_khat(x[:1100]) and wt.fit_counts.tolist() == [1100]
    wt.add(0, x[1100:1200])
    assert wt.khat(0, refresh=True) == pareto_khat(x[:1200])


def test_checkpoint_round_trip_gives_identical_later_khats():
    rng = np.random.default_rng(13)
    batches = [sample("zeros", int(n), rng) for n in rng.integers(1, 300, size=60)]
    live = WeightTails(2, capacity=128, min_weights=50)
    for i, batch in enumerate(batches[:30]):
        live.add(i % 2, batch)
        live.khat(i % 2)
    buffer = io.BytesIO()
    np.savez(buffer, other=np.arange(3), **live.to_npz_dict("tails/"))
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as data:
        restored = WeightTails.from_npz_dict(data, "tails/")
    for i, batch in enumerate(batches[30:]):
        for wt in (live, restored):
            wt.add(i % 3 % 2, batch)
        np.testing.assert_array_equal(restored.khats(), live.khats())
        np.testing.assert_array_equal(restored.fit_counts, live.fit_counts)
        np.testing.assert_array_equal(restored.counts, live.counts)


def test_bad_arguments_raise_with_message_shape():
    cases = [
        (ValueError, lambda: pareto_khat([])),
        (ValueError, lambda: pareto_khat([0.0, np.nan, 1.0])),
        (ValueError, lambda: pareto_khat([0.0, np.inf])),
        (ValueError, lambda: pareto_khat(np.zeros((3, 3)))),
        (TypeError, lambda: pareto_khat(["a", "b"])),
        (TypeError, lambda: pareto_khat([True, False])),
        (ValueError, lambda: khat_threshold(1)),
        (TypeError, lambda: khat_threshold("100")),
        (ValueError, lambda: min_sample_size(math.nan)),
        (TypeError, lambda: min_sample_size(None)),
        (ValueError, lambda: WeightTails(0)),
        (TypeError, lambda: WeightTails(1.5)),
        (ValueError, lambda: WeightTails(1, capacity=5)),
        (ValueError, lambda: WeightTails(1, min_weights=0)),
        (ValueError, lambda: WeightTails(1, refit_growth=-0.1)),
        (ValueError, lambda: WeightTails(2).add(2, [0.0])),
        (TypeError, lambda: WeightTails(2).khat("0")),
        (ValueError, lambda: WeightTails(2).add(0, np.zeros((2, 2)))),
        (ValueError, lambda: WeightTails.from_npz_dict({"x": np.zeros(1)})),
    ]
    for error, call in cases:
        with pytest.raises(error, match=MESSAGE):
            call()


def test_faulty_batch_leaves_state_unchanged():
    wt = WeightTails(1, capacity=8)
    wt.add(0, np.arange(20.0))
    before = wt.to_npz_dict()
    with pytest.raises(ValueError, match=re.escape("Got 'nan at index 2' instead")):
        wt.add(0, [30.0, 31.0, np.nan])
    after = wt.to_npz_dict()
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value)


def test_hopeless_needs_the_capped_threshold_or_a_khat_of_one():
    rng = np.random.default_rng(11)
    wt = WeightTails(3)
    wt.add(0, 0.9 * rng.standard_exponential(KHAT_CAP_COUNT))  # k = 0.9 on enough draws
    wt.add(1, 0.9 * rng.standard_exponential(KHAT_CAP_COUNT - 1))  # the same, one draw short
    wt.add(2, 3.0 * rng.standard_exponential(500))  # k = 3: no finite mean, whatever the count
    assert wt.khat(0) > KHAT_CAP and wt.hopeless(0)
    assert wt.khat(1) > KHAT_CAP and wt.unreliable(1) and not wt.hopeless(1)
    assert wt.khat(2) >= 1.0 and wt.hopeless(2)
    assert not WeightTails(1).hopeless(0)  # no k-hat yet


def test_untrusted_is_unreliable_or_too_spread_for_the_count():
    rng = np.random.default_rng(12)
    wt = WeightTails(5)
    wt.add(0, 0.9 * rng.standard_exponential(500))  # k-hat above the threshold, in play (short of draws)
    wt.add(1, 0.5 * rng.standard_normal(500))  # k-hat near 0
    wt.add(2, np.sqrt(10.0) * rng.standard_normal(50))  # no k-hat yet; s^2/2 near 5 > log 50
    wt.add(3, rng.standard_normal(50))  # no k-hat yet; s^2/2 near 1/2 < log 50
    wt.add(4, np.sqrt(10.0) * rng.standard_normal(SPREAD_MIN_WEIGHTS - 1))  # too few for the spread rule
    assert wt.unreliable(0) and not wt.hopeless(0)
    assert [wt.untrusted(a) for a in range(5)] == [True, False, True, False, False]
    # One rule with the combination's: the spread test is ArmReliability.undersampled's.
    lw_var = np.array([np.nan, np.nan, wt.log_weight_variance(2), wt.log_weight_variance(3), np.nan])
    rel = ArmReliability(np.array([wt.khat(0), wt.khat(1), np.nan, np.nan, np.nan]), np.full(5, 0.5), wt.counts,
                         np.zeros(5, dtype=bool), lw_var)
    assert rel.undersampled.tolist() == [False, False, True, False, False]
    assert too_spread([10.0, 1.0, np.nan], [50, 50, 50]).tolist() == [True, False, False]


def _pareto_run_flags(rng, k, n=1000, batch=100):
    """Whether a run's weights (Pareto of shape k, fed in batches) were ever above the threshold, and ever hopeless."""
    wt = WeightTails(1)
    above = hopeless = False
    for _ in range(n // batch):
        wt.add(0, -k * np.log(rng.random(batch)))
        above |= wt.unreliable(0)
        hopeless |= wt.hopeless(0)
    return above, hopeless


def test_a_good_proposal_is_often_above_the_threshold_on_the_way_but_never_hopeless():
    """True k = 0.3: reliable from 10^(1/0.7) ~ 27 draws on. Refitted as the weights grow, its k-hat crosses the
    sample-size threshold in some of 40 runs (a rule that flagged at the first crossing would lose it there), and is
    hopeless in none."""
    rng = np.random.default_rng(5)
    flags = np.array([_pareto_run_flags(rng, 0.3) for _ in range(40)])
    assert flags[:, 0].sum() >= 4
    assert flags[:, 1].sum() == 0


def test_tail_fit_is_the_reference_gpd_fit():
    """The shape and the scale of the tail fit are the reference's (the scale from the shape before its prior)."""
    rng = np.random.default_rng(3)
    for kind in ("lognormal", "pareto0.2", "pareto0.5", "student_t", "zeros"):
        x = sample(kind, 10**4, rng)
        top = _top_sorted(x, tail_length(x.size) + 1)
        k, sigma, cut, n = _tail_fit(top)
        assert n == tail_length(x.size) and cut == pytest.approx(math.exp(top[0] - top[-1]), rel=1e-12)
        with np.errstate(all="ignore"):
            k_az, sigma_az = gpd_fit_reference(np.exp(top[1:] - top[-1]) - cut)
        assert k == pytest.approx(k_az, abs=1e-8) and sigma == pytest.approx(sigma_az, rel=1e-8), kind


def test_tail_excess_is_the_fitted_tails_second_moment_beyond_the_observed_one():
    rng = np.random.default_rng(4)
    x = sample("pareto0.35", 5000, rng)
    top = _top_sorted(x, tail_length(x.size) + 1)
    k, sigma, cut, n = _tail_fit(top)
    shape = min(k, TAIL_SHAPE_CAP)
    m2 = cut**2 + 2 * cut * sigma / (1 - shape) + 2 * sigma**2 / ((1 - shape) * (1 - 2 * shape))
    observed = np.exp(2 * (top[1:] - top[-1])).sum()
    assert n * m2 > observed
    assert tail_excess(x) == pytest.approx(math.log(n * m2 - observed) + 2 * top[-1], rel=1e-12)
    # in the units of the weights: scaling them by e^c scales the second moment by e^{2c}
    assert tail_excess(x + 5.0) == pytest.approx(tail_excess(x) + 10.0, abs=1e-9)
    assert math.isnan(tail_excess(x[:99]))
    # a shape above the cap is read at the cap: the moment stays finite
    heavy = sample("pareto0.8", 5000, rng)
    assert pareto_khat(heavy) > TAIL_SHAPE_CAP and tail_excess(heavy) < math.inf
    with pytest.raises(ValueError, match=MESSAGE):
        tail_excess(np.array([0.0, np.nan] * 60))


def test_smoothed_second_moment_is_the_mean_square_of_the_fitted_quantiles():
    from scipy import stats

    for k, sigma, cut, n in [(0.6, 0.3, 0.1, 150), (0.7, 1.0, 0.0, 40), (-0.2, 0.5, 0.2, 30)]:
        q = cut + stats.genpareto(k, scale=sigma).ppf((np.arange(1, n + 1) - 0.5) / n)
        assert smoothed_second_moment(k, sigma, cut, n) == pytest.approx(float(np.mean(q**2)), rel=1e-12)


def test_a_shape_above_the_cap_is_read_at_the_larger_of_the_capped_and_the_smoothed_moment():
    rng = np.random.default_rng(6)
    for law in ("pareto0.6", "pareto0.7"):
        x = sample(law, 20000, rng)
        top = _top_sorted(x, tail_length(x.size) + 1)
        k, sigma, cut, n = _tail_fit(top)
        assert k > TAIL_SHAPE_CAP
        s = TAIL_SHAPE_CAP
        capped = cut**2 + 2 * cut * sigma / (1 - s) + 2 * sigma**2 / ((1 - s) * (1 - 2 * s))
        m2 = max(capped, smoothed_second_moment(k, sigma, cut, n))
        observed = np.exp(2 * (top[1:] - top[-1])).sum()
        assert tail_excess(x) == pytest.approx(math.log(n * m2 - observed) + 2 * top[-1], rel=1e-12)


@pytest.mark.parametrize("k, lo, hi", [(0.1, 1.0, 1.02), (0.45, 1.15, math.inf)])
def test_tail_share_of_the_variance_is_nothing_for_light_tails_and_large_near_one_half(k, lo, hi):
    """Median over 40 samples of the weights' variance with the fitted tail, over their sample variance."""
    rng = np.random.default_rng(5)
    ratios = []
    for _ in range(40):
        w = np.exp(sample(f"pareto{k}", 20000, rng))
        var = w.var(ddof=1)
        ratios.append(1.0 + math.exp(tail_excess(np.log(w))) / (w.size - 1) / var)
    assert lo <= float(np.median(ratios)) <= hi


@pytest.mark.parametrize("capacity", [200, 2**15])
def test_weight_tails_tail_excess_equals_that_of_the_concatenation(capacity):
    rng = np.random.default_rng(capacity)
    x = sample("zeros", 3000, rng)
    wt = WeightTails(2, capacity=capacity)
    for chunk in np.array_split(x, 17):
        wt.add(1, chunk)
    assert tail_length(x.size) + 1 <= capacity
    assert wt.tail_excess(1) == tail_excess(x)
    assert math.isnan(wt.tail_excess(0))


def test_variance_scale_rules():
    rng = np.random.default_rng(6)
    lw = rng.normal(-0.5, 1.0, 40)  # too few for a k-hat: the log-normal rule
    w = np.exp(lw)
    s2 = float(np.var(lw, ddof=1))
    var = float(np.var(w, ddof=1))
    heavy = sample("pareto0.45", 20000, rng)  # a k-hat: the fitted tail
    wh = np.exp(heavy)
    count, total, squares = [40, wh.size, 40], [w.sum(), wh.sum(), w.sum()], [(w**2).sum(), (wh**2).sum(), (w**2).sum()]
    excess = tail_excess(heavy)
    got = variance_scale(count, total, squares, [np.nan, excess, np.nan], [s2, np.nan, 2 * math.log(40) + 1.0])
    assert got[0] == pytest.approx(max(1.0, math.expm1(s2) * w.mean() ** 2 / var), rel=1e-9)
    assert got[1] == pytest.approx(1.0 + math.exp(excess) / (wh.size - 1) / np.var(wh, ddof=1), rel=1e-9)
    assert got[2] == 1.0  # too spread for 40 weights: left to its own rule
    # the unit of the weights cancels
    again = variance_scale(np.array(count), np.array(total) * 2, np.array(squares) * 4,
                           [np.nan, excess + 2 * math.log(2), np.nan], [s2, np.nan, 2 * math.log(40) + 1.0])
    np.testing.assert_allclose(again, got, rtol=1e-9)
    assert variance_scale([1, 0], [1.0, 0.0], [1.0, 0.0], [0.0, np.nan], [np.nan, 1.0]).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1001])
def test_top_sorted_is_the_top_of_a_full_sort_with_ties_and_zero_weights(n):
    rng = np.random.default_rng(n)
    values = np.round(rng.standard_normal(n), 1)  # ties
    values[rng.random(n) < 0.1] = -np.inf
    before = values.copy()
    for size in (1, 7, n, n + 5):
        if size < 1:
            continue
        expected = np.full(size, -np.inf)
        k = min(size, n)
        if k:
            expected[size - k:] = np.sort(values)[n - k:]
        np.testing.assert_array_equal(_top_sorted(values, size), expected)
    np.testing.assert_array_equal(values, before)  # the input is left as it was


def test_without_importance_weights_only_unreliable_arms_are_excluded():
    nan = np.full(3, np.nan)
    rel = ArmReliability(nan, nan, np.zeros(3, dtype=np.int64), np.array([False, True, False]), nan, nan)
    assert rel.excluded.tolist() == [False, True, False] and rel.excluded is not rel.unreliable
    assert rel.undersampled.tolist() == [False] * 3
    # the same arms with weights: the unchecked ones are left out while a checked arm passed
    rel = ArmReliability(np.array([0.2, np.nan, np.nan]), nan, np.array([500, 20, 50]), np.zeros(3, dtype=bool),
                         np.array([np.nan, 0.1, 0.1]), nan)
    assert rel.excluded.tolist() == [False, True, True]
