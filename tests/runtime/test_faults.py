"""The fault matrix: every door meets the same bad inputs and injected faults with its documented outcome.

Doors: ``run``, ``estimate_evidence`` (a small PyMC model with cheap log-scale arms), ``identify``,
``compare_samplers`` and ``identify_full_bandit`` (the keywords it shares with the others). Faults
are injected into one arm of a healthy pool, from the pull's own stream, so every run is
reproducible: an exception, NaN, a string, a bool, ``None``, a complex number, a pull that hangs past
``pull_timeout``, and a process killed with SIGKILL mid-run and resumed from its checkpoint.

Documented outcomes asserted here (``pmcbandit.runtime.engine`` fault rule,
``pmcbandit.arms.base`` real-number rule, ``pmcbandit.runtime.checkpoint`` lifecycle,
``pmcbandit.runtime.faults``, ``pmcbandit.identification.identify`` fault rule):

* every fault is in ``result.history.faults`` with its status and message, never a crash;
* an allocation run quarantines the arm (``max_faults=1``), warns, and answers from the other arms
  (checked against the truth within the estimator's own SE); a comparison ranks the others;
  identification ends with ``stopped_by="no_arm"`` and nothing selected;
* a bad checkpoint is a ``ValueError`` naming ``checkpoint`` and the door, before any pull;
* a finished checkpoint returns its result with a warning; a killed run resumes to the
  uninterrupted result (0 silent wrong answers, 0 lost finished runs).
"""

from __future__ import annotations

import inspect
import multiprocessing
import os
import signal
import time
import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.exceptions import NoGuaranteeWarning, PmcBanditWarning, SettingsWarning, UnreliableArmWarning
from tests.tolerance import assert_within_se

DOORS = ("run", "estimate_evidence", "identify", "compare_samplers", "identify_full_bandit")
FAULTS = ("raise", "nan", "string", "bool", "none", "complex")
# (status, fragment of the fault message) of each injected fault
EXPECTED = {
    "raise": ("error", "injected failure"),
    "nan": ("nonfinite", "NaN"),
    "string": ("error", "strings"),
    "bool": ("error", "bools"),
    "none": ("error", "None"),
    "complex": ("error", "complex"),
    "hang": ("timeout", "timeout"),
}


class FaultyArm(pb.Arm):
    """N(mean, sd^2) draws (log-scale: log-weights around ``mean``) that fail with probability
    ``rate``, decided by the pull's own stream (so resumed and repeated runs fail on the same pulls)."""

    def __init__(self, name, mean, sd, fault=None, rate=0.0, log_scale=False, kill_at=None, size=4):
        self.name, self.mean, self.sd, self.fault, self.rate = name, mean, sd, fault, rate
        self.log_scale = log_scale
        self.kill_at = kill_at  # a file: when it exists and holds n, the n-th pull of this arm kills the process
        self.size = size
        self.calls = 0

    def draw(self, rng):
        self.calls += 1
        if self.kill_at is not None and os.path.exists(self.kill_at):
            with open(self.kill_at) as fh:
                if self.calls == int(fh.read()):
                    os.kill(os.getpid(), signal.SIGKILL)
        failing = rng.random() < self.rate
        # log-scale: log-weights N(mean - sd^2/2, sd^2), whose exp has mean exp(mean) for every sd
        centre = self.mean - self.sd**2 / 2 if self.log_scale else self.mean
        x = rng.normal(centre, self.sd, size=self.size)
        if failing:
            if self.fault == "raise":
                raise RuntimeError("injected failure")
            if self.fault == "hang":
                time.sleep(1.0)
            else:
                return (
                    {
                        "nan": np.full(self.size, np.nan),
                        "string": "1.0",
                        "bool": True,
                        "none": None,
                        "complex": 1.0 + 0j * x[0] + 1j,
                    }[self.fault],
                    {},
                    1.0,
                )
        return x, {}, 1.0


# --- the doors, each with a healthy pool and the outcome it documents ----------------------------
_MODEL = None


def _model():
    global _MODEL
    if _MODEL is None:
        import pymc as pm

        with pm.Model() as m:
            x = pm.Normal("x")
            pm.Normal("y", x, 1.0, observed=[0.1, -0.2])
        _MODEL = m
    return _MODEL


class FaultyEnvironment:
    """Full-bandit feedback: the sum of the super-arm's means plus N(0, 0.5^2) noise; a super-arm holding
    arm ``bad`` (every super-arm, for ``bad=None``) faults with probability ``rate`` (from the pull's
    stream), as :class:`FaultyArm` does."""

    def __init__(self, theta=(1.0, 0.8, 0.2, 0.0), fault=None, rate=0.0, bad=0, kill_at=None):
        self.theta, self.fault, self.rate, self.bad, self.kill_at = np.asarray(theta), fault, rate, bad, kill_at
        self.calls = 0
        self.n = len(theta)

    def __call__(self, super_arm, rng):
        self.calls += 1
        if self.kill_at is not None and os.path.exists(self.kill_at):
            with open(self.kill_at) as fh:
                if self.calls == int(fh.read()):
                    os.kill(os.getpid(), signal.SIGKILL)
        failing = rng.random() < self.rate and (self.bad is None or self.bad in tuple(super_arm))
        x = float(self.theta[list(super_arm)].sum() + rng.normal(0.0, 0.5))
        if failing:
            if self.fault == "raise":
                raise RuntimeError("injected failure")
            if self.fault == "hang":
                time.sleep(1.0)
            else:
                return {"nan": np.nan, "string": "1.0", "bool": True, "none": None, "complex": 1.0 + 1j}[self.fault]
        return x


def pool(door, fault=None, rate=0.0, bad=0, kill_at=None):
    """The healthy pool of ``door``; arm ``bad`` carries the fault."""
    if door == "identify_full_bandit":
        return FaultyEnvironment(fault=fault, rate=rate, bad=bad, kill_at=kill_at)
    if door == "identify":
        spec = [("best", 1.0, 0.5), ("mid", 0.0, 0.5), ("low", -1.0, 0.5)]
    elif door == "compare_samplers":
        spec = [("a", 1.0, 0.5), ("b", 1.0, 2.0), ("c", 1.0, 4.0)]
    else:
        spec = [("a", 1.0, 0.5), ("b", 1.0, 1.0), ("c", 1.0, 2.0)]
    log = door == "estimate_evidence"
    return [
        FaultyArm(
            n,
            m,
            s,
            fault if i == bad else None,
            rate if i == bad else 0.0,
            log_scale=log,
            kill_at=kill_at if i == bad else None,
        )
        for i, (n, m, s) in enumerate(spec)
    ]


def call(door, arms, **kw):
    kw.setdefault("random_seed", 3)
    kw.setdefault("progressbar", False)
    if door == "run":
        kw.setdefault("budget", pb.Pulls(90))
        return pb.run(arms, "thompson", **kw)
    if door == "estimate_evidence":
        kw.setdefault("budget", pb.Pulls(90))
        return pb.estimate_evidence(_model(), arms=arms, **kw)
    if door == "identify":
        kw.setdefault("budget", pb.Pulls(600))
        return pb.identify(arms, "lucb1", k=1, sigma=0.5, **kw)
    if door == "compare_samplers":
        kw.setdefault("budget", pb.Pulls(400))
        return pb.compare_samplers(arms, k=1, **kw)
    kw.setdefault("budget", pb.Pulls(300))
    return pb.identify_full_bandit(arms, "sa_foa", k=2, sigma=0.5, n=arms.n, **kw)


def _full_bandit_shares_the_contract() -> bool:
    from pmcbandit import identify_full_bandit

    params = inspect.signature(identify_full_bandit).parameters
    return "budget" in params and "checkpoint" in params and "sigma" in params


def _skip_full_bandit(door):
    if door == "identify_full_bandit" and not _full_bandit_shares_the_contract():
        pytest.skip(
            "identify_full_bandit does not take the shared keywords (budget=, sigma=, checkpoint=) yet: "
            "its pulls are not Arm pulls, so its fault rows apply once it drives the one loop"
        )


def _quiet(fn, *args, **kw):
    """Call ``fn`` and return (result, warnings issued)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, seen


def _messages(seen, category=PmcBanditWarning):
    return [str(w.message) for w in seen if issubclass(w.category, category)]


def _names(result):
    """The names of the history's arms (a full-bandit run pulls super-arms)."""
    return list(getattr(result, "super_arm_names", None) or result.arm_names)


def _faults(result):
    return [(_names(result)[a], status, message) for _, a, status, message in result.history.faults]


def _stopped_by(result):
    return result.settings.get("stopped_by", getattr(result, "stopped_by", None))


# --- injected faults ----------------------------------------------------------------------------
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("door", DOORS)
def test_an_arm_that_always_faults_is_recorded_and_left_out(door, fault):
    """The fault is recorded with its message; the answer comes from the other arms (no silent wrong
    answer); the run warns."""
    _skip_full_bandit(door)
    arms = pool(door, fault, rate=1.0, bad=1)
    res, seen = _quiet(call, door, arms, max_faults=1)
    status, fragment = EXPECTED[fault]
    rows = _faults(res)
    if door == "identify_full_bandit":  # the super-arms holding the faulty arm fault
        assert rows and all("arm1" in name for name, _, _ in rows)
    else:
        assert rows and all(name == arms[1].name for name, _, _ in rows)
    assert rows[0][1] == status and fragment in rows[0][2], rows[0]
    if door in ("run", "estimate_evidence"):
        assert res.quarantined.tolist() == [False, True, False]
        assert any("quarantined" in m for m in _messages(seen, UnreliableArmWarning))
        est, se = (res.log_z, res.log_z_se) if door == "estimate_evidence" else (res.estimate, res.se)
        assert_within_se(est, 1.0, se, door, fault)  # every arm is unbiased for 1 (log Z = 1)
    elif door in ("identify", "identify_full_bandit"):
        assert _stopped_by(res) == "no_arm" and list(res.selected) == []
        assert _messages(seen)
    else:
        assert res.arm_names[1] not in res.selected and res.selected
        assert res.status[1] == "quarantined"


@pytest.mark.parametrize("door", DOORS)
def test_every_arm_faulting_leaves_no_arm_and_no_answer(door):
    """Identification and comparison agree: nothing selected, stopped_by "no_arm"; an allocation run
    has no estimate (NaN), never a number from nothing."""
    _skip_full_bandit(door)
    if door == "identify_full_bandit":
        arms = FaultyEnvironment(fault="raise", rate=1.0, bad=None)  # bad=None: every super-arm faults
    else:
        arms = [FaultyArm(a.name, a.mean, a.sd, "raise", 1.0, a.log_scale) for a in pool(door)]
    res, seen = _quiet(call, door, arms, max_faults=1)
    assert _stopped_by(res) == "no_arm"
    if door in ("run", "estimate_evidence"):
        est = res.log_z if door == "estimate_evidence" else res.estimate
        assert np.isnan(est) and res.quarantined.all()
    else:
        assert list(res.selected) == []
    assert _messages(seen)


@pytest.mark.parametrize("door", ("run", "estimate_evidence", "identify", "compare_samplers"))
def test_rare_faults_below_the_limit_are_counted_and_warned(door):
    """Faults below max_faults: the arm keeps playing, and the run says how many of its pulls failed."""
    arms = pool(door, "nan", rate=0.1, bad=0)
    res, seen = _quiet(call, door, arms, max_faults=1000)
    failed = sum(1 for name, _, _ in _faults(res) if name == arms[0].name)
    pulled = int(np.sum(res.history.column("arm") == 0))
    assert failed > 0
    text = [m for m in _messages(seen, NoGuaranteeWarning) if "pulls of arm" in m]
    assert text and f"{failed} of {pulled} pulls of arm {arms[0].name!r} failed" in text[0]


def test_identify_keeps_a_leading_arm_with_rare_faults_by_default():
    """Default max_faults tolerates a leading arm's rare faults: the best arm is still selected, with
    its failure rate reported."""
    arms = pool("identify", "raise", rate=0.1, bad=0)
    res, seen = _quiet(call, "identify", arms)
    assert res.selected == ["best"] and _stopped_by(res) == "confidence"
    assert any("pulls of arm 'best' failed" in m for m in _messages(seen, NoGuaranteeWarning))


@pytest.mark.parametrize("door", ("run", "estimate_evidence", "identify", "compare_samplers"))
def test_a_hanging_pull_times_out_and_the_run_goes_on(door):
    """A pull past pull_timeout is a "timeout" fault; a thread that cannot be stopped is warned about
    with the remedy (executor="processes")."""
    arms = pool(door, "hang", rate=1.0, bad=2)
    res, seen = _quiet(call, door, arms, max_faults=1, pull_timeout=0.3)
    rows = _faults(res)
    assert rows and rows[0][1] == "timeout" and "executor='processes'" in rows[0][2]
    advice = _messages(seen, SettingsWarning)
    assert all("executor='processes'" in m for m in advice)


# --- bad checkpoints: refused before any pull -------------------------------------------------
def _no_pull_pool(door):
    """A pool whose first pull would fail the test: a refused argument must come before any pull."""

    def refuse(*args):
        pytest.fail("a pull was made before the argument was refused")

    arms = pool(door)
    if door == "identify_full_bandit":
        arms.__class__ = type("Refusing", (FaultyEnvironment,), {"__call__": refuse})
        return arms
    for a in arms:
        a.draw = refuse
    return arms


BAD_CHECKPOINTS = {
    "missing_directory": lambda tmp: tmp / "nowhere" / "ck.npz",
    "a_directory": lambda tmp: tmp,
    "garbage": lambda tmp: _write(tmp / "ck.npz", b"not a checkpoint at all" * 10),
    "truncated": lambda tmp: _truncated(tmp / "ck.npz"),
    "other_format": lambda tmp: _other_npz(tmp / "ck.npz"),
}


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def _truncated(path):
    np.savez(path, settings_json=np.asarray("{}"), a=np.arange(1000))
    data = path.read_bytes()
    return _write(path, data[: len(data) // 2])


def _other_npz(path):
    np.savez(path, weights=np.arange(3))
    return path


@pytest.mark.parametrize("case", sorted(BAD_CHECKPOINTS))
@pytest.mark.parametrize("door", DOORS)
def test_a_bad_checkpoint_is_refused_before_any_pull(door, case, tmp_path):
    _skip_full_bandit(door)
    path = BAD_CHECKPOINTS[case](tmp_path)
    with pytest.raises(ValueError, match=rf"The 'checkpoint' parameter of {door} must be") as err:
        call(door, _no_pull_pool(door), checkpoint=path)
    text = str(err.value)
    assert "create it first" in text or "not a directory" in text or "start a new run" in text


@pytest.mark.parametrize("door", DOORS)
def test_a_checkpoint_of_other_arms_is_refused_before_any_pull(door, tmp_path):
    _skip_full_bandit(door)
    path = tmp_path / "ck.npz"
    _quiet(call, door, pool(door), checkpoint=path, callback=lambda p, h: p.pulls >= 10)
    if door == "identify_full_bandit":
        fewer = _no_pull_pool(door)
        fewer.theta, fewer.n = fewer.theta[:3], 3
    else:
        fewer = _no_pull_pool(door)[:2] + [FaultyArm("other", 1.0, 1.0, log_scale=door == "estimate_evidence")]
    with pytest.raises(
        ValueError, match=rf"The 'checkpoint' parameter of {door} must be a checkpoint written by the same"
    ):
        call(door, fewer, checkpoint=path)


@pytest.mark.parametrize("door", DOORS)
def test_a_checkpoint_of_another_seed_is_refused(door, tmp_path):
    _skip_full_bandit(door)
    path = tmp_path / "ck.npz"
    _quiet(call, door, pool(door), checkpoint=path, callback=lambda p, h: p.pulls >= 10)
    with pytest.raises(ValueError, match="streams"):
        call(door, _no_pull_pool(door), checkpoint=path, random_seed=4)


# --- checkpoint lifecycle ------------------------------------------------------------------------
def _same(a, b):
    for col in ("arm", "pull_index", "status", "decision"):
        assert np.array_equal(a.history.column(col), b.history.column(col)), col
    assert np.array_equal(a.history.column("obs"), b.history.column("obs"), equal_nan=True)


@pytest.mark.parametrize("door", DOORS)
def test_a_stopped_run_resumes_to_the_uninterrupted_result_and_says_so(door, tmp_path, caplog):
    _skip_full_bandit(door)
    full, _ = _quiet(call, door, pool(door))
    path = tmp_path / "ck.npz"
    _quiet(call, door, pool(door), checkpoint=path, callback=lambda p, h: p.pulls >= 25)
    with caplog.at_level("INFO", logger="pmcbandit"):
        resumed, seen = _quiet(call, door, pool(door), checkpoint=path)
    _same(full, resumed)
    assert resumed.settings["resumed_from"] == os.fspath(path) and resumed.settings["resumed_pulls"] >= 25
    assert any("resumed from the checkpoint" in r.getMessage() for r in caplog.records)
    assert not any("finished run" in m for m in _messages(seen))


@pytest.mark.parametrize("door", DOORS)
def test_a_finished_checkpoint_returns_its_result_with_a_warning(door, tmp_path):
    _skip_full_bandit(door)
    path = tmp_path / "ck.npz"
    first, _ = _quiet(call, door, pool(door), checkpoint=path, random_seed=None)
    again, seen = _quiet(call, door, pool(door), checkpoint=path, random_seed=None)
    _same(first, again)
    text = [m for m in _messages(seen) if "holds a finished run" in m]
    assert text and "start a new run" in text[0]
    fresh, _ = _quiet(call, door, pool(door), random_seed=None)  # no checkpoint: another run
    assert not np.array_equal(fresh.history.column("obs"), first.history.column("obs"))


@pytest.mark.parametrize("door", DOORS)
def test_random_seed_none_resumes_the_same_run(door, tmp_path):
    """The entropy drawn for random_seed=None is in the checkpoint: the resumed run is the same run."""
    _skip_full_bandit(door)
    path = tmp_path / "ck.npz"
    part, _ = _quiet(call, door, pool(door), checkpoint=path, random_seed=None, callback=lambda p, h: p.pulls >= 20)
    resumed, _ = _quiet(call, door, pool(door), checkpoint=path, random_seed=None)
    entropy = part.settings["streams"]["entropy"]
    assert resumed.settings["streams"]["entropy"] == entropy
    full, _ = _quiet(call, door, pool(door), random_seed=int(entropy))
    _same(full, resumed)


# --- kill -9 and resume ---------------------------------------------------------------------------
def _killed_child(door, path, marker, kill_at):
    with open(marker, "w") as fh:
        fh.write(str(kill_at))
    warnings.simplefilter("ignore")
    call(door, pool(door, kill_at=marker), checkpoint=path, checkpoint_every=1e-9)
    os._exit(0)  # not reached: the arm kills the process


def _kill_and_resume(door, tmp_path, kill_at):
    path = tmp_path / f"ck{kill_at}.npz"
    marker = tmp_path / f"kill{kill_at}"
    child = multiprocessing.get_context("fork").Process(target=_killed_child, args=(door, path, marker, kill_at))
    child.start()
    child.join(120)
    assert child.exitcode == -signal.SIGKILL, child.exitcode
    resumed, _ = _quiet(call, door, pool(door), checkpoint=path)
    return resumed


@pytest.mark.parametrize("door", DOORS)
def test_kill_9_mid_run_resumes_to_the_uninterrupted_result(door, tmp_path):
    _skip_full_bandit(door)
    full, _ = _quiet(call, door, pool(door))
    _same(full, _kill_and_resume(door, tmp_path, kill_at=6))


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", (1, 2, 4, 9, 15))
@pytest.mark.parametrize("door", DOORS)
def test_kill_9_at_several_points_resumes_to_the_uninterrupted_result(door, kill_at, tmp_path):
    _skip_full_bandit(door)
    full, _ = _quiet(call, door, pool(door))
    _same(full, _kill_and_resume(door, tmp_path, kill_at))


# --- bad arguments: the same message shape in every door ------------------------------------------
BAD_ARGUMENTS = [
    (dict(random_seed=-3), ValueError, "random_seed"),
    (dict(random_seed=1.5), TypeError, "random_seed"),
    (dict(budget=-1), ValueError, "budget"),
    (dict(budget=float("nan")), ValueError, "budget"),
    (dict(max_faults=0), ValueError, "max_faults"),
    (dict(pull_timeout=-1.0), ValueError, "pull_timeout"),
    (dict(callback=3), TypeError, "callback"),
    (dict(checkpoint=3), TypeError, "checkpoint"),
]


@pytest.mark.parametrize("kwargs, error, name", BAD_ARGUMENTS)
@pytest.mark.parametrize("door", DOORS)
def test_bad_shared_arguments_are_refused_before_any_pull(door, kwargs, error, name):
    _skip_full_bandit(door)
    with pytest.raises(error, match=rf"The '{name}' parameter of {door} must"):
        call(door, _no_pull_pool(door), **kwargs)


def test_a_timed_out_thread_still_running_after_the_run_is_warned_with_the_remedy():
    arms = pool("run")
    arms[2] = pb.CallableArm(lambda rng: time.sleep(20.0) or 1.0, name="stuck", cost=1.0)  # outlives the run
    with pytest.warns(SettingsWarning, match="executor='processes'") as seen:
        call("run", arms, max_faults=1, pull_timeout=0.2, budget=pb.Pulls(20))
    assert any("still running" in str(w.message) for w in seen)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(algorithm="lucb1", mode="nonsense"), "'mode' parameter of identify must be None for 'lucb1'"),
        (dict(algorithm="adapt", epsilon=3.0, bounds=(0.0, 2.0)), "'epsilon' parameter of identify must be < 2.0"),
        (dict(algorithm="adapt", epsilon=2.0, bounds=(0.0, 2.0)), "'epsilon' parameter of identify must be < 2.0"),
    ],
)
def test_identify_refuses_settings_that_do_not_apply(kwargs, fragment):
    kwargs = dict(kwargs)
    algorithm = kwargs.pop("algorithm")
    with pytest.raises(ValueError, match=fragment):
        pb.identify(_no_pull_pool("identify"), algorithm, sigma=0.5, progressbar=False, **kwargs)


def test_comparison_intervals_contain_their_estimates():
    from pmcbandit.compare.result import _containing

    point, lower, upper = _containing([0.0569, np.nan, 1.0], [0.0636, 0.1, np.nan], [0.0867, 0.2, 0.5])
    assert lower[0] <= point[0] <= upper[0] and lower[1] == 0.1 and np.isnan(lower[2]) and upper[2] == 1.0
