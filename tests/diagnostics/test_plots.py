"""Plots render for linear, log-scale and quarantined runs, and show the right numbers."""

import numpy as np
import pytest
from matplotlib.figure import Figure

import pmcbandit as pb
from pmcbandit.stats.combine import combine, interval
from pmcbandit.diagnostics import plots
from pmcbandit.diagnostics.plots import (
    plot_allocation,
    plot_run,
    plot_running_estimate,
    plot_variance_cost,
    running_estimate,
    save_run_plots,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def linear():
    arms = [pb.CallableArm(lambda rng, s=s: rng.normal(1.0, s, size=4), name=f"sd{s}", cost=1.0)
            for s in (1.0, 0.3, 2.0)]
    return pb.run(arms, policy="ucb1", budget=pb.Pulls(1500), random_seed=1, progressbar=False)


@pytest.fixture(scope="module")
def logrun():
    def arm(s, cost):
        return pb.CallableArm(lambda rng: rng.normal(-30.0 - s * s / 2, s, size=8), name=f"is-{s}",
                              log_scale=True, cost=cost)

    return pb.run([arm(0.5, 2.0), arm(1.2, 1.0)], policy="ucb1", budget=pb.Pulls(600), random_seed=2,
                  progressbar=False)


@pytest.fixture(scope="module")
def quarantined():
    calls = [0]

    def faulty(rng):
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("boom")
        return rng.normal(1.0, 1.0, size=2)

    arms = [pb.CallableArm(lambda rng: rng.normal(1.0, 0.5, size=2), name="steady", cost=1.0),
            pb.CallableArm(faulty, name="faulty", cost=1.0)]
    with pytest.warns(pb.PmcBanditWarning, match="quarantined"):
        return pb.run(arms, policy="ucb1", budget=pb.Pulls(400), random_seed=3, progressbar=False)


def _ax():
    return Figure().add_subplot()


@pytest.mark.parametrize("name", ["linear", "logrun", "quarantined"])
@pytest.mark.parametrize("x", ["pulls", "time"])
def test_allocation_one_line_per_arm(request, name, x):
    result = request.getfixturevalue(name)
    ax = plot_allocation(result, x=x, ax=_ax())
    assert len(ax.lines) == len(result.arm_names)
    counts = np.bincount(result.history.column("arm"), minlength=len(result.arm_names))
    assert [line.get_ydata()[-1] for line in ax.lines] == list(counts)
    styles = [line.get_linestyle() for line in ax.lines]
    assert styles == ["--" if q else "-" for q in result.quarantined]
    assert len(ax.collections) == int(result.quarantined.sum())  # fault markers
    assert plot_allocation(result, ax=_ax(), yscale="log").get_yscale() == "log"


def test_running_estimate_checkpoints_and_final_value(linear):
    run = running_estimate(linear, level=0.9)
    n = len(linear.history)
    assert run["pulls"][-1] == n and run["pulls"].size <= 200
    assert np.all(np.diff(run["pulls"]) > 0)
    assert run["estimate"][-1] == pytest.approx(linear.estimate, rel=1e-12)
    np.testing.assert_allclose([run["lower"][-1], run["upper"][-1]], linear.ci(0.9), rtol=1e-12)
    # an intermediate checkpoint equals the combiner applied to that prefix of the history
    i = run["pulls"].size // 2
    m = run["pulls"][i]
    h = linear.history
    c = combine(h.column("obs")[:m], h.column("arm")[:m], 3, "inverse_variance",
                h.column("within_var")[:m], h.column("batch_size")[:m])
    assert run["estimate"][i] == pytest.approx(c.estimate, rel=1e-12)
    assert run["lower"][i] == pytest.approx(interval(c.estimate, c.se, c.df, 0.9)[0], rel=1e-12)


def test_running_estimate_log_scale(logrun):
    run = running_estimate(logrun)
    assert run["estimate"][-1] == pytest.approx(logrun.log_estimate, abs=1e-12)
    np.testing.assert_allclose([run["lower"][-1], run["upper"][-1]], logrun.log_ci(0.95), atol=1e-12)
    # log Z near -30 throughout: nothing underflowed to -inf
    assert np.all(np.abs(run["estimate"][np.isfinite(run["estimate"])] + 30) < 2)


def test_running_estimate_combines_as_the_run_and_ends_at_its_reported_values():
    """An arm the run excluded (Pareto weights of shape 0.9) gets no weight in any prefix, the other arm's variance is
    read at the run's tail factor, and the last point is the run's own estimate and interval."""
    from tests.test_result import _WeightArm

    arms = [_WeightArm("a", 0.45, size=500), _WeightArm("b", 0.9)]
    res = pb.run(arms, policy="thompson", budget=pb.Pulls(120), random_seed=1, progressbar=False)
    assert res.reliability.excluded.tolist() == [False, True] and res.tail_scale[0] > 1.0
    run = running_estimate(res)
    assert run["estimate"][-1] == res.log_estimate
    assert (run["lower"][-1], run["upper"][-1]) == res.log_ci(0.95)
    i = run["pulls"].size // 2
    m = run["pulls"][i]
    obs, arm, within, size = (a[:m] for a in res.working_values())
    c = combine(obs, arm, 2, res.combine, within, size, res.reliability.excluded, None, res.tail_scale)
    assert run["estimate"][i] == pytest.approx(res.shift + np.log(c.estimate), rel=1e-12)


@pytest.mark.parametrize("name", ["linear", "logrun", "quarantined"])
def test_running_estimate_plot(request, name):
    result = request.getfixturevalue(name)
    ax = plot_running_estimate(result, ax=_ax())
    assert len(ax.lines) == 2 and len(ax.collections) == 1  # estimate, final; CI band
    ref = -30.0 if result.log_scale else 1.0
    ax = plot_running_estimate(result, ax=_ax(), reference=ref, x="time")
    assert len(ax.lines) == 3
    lo, hi = ax.get_ylim()
    assert lo < ref < hi
    assert ax.get_ylabel() == ("log Ẑ" if result.log_scale else "estimate")


@pytest.mark.parametrize("name", ["linear", "logrun", "quarantined"])
def test_variance_cost_bars(request, name):
    result = request.getfixturevalue(name)
    ax = plot_variance_cost(result, ax=_ax())
    bars = ax.containers[0]
    assert len(bars) == len(result.arm_names)
    assert ax.get_yscale() == "log"
    t = result.arm_table()
    np.testing.assert_allclose([b.get_height() for b in bars], t["var_cost"], rtol=1e-12)  # the summary's unit
    column = "V·δ/Ẑ²" if result.log_scale else "V·δ"
    assert column in result.summary().splitlines()[2] and ax.get_ylabel().startswith(column + " ")
    rows = result.summary().splitlines()[3:3 + len(result.arm_names)]
    printed = [float(row.split()[3]) for row in rows]  # arm, pulls, faults, V·δ: as printed (4 significant digits)
    np.testing.assert_allclose([b.get_height() for b in bars], printed, rtol=5e-4)
    labels = [txt.get_text() for txt in ax.texts]
    assert [lab.split()[0] for lab in labels] == [str(p) for p in t["pulls"]]
    assert [b.get_hatch() == "//" for b in bars] == list(result.quarantined)


def test_plot_run_and_default_axes(linear, logrun):
    import matplotlib.pyplot as plt

    fig = plot_run(logrun)
    try:
        assert len(fig.axes) == 3
        assert "log Ẑ" in fig.get_suptitle() and logrun.interval_status == "ok"
        assert "no cross check" not in fig.get_suptitle()
    finally:
        plt.close(fig)
    one_family = logrun.recombined(logrun.combine)
    one_family.settings = dict(logrun.settings, families=("importance", "importance"))
    fig = plot_run(one_family)
    try:  # an answer no second family checked says so beside its interval
        assert one_family.interval_status == "no_cross_check" and "CI" in fig.get_suptitle()
        assert "no cross check" in fig.get_suptitle()
    finally:
        plt.close(fig)
    ax = plot_allocation(linear)
    plt.close(ax.figure)


def test_save_run_plots(linear, quarantined, tmp_path):
    paths = save_run_plots(linear, tmp_path / "lin")
    assert [p.name for p in paths] == ["allocation.png", "running_estimate.png", "variance_cost.png", "run.png"]
    for p in paths:
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 5000
    # from a saved netCDF file, with a prefix
    nc = tmp_path / "q.nc"
    quarantined.to_netcdf(nc)
    paths = save_run_plots(str(nc), tmp_path / "q", prefix="q-", x="time", reference=1.0, dpi=60)
    assert all(p.exists() and p.name.startswith("q-") for p in paths)


def test_degenerate_runs_render(tmp_path):
    """Every pull failing, or arms never pulled: plots still render and say so."""

    def boom(rng):
        raise RuntimeError("broken estimator")

    with pytest.warns(pb.PmcBanditWarning):
        dead = pb.run([pb.CallableArm(boom, name="a"), pb.CallableArm(boom, name="b")], policy="ucb1",
                      budget=pb.Pulls(10), random_seed=4, progressbar=False)
    assert np.isnan(dead.estimate)
    ax = plot_running_estimate(dead, ax=_ax())
    assert [t.get_text() for t in ax.texts] == ["no valid observation"]
    ax = plot_variance_cost(dead, ax=_ax())
    assert "no arm has a variance estimate" in [t.get_text() for t in ax.texts]
    assert len(save_run_plots(dead, tmp_path / "dead")) == 4
    arms = [pb.CallableArm(lambda rng, s=s: rng.normal(1.0, s), name=f"sd{s}", cost=1.0) for s in (1, 2, 3, 4)]
    tiny = pb.run(arms, policy="ucb1", budget=pb.Pulls(2), random_seed=4, progressbar=False)
    ax = plot_variance_cost(tiny, ax=_ax())
    assert sum(np.isfinite(b.get_height()) for b in ax.containers[0]) == 2
    assert len(save_run_plots(tiny, tmp_path / "tiny")) == 4


def test_accepts_inference_data(logrun):
    ax = plot_variance_cost(logrun.to_inference_data(), ax=_ax())
    assert len(ax.containers[0]) == 2


def test_bad_arguments(linear):
    with pytest.raises(ValueError, match="'x' parameter of plot_allocation"):
        plot_allocation(linear, x="wall", ax=_ax())
    with pytest.raises(ValueError, match="'level' parameter of plot_running_estimate"):
        plot_running_estimate(linear, level=1.5, ax=_ax())
    with pytest.raises(ValueError, match="'level' parameter of running_estimate"):
        running_estimate(linear, level=0.0)
    with pytest.raises(ValueError, match="'x' parameter of plot_run"):
        plot_run(linear, x="wall", fig=Figure())
    with pytest.raises(TypeError, match="'result' parameter of plot_variance_cost"):
        plot_variance_cost([1.0, 2.0])
    with pytest.raises(TypeError, match="'ax' parameter of plot_allocation"):
        plot_allocation(linear, ax="left")
    with pytest.raises(TypeError, match="'fig' parameter of plot_run"):
        plot_run(linear, fig=_ax())
    with pytest.raises(ValueError, match="'n_checkpoints' parameter"):
        running_estimate(linear, n_checkpoints=0)
    assert plots.__all__
