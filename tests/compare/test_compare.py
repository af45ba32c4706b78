"""compare_samplers through the run loop: the answer, its intervals, the gate, the record, bad input."""

import math

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit import CallableArm, Pulls, TargetSE
from tests.compare.helpers import UniformArm

QUIET = dict(progressbar=False)


def _run(arms, **kw):
    with pytest.warns(pb.PmcBanditWarning) if kw.pop("warns", False) else _nothing():
        return pb.compare_samplers(arms, **{**QUIET, **kw})


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _declared(arms):
    return dict(bounds=(-1.0, 1.0), costs=[a.cost for a in arms])


def test_selects_the_most_efficient_arm_cost_included_with_the_exact_guarantee():
    # Low variance but 10x the cost loses: efficiencies 3/(0.04*10) = 7.5 vs 3/(0.09*1) = 33.
    arms = [UniformArm(0.2, cost=10.0), UniformArm(0.3, cost=1.0), UniformArm(0.8, cost=1.0)]
    res = _run(arms, random_seed=1, epsilon=0.0, **_declared(arms))
    assert res.stopped_by == "confidence" and res.guarantee == "delta-correct" and res.confident
    assert res.selected == [arms[1].name]
    assert res.unresolved == [] and res.excluded == {} and res.proven_factor == 1.0  # separated: epsilon = 0
    truth = np.array([a.efficiency() for a in arms])
    assert np.all(res.efficiency_lower <= truth) and np.all(truth <= res.efficiency_upper)
    r = res.ratio(arms[1].name, arms[0].name)
    assert r.lower <= truth[1] / truth[0] <= r.upper and r.lower > 1
    assert len(res.ratios()) == 3 and all(x.estimate >= 1 for x in res.ratios())
    assert res.samples == 2 * res.pairs.sum() == len(res.history)


def test_top_k_and_the_same_seed_gives_the_same_run():
    arms = [UniformArm(s) for s in (0.1, 0.15, 0.5, 0.9)]
    a = _run(arms, k=2, random_seed=7, **_declared(arms))
    b = _run(arms, k=2, random_seed=7, **_declared(arms))
    assert a.selected == b.selected == [arms[0].name, arms[1].name]
    np.testing.assert_array_equal(a.history.column("obs"), b.history.column("obs"))
    np.testing.assert_array_equal(a.history.column("arm"), b.history.column("arm"))
    c = _run(arms, k=2, random_seed=8, **_declared(arms))
    assert not np.array_equal(a.history.column("obs")[:50], c.history.column("obs")[:50])


def test_measured_costs_give_an_asymptotic_guarantee_and_a_warning():
    arms = [CallableArm(lambda rng, s=s: rng.uniform(-s, s), name=f"u{s}") for s in (0.1, 0.6)]
    res = _run(arms, random_seed=2, warns=True)
    assert res.guarantee == "asymptotic" and res.selected == ["u0.1"]
    assert any("asymptotic" in w for w in res.warnings())


def test_a_budget_stop_reports_the_arms_it_could_not_separate():
    arms = [UniformArm(0.30), UniformArm(0.31), UniformArm(0.9)]
    res = _run(arms, random_seed=3, budget=Pulls(60), warns=True, **_declared(arms))
    assert res.stopped_by == "budget" and not res.confident
    assert set(res.unresolved) >= {arms[0].name, arms[1].name}
    assert "not separated" in res.summary()


def test_a_budget_stop_says_by_what_factor_the_selection_is_proven():
    arms = [UniformArm(0.30), UniformArm(0.32), UniformArm(0.9)]
    res = _run(arms, random_seed=3, epsilon=0.0, budget=Pulls(400), warns=True, **_declared(arms))
    assert res.stopped_by == "budget" and res.selected == [arms[0].name]
    f = res.proven_factor
    assert 1.0 < f < math.inf
    # The largest upper end of the other arms' ratio intervals to the selection, which the truth respects.
    assert f == pytest.approx(max(res.ratio(a.name, arms[0].name).upper for a in arms[1:]))
    truth = np.array([a.efficiency() for a in arms])
    assert truth[1:].max() / truth[0] <= f
    assert f"proven at most {f:.3g}x as efficient" in res.summary()
    assert any("result.proven_factor" in w for w in res.warnings())
    assert res.to_inference_data().attrs["proven_factor"] == pytest.approx(f)
    import matplotlib.pyplot as plt

    ax = res.plot()
    assert f"proven at most {f:.3g}x as efficient" in ax.get_title()
    plt.close(ax.figure)
    short = _run(arms, random_seed=3, epsilon=0.0, budget=Pulls(6), warns=True, **_declared(arms))
    assert short.proven_factor == math.inf and any("no factor is proven yet" in w for w in short.warnings())


def test_the_gate_excludes_a_biased_arm_that_disagrees_with_a_reference():
    arms = [UniformArm(0.3, name="honest"), UniformArm(0.05, centre=0.2, name="biased-but-precise"),
            UniformArm(0.5, name="noisy")]
    res = _run(arms, random_seed=4, reference=0.0, **_declared(arms))
    assert "biased-but-precise" in res.excluded and res.excluded["biased-but-precise"].startswith("reference")
    # the ranking of the others keeps its guarantee: the exclusion is a note, not a warning
    assert any("biased-but-precise" in n for n in res.notes) and res.warnings() == []
    assert res.selected == ["honest"] and list(res.status) == ["ranked", "excluded", "ranked"]
    assert res.stopped_by == "confidence"


def test_without_a_reference_the_gate_excludes_the_arm_that_disagrees_with_the_others():
    arms = [UniformArm(0.3, name="a"), UniformArm(0.4, name="b"), UniformArm(0.05, centre=0.2, name="biased"),
            UniformArm(0.5, name="c")]
    res = _run(arms, random_seed=5, **_declared(arms))
    assert list(res.excluded) == ["biased"] and res.excluded["biased"].startswith("disagrees")
    assert any("'biased' not ranked" in n for n in res.notes)
    assert res.selected == ["a"]
    assert res.settings["gate_checks"] >= 1


def test_a_faulty_arm_is_quarantined_and_the_run_still_ranks_the_others():
    def broken(rng):
        return math.nan

    arms = [UniformArm(0.2), UniformArm(0.6), CallableArm(broken, name="broken", cost=1.0)]
    res = _run(arms, random_seed=6, bounds=(-1, 1), costs=[1, 1, 1], warns=True)
    assert res.status[2] == "quarantined" and "broken" in res.excluded
    assert res.selected == [arms[0].name] and res.stopped_by == "confidence"


def test_when_at_most_k_arms_are_left_the_run_says_no_arm():
    arms = [UniformArm(0.2), CallableArm(lambda rng: math.nan, name="broken", cost=1.0)]
    res = _run(arms, random_seed=6, bounds=(-1, 1), costs=[1, 1], warns=True)
    assert res.stopped_by == "no_arm" and res.selected == [arms[0].name]
    assert math.isnan(res.proven_factor) and "proven at most" not in res.summary()  # no other arm to prove it of


def test_log_scale_arms_are_compared_on_their_log_estimates():
    # log-normal weights with sigma s: Var(log Z-hat of a batch of m) shrinks with m; equal cost.
    def arm(m, s=1.0):
        def fn(rng):
            return rng.normal(-0.5 * s * s, s, m)
        return CallableArm(fn, name=f"batch{m}", log_scale=True, cost=1.0)

    res = _run([arm(400), arm(25)], random_seed=8, costs=[1.0, 1.0], warns=True, reference=0.0)
    assert res.selected == ["batch400"] and res.excluded == {}
    assert res.history.column("obs").max() < 2.0  # logs as they came, not a working scale


def test_inference_data_holds_the_table_ratios_and_settings(tmp_path):
    az = pytest.importorskip("arviz")
    arms = [UniformArm(0.2), UniformArm(0.5)]
    res = _run(arms, random_seed=9, **_declared(arms))
    idata = res.to_inference_data()
    path = tmp_path / "comparison.nc"
    idata.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    np.testing.assert_allclose(back.arm_summary["efficiency"].values, res.efficiency)
    est = back.efficiency_ratio["estimate"].sel(numerator=arms[0].name, denominator=arms[1].name).item()
    assert est == pytest.approx(res.ratio(arms[0].name, arms[1].name).estimate)
    assert back.attrs["stopped_by"] == "confidence" and back.attrs["guarantee"] == "delta-correct"
    assert back.sample_stats.sizes["pull"] == len(res.history)


def test_plot_draws_one_interval_per_arm():
    import matplotlib.pyplot as plt

    arms = [UniformArm(0.2), UniformArm(0.5), UniformArm(0.05, centre=0.3, name="biased")]
    res = _run(arms, random_seed=10, reference=0.0, **_declared(arms))
    ax = res.plot()
    assert len(ax.get_yticklabels()) == 3 and any("excluded" in t.get_text() for t in ax.get_yticklabels())
    plt.close(ax.figure)


def test_a_callback_stop_resumes_from_its_checkpoint_to_the_uninterrupted_result(tmp_path):
    arms = [UniformArm(0.2), UniformArm(0.3), UniformArm(0.6)]
    full = _run(arms, random_seed=11, **_declared(arms))
    path = tmp_path / "cmp.ckpt"
    part = _run(arms, random_seed=11, checkpoint=path, callback=lambda p, h: len(h) >= 40, warns=True,
                **_declared(arms))
    assert part.stopped_by == "callback"
    done = _run(arms, random_seed=11, checkpoint=path, **_declared(arms))
    assert done.selected == full.selected
    np.testing.assert_array_equal(done.history.column("obs"), full.history.column("obs"))


@pytest.mark.parametrize(
    "kw, param",
    [
        (dict(k=0), "'k'"),
        (dict(k=3), "'k'"),
        (dict(delta=1.0), "'delta'"),
        (dict(costs=[1.0]), "'costs'"),
        (dict(costs={"x": 1.0, "y": 1.0, "z": 1.0}), "'costs'"),
        (dict(costs=[1.0, -1.0, 1.0]), "'costs'"),
        (dict(budget=TargetSE(0.1)), "'budget'"),
        (dict(reference=float("nan")), "'reference'"),
        (dict(min_pairs=1), "'min_pairs'"),
        (dict(gate_alpha=0.0), "'gate_alpha'"),
        (dict(bounds=(1.0, 0.0)), "'bounds'"),
        (dict(epsilon=-0.1), "'epsilon'"),
        (dict(epsilon=float("inf")), "'epsilon'"),
        (dict(epsilon=float("nan")), "'epsilon'"),
        (dict(budget=0.0), "'budget'"),
        (dict(budget=-5.0), "'budget'"),
        (dict(costs=[1.0, 0.0, 1.0]), "'costs'"),
    ],
)
def test_bad_arguments_name_the_parameter(kw, param):
    arms = [UniformArm(0.1), UniformArm(0.2), UniformArm(0.3)]
    with pytest.raises(ValueError, match=param):
        pb.compare_samplers(arms, **QUIET, **kw)


def test_arms_of_mixed_scales_are_refused():
    arms = [UniformArm(0.1), CallableArm(lambda rng: rng.normal(size=3), name="logs", log_scale=True)]
    with pytest.raises(ValueError, match="'arms'.*mix log-scale"):
        pb.compare_samplers(arms, **QUIET)


def test_arms_whose_costs_are_in_different_units_are_refused_unless_costs_are_declared():
    arms = [CallableArm(lambda rng: rng.normal(), name="timed"),
            CallableArm(lambda rng: rng.normal(), name="counted", cost=3.0)]
    with pytest.raises(ValueError, match="'arms'.*one unit"):
        pb.compare_samplers(arms, **QUIET)
    res = _run(arms, costs=[1.0, 3.0], budget=Pulls(40), random_seed=0, warns=True)
    assert res.stopped_by == "budget" and list(res.arm_table()["cost"]) == [1.0, 3.0]


def test_a_process_pool_gives_the_in_process_result_one_pair_at_a_time():
    arms = [UniformArm(0.2), UniformArm(0.3), UniformArm(0.6)]
    local = _run(arms, random_seed=12, **_declared(arms))
    pooled = _run(arms, random_seed=12, executor="processes", max_in_flight=1, **_declared(arms))
    assert pooled.settings["executor"] == "processes" and pooled.selected == local.selected
    np.testing.assert_array_equal(pooled.history.column("obs"), local.history.column("obs"))
    np.testing.assert_array_equal(pooled.history.column("arm"), local.history.column("arm"))


def test_near_equal_arms_end_as_a_proven_tie_under_the_default_epsilon():
    from pmcbandit.compare.compare import DEFAULT_BUDGET, DEFAULT_EPSILON

    assert isinstance(DEFAULT_BUDGET, float) and DEFAULT_EPSILON > 0  # a wall time; a ratio tolerance
    arms = [UniformArm(0.2, name="a"), UniformArm(0.2, name="b"), UniformArm(0.8, name="worse")]
    res = _run(arms, random_seed=13, **_declared(arms))
    assert res.stopped_by == "confidence" and res.rule.epsilon == DEFAULT_EPSILON
    assert res.selected[0] in ("a", "b") and set(res.selected + res.tied) >= {"a", "b"}
    for other in res.tied:  # each tied arm proven at most 1 + epsilon times as efficient as the selection
        assert res.ratio(*res.selected, other).lower >= 1 / (1 + DEFAULT_EPSILON)
    r = res.ratio(*res.selected, ({"a", "b"} - set(res.selected)).pop())
    assert r.lower <= 1 <= r.upper
    exact = _run(arms, random_seed=13, epsilon=0.0, budget=Pulls(400), warns=True, **_declared(arms))
    assert exact.tied == [] and exact.stopped_by == "budget"


def test_the_progress_text_names_the_leader_and_its_ratio_interval_to_the_runner_up():
    from pmcbandit.compare import efficiency
    from pmcbandit.compare.learner import ComparisonLearner
    from tests.compare.helpers import uniform_pair

    rule = efficiency.EfficiencyRule(k=1, delta=0.1, n_arms=2, variance_bound=0.32, costs=(1.0, 1.0))
    learner = ComparisonLearner(rule, False, None, 0.01, arm_names=("narrow", "wide"))
    assert learner.progress_text() == "initial pairs"
    rng = np.random.default_rng(14)
    draw = uniform_pair([0.1, 0.3])
    for _ in range(50):
        for arm in (0, 1):
            learner.state = efficiency.update(rule, learner.state, arm, *draw(rng, arm))
    text = learner.progress_text()
    assert text.startswith("leader narrow: x[") and text.endswith("] vs wide")
    lo, hi = (float(v) for v in text.split("[")[1].split("]")[0].split(", "))
    assert 0 < lo < 9 < hi < math.inf  # the efficiency ratio is 9


def test_vector_estimates_score_a_pair_by_the_sum_over_components():
    """Each pair adds 1/2 sum_j (x_j - x'_j)^2 (recomputed from the history), and d = 20 degrees of
    freedom per pair separate a 2-fold efficiency gap in far fewer pairs than the scalar means do."""
    from tests.compare.helpers import VectorArm

    arms = [VectorArm(1.0, 20, name="a"), VectorArm(1.0, 20, cost=2.0, name="b")]
    res = _run(arms, random_seed=4, costs=[1.0, 2.0], epsilon=0.0, warns=True)
    assert res.stopped_by == "confidence" and res.selected == ["a"]
    h = res.history
    comps = np.column_stack([h.column(f"c_{j}") for j in range(20)])
    arm = h.column("arm")
    for k in (0, 1):
        x = comps[arm == k]
        v = 0.5 * ((x[0::2] - x[1::2]) ** 2).sum(axis=1)
        assert np.isclose(res.state.v_sum[k], v.sum()) and res.state.pairs[k] == v.size
    truth = np.array([a.efficiency() for a in arms])
    assert np.all(res.efficiency_lower <= truth) and np.all(truth <= res.efficiency_upper)
    # the same efficiencies from scalar estimates: one degree of freedom per pair, many more pairs to decide
    scalar = [VectorArm(np.sqrt(20), 1, name="a"), VectorArm(np.sqrt(20), 1, cost=2.0, name="b")]
    assert [a.efficiency() for a in scalar] == pytest.approx(truth)
    slow = _run(scalar, random_seed=4, costs=[1.0, 2.0], epsilon=0.0, warns=True)
    assert slow.state.pairs.sum() > 3 * res.state.pairs.sum()


def test_vector_arms_resume_from_a_checkpoint_to_the_uninterrupted_result(tmp_path):
    from tests.compare.helpers import VectorArm

    arms = [VectorArm(1.0, 5, name="a"), VectorArm(1.5, 5, name="b")]
    kw = dict(random_seed=7, costs=[1.0, 1.0], warns=True)
    full = _run(arms, **kw)
    path = tmp_path / "vec.ckpt"
    part = _run(arms, checkpoint=path, callback=lambda p, h: len(h) >= 20, **kw)
    assert part.stopped_by == "callback"
    done = _run(arms, checkpoint=path, **kw)
    np.testing.assert_array_equal(done.state.v_sum, full.state.v_sum)
    assert done.selected == full.selected


def test_mixed_or_bounded_vector_arms_are_refused():
    from tests.compare.helpers import VectorArm

    with pytest.raises(ValueError, match="'arms' parameter of compare_samplers must all give scalar estimates"):
        pb.compare_samplers([VectorArm(1.0, 3), UniformArm(0.5)], progressbar=False)
    with pytest.raises(ValueError, match="'bounds' parameter of compare_samplers must be None for arms with vector"):
        pb.compare_samplers([VectorArm(1.0, 3, name="a"), VectorArm(2.0, 3, name="b")], bounds=(-1, 1),
                            progressbar=False)
