"""Validation of dependency trees given as head arrays (CoNLL-U HEAD columns)."""

import numpy as np
from numba import njit

#: Error codes of :func:`check_heads`.
HEADS_OK = 0
HEADS_EMPTY = 1
HEADS_OUT_OF_RANGE = 2
HEADS_SELF_LOOP = 3
HEADS_NO_ROOT = 4
HEADS_SEVERAL_ROOTS = 5
HEADS_CYCLE = 6


# --------------------------------------------------------------- validation
@njit(cache=True, nogil=True)
def check_heads(heads, word_off, single_root):
    """First problem in a batch of head arrays.

    Checks, per sentence and in this order: at least one word, heads in
    ``0..n``, no self-loop, at least one root child, at most one if
    ``single_root``, no cycle.  ``O(total words)``.

    Returns
    -------
    code : int
        :data:`HEADS_OK` or one of the ``HEADS_*`` error codes.
    sentence : int
        Index of the offending sentence (-1 if OK).
    word : int
        The offending word (1-based): the word with the bad head, the second
        root child, or a word on the cycle (0 when not applicable).
    """
    n_sent = word_off.shape[0] - 1
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        if n < 1:
            return HEADS_EMPTY, i, 0
        for m in range(1, n + 1):
            h = heads[o + m - 1]
            if h < 0 or h > n:
                return HEADS_OUT_OF_RANGE, i, m
            if h == m:
                return HEADS_SELF_LOOP, i, m
        first = 0
        for m in range(1, n + 1):
            if heads[o + m - 1] == 0:
                if first == 0:
                    first = m
                elif single_root:
                    return HEADS_SEVERAL_ROOTS, i, m
        if first == 0:
            return HEADS_NO_ROOT, i, 0
        mark = np.zeros(n + 1, dtype=np.int64)
        for m in range(1, n + 1):
            v = m
            while v != 0 and mark[v] == 0:
                mark[v] = m
                v = heads[o + v - 1]
            if v != 0 and mark[v] == m:
                return HEADS_CYCLE, i, v
    return HEADS_OK, -1, 0


def validate_heads(heads_list, single_root):
    """Check a list of head arrays and return them in the batch layout.

    Parameters
    ----------
    heads_list : sequence of 1-D integer array-likes
        ``heads_list[i][m - 1]`` is the head of word ``m`` of sentence ``i``.
    single_root : bool

    Returns
    -------
    heads : int64 array
        The concatenated heads.
    word_off : int64 array, shape (n_sent + 1,)

    Raises
    ------
    ValueError
        Naming the sentence and the problem: empty sentence, non-integer
        head, head out of range, self-loop, no root child, several root
        children (``single_root``), or a cycle (listing its words).
    """
    arrays = []
    for i, h in enumerate(heads_list):
        a = np.asarray(h)
        if a.ndim != 1:
            raise ValueError(f"sentence {i}: heads must be one-dimensional, got shape {a.shape}")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            if not (np.issubdtype(a.dtype, np.number) and np.all(a == np.round(a))):
                raise ValueError(f"sentence {i} ({a.size} words): heads must be integers, "
                                 f"got {a.tolist()}")
        arrays.append(a.astype(np.int64))
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    word_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    heads = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    heads = np.ascontiguousarray(heads, dtype=np.int64)
    code, i, m = check_heads(heads, word_off, bool(single_root))
    if code == HEADS_OK:
        return heads, word_off
    h = arrays[i]
    n = len(h)
    where = f"sentence {i} ({n} words)"
    if code == HEADS_EMPTY:
        raise ValueError(f"{where}: a sentence needs at least one word")
    if code == HEADS_OUT_OF_RANGE:
        raise ValueError(f"{where}: head {h[m - 1]} of word {m} is out of range 0..{n}")
    if code == HEADS_SELF_LOOP:
        raise ValueError(f"{where}: word {m} is its own head (self-loop)")
    if code == HEADS_NO_ROOT:
        raise ValueError(f"{where}: no word is attached to the root (head 0)")
    if code == HEADS_SEVERAL_ROOTS:
        roots = [j + 1 for j in range(n) if h[j] == 0]
        raise ValueError(f"{where}: several words are attached to the root {roots} "
                         "but single_root=True")
    cycle = [m]
    v = int(h[m - 1])
    while v != m:
        cycle.append(v)
        v = int(h[v - 1])
    path = " -> ".join(str(v) for v in cycle + [m])
    raise ValueError(f"{where}: cycle through words {sorted(cycle)} "
                     f"(following heads: {path})")
