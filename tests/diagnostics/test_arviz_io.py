"""The ArviZ door: InferenceData layout, netCDF round trip, and rebuilding a RunResult."""

import json
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pytest
import xarray as xr

import pmcbandit as pb
from pmcbandit import _compat
from pmcbandit.diagnostics.arviz_io import from_inference_data, read_run, to_inference_data
from pmcbandit.runtime.history import STATUS


def _linear_run():
    """Three normal arms (one reporting diagnostics, one faulting once -> quarantined)."""

    def diag_arm(rng):
        x = rng.normal(2.0, 0.5, size=4)
        return x, {"accept": 0.25, "value": 3.0, "step/size": float(x.std())}

    calls = [0]

    def faulty(rng):
        calls[0] += 1
        x = rng.normal(2.0, 1.0, size=4)
        if calls[0] == 5:
            x[1] = np.nan
        return x

    arms = [
        pb.CallableArm(diag_arm, name="diag", diagnostics=("accept", "value", "step/size"), cost=1.0),
        pb.CallableArm(faulty, name="faulty", cost=1.0),
        pb.CallableArm(lambda rng: rng.normal(2.0, 2.0, size=4), name="wide", cost=2.0),
    ]
    with pytest.warns(pb.PmcBanditWarning, match="quarantined"):
        return pb.run(arms, policy="ucb1", budget=pb.Pulls(300), random_seed=11, progressbar=False)


def _log_run():
    """Log-normal importance weights of Z = exp(-40): arms return log-weights."""

    def arm(s):
        return pb.CallableArm(
            lambda rng: rng.normal(-40.0 - s * s / 2, s, size=8), name=f"lognormal-{s}", log_scale=True, cost=1.0
        )

    return pb.run([arm(0.5), arm(1.5)], policy="ucb1", budget=pb.Pulls(200), random_seed=5, progressbar=False)


@pytest.fixture(scope="module")
def linear():
    return _linear_run()


@pytest.fixture(scope="module")
def logrun():
    return _log_run()


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_sample_stats_layout(linear):
    idata = to_inference_data(linear)
    assert _compat.is_inference_data(idata)
    assert isinstance(idata, xr.DataTree) == (_compat.arviz_major() >= 1)
    assert set(_compat.group_names(idata)) == {"sample_stats", "arm_summary"}
    ss = idata.sample_stats
    n = len(linear.history)
    assert dict(ss.sizes) == {"pull": n}  # no chain/draw: one sequential stream of pulls
    cols = linear.history.arrays()
    _same(ss["arm"], cols["arm"])
    _same(ss["arm_name"], np.asarray(linear.arm_names)[cols["arm"]])
    for var, col in [("value", "obs"), ("time", "wall"), ("cost", "cost"), ("reward", "reward"), ("cpu", "cpu"),
                     ("status", "status"), ("decision", "decision"), ("batch_size", "batch_size"),
                     ("within_var", "within_var")]:
        _same(ss[var], cols[col])
    assert ss["value"].attrs["scale"] == "linear"
    assert ss["status"].attrs["flag_meanings"].split() == list(STATUS)
    assert (ss["status"] != 0).sum() == 1
    # diagnostics: "value" clashes with the observation and "/" is not allowed in netCDF names
    mapping = dict(json.loads(ss.attrs["diagnostics"]))
    assert mapping == {"accept": "accept", "value": "diag_value", "step/size": "step_size"}
    _same(ss["diag_value"], np.where(cols["arm"] == 0, 3.0, np.nan))
    _same(ss["step_size"], cols["step/size"])


def test_arm_summary_matches_arm_table(linear):
    s = to_inference_data(linear).arm_summary
    t = linear.arm_table()
    assert list(s["arm"].values) == linear.arm_names
    for key in ("pulls", "faults", "mean", "var", "cost", "var_cost", "weight", "quarantined"):
        _same(s[key], t[key])
    assert list(s["quarantined"].values) == [False, True, False]
    assert int(s["faults"].sel(arm="faulty")) == 1


def test_attrs_are_netcdf_safe_and_complete(linear):
    idata = to_inference_data(linear)
    attrs = idata.attrs
    for key, value in attrs.items():
        assert isinstance(value, (str, int, float, np.ndarray)) and not isinstance(value, bool), key
    assert attrs["estimate"] == linear.estimate and attrs["se"] == linear.se
    _same(attrs["ci95"], linear.ci(0.95))
    assert attrs["log_estimate"] == linear.log_estimate
    _same(attrs["log_ci95"], linear.log_ci(0.95))
    assert attrs["combine"] == "inverse_variance" and attrs["policy"] == "ucb1"
    assert attrs["pmcbandit_version"] == pb.__version__ and attrs["created_at"]
    encoded = json.loads(attrs["json_attrs"])
    assert {"bounds", "streams", "faults", "log_scale"} <= set(encoded)
    faults = json.loads(attrs["faults"])
    assert [(f["arm"], f["status"]) for f in faults] == [("faulty", "nonfinite")]
    assert idata.sample_stats.attrs["estimate"] == linear.estimate


def test_no_warnings_on_export_and_netcdf_round_trip(linear, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idata = to_inference_data(linear)
        path = _compat.write_netcdf(idata, tmp_path / "run.nc")
        back = az.from_netcdf(path)
    assert path == str(tmp_path / "run.nc")
    assert _compat.group_names(back) == _compat.group_names(idata)
    for group in ("sample_stats", "arm_summary"):
        xr.testing.assert_identical(_compat.group(back, group).load(), _compat.group(idata, group))
    assert set(back.attrs) == set(idata.attrs)
    for key, value in idata.attrs.items():
        _same(back.attrs[key], value)


def test_from_inference_data_round_trip_through_netcdf(linear, tmp_path):
    path = tmp_path / "run.nc"
    assert linear.to_netcdf(path) == str(path)
    for again in (read_run(path), from_inference_data(path), from_inference_data(az.from_netcdf(str(path)))):
        assert again.estimate == linear.estimate and again.se == linear.se
        assert again.ci(0.9) == linear.ci(0.9)
        assert again.combined_with("uniform").se == linear.combined_with("uniform").se
        assert again.arm_names == linear.arm_names and again.combine == linear.combine
        assert again.settings == linear.settings
        _same(again.quarantined, linear.quarantined)
        assert again.history.diagnostics == linear.history.diagnostics
        assert again.history.faults == [tuple(f) for f in linear.history.faults]
        a, b = again.history.arrays(), linear.history.arrays()
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].dtype == b[key].dtype
            _same(a[key], b[key])
        assert again.summary() == linear.summary()


def test_log_scale_run(logrun, tmp_path):
    idata = to_inference_data(logrun)
    assert idata.sample_stats["value"].attrs["scale"] == "log"
    assert "log" in idata.sample_stats["value"].attrs["description"]
    assert idata.attrs["log_estimate"] == logrun.log_estimate
    assert json.loads(idata.attrs["log_scale"]) is True
    assert idata.arm_summary.attrs["shift"] == logrun.shift
    # the observations are logs near log Z = -40 (the linear estimate underflows nothing here)
    assert np.all(np.abs(idata.sample_stats["value"].values + 40) < 5)
    path = _compat.write_netcdf(idata, tmp_path / "log.nc")
    again = read_run(path)
    assert again.log_scale
    assert again.log_estimate == logrun.log_estimate and again.log_se == logrun.log_se
    assert again.log_ci() == logrun.log_ci()


def test_bad_arguments():
    with pytest.raises(TypeError, match="'result' parameter of to_inference_data"):
        to_inference_data({"estimate": 1.0})
    other = _compat.inference_data({}, {"posterior": xr.Dataset({"x": (("chain", "draw"), np.zeros((1, 3)))})})
    with pytest.raises(ValueError, match="'idata' parameter of from_inference_data"):
        from_inference_data(other)
    with pytest.raises(TypeError, match="'idata' parameter of from_inference_data"):
        from_inference_data(42)
    with pytest.raises(TypeError, match="'path' parameter of read_run"):
        read_run(None)


@pytest.mark.parametrize("written_by", ["arviz0", "arviz1"])
def test_read_run_reads_runs_written_by_either_arviz(written_by):
    """Files written by ``RunResult.to_netcdf`` under ArviZ 0.23 and 1.3 (``data/``, the run of ``_small_run``):
    both versions read both, and the rebuilt run recombines to the estimate stored in the file."""
    path = DATA / f"run_{written_by}.nc"
    again = read_run(path)
    stored = az.from_netcdf(str(path))
    assert stored.attrs["arviz_version"].startswith("0." if written_by == "arviz0" else "1.")
    assert again.arm_names == ["a", "b"] and len(again.history) == 40
    assert again.estimate == stored.attrs["estimate"] and again.se == stored.attrs["se"]
    assert again.summary() == _small_run().summary()


DATA = Path(__file__).parent / "data"


def _small_run():
    """Two normal arms, 40 pulls: the run stored in ``data/run_arviz*.nc``."""
    arms = [pb.CallableArm(lambda rng: rng.normal(1.0, 1.0, size=4), name="a", cost=1.0),
            pb.CallableArm(lambda rng: rng.normal(1.0, 3.0, size=4), name="b", cost=1.0)]
    return pb.run(arms, policy="ucb1", budget=pb.Pulls(40), random_seed=3, progressbar=False)
