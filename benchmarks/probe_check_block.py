"""How the cross-family check's block of 30 runs of the 400-step AIS arm reads on Pima T = 50: the z of its
log-mean-exp against a reference, with the delta-method SE of those 30 runs, for ``n`` blocks drawn two ways:

``run``    block ``s`` is the arm's first 30 pulls under ``random_seed=s``, through the run's per-pull streams
           (:func:`pmcbandit.runtime.checkpoint.run_streams`, ``pull_rng(arm, j)``): the block a ``TargetSE`` run's
           check collects;
``spawn``  blocks of 30 pulls, each pull from its own child of ``numpy.random.SeedSequence(12345).spawn``.

The reference is the log-mean-exp of all the ``spawn`` pulls. Prints the mean, standard deviation, smallest and
largest z of each way, and how many blocks have ``|z| > 3``; under independent pulls the z of a block follows about
a Student-t with 29 degrees of freedom. It writes no results file::

    .venv/bin/python -m benchmarks.probe_check_block 100
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from benchmarks._common import log_mean_exp

BLOCK = 30


def _z(block: np.ndarray, reference: float) -> float:
    log_mean, se = log_mean_exp(block)
    return (log_mean - reference) / se


def main(blocks: int) -> None:
    import pmcbandit as pb
    from models import pima
    from pmcbandit.runtime.checkpoint import run_streams

    warnings.simplefilter("ignore")
    arms = pb.evidence_arms(pima.logistic_regression(*pima.load_data(50)))
    k = [a.name for a in arms].index("ais-400")
    arm = arms[k]

    def pull(rng) -> float:
        return float(np.ravel(arm.draw(rng)[0])[0])

    spawn = np.array([pull(np.random.default_rng(s)) for s in np.random.SeedSequence(12345).spawn(blocks * BLOCK)])
    reference = log_mean_exp(spawn)[0]
    ways = {
        "run": np.array([_z(np.array([pull(run_streams(s, None).pull_rng(k, j)) for j in range(BLOCK)]), reference)
                         for s in range(blocks)]),
        "spawn": np.array([_z(b, reference) for b in spawn.reshape(blocks, BLOCK)]),
    }
    print(f"reference log Z {reference:.4f} from {spawn.size} pulls (log-weight variance {np.var(spawn):.4f})")
    for name, z in ways.items():
        print(f"{name}: {blocks} blocks, z mean {z.mean():.2f}, sd {z.std(ddof=1):.2f}, smallest {z.min():.2f} "
              f"(block {int(z.argmin())}), largest {z.max():.2f}, |z| > 3 on {int(np.sum(np.abs(z) > 3))}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
