"""How often a ``TargetSE`` run evaluates its interval, and where it stops: for seeds ``0..n-1``, ``pmcbandit.run`` of
three arms of N(1, 1), N(1, 0.3^2) and N(1, 2^2) draws (declared cost 1, the arms of ``tests/test_run.py``) under
``ucb1`` with ``TargetSE(0.005)``; it prints per seed the pulls, the number of interim results the budget's watch
built (``pmcbandit.run._interim_result``, counted) and the final SE over the target. Run it from a checkout of each
version to compare (the package is imported from the current directory, or from ``PYTHONPATH``)::

    .venv/bin/python -m benchmarks.probe_target_se_schedule 3

It prints; it writes no results file.
"""

from __future__ import annotations

import sys


def main(seeds: int, target: float = 0.005) -> None:
    import pmcbandit as pb

    module = sys.modules["pmcbandit.run"]  # the module (``pmcbandit.run`` is also the function)
    interim = module._interim_result
    evaluations = []

    def counted(engine, combine):
        evaluations.append(len(engine.history))
        return interim(engine, combine)

    module._interim_result = counted
    for seed in range(seeds):
        evaluations.clear()
        arms = [pb.CallableArm(lambda rng, sd=sd: rng.normal(1.0, sd, size=1), name=name, cost=1.0)
                for name, sd in (("a", 1.0), ("b", 0.3), ("c", 2.0))]
        res = pb.run(arms, policy="ucb1", budget=pb.TargetSE(target), random_seed=seed, progressbar=False)
        print(f"seed {seed}: {len(res.history)} pulls, {len(evaluations)} evaluations, se / target "
              f"{res.se / target:.3f}, stopped by {res.stopped_by}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
