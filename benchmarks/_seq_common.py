"""Shared data and features of the sequence-tagging benchmarks."""

import os
from pathlib import Path

SHARED = Path(os.environ.get("STRUCTLEARN_SHARED_DATA",
                             Path(__file__).resolve().parents[2] / "shared" / "data"))


def read_conll2000(subset):
    """Sentences of (word, pos, chunk) triples from ../shared/data."""
    from structlearn.datasets import read_conll_columns

    return read_conll_columns(SHARED / "conll2000_chunking" / f"{subset}.txt")


def chunking_features(sent):
    """The CRF++ chunking template used by CRFsuite's benchmark.

    Words at offsets -2..2, word bigrams (-1,0) (0,1), POS at -2..2, POS
    bigrams (-2,-1) (-1,0) (0,1) (1,2), POS trigrams starting at -2, -1, 0.
    Out-of-range positions read as the boundary symbols ``__BOS__`` /
    ``__EOS__``.
    """
    n = len(sent)

    def w(i):
        return sent[i][0] if 0 <= i < n else ("__BOS__" if i < 0 else "__EOS__")

    def p(i):
        return sent[i][1] if 0 <= i < n else ("__BOS__" if i < 0 else "__EOS__")

    feats = []
    for t in range(n):
        f = {}
        for o in (-2, -1, 0, 1, 2):
            f[f"w[{o}]"] = w(t + o)
            f[f"pos[{o}]"] = p(t + o)
        f["w[-1]|w[0]"] = w(t - 1) + "|" + w(t)
        f["w[0]|w[1]"] = w(t) + "|" + w(t + 1)
        for a, b in ((-2, -1), (-1, 0), (0, 1), (1, 2)):
            f[f"pos[{a}]|pos[{b}]"] = p(t + a) + "|" + p(t + b)
        for a in (-2, -1, 0):
            f[f"pos[{a}]|pos[{a + 1}]|pos[{a + 2}]"] = "|".join(p(t + a + j) for j in range(3))
        feats.append(f)
    return feats


def conll2000_xy(subset):
    sents = read_conll2000(subset)
    return [chunking_features(s) for s in sents], [[c for _, _, c in s] for s in sents]
