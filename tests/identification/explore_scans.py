"""Plain linear scans of the EXPLORE-m draws, the definitions the kernels' searches must agree with.

:func:`proportional` walks the weights in arm order; :func:`ocba_pick` is OCBA-m's next arm as the rule states it
(Chen et al. 2008; Kalyanakrishnan & Stone 2010, Sec. 4): uniform among the arms on the cutoff when there are
any, uniform over all arms when every allotment is zero, else proportional to the shortfalls
``max(0, (t + 1) / W * allot_i - n_i)`` found by :func:`proportional`. Both read the kernels' state layout
(:mod:`pmcbandit.identification.explore_kernels`).
"""

from pmcbandit.identification import explore_kernels as ek


def proportional(weights, total, u):
    """The arm ``i`` with ``sum(weights[:i]) <= u * total < sum(weights[:i+1])`` over the positive weights, summed in
    arm order; the last positive one when round-off leaves ``u * total`` at or above the sum; -1 when none is
    positive."""
    target = u * total
    acc = 0.0
    last = -1
    for i in range(weights.shape[0]):
        w = float(weights[i])
        if w > 0.0:
            acc += w
            last = i
            if target < acc:
                return i
    return last


def ocba_pick(ints, reals, scal, u, work):
    """OCBA-m's next arm from the kernels' state (``work``: scratch of one float per arm)."""
    n_arms = ints.shape[1]
    on = int(scal[ek.SC_ON])
    if on > 0:
        pick = min(int(u * on), on - 1)
        for i in range(n_arms):
            if ints[ek.I_ON, i] > 0:
                if pick == 0:
                    return i
                pick -= 1
    total = float(scal[ek.SC_W])
    if total == 0.0:
        return min(int(u * n_arms), n_arms - 1)
    scale = (float(scal[ek.SC_T]) + 1.0) / total
    short = 0.0
    for i in range(n_arms):
        work[i] = max(0.0, scale * float(reals[ek.R_ALLOT, i]) - float(ints[ek.I_N, i]))
        short += work[i]
    return proportional(work, short, u)
