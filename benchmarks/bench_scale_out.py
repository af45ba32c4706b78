"""Throughput of ``pmcbandit.run`` on every executor: serial, threads, processes, Dask.

Run as ``.venv/bin/python -m benchmarks.bench_scale_out`` (``--quick`` for a smoke run).

Three workloads, each a one-arm run with a ``Pulls(N)`` budget (policy ``uniform``, squared
reward: the allocation is fixed, only where the pulls run changes), on the Pima model of
Neufeld et al. (2014), App. G (``models.pima``, T = 50 rows):

* ``AIS-2000``: :class:`~pmcbandit.arms.evidence.AISArm` with 2000 annealing steps, one chain
  (a pull of a fraction of a second);
* ``Laplace-t``: :class:`~pmcbandit.arms.evidence.LaplaceISArm` with 1000 draws (a few ms);
* ``no-op``: an arm that returns 0 at once with a declared cost, for the driver's own cost.

Executors side by side in one process: ``serial`` (``executor=None``), ``threads(2)``
(``executor="threads"``; the no-op arm only: the evidence arms are not thread-safe and refuse
threads), ``processes(2)`` (:class:`~pmcbandit.runtime.executors.processes.ProcessExecutor`,
spawned workers) and ``dask 2x1`` (a ``LocalCluster`` of 2 single-threaded worker processes), the
out-of-process ones also with ``pulls_per_task=8`` (several pulls per task). Workers are started
and the arms installed before the clock starts (``run`` does that in ``executor.bind``, outside the
budget), and each configuration runs once untimed first.

Reported per configuration: pulls per second of wall time (``N`` over the run's own clock, the
history's last ``wall``), the ratio to serial (for 2 workers, efficiency = ratio / 2), and the
driver's CPU per pull (``time.process_time`` of this process around the run, over ``N``:
scheduling, pickling, the Dask client's threads). The machine is shared with other jobs: the load
average before and after is printed with the table, with the parallelism the machine gave at that
time (2 spawned processes spinning 1 s of CPU each, against the same 2 s in one process, from the
first one's start to the last one's end), and only ratios within one run compare.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import pmcbandit as pb
from benchmarks._common import machine, utc_now, write_section
from pmcbandit.arms.base import Arm


class NoOpArm(Arm):
    """Returns 0 at once, with a declared cost (module level: workers import it)."""

    name = "no-op"

    def draw(self, rng):
        return 0.0, {}, 1.0


def _spin(seconds: float, out=None) -> None:
    start = time.perf_counter()
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    if out is not None:
        out.put((start, time.perf_counter()))


def _parallelism(seconds: float = 1.0) -> float:
    """What 2 cores give right now: wall of 2 x ``seconds`` of CPU spun in this process over the wall
    of the same spun in 2 spawned processes at once, from the first one's start to the last one's
    end (their interpreter start-up excluded); 2.0 on an idle 2-core machine."""
    import multiprocessing

    start = time.perf_counter()
    _spin(seconds)
    _spin(seconds)
    serial = time.perf_counter() - start
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_spin, args=(seconds, out)) for _ in range(2)]
    for p in procs:
        p.start()
    spans = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return serial / (max(e for _, e in spans) - min(s for s, _ in spans))


def _arms(kind: str, density):
    from pmcbandit.arms.evidence import AISArm, LaplaceISArm

    if kind == "AIS-2000":
        return [AISArm(density, n_steps=2000, n_chains=1)]
    if kind == "Laplace-t":
        return [LaplaceISArm(density, batch_size=1000)]
    return [NoOpArm()]


def _time_run(arms, n: int, executor, max_in_flight) -> tuple[float, float]:
    """(pulls per wall second of the run's clock, driver CPU seconds per pull)."""
    c0 = time.process_time()
    res = pb.run(arms, policy="uniform", budget=pb.Pulls(n), reward="squared", random_seed=1, progressbar=False,
                 executor=executor, max_in_flight=max_in_flight)
    cpu = time.process_time() - c0
    wall = float(res.history.column("wall")[-1])
    return len(res.history) / wall, cpu / len(res.history)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few pulls (smoke run)")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    from models.pima import load_data, logistic_regression
    from pmcbandit.arms.evidence import ModelDensity
    from pmcbandit.runtime.executors.dask_cluster import DaskExecutor
    from pmcbandit.runtime.executors.processes import ProcessExecutor

    pulls = {"AIS-2000": 8, "Laplace-t": 200, "no-op": 400} if args.quick else \
        {"AIS-2000": 40, "Laplace-t": 1200, "no-op": 2000}
    load_before = os.getloadavg()
    density = ModelDensity(logistic_regression(*load_data(50)))
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    pools = {1: ProcessExecutor(2), 8: ProcessExecutor(2, pulls_per_task=8)}
    dasks = {1: DaskExecutor(client), 8: DaskExecutor(client, pulls_per_task=8)}
    configs = [("serial", None, 1), ("threads(2)", "threads", 2), ("processes(2)", pools[1], None),
               ("processes(2), 8 pulls/task", pools[8], None), ("dask 2x1", dasks[1], None),
               ("dask 2x1, 8 pulls/task", dasks[8], None)]
    rows = []
    ceilings = [_parallelism()]
    try:
        for kind, n in pulls.items():
            arms = _arms(kind, density)
            base = None
            for label, executor, in_flight in configs:
                if kind == "AIS-2000" and "8 pulls" in label:
                    continue  # a 0.2 s pull needs no batching
                if label.startswith("threads") and not arms[0].thread_safe:
                    continue  # evidence arms refuse threads (Arm.thread_safe): the reason for processes
                _time_run(arms, max(4, n // 10), executor, in_flight)  # untimed: workers warm, arms installed
                rate, driver = _time_run(arms, n, executor, in_flight)
                base = rate if label == "serial" else base
                rows.append((kind, label, n, rate, rate / base, driver))
                print(f"{kind:10s} {label:28s} {rate:10.1f} pulls/s  x{rate / base:5.2f}  "
                      f"driver {1e3 * driver:7.3f} ms/pull", flush=True)
    finally:
        for pool in pools.values():
            pool.close()
        for ex in dasks.values():
            ex.close()
        client.close()
        cluster.close()
    ceilings.append(_parallelism())
    load_after = os.getloadavg()
    serial_ms = {kind: 1e3 / rate for kind, label, _, rate, _, _ in rows if label == "serial"}
    lines = [
        "## Scale-out: executors side by side (`bench_scale_out`)",
        "",
        f"Machine: {machine()}; {utc_now()}; command: `.venv/bin/python -m benchmarks.bench_scale_out"
        f"{' --quick' if args.quick else ''}`; Python {sys.version.split()[0]}.",
        f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{', '.join(f'{x:.2f}' for x in load_after)} (the 2 cores were shared with other jobs, so "
        "absolute rates are noisy; the ratios to serial are measured in the same run). Parallelism the "
        f"machine gave (2 processes spinning vs one, start-up excluded): x{ceilings[0]:.2f} before, "
        f"x{ceilings[1]:.2f} after (2.0 on an idle 2-core machine): no executor can beat it.",
        "",
        "One-arm runs, `Pulls(N)`, Pima T=50. Rate: pulls per second of the run's wall clock (workers "
        "started and arms installed beforehand); x serial: rate over serial's (2 workers: efficiency "
        "= x / 2); driver: this process's CPU per pull (scheduling, pickling, Dask client threads). "
        + ", ".join(f"Serial pull: {ms:.3g} ms ({kind})" for kind, ms in serial_ms.items()) + ".",
        "",
        "| workload | executor | N | pulls/s | x serial | driver ms/pull |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [f"| {kind} | {label} | {n} | {rate:.1f} | {ratio:.2f} | {1e3 * driver:.3f} |"
              for kind, label, n, rate, ratio, driver in rows]
    best = {}
    for kind, label, _, _, ratio, driver in rows:
        if label not in ("serial", "threads(2)"):
            best.setdefault(kind, []).append((ratio, driver, label))
    goals = []
    if "AIS-2000" in best:
        r, _, lab = max(best["AIS-2000"])
        goals.append(f"AIS-2000 best 2-worker throughput x{r:.2f} serial ({lab}; goal >= 1.7)")
    if "Laplace-t" in best:
        r, _, lab = max(best["Laplace-t"])
        goals.append(f"Laplace-t best efficiency {100 * r / 2:.0f} % ({lab}; goal >= 80 %)")
    if "no-op" in best:
        d, lab = min((d, lab) for _, d, lab in best["no-op"])
        goals.append(f"no-op driver overhead {1e3 * d:.2f} ms/pull at best ({lab}; goal <= 2 ms)")
    lines += ["", "Goals: " + "; ".join(goals) + "."]
    text = "\n".join(lines)
    print(text)
    write_section("bench_scale_out", text)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
