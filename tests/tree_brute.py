"""Brute-force enumeration of dependency trees, shared by the tree tests."""

import functools
import itertools

import numpy as np


def is_tree(heads, single_root=False):
    """Whether a head array (1-based, 0 = root) is a tree: every word
    reaches the root (so no self-loop and no cycle); with ``single_root``,
    exactly one word attaches to the root."""
    heads = [int(h) for h in heads]
    n = len(heads)
    if any(not 0 <= h <= n for h in heads):
        return False
    for m in range(1, n + 1):
        v, steps = m, 0
        while v != 0:
            v = heads[v - 1]
            steps += 1
            if steps > n:
                return False
    return not single_root or heads.count(0) == 1


def is_projective(heads):
    """No two arcs cross when drawn above the sentence (root at 0)."""
    spans = [(min(h, m), max(h, m)) for m, h in enumerate(heads, start=1)]
    return not any(a < c < b < d for a, b in spans for c, d in spans)


@functools.lru_cache(maxsize=None)
def _trees(n, single_root, projective):
    out = [heads for heads in itertools.product(range(n + 1), repeat=n)
           if is_tree(heads, single_root) and (not projective or is_projective(heads))]
    return np.array(out, dtype=np.int64)


def all_trees(n, single_root, projective):
    """Every tree of ``n`` words as rows of head arrays (enumeration order)."""
    return _trees(n, bool(single_root), bool(projective)).copy()
