"""Loaders for the small data sets bundled with the package.

The files live in ``structlearn/datasets/data`` (see the README there for
sources, licenses and citations) and need neither network access nor a
data home.
"""

from sklearn.utils import Bunch

from ._base import bundled_path
from ._ewt import CONSTRUCTIONS, read_constructions_tsv
from ._readers import _read_wine_quality_full, read_label_ranking_csv

__all__ = ["load_wine_quality", "load_label_ranking", "load_ewt_constructions"]

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
