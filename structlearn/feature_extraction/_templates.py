"""Named feature templates for tokens given as columns (CoNLL files).

The command line (``structlearn train``) and the benchmarks turn the
columns of a CoNLL file -- the word first, then any other columns such as a
POS tag -- into the per-token feature dicts that
:class:`~structlearn.SequenceTagger` and :class:`~structlearn.SegmentTagger`
take.
"""

BOS, EOS = "__BOS__", "__EOS__"

#: Template sets of :func:`column_features`.
TEMPLATES = {
    "words": "the word's identity, lowercased form, prefixes and suffixes "
             "(1-3), shape flags and the neighbouring words (uses column 0 only)",
    "chunking": "the CRF++ chunking template of CRFsuite's benchmark: words at "
                "offsets -2..2, word bigrams (-1,0) and (0,1), column 1 (the POS "
                "tag) at -2..2, its bigrams and trigrams (needs 2 columns)",
    "default": "'words', plus every further column at offsets -2..2 and its "
               "bigrams (-1,0) and (0,1)",
}


def _check_sentence(sentence):
    if isinstance(sentence, (str, bytes)) or not hasattr(sentence, "__len__"):
        raise ValueError(f"a sentence must be a list of tokens (tuples of column "
                         f"strings), got {type(sentence).__name__}.")
    rows = []
    width = None
    for t, tok in enumerate(sentence):
        row = (tok,) if isinstance(tok, str) else tuple(tok)
        if not row or not all(isinstance(v, str) for v in row):
            raise ValueError(f"token {t} must be a string or a tuple of column strings, "
                             f"got {tok!r}.")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise ValueError(f"token {t} has {len(row)} columns, token 0 has {width}.")
        rows.append(row)
    return rows, width or 0


def _word_features(words, t):
    w = words[t]
    low = w.lower()
    return {
        "w": w,
        "lower": low,
        "p1": low[:1], "p2": low[:2], "p3": low[:3],
        "s1": low[-1:], "s2": low[-2:], "s3": low[-3:],
        "title": w[:1].isupper(),
        "upper": w.isupper(),
        "digit": any(c.isdigit() for c in w),
        "hyphen": "-" in w,
        "w[-1]": words[t - 1].lower() if t > 0 else BOS,
        "w[+1]": words[t + 1].lower() if t + 1 < len(words) else EOS,
    }


def column_features(sentence, template="default"):
    """Feature dicts of the tokens of one sentence given as columns.

    Parameters
    ----------
    sentence : list of tuple of str (or list of str)
        One item per token: its columns, the word first (e.g. ``('He',
        'PRP')``); a plain string is a one-column token.
    template : {'default', 'words', 'chunking'}, default='default'
        The template set (``TEMPLATES`` describes each).  Positions
        outside the sentence read as ``'__BOS__'`` / ``'__EOS__'``.

    Returns
    -------
    list of dict
        One feature dict per token.

    Raises
    ------
    ValueError
        For an unknown template, tokens that are not strings or tuples of
        strings, rows of different widths, or 'chunking' on one column.

    Examples
    --------
    >>> f = column_features([("He", "PRP"), ("ran", "VBD")], "chunking")
    >>> f[1]["pos[-1]|pos[0]"]
    'PRP|VBD'
    """
    if template not in TEMPLATES:
        raise ValueError(f"template must be one of {sorted(TEMPLATES)}, got {template!r}.")
    rows, width = _check_sentence(sentence)
    n = len(rows)

    def col(c, i):
        return rows[i][c] if 0 <= i < n else (BOS if i < 0 else EOS)

    if template == "chunking":
        if n and width < 2:
            raise ValueError("template 'chunking' needs a second column (the POS tag); "
                             "this sentence has one.")
        feats = []
        for t in range(n):
            f = {}
            for o in (-2, -1, 0, 1, 2):
                f[f"w[{o}]"] = col(0, t + o)
                f[f"pos[{o}]"] = col(1, t + o)
            f["w[-1]|w[0]"] = col(0, t - 1) + "|" + col(0, t)
            f["w[0]|w[1]"] = col(0, t) + "|" + col(0, t + 1)
            for a, b in ((-2, -1), (-1, 0), (0, 1), (1, 2)):
                f[f"pos[{a}]|pos[{b}]"] = col(1, t + a) + "|" + col(1, t + b)
            for a in (-2, -1, 0):
                f[f"pos[{a}]|pos[{a + 1}]|pos[{a + 2}]"] = "|".join(
                    col(1, t + a + j) for j in range(3))
            feats.append(f)
        return feats
    words = [r[0] for r in rows]
    feats = [_word_features(words, t) for t in range(n)]
    if template == "default":
        for c in range(1, width):
            for t in range(n):
                f = feats[t]
                for o in (-2, -1, 0, 1, 2):
                    f[f"c{c}[{o}]"] = col(c, t + o)
                f[f"c{c}[-1]|c{c}[0]"] = col(c, t - 1) + "|" + col(c, t)
                f[f"c{c}[0]|c{c}[1]"] = col(c, t) + "|" + col(c, t + 1)
    return feats
