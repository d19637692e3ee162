"""Loaders for the small data sets bundled with the package.

The files live in ``structlearn/datasets/data`` (see the README there for
sources, licenses and citations) and need neither network access nor a
data home.
"""

from sklearn.utils import Bunch

from ._base import bundled_path
from ._ewt import CONSTRUCTIONS, read_constructions_tsv
from ._conllu import read_conllu
from ._label_ranking import read_label_ranking_csv
from ._ordinal import _read_wine_quality_full

__all__ = [
    "load_wine_quality",
    "load_label_ranking",
    "load_ewt_constructions",
    "load_ewt",
    "load_ewt_pos",
    "pos_token_features",
]

#: Number of sentences of each bundled UD English EWT slice.
_EWT_SLICE_SIZES = {"train": 1000, "test": 300}

_BUNDLED_LABEL_RANKING = ("iris", "wine", "stock")

_WINE_DESCR = """Wine Quality (Cortez et al., 2009), UCI Machine Learning Repository.

Physicochemical measurements of Portuguese "Vinho Verde" wines (11 features)
and the median sensory quality score of at least three experts (integer
0-10; an ordinal target).  Red: 1,599 wines, scores 3-8; white: 4,898 wines,
scores 3-9.  License: CC BY 4.0.

P. Cortez, A. Cerdeira, F. Almeida, T. Matos and J. Reis. Modeling wine
preferences by data mining from physicochemical properties. Decision Support
Systems 47(4):547-553, 2009.
"""

_LR_DESCR = """Label-ranking benchmark {name!r} of Cheng, Huehn & Huellermeier (2009).

Semi-synthetic label ranking data derived from UCI/StatLib data, as
distributed (MIT license) with scikit-lr. Y[i, j] is the rank of label j
for sample i (1 = most preferred); rows are permutations of 1..n_labels.

W. Cheng, J. Huehn and E. Huellermeier. Decision tree and instance-based
learning for label ranking. ICML 2009.
"""


def load_wine_quality(color="red", return_X_y=True):
    """Load the bundled Wine Quality data (ordinal regression).

    Parameters
    ----------
    color : {"red", "white"}, default="red"
        Which of the two data sets to load.
    return_X_y : bool, default=True
        Return ``(X, y)``; otherwise a :class:`~sklearn.utils.Bunch`.

    Returns
    -------
    X : ndarray of shape (n_samples, 11), dtype float64
        Physicochemical features (1,599 red or 4,898 white wines).
    y : ndarray of shape (n_samples,), dtype int64
        Quality score, an ordinal label (red: 3..8, white: 3..9).
    bunch : Bunch
        If ``return_X_y=False``: ``data``, ``target``, ``feature_names``,
        ``target_names`` (``["quality"]``), ``DESCR``.

    Notes
    -----
    License CC BY 4.0.  Please cite P. Cortez, A. Cerdeira, F. Almeida,
    T. Matos and J. Reis, "Modeling wine preferences by data mining from
    physicochemical properties", Decision Support Systems 47(4), 2009.

    Examples
    --------
    >>> X, y = load_wine_quality()
    >>> X.shape, int(y.min()), int(y.max())
    ((1599, 11), 3, 8)
    """
    if color not in ("red", "white"):
        raise ValueError(f"color must be 'red' or 'white'; got {color!r}.")
    X, y, names = _read_wine_quality_full(bundled_path(f"winequality-{color}.csv.gz"))
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, feature_names=names, target_names=["quality"],
                 DESCR=_WINE_DESCR)


def load_label_ranking(name, return_X_y=True):
    """Load a bundled label-ranking benchmark.

    Parameters
    ----------
    name : {"iris", "wine", "stock"}
        Data set: ``iris`` (150 x 4, 3 labels), ``wine`` (178 x 13, 3
        labels) or ``stock`` (950 x 5, 5 labels).  Larger sets are available
        through :func:`fetch_label_ranking`.
    return_X_y : bool, default=True
        Return ``(X, Y)``; otherwise a :class:`~sklearn.utils.Bunch`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
    Y : ndarray of shape (n_samples, n_labels), dtype int64
        Rank vectors (``Y[i, j]`` = rank of label ``j``, 1 = best).
    bunch : Bunch
        If ``return_X_y=False``: ``data``, ``target``, ``target_names``,
        ``DESCR``.

    Notes
    -----
    Please cite W. Cheng, J. Hühn and E. Hüllermeier, "Decision tree and
    instance-based learning for label ranking", ICML 2009.
    """
    if not isinstance(name, str) or name.lower() not in _BUNDLED_LABEL_RANKING:
        raise ValueError(
            f"Unknown bundled label-ranking data set {name!r}; bundled: "
            f"{list(_BUNDLED_LABEL_RANKING)} (use fetch_label_ranking for the "
            "others)."
        )
    name = name.lower()
    X, Y = read_label_ranking_csv(bundled_path(f"label_ranking_{name}.csv.gz"))
    if return_X_y:
        return X, Y
    return Bunch(data=X, target=Y,
                 target_names=[f"L{j + 1}" for j in range(Y.shape[1])],
                 DESCR=_LR_DESCR.format(name=name))


def load_ewt_constructions(subset="train"):
    """Load the bundled EWT syntactic-constructions multilabel text data.

    Sentences of the Universal Dependencies English Web Treebank (UD v2.16)
    labelled with the syntactic constructions that their gold basic
    dependency trees contain.  ``train`` holds the first 1,500 sentences of
    ``en_ewt-ud-train.conllu`` and ``test`` the first 500 of
    ``en_ewt-ud-test.conllu``, skipping sentences with fewer than 4
    non-punctuation words.  Intended for demos such as
    ``make_pipeline(TfidfVectorizer(), multilabel_estimator)``.

    Labels (column order), with train / test frequencies:

    - ``passive``: ``aux:pass``, ``nsubj:pass`` or ``csubj:pass``
      (18.5% / 9.8%);
    - ``relative_clause``: ``acl:relcl`` (20.0% / 12.8%);
    - ``clausal_complement``: ``ccomp`` or ``xcomp`` (38.5% / 34.8%);
    - ``coordination``: ``conj`` (47.2% / 29.2%);
    - ``compound``: ``compound``, not ``compound:prt`` (47.0% / 41.2%);
    - ``negation``: an ``advmod`` whose lemma is *not* or *never*
      (15.1% / 13.2%);
    - ``numeric_modifier``: ``nummod`` (12.6% / 10.8%);
    - ``possessive``: ``nmod:poss`` (30.1% / 18.8%).

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part to load.

    Returns
    -------
    texts : list of str
        The raw sentences (the ``# text =`` lines of the treebank).
    Y : ndarray of shape (n_sentences, 8), dtype int64
        0/1 indicator matrix of the constructions.
    label_names : list of str
        Names of the columns of ``Y``.

    Notes
    -----
    License CC BY-SA 4.0 (the derived labels are shared under the same
    license).  UD English EWT annotations (c) 2013-2021 The Board of
    Trustees of The Leland Stanford Junior University; cite N. Silveira et
    al., "A Gold Standard Dependency Corpus for English", LREC 2014.  See
    ``structlearn/datasets/data/README.md``.

    Examples
    --------
    >>> texts, Y, names = load_ewt_constructions("test")
    >>> len(texts), Y.shape, names[0]
    (500, (500, 8), 'passive')
    """
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test'; got {subset!r}.")
    _, texts, Y, names = read_constructions_tsv(
        bundled_path(f"ewt_constructions_{subset}.tsv.gz")
    )
    expected = [c[0] for c in CONSTRUCTIONS]
    if names != expected:  # pragma: no cover - guards against a stale file
        raise ValueError(f"Bundled file has labels {names}, expected {expected}.")
    return texts, Y, names


def load_ewt(subset="train"):
    """Load the bundled slice of UD English EWT (POS tagging, parsing).

    ``train`` holds the first 1,000 sentences (21,857 words) of
    ``en_ewt-ud-train.conllu`` and ``test`` the first 300 sentences (5,224
    words) of ``en_ewt-ud-test.conllu``, Universal Dependencies v2.16,
    unchanged (the decompressed files are byte-identical prefixes of the
    originals).  The full treebank is available through
    :func:`fetch_ud_treebank`.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which slice to load.

    Returns
    -------
    sentences : list of ConlluSentence
        As returned by :func:`read_conllu`: ``sentence.tokens`` lists the
        syntactic words (dicts with ``form``, ``lemma``, ``upos``, ``xpos``,
        ``feats``, ``head`` (1-based, 0 = root), ``deprel``, ...);
        ``sentence.forms``, ``sentence.upos`` and ``sentence.heads`` give
        the columns as lists.

    Notes
    -----
    License CC BY-SA 4.0.  UD English EWT annotations (c) 2013-2021 The
    Board of Trustees of The Leland Stanford Junior University; cite
    N. Silveira et al., "A Gold Standard Dependency Corpus for English",
    LREC 2014.  See ``structlearn/datasets/data/README.md``.

    Examples
    --------
    >>> sentences = load_ewt("test")
    >>> len(sentences), sentences[0].forms[:3], sentences[0].heads[:3]
    (300, ['What', 'if', 'Google'], [0, 4, 4])
    """
    if subset not in _EWT_SLICE_SIZES:
        raise ValueError(f"subset must be 'train' or 'test'; got {subset!r}.")
    return read_conllu(bundled_path(f"ud_en_ewt_{subset}.conllu.gz"))


def pos_token_features(words):
    """Simple per-token features for part-of-speech tagging.

    Parameters
    ----------
    words : sequence of str
        The words of one sentence.

    Returns
    -------
    features : list of dict
        One dict per word, for :class:`~sklearn.feature_extraction.DictVectorizer`
        or a CRF-style tagger, with the keys

        - ``"word"``: the lowercased word;
        - ``"suffix1"``, ``"suffix2"``, ``"suffix3"``: its last 1-3
          characters (lowercased);
        - ``"prefix3"``: its first 3 characters (lowercased);
        - ``"is_capitalized"``, ``"is_digit"``, ``"has_hyphen"``: bool;
        - ``"prev_word"``, ``"next_word"``: the lowercased neighbours,
          ``"<s>"`` / ``"</s>"`` at the sentence boundaries.

    Examples
    --------
    >>> pos_token_features(["Hi", "there"])[0]["next_word"]
    'there'
    """
    if isinstance(words, str):
        raise ValueError("words must be a sequence of words, not a string.")
    lower = [str(w).lower() for w in words]
    feats = []
    for i, w in enumerate(words):
        w = str(w)
        low = lower[i]
        feats.append({
            "word": low,
            "suffix1": low[-1:],
            "suffix2": low[-2:],
            "suffix3": low[-3:],
            "prefix3": low[:3],
            "is_capitalized": w[:1].isupper(),
            "is_digit": w.isdigit(),
            "has_hyphen": "-" in w,
            "prev_word": lower[i - 1] if i > 0 else "<s>",
            "next_word": lower[i + 1] if i + 1 < len(lower) else "</s>",
        })
    return feats


def load_ewt_pos(subset="train"):
    """Load the bundled EWT slice as a POS-tagging data set ``(X, y)``.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which slice of :func:`load_ewt` to use (1,000 or 300 sentences).

    Returns
    -------
    X : list of list of dict
        One list per sentence, one feature dict per word, as computed by
        :func:`pos_token_features` (string and bool values).
    y : list of list of str
        The universal POS tags (UPOS, 17 tags such as ``"NOUN"``,
        ``"VERB"``, ``"PUNCT"``), aligned with ``X``.

    Notes
    -----
    License CC BY-SA 4.0; see :func:`load_ewt`.

    Examples
    --------
    >>> X, y = load_ewt_pos("test")
    >>> len(X), X[0][0]["word"], y[0][0]
    (300, 'what', 'PRON')
    """
    sentences = load_ewt(subset)
    X = [pos_token_features(s.forms) for s in sentences]
    y = [list(s.upos) for s in sentences]
    return X, y
