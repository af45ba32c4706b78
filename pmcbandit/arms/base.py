"""The arm protocol: one Monte Carlo estimator that pmcbandit can call many times.

An arm compiles whatever it needs once (in ``__init__``) and then answers
:meth:`Arm.pull` many times. A pull returns a :class:`Pull`:

``values``
    a 1-D array of ``m >= 1`` i.i.d. unbiased estimates of the common target
    (for ``log_scale`` arms, the logarithms of unbiased estimates of a positive
    target, e.g. AIS weights of a model evidence Z, so that nothing underflows);
``cost``
    the price of the pull: measured CPU seconds (:func:`time.process_time` in the
    driver; :func:`time.thread_time` of the pull's thread on a process or Dask worker,
    :func:`thread_cpu_clock`) by default, or a declared cost (e.g. a count of log-density evaluations, for
    reproducible benchmarks);
``info``
    the diagnostic fields the arm declares in ``Arm.diagnostics`` (floats).

**Batches.** pmcbandit treats one pull as *one observation*: the batch mean
``Y = mean(values)`` (``log(mean(exp(values)))`` for log-scale arms), an
unbiased estimator with variance ``V_k = Var(X_k)/m``. The bandit sees one
reward per pull, the combiners weigh pulls, and the regret identity of
Neufeld et al. (2014), Thm 1, holds with ``V_k`` the variance of an arm's batch
mean and ``T_k(n)`` its number of pulls. The batch's own spread is kept as a
within-pull variance estimate, used only where an arm has too few pulls for a
between-pull estimate (see :mod:`pmcbandit.stats.combine`).

**Only real numbers.** ``values`` must be a real number or an array of them (Python or NumPy
ints and floats); a string (even ``"1.0"``), a bool, ``None``, a complex number or any other
object makes :meth:`Arm.pull` raise ``TypeError``, which the run records as an ``"error"`` fault
with that message (:func:`pmcbandit.runtime.executors.local.execute_pull`): a value is never
guessed from something that is not a number. The same holds for a reported ``cost``.

**Warm-up.** :meth:`Arm.warm_up` is called once before the budget's clock starts (by the door in
the driver, and on each worker of an out-of-process executor when the arms are installed), so
what the first pull would otherwise pay for once (a numba or PyTensor compilation, a cache
load) is set-up, as building the arm is, and not charged to the arm's first pull.
"""

from __future__ import annotations

import abc
import contextlib
import numbers
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from pmcbandit.base import new_tuple as _new

__all__ = ["Arm", "Pull", "CallableArm", "check_arms", "real_values", "thread_cpu_clock", "warm_up_arms"]


class _ThreadClock(threading.local):
    """The CPU clock :meth:`Arm.pull` reads, per thread: the process clock unless a worker set the thread clock.

    A class attribute is the default of every thread, so reading it costs an attribute lookup (``getattr`` with a
    default on a bare ``threading.local`` raises and catches ``AttributeError`` in every thread that never set it).
    """

    fn = staticmethod(time.process_time)


_CLOCK = _ThreadClock()
#: The array a one-float pull's values are copied from (:meth:`Arm._checked`).
_ONE_VALUE = np.zeros(1)


@contextlib.contextmanager
def thread_cpu_clock():
    """Within this block, :meth:`Arm.pull` in this thread measures :func:`time.thread_time`.

    The out-of-process executors' workers pull inside it (:mod:`pmcbandit.runtime.executors.worker`): a worker
    process runs other threads (Dask's event loop, neighbouring pulls), whose CPU time is not
    the pull's. Other threads of the process keep the process clock.
    """
    previous = _CLOCK.fn
    _CLOCK.fn = time.thread_time
    try:
        yield
    finally:
        _CLOCK.fn = previous


class Pull(NamedTuple):
    """What one call of :meth:`Arm.pull` returns."""

    values: np.ndarray
    cost: float
    info: Mapping[str, float]


class Arm(abc.ABC):
    """Base class of every arm.

    Subclasses set ``name`` and implement :meth:`draw`; :meth:`pull` measures the
    cost around it unless ``draw`` reports a cost of its own.

    Attributes
    ----------
    name : str
        Readable, unique within a pool (``"ais-2000"``, ``"theta-1.2"``).
    log_scale : bool
        ``True`` when ``values`` are logs of unbiased estimates of a positive target.
    diagnostics : tuple of str
        The fields ``info`` carries on every pull, declared up front so a run's
        history has a fixed schema (as PyMC's ``stats_dtypes_shapes``).
    family : str or None
        The estimator family, for cross-checks between independent methods
        (:mod:`pmcbandit.runtime.guards`): arms of different families fail in different ways
        (an importance sampler whose proposal misses a mode, an annealing chain that
        does not mix), so a run keeps a share of its budget on a second family.
        ``None``: no family declared (the arm takes no part in cross-checks).
    importance_weights : bool
        ``True`` when every value of a pull is the log of one importance weight
        (importance sampling, AIS), so the Pareto :math:`\\hat k` of the arm's
        accumulated weights diagnoses whether their variance is finite
        (:mod:`pmcbandit.stats.psis`). Requires ``log_scale``. The weights' mean is taken for an unbiased
        estimate of the target (or a low one, where the proposal misses part of it): a run bets on them to show
        another arm's estimate too low (:mod:`pmcbandit.stats.missed_mass`).
    cost_unit : str
        The unit of :attr:`Pull.cost`: ``"cpu_seconds"`` when measured (the default), else what
        the arm declares (``"logp_evals"``, ``"gradient_evals"``, ``"declared"`` for a
        :class:`CallableArm` given a ``cost``). Efficiencies of arms are comparable only in one
        unit (:func:`pmcbandit.compare_samplers` refuses a mix).
    expected_seconds : float or None
        Predicted wall seconds of one pull before any was made (e.g. from the
        measured cost of one model evaluation), so a time-budgeted run can order
        and cap its first decisions (:mod:`pmcbandit.runtime.guards`). ``None``: unknown.
    deterministic : bool
        ``True`` when the arm's observations carry no Monte Carlo error (a quadrature, a closed
        form): identical observations are then what it should return. ``False`` (the default):
        an arm whose observations are all identical is suspect (a stuck chain, a proposal that
        never moves) and is given no inverse-variance weight, with a warning
        (:mod:`pmcbandit.stats.combine`, zero-variance rule).
    components : tuple of str
        Names of diagnostics (a subset of :attr:`diagnostics`) that hold the components of a
        vector estimate, each on a fixed scale, of which the pull's value is the mean (e.g. every
        posterior mean of a sampler run, each divided by its posterior standard deviation).
        :func:`pmcbandit.compare_samplers` then scores a pair of pulls by half the sum of the
        components' squared differences, :math:`d` degrees of freedom instead of one
        (:mod:`pmcbandit.compare.efficiency`). ``()``: a scalar estimate.
    thread_safe : bool
        Whether :meth:`draw` may run in several threads of one process at once.
        ``False`` (the evidence arms: their compiled prior sampler reseeds shared
        random states on every call) makes a run with several threads in flight
        refuse the arm (``executor="processes"`` runs it in worker processes).
    reports_cost : bool
        ``True`` when :meth:`draw` reports the cost of every pull (a ``(values, info, cost)`` tuple with a
        real ``cost``): :meth:`pull` then reads no clock (it saves two CPU-clock reads, a system call each, around
        every draw), and a pull whose ``draw`` reports no cost raises
        ``TypeError``. ``False`` (the default): the cost is measured unless ``draw`` reports one.
    """

    name: str = "arm"
    log_scale: bool = False
    diagnostics: tuple[str, ...] = ()
    family: str | None = None
    importance_weights: bool = False
    cost_unit: str = "cpu_seconds"
    expected_seconds: float | None = None
    deterministic: bool = False
    components: tuple[str, ...] = ()
    thread_safe: bool = True
    reports_cost: bool = False

    @abc.abstractmethod
    def draw(self, rng: np.random.Generator) -> Any:
        """Produce estimates with the arm's own stream ``rng``.

        Return ``values`` or a tuple ``(values, info)`` or ``(values, info, cost)``;
        ``cost=None`` means "measure CPU time".
        """

    def warm_up(self) -> None:
        """Prepare what the first pull would otherwise pay for once (compile kernels, load caches).

        Called once per process before the budget's clock starts (module docstring, *Warm-up*);
        it must not draw from any stream, so a run's results do not depend on it. The default
        does nothing.
        """

    def pull(self, rng: np.random.Generator) -> Pull:
        """Draw once (:meth:`draw`) and return the checked :class:`Pull`.

        The cost is the CPU time around :meth:`draw` on this thread's clock (:func:`thread_cpu_clock`) unless
        ``draw`` reports one; an arm that declares :attr:`reports_cost` reads no clock at all, and its ``draw``
        must report a cost on every pull (else ``TypeError``). The values are checked by :func:`real_values` (a
        Python float, what most cheap draws return, is taken as it is: it is a real number).
        """
        if self.reports_cost:
            return self._checked(self.draw(rng), None)
        clock = _CLOCK.fn
        start = clock()
        out = self.draw(rng)
        return self._checked(out, clock() - start)

    def _checked(self, out, elapsed: float | None) -> Pull:
        """The :class:`Pull` of what :meth:`draw` returned (``out``), checked; ``elapsed``: the CPU seconds
        measured around it (``None``: not measured, the draw must report its cost).
        """
        info: Mapping[str, float] | None = None
        cost = None
        if isinstance(out, tuple):
            values = out[0]
            if len(out) > 1:
                info = out[1]
                if len(out) > 2:
                    cost = out[2]
        else:
            values = out
        if type(values) is float:  # np.array((values,)), built as a copy of a one-float array (the cheaper way)
            x, values = values, _ONE_VALUE.copy()
            values[0] = x
        else:
            values = np.atleast_1d(real_values(values, self.name))
            if values.ndim != 1 or values.size == 0:
                raise ValueError(
                    f"arm {self.name!r} returned values of shape {values.shape}; "
                    "a pull must return a non-empty 1-D array of estimates"
                )
        if cost is None:
            if elapsed is None:
                raise TypeError(f"arm {self.name!r} reports its cost (reports_cost=True) but returned none; "
                                "a cost must be a real number")
            cost = elapsed
        elif type(cost) is not float:
            if isinstance(cost, np.ndarray) and cost.ndim == 0 and cost.dtype.kind in "iuf":
                cost = cost.item()
            if isinstance(cost, (bool, np.bool_)) or not isinstance(cost, numbers.Real):
                raise TypeError(f"arm {self.name!r} returned the cost {cost!r} of type {type(cost).__name__}; "
                                "a cost must be a real number (or None to measure CPU time)")
            cost = float(cost)
        return _new(Pull, (values, cost, dict(info) if info else {}))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def warm_up_arms(arms) -> None:
    """Call every arm's :meth:`Arm.warm_up` once (module docstring, *Warm-up*).

    A warm-up that raises is not an error here: the arm's first pull meets the same failure and
    the run records it as that pull's fault, with the message.
    """
    for arm in arms:
        try:
            arm.warm_up()
        except Exception:  # reported by the pull that needs what failed to warm up
            pass


def real_values(values, name: str) -> np.ndarray:
    """``values`` as a float64 array if it holds only real numbers, else ``TypeError`` (module docstring).

    Accepted: Python and NumPy ints and floats, and arrays (or nested sequences) of them. Refused:
    strings and bytes, bools, ``None``, complex numbers and other objects.
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged sequences
        raise TypeError(f"arm {name!r} returned values that are not an array of real numbers ({exc})") from None
    kind = arr.dtype.kind
    if kind == "O":
        bad = [v for v in arr.ravel() if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real)]
        if not bad:
            return arr.astype(np.float64)
        bad = bad[0]
        raise TypeError(f"arm {name!r} returned {bad!r} of type {type(bad).__name__}; a pull must return real "
                        "numbers (a float or an array of floats)")
    if kind not in "iuf":
        what = {"b": "bools", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(kind, f"dtype {arr.dtype}")
        raise TypeError(f"arm {name!r} returned {what} ({_short(values)}); a pull must return real numbers "
                        "(a float or an array of floats)")
    return arr.astype(np.float64, copy=False)


def _short(values) -> str:
    text = repr(values)
    return text if len(text) <= 60 else text[:57] + "..."


class CallableArm(Arm):
    """An arm from any Python callable ``fn(rng) -> estimates``.

    Parameters
    ----------
    fn : callable
        ``fn(rng)`` returns one estimate, an array of i.i.d. estimates, or a tuple
        ``(values, info)`` / ``(values, info, cost)`` as :meth:`Arm.draw` does.
    name : str, optional
        Defaults to ``fn.__name__``.
    log_scale : bool
        See :class:`Arm`.
    diagnostics : sequence of str
        Fields ``fn`` reports in ``info``.
    cost : float or callable, optional
        A declared cost per pull (a number, or ``cost(values) -> float``) instead
        of measured CPU time.
    """

    def __init__(
        self,
        fn: Callable[[np.random.Generator], Any],
        name: str | None = None,
        *,
        log_scale: bool = False,
        diagnostics: Sequence[str] = (),
        cost: float | Callable[[np.ndarray], float] | None = None,
    ):
        if not callable(fn):
            raise TypeError(f"The 'fn' parameter of CallableArm must be callable. Got {fn!r} instead.")
        self.fn = fn
        self.name = name if name is not None else getattr(fn, "__name__", "arm")
        self.log_scale = bool(log_scale)
        self.diagnostics = tuple(diagnostics)
        self.cost = cost
        if cost is not None:
            self.cost_unit = "declared"

    @property
    def reports_cost(self) -> bool:
        """Whether a cost is declared (:attr:`Arm.reports_cost`): then every pull reports it and reads no clock."""
        return self.cost is not None

    def draw(self, rng):
        out = self.fn(rng)
        cost = self.cost
        if cost is None:
            return out
        values, info = (out[0], out[1]) if isinstance(out, tuple) else (out, {})
        return values, info, cost(np.asarray(values)) if callable(cost) else float(cost)


def check_arms(arms, door: str) -> list[Arm]:
    """``arms`` as a list of :class:`Arm` with unique names, all log-scale or none (``door`` names the
    function in the error messages).
    """
    if isinstance(arms, Arm):
        arms = [arms]
    try:
        arms = list(arms)
    except TypeError:
        raise TypeError(f"The 'arms' parameter of {door} must be a sequence of Arm. Got {arms!r} instead.") from None
    if not arms:
        raise ValueError(f"The 'arms' parameter of {door} must be a non-empty sequence of Arm. Got [] instead.")
    for a in arms:
        if not isinstance(a, Arm):
            raise TypeError(
                f"The 'arms' parameter of {door} must contain Arm objects (wrap a function in CallableArm). "
                f"Got {a!r} instead."
            )
    if len({bool(a.log_scale) for a in arms}) > 1:
        scales = {a.name: bool(a.log_scale) for a in arms}
        raise ValueError(
            f"The 'arms' parameter of {door} must not mix log-scale and linear-scale arms. "
            f"Got log_scale={scales!r} instead."
        )
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ValueError(f"The 'arms' parameter of {door} must have unique names. Got {names!r} instead.")
    return arms
