"""Seeded ``Pulls`` runs of ``estimate_evidence``: bit-identical under a competing busy process, and after kill -9.

Run as ``.venv/bin/python -m benchmarks.bench_determinism`` (``--reps``, ``--pulls``, ``--kill-points``).

The model is the linear regression of ``tests/analytic_models.py`` (exact evidence), with the
default pool of :func:`pmcbandit.evidence_arms` (AIS arms whose ``expected_seconds`` comes from a
timed probe, Laplace and prior importance sampling). The same seeded call is made ``--reps``
times while a busy process (a pure-Python loop on every core) competes for the CPU, and once on
the machine as it is; every run must give the same history (arm, pull index, status, observation)
and the same log Z to the last bit. Then the run is killed with SIGKILL at several pulls (a pull
wrapper kills its own process) with ``checkpoint_every`` tiny, and each checkpoint is resumed:
every resumed run must equal the uninterrupted one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import tempfile
import time
import warnings

import numpy as np

from benchmarks._common import machine, utc_now, write_section

NAME = "bench_determinism"


def _spin(stop):
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x += i * i


def _model():
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.analytic_models import linear_regression

    return linear_regression()[0]


def _run(model, pulls, seed, checkpoint=None, kill_at=None):
    import pmcbandit as pb

    arms = pb.evidence_arms(model)
    if kill_at is not None:  # the kill_at-th pull of the run kills its process, as an external kill -9 would
        calls = [0]
        for arm in arms:
            def pull(rng, original=arm.pull):
                calls[0] += 1
                if calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return original(rng)

            arm.pull = pull
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pb.estimate_evidence(model, arms=arms, budget=pb.Pulls(pulls), random_seed=seed, progressbar=False,
                                    checkpoint=checkpoint, checkpoint_every=1e-9 if checkpoint else 30.0)


def _fingerprint(res):
    h = res.history
    return (h.column("arm").tobytes(), h.column("pull_index").tobytes(), h.column("status").tobytes(),
            h.column("obs").tobytes(), np.float64(res.log_z).tobytes())


def _child(model, pulls, seed, path, kill_at):
    _run(model, pulls, seed, checkpoint=path, kill_at=kill_at)
    os._exit(0)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--pulls", type=int, default=600)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--kill-points", type=int, nargs="*", default=[2, 5, 11, 23, 47, 95])
    parser.add_argument("--spinners", type=int, default=1, help="busy competing processes")
    args = parser.parse_args(argv)
    model = _model()
    t0 = time.perf_counter()
    reference = _run(model, args.pulls, args.seed)
    idle_seconds = time.perf_counter() - t0
    ref = _fingerprint(reference)
    stop = multiprocessing.Event()
    print(f"reference: {idle_seconds:.1f} s, log Z {reference.log_z!r}", file=sys.stderr, flush=True)
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.spinners)]
    for p in spinners:
        p.start()
    same, seconds = 0, []
    try:
        for _ in range(args.reps):
            t = time.perf_counter()
            res = _run(model, args.pulls, args.seed)
            seconds.append(time.perf_counter() - t)
            same += _fingerprint(res) == ref
            print(f"rep {len(seconds)}: {seconds[-1]:.1f} s, identical {same}", file=sys.stderr, flush=True)
    finally:
        stop.set()
        for p in spinners:
            p.join(5)
    kills = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.kill_points:
            path = os.path.join(tmp, f"ck{n}.npz")
            child = multiprocessing.get_context("fork").Process(target=_child, args=(model, args.pulls, args.seed,
                                                                                     path, n))
            child.start()
            child.join()
            killed = child.exitcode == -signal.SIGKILL
            saved = os.path.exists(path)
            resumed = _run(model, args.pulls, args.seed, checkpoint=path)
            kills.append((n, killed, saved, _fingerprint(resumed) == ref))
            print(f"kill at {n}: {kills[-1]}", file=sys.stderr, flush=True)
    pulls = np.bincount(reference.history.column("arm"), minlength=len(reference.arm_names)).tolist()
    lines = [
        f"## {NAME}: seeded Pulls runs of estimate_evidence under load and after kill -9",
        "",
        f"- machine: {machine()} (shared with other jobs while this ran)",
        f"- date: {utc_now()}",
        f"- command: `.venv/bin/python -m benchmarks.{NAME} --reps {args.reps} --pulls {args.pulls} "
        f"--seed {args.seed} --spinners {args.spinners} --kill-points {' '.join(map(str, args.kill_points))}`",
        f"- model: tests/analytic_models.linear_regression, default pool {reference.arm_names}",
        f"- reference (machine as it was): log Z = {reference.log_z!r}, pulls per arm {pulls}, {idle_seconds:.1f} s",
        "",
        "| condition | runs | bit-identical to the reference |",
        "|---|---|---|",
        f"| {len(spinners)} busy competing process(es) (pure-Python loop) | {args.reps} | {same} / {args.reps} "
        f"(run time {min(seconds):.1f}-{max(seconds):.1f} s) |",
        "",
        "| kill -9 at pull | killed | checkpoint written | resumed run bit-identical |",
        "|---|---|---|---|",
        *[f"| {n} | {k} | {s} | {r} |" for n, k, s, r in kills],
    ]
    text = "\n".join(lines)
    print(text)
    write_section(NAME, text)


if __name__ == "__main__":
    main()
