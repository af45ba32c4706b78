"""Random streams of a run, derived from one seed (PyMC style: convert once, then spawn).

``root.spawn(2)`` gives the policy's stream and a parent for the arms. Pull ``j`` of arm
``k`` draws from ``SeedSequence(entropy, spawn_key=arm_key + (k, j))``, which is what
``arm_parent.spawn`` would hand out, but addressable: a resumed run re-creates the stream
of any pull without replaying the ones before it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Streams"]


class Streams:
    def __init__(self, policy_seq: np.random.SeedSequence, arm_seq: np.random.SeedSequence, bitgen_type=np.random.PCG64):
        self._bitgen_type = bitgen_type
        self.policy_seq = policy_seq
        self.arm_seq = arm_seq
        self.policy = np.random.Generator(bitgen_type(policy_seq))

    @classmethod
    def from_generator(cls, root: np.random.Generator) -> "Streams":
        policy_gen, arm_gen = root.spawn(2)
        return cls(policy_gen.bit_generator.seed_seq, arm_gen.bit_generator.seed_seq, type(root.bit_generator))

    def pull_rng(self, arm: int, j: int) -> np.random.Generator:
        seq = np.random.SeedSequence(self.arm_seq.entropy, spawn_key=(*self.arm_seq.spawn_key, arm, j))
        return np.random.Generator(self._bitgen_type(seq))

    def to_json(self) -> dict:
        return {
            "entropy": str(self.policy_seq.entropy),
            "policy_key": list(self.policy_seq.spawn_key),
            "arm_key": list(self.arm_seq.spawn_key),
            "bit_generator": self._bitgen_type.__name__,
        }

    @classmethod
    def from_json(cls, d: dict) -> "Streams":
        bitgen = getattr(np.random, d["bit_generator"])
        entropy = int(d["entropy"])
        return cls(
            np.random.SeedSequence(entropy, spawn_key=tuple(d["policy_key"])),
            np.random.SeedSequence(entropy, spawn_key=tuple(d["arm_key"])),
            bitgen,
        )
