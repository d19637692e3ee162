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


def word_shape(word):
    """Collins (2002b)-style word shape: characters become their type (A
    upper, a lower, 0 digit; other characters stay), and a run of one type
    collapses to that type followed by ``+`` when longer than one character.
    ``2,664,098`` -> ``0,0+,0+`` as in Martins et al. (2011); their other
    example, ``Confidence`` -> ``Aa``, drops the ``+`` that their own rule
    gives (``Aa+``), which is what we produce."""
    out = []
    prev, run = None, 0
    for ch in word:
        c = "A" if ch.isupper() else "a" if ch.islower() else "0" if ch.isdigit() else ch
        if c == prev:
            run += 1
            if run == 2:
                out.append("+")
            continue
        out.append(c)
        prev, run = c, 1
    return "".join(out)


def _ngram_templates(lo, hi, max_n):
    """Contiguous offset windows of length 1..max_n inside [lo, hi]."""
    return [tuple(range(a, a + n)) for n in range(1, max_n + 1)
            for a in range(lo, hi - n + 2)]


#: the templates of Martins et al. (2011), Sec. 5, as we read them: POS
#: n-grams (n <= 5) in a window of 5 tokens left and right, word n-grams
#: (n <= 3) within 3, shape n-grams (n <= 2) within 2 -- 45 + 18 + 9 = 72
#: templates (the paper counts 96; its description does not say how).
PAPER_TEMPLATES = ([("pos", t) for t in _ngram_templates(-5, 5, 5)]
                   + [("w", t) for t in _ngram_templates(-3, 3, 3)]
                   + [("shape", t) for t in _ngram_templates(-2, 2, 2)])


def paper_chunking_features(sent):
    """Feature dicts of one sentence with :data:`PAPER_TEMPLATES` (one key
    per template, e.g. ``pos[-1,0,1]``)."""
    n = len(sent)
    cols = {"w": [w for w, _, _ in sent], "pos": [p for _, p, _ in sent],
            "shape": [word_shape(w) for w, _, _ in sent]}
    names = [f"{a}[{','.join(map(str, offs))}]" for a, offs in PAPER_TEMPLATES]
    feats = []
    for t in range(n):
        f = {}
        for name, (a, offs) in zip(names, PAPER_TEMPLATES):
            col = cols[a]
            f[name] = "|".join(col[t + o] if 0 <= t + o < n else
                               ("__BOS__" if t + o < 0 else "__EOS__") for o in offs)
        feats.append(f)
    return feats


def conll2000_paper_xy(subset):
    sents = read_conll2000(subset)
    return [paper_chunking_features(s) for s in sents], [[c for _, _, c in s] for s in sents]
