"""The public API: the names ``pmcbandit`` exports and the signatures of its doors.

A change here is a change users see: it must be deliberate, with this file updated in the same change.
"""

from __future__ import annotations

import inspect

import pytest

import pmcbandit as pb

ALL = ['Arm',
       'CallableArm',
       'ComparisonResult',
       'CpuSeconds',
       'EvidenceResult',
       'FullBanditResult',
       'IdentificationResult',
       'ModelComparison',
       'POLICY_NAMES',
       'PmcBanditWarning',
       'Pull',
       'Pulls',
       'PyTensorArm',
       'RunResult',
       'TargetSE',
       'WallSeconds',
       'compare_models',
       'compare_samplers',
       'estimate_evidence',
       'evidence_arms',
       'get_policy',
       'identify',
       'identify_full_bandit',
       'read_run',
       'run',
       'sampler_arms']

P = inspect.Parameter
KIND = {P.POSITIONAL_OR_KEYWORD: "pos", P.KEYWORD_ONLY: "kw", P.VAR_KEYWORD: "**", P.VAR_POSITIONAL: "*",
        P.POSITIONAL_ONLY: "posonly"}

SIGNATURES = {
    'run': [
        ('arms', 'pos'), ('policy', 'pos'), ('budget', 'kw'), ('combine', 'kw'), ('random_seed', 'kw'),
        ('reward', 'kw'), ('bounds', 'kw'), ('ranges', 'kw'), ('centre', 'kw'), ('policy_kwargs', 'kw'),
        ('max_in_flight', 'kw'), ('pull_timeout', 'kw'), ('executor', 'kw'), ('max_faults', 'kw'),
        ('cross_check_share', 'kw'), ('max_decision_share', 'kw'), ('progressbar', 'kw'), ('callback', 'kw'),
        ('checkpoint', 'kw'), ('checkpoint_every', 'kw'),
    ],
    'estimate_evidence': [
        ('model', 'pos'), ('policy', 'pos'), ('arms', 'kw'), ('budget', 'kw'), ('combine', 'kw'),
        ('random_seed', 'kw'), ('reward', 'kw'), ('policy_kwargs', 'kw'), ('max_in_flight', 'kw'),
        ('pull_timeout', 'kw'), ('executor', 'kw'), ('max_faults', 'kw'), ('cross_check_share', 'kw'),
        ('max_decision_share', 'kw'), ('progressbar', 'kw'), ('callback', 'kw'), ('checkpoint', 'kw'),
        ('checkpoint_every', 'kw'), ('idata', 'kw'),
    ],
    'evidence_arms': [
        ('model', 'pos'), ('ais_steps', 'kw'), ('n_chains', 'kw'), ('transition', 'kw'), ('laplace', 'kw'),
        ('laplace_proposals', 'kw'), ('prior', 'kw'), ('smc', 'kw'), ('nested', 'kw'), ('batch_size', 'kw'),
        ('cost', 'kw'), ('budget_seconds', 'kw'), ('non_centre', 'kw'), ('hmc_arm', 'kw'), ('pilot_is', 'kw'),
        ('refine', 'kw'),
        ('idata', 'kw'),
    ],
    'identify': [
        ('arms', 'pos'), ('algorithm', 'pos'), ('k', 'kw'), ('delta', 'kw'), ('budget', 'kw'),
        ('random_seed', 'kw'), ('bounds', 'kw'), ('sigma', 'kw'), ('mode', 'kw'), ('epsilon', 'kw'),
        ('algorithm_kwargs', 'kw'), ('max_faults', 'kw'), ('max_in_flight', 'kw'), ('pull_timeout', 'kw'),
        ('executor', 'kw'), ('progressbar', 'kw'), ('callback', 'kw'), ('checkpoint', 'kw'),
        ('checkpoint_every', 'kw'),
    ],
    'compare_samplers': [
        ('arms', 'pos'), ('k', 'kw'), ('delta', 'kw'), ('budget', 'kw'), ('random_seed', 'kw'),
        ('bounds', 'kw'), ('costs', 'kw'), ('reference', 'kw'), ('epsilon', 'kw'), ('min_pairs', 'kw'),
        ('gate_alpha', 'kw'), ('max_faults', 'kw'), ('max_in_flight', 'kw'), ('pull_timeout', 'kw'),
        ('executor', 'kw'), ('progressbar', 'kw'), ('callback', 'kw'), ('checkpoint', 'kw'),
        ('checkpoint_every', 'kw'),
    ],
    'identify_full_bandit': [
        ('environment', 'pos'), ('algorithm', 'pos'), ('k', 'kw'), ('delta', 'kw'), ('epsilon', 'kw'),
        ('sigma', 'kw'), ('n', 'kw'), ('noise', 'kw'), ('allocation', 'kw'), ('budget', 'kw'),
        ('random_seed', 'kw'), ('arm_names', 'kw'), ('algorithm_kwargs', 'kw'), ('max_faults', 'kw'),
        ('max_in_flight', 'kw'), ('pull_timeout', 'kw'), ('executor', 'kw'), ('progressbar', 'kw'),
        ('callback', 'kw'), ('checkpoint', 'kw'), ('checkpoint_every', 'kw'),
    ],
    'compare_models': [
        ('models', 'pos'), ('policy', 'pos'), ('budget', 'kw'), ('prior', 'kw'), ('random_seed', 'kw'),
        ('split', 'kw'), ('target', 'kw'), ('decide', 'kw'), ('slices', 'kw'), ('level', 'kw'),
        ('arms', 'kw'), ('combine', 'kw'), ('reward', 'kw'), ('policy_kwargs', 'kw'), ('max_in_flight', 'kw'),
        ('pull_timeout', 'kw'), ('executor', 'kw'), ('max_faults', 'kw'), ('progressbar', 'kw'),
        ('callback', 'kw'), ('checkpoint', 'kw'), ('checkpoint_every', 'kw'), ('idata', 'kw'),
    ],
    'sampler_arms': [
        ('model', 'pos'), ('quantity', 'pos'), ('samplers', 'pos'), ('cost', 'kw'),
    ],
    'read_run': [
        ('path', 'pos'),
    ],
    'get_policy': [
        ('policy', 'pos'), ('door', 'kw'), ('params', '**'),
    ],
}


def test_exported_names():
    assert sorted(pb.__all__) == ALL
    for name in ALL:
        assert hasattr(pb, name), name


@pytest.mark.parametrize("door", sorted(SIGNATURES))
def test_door_signature(door):
    sig = inspect.signature(getattr(pb, door))
    assert [(n, KIND[p.kind]) for n, p in sig.parameters.items()] == [tuple(x) for x in SIGNATURES[door]]

