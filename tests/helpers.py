"""Cheap synthetic arms for allocation tests (no MCMC)."""

import time

import numpy as np

from pmcbandit import Arm, CallableArm


def normal_arm(mean: float, sd: float, size: int = 1, name: str | None = None, cost: float | None = 1.0):
    """Arm returning ``size`` N(mean, sd^2) draws per pull, with a declared cost."""
    return CallableArm(
        lambda rng: rng.normal(mean, sd, size=size), name=name or f"normal-{sd}", cost=cost
    )


class ScriptedArm(Arm):
    """Arm that misbehaves on chosen pulls: returns NaN, raises, or sleeps."""

    def __init__(self, name, mean=1.0, sd=1.0, nan_on=(), raise_on=(), sleep_on=(), sleep=5.0):
        self.name = name
        self.mean, self.sd = mean, sd
        self.nan_on, self.raise_on, self.sleep_on = set(nan_on), set(raise_on), set(sleep_on)
        self.sleep = sleep
        self.calls = 0

    def draw(self, rng):
        k = self.calls
        self.calls += 1
        if k in self.raise_on:
            raise RuntimeError(f"scripted failure on call {k}")
        if k in self.sleep_on:
            time.sleep(self.sleep)
        x = rng.normal(self.mean, self.sd, size=2)
        if k in self.nan_on:
            x[0] = np.nan
        return x, {}, 1.0
