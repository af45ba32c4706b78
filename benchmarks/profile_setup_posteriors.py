"""Which part of the posterior short annealing runs and a Laplace proposal see, at set-up cost.

For each model, four pulls of a 100-step AIS arm and one batch of the light-tailed Laplace arm (``laplace-t20``) of
:func:`pmcbandit.evidence.evidence_arms`, each reporting the weighted posterior mean of the log likelihood at its
points (``post_loglik``) and, for the importance arm, its posterior sd (``post_loglik_sd``). Where the two means
differ by many posterior sds (:func:`pmcbandit.stats.posterior_check.differ`'s rule), the two estimators stand for
different parts of the posterior (a spike and a slab), or one of them does not reach the posterior at all (AIS of
too few steps on a large model): what a set-up rule that chooses the pilot's starting points from the annealing's
end states would have to tell apart.

Run: ``.venv/bin/python -m benchmarks.profile_setup_posteriors`` (writes
``benchmarks/results/profile_setup_posteriors.md``).
"""

from __future__ import annotations

import warnings

import numpy as np

from benchmarks._common import machine, utc_now, write_section

MODELS = ("spike_slab_d5", "spike_slab_d10", "spike_slab_d20", "conjugate", "eight_schools_centred",
          "mixture_label_switching", "student_t_unknown_nu", "beta_binomial", "logistic_regression_d50", "pima_768",
          "hierarchical_normal_100", "hierarchical_logistic_50")
AIS_STEPS = 100
AIS_PULLS = 4


def _model(name: str):
    from models.evidence_suite import SUITE
    from models.spike_slab import case

    return case(name).model if name.startswith("spike") else SUITE[name]().model


def measure(name: str) -> dict:
    from pmcbandit.evidence import evidence_arms

    arms = {a.name: a for a in evidence_arms(_model(name), ais_steps=(AIS_STEPS,), prior=False, nested=False,
                                             pilot_is=False, smc=False)}
    rng = np.random.default_rng(0)
    ais = [arms[f"ais-{AIS_STEPS}"].pull(rng).info["post_loglik"] for _ in range(AIS_PULLS)]
    laplace = arms["laplace-t20"].pull(rng).info
    diff = float(np.mean(ais)) - laplace["post_loglik"]
    sd = laplace["post_loglik_sd"]
    return {"model": name, "ais": float(np.mean(ais)), "ais_sd": float(np.std(ais)), "laplace": laplace["post_loglik"],
            "laplace_sd": sd, "diff": diff, "spreads": abs(diff) / sd if sd > 0 else float("inf")}


def main() -> None:
    warnings.simplefilter("ignore")
    rows = [measure(name) for name in MODELS]
    lines = [
        "## What short annealing runs and a Laplace proposal see at set-up (`profile_setup_posteriors`)",
        "",
        f"Machine: {machine()}; {utc_now()}; command: `.venv/bin/python -m benchmarks.profile_setup_posteriors`.",
        f"Posterior mean of the log likelihood at the points of {AIS_PULLS} pulls of `ais-{AIS_STEPS}` (their mean and "
        "sd over the pulls) and of one batch of `laplace-t20` (weighted; its posterior sd), seed 0.",
        "",
        "| model | AIS mean log L (sd over pulls) | laplace-t20 mean log L (posterior sd) | difference | in posterior sds |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['ais']:.2f} ({r['ais_sd']:.2f}) | {r['laplace']:.2f} ({r['laplace_sd']:.2f}) "
                     f"| {r['diff']:+.2f} | {r['spreads']:.3g} |")
    text = "\n".join(lines)
    print(text)
    write_section("profile_setup_posteriors", text)


if __name__ == "__main__":
    main()
