"""Arc features of dependency parsing: :class:`ArcVectorizer` and the
token attributes of sentences it reads."""

from collections.abc import Mapping
from itertools import repeat

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_int, describe
from ..kernels.arcs import (
    ATTRIBUTES,
    BUCKET,
    N_BASE,
    TEMPLATES,
    arc_feature_ids,
    arc_scores_direct,
    fill_table,
    gold_arc_keys,
    template_names,
)
from ..kernels.tree_validation import validate_heads

__all__ = ["ArcVectorizer", "check_sentences", "sentence_attributes"]


def check_sentences(X, tokens=False):
    """Raise a ValueError unless ``X`` is a non-empty list (or tuple) of
    sentences (a 1-D object array of them is also accepted); with
    ``tokens``, also unless every sentence is a list of token dicts or a
    ConlluSentence (naming the first that is not)."""
    if isinstance(X, np.ndarray) and X.ndim == 1 and X.dtype == object:
        pass
    elif X is None or isinstance(X, (str, bytes, Mapping, np.ndarray)) or sp.issparse(X) \
            or not isinstance(X, (list, tuple)):
        raise ValueError(f"X must be a list of sentences (lists of token dicts or "
                         f"ConlluSentence objects), got {describe(X)}.")
    if len(X) == 0:
        raise ValueError("X is empty: at least one sentence is needed.")
    if tokens:
        for i, sent in enumerate(X):
            _sentence_tokens(sent, i)


def _sentence_tokens(sent, i):
    """The token dicts of a sentence (a list of dicts or a ConlluSentence)."""
    toks = getattr(sent, "tokens", sent)
    if isinstance(toks, (str, bytes, Mapping)) or not hasattr(toks, "__len__") or \
            sp.issparse(toks) or getattr(toks, "ndim", 1) != 1:
        raise ValueError(f"sentence {i} (X[{i}]) must be a list of token dicts or a "
                         f"ConlluSentence, got {describe(sent)}.")
    return toks


def _feats_string(feats):
    """Canonical string of a token's morphological features: a CoNLL-U
    FEATS dict (as :func:`structlearn.datasets.read_conllu` gives) or
    string, ``"_"`` when missing."""
    if feats is None:
        return "_"
    if type(feats) is dict or isinstance(feats, Mapping):   # (dict: no ABC check)
        return "|".join(f"{k}={v}" for k, v in sorted(feats.items())) or "_"
    return str(feats)


def sentence_attributes(X, vocabularies=None, prefix_length=5):
    """Token attribute strings of sentences: one list per attribute of
    :data:`structlearn.kernels.arcs.ATTRIBUTES` (form lower-cased, lemma,
    UPOS, XPOS, form prefix, FEATS), plus word offsets.

    A token is a dict with at least ``"form"``; missing ``lemma``, ``upos``,
    ``xpos``, ``feats`` (or None, CoNLL-U's ``_``) read as ``"_"``.
    """
    check_sentences(X)
    cols = ([], [], [], [], [], [])
    word_off = [0]
    for i, sent in enumerate(X):
        toks = _sentence_tokens(sent, i)
        if len(toks) == 0:
            raise ValueError(f"sentence {i} is empty; a dependency tree needs at least "
                             f"one word.")
        for t, tok in enumerate(toks):
            if type(tok) is not dict and not isinstance(tok, Mapping):
                raise ValueError(f"sentence {i}, word {t + 1}: expected a token dict with "
                                 f"a 'form', got {describe(tok)}.")
            form = tok.get("form")
            if not isinstance(form, str):
                raise ValueError(f"sentence {i}, word {t + 1}: the token needs a str "
                                 f"'form', got {form!r}.")
            low = form.lower()
            cols[0].append(low)
            for c, key in ((1, "lemma"), (2, "upos"), (3, "xpos")):
                v = tok.get(key)
                if v is not None and not isinstance(v, str):
                    raise ValueError(f"sentence {i}, word {t + 1}: {key!r} must be a str "
                                     f"or None, got {describe(v)}.")
                cols[c].append("_" if v is None else v)
            cols[4].append(low[:prefix_length])
            feats = tok.get("feats")
            if feats is not None and type(feats) is not dict and \
                    not isinstance(feats, (str, Mapping)):
                raise ValueError(f"sentence {i}, word {t + 1}: 'feats' must be a dict, a "
                                 f"str or None, got {describe(feats)}.")
            cols[5].append(_feats_string(feats))
        word_off.append(len(cols[0]))
    return cols, np.asarray(word_off, dtype=np.int64)


class ArcVectorizer(BaseEstimator):
    """First-order arc features of dependency parsing (McDonald et al. 2005).

    For an arc ``h -> m``: head and modifier form (lower-cased), lemma,
    UPOS, XPOS and 5-character prefix and their conjunctions, the UPOS of
    each word between them, and the UPOS of their neighbours; every template
    also conjoined with the arc's direction and binned distance (see
    :mod:`structlearn.kernels.arcs` for the list).  Features are never
    materialised as strings: tokens become rows of attribute ids and arc
    features 64-bit hashes, looked up in a table of the features of the
    *gold* arcs of the training data (as MSTParser builds its feature set);
    features of other arcs that are not in it are ignored.

    Parameters
    ----------
    min_freq : int, default=1
        Keep features seen on at least this many gold arcs.
    prefix_length : int, default=5
    templates : list of str or None, default=None
        Names of the templates to use (see ``template_names_``; e.g. the
        ``selected_groups_`` of a
        :class:`structlearn.feature_selection.GroupLassoSelector`); None: all.
        Features of the other templates get no column.

    Attributes
    ----------
    vocabularies_ : list of dict
        Attribute value -> id (ids from 3; 0 outside the sentence, 1
        unknown, 2 root), one dict per attribute.
    n_features_ : int
    templates_ : ndarray of int16, shape (``n_features_``,)
        Template index of every feature column.
    template_names_ : list of str

    Notes
    -----
    :meth:`transform` returns ``(A, word_off)``: one row of attribute ids
    per word, whose columns :meth:`get_feature_names_out` names (the
    attributes of :data:`structlearn.kernels.arcs.ATTRIBUTES`).  The arc
    features themselves (``n_features_`` columns, computed per arc by
    :meth:`arc_features`) are 64-bit hashes of template conjunctions and
    have no names; their templates are ``template_names_[templates_]``.
    This is not a 2-D table of samples: scikit-learn's ``set_output`` does
    not apply (the class has no ``set_output``).
    """

    def __init__(self, min_freq=1, prefix_length=5, templates=None):
        self.min_freq = min_freq
        self.prefix_length = prefix_length
        self.templates = templates

    def _check_params(self):
        check_int("min_freq", self.min_freq)
        check_int("prefix_length", self.prefix_length)
        return _template_ids(self.templates)

    def _ids(self, cols, vocabularies):
        A = np.empty((len(cols[0]), len(cols)), dtype=np.int32)
        for c, (values, vocab) in enumerate(zip(cols, vocabularies)):
            # unknown values get id 1 (map: no generator frame per value)
            A[:, c] = np.fromiter(map(vocab.get, values, repeat(1, len(values))),
                                  dtype=np.int32, count=len(values))
        return A

    def fit(self, X, heads):
        """Learn attribute vocabularies and the feature table.

        Parameters
        ----------
        X : list of sentences (lists of token dicts, or ConlluSentence)
        heads : list of head arrays (trees: 1-based heads, 0 = root), one per
            sentence and as long as it
        """
        self._fit(X, heads)
        return self

    def fit_transform(self, X, heads):
        """Fit, then return ``transform(X)`` (one scan of ``X``)."""
        return self._fit(X, heads)

    def _fit(self, X, heads):
        allowed = self._check_params()
        cols, word_off = sentence_attributes(X, prefix_length=self.prefix_length)
        if len(heads) != len(word_off) - 1:
            raise ValueError(f"X has {len(word_off) - 1} sentences but heads has "
                             f"{len(heads)} head arrays.")
        for i, (n, h) in enumerate(zip(np.diff(word_off), heads)):
            if len(h) != n:
                raise ValueError(f"sentence {i} has {n} words but its head array has "
                                 f"{len(h)} entries.")
        flat_heads, _ = validate_heads(list(heads), single_root=False)
        vocabularies = []
        for values in cols:
            vocab = {}
            for v in values:
                if v not in vocab:
                    vocab[v] = len(vocab) + 3
            vocabularies.append(vocab)
        A = self._ids(cols, vocabularies)
        keys, tmpl = gold_arc_keys(A, word_off, flat_heads, TEMPLATES)
        order = np.argsort(keys, kind="stable")
        keys, tmpl = keys[order], tmpl[order]
        del order
        first = np.concatenate(([True], keys[1:] != keys[:-1]))
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, len(keys)))
        keep = counts >= self.min_freq
        if allowed is not None:
            keep &= np.isin(tmpl[starts], allowed)
        if not keep.any():
            raise ValueError(f"no arc feature occurs on at least min_freq="
                             f"{self.min_freq} gold arcs"
                             f"{'' if allowed is None else ' in the given templates'}; "
                             f"lower min_freq.")
        uniq = keys[starts[keep]]
        self.templates_ = tmpl[starts[keep]].astype(np.int16)
        del keys, tmpl
        self._keys = uniq
        self._table_cache = _new_table(uniq, np.arange(len(uniq), dtype=np.int64))
        self.vocabularies_ = vocabularies
        self.n_features_ = len(uniq)
        self.template_names_ = template_names()
        return A, word_off

    def transform(self, X):
        """Token attribute ids ``A`` (n_words, len(ATTRIBUTES)) int32 and word
        offsets."""
        check_is_fitted(self, "vocabularies_")
        cols, word_off = sentence_attributes(X, prefix_length=self.prefix_length)
        return self._ids(cols, self.vocabularies_), word_off

    def get_feature_names_out(self, input_features=None):
        """Names of the columns of the attribute ids :meth:`transform`
        returns.

        Parameters
        ----------
        input_features : None
            Sentences have no input columns: must be None.

        Returns
        -------
        ndarray of str objects
            ``("form", "lemma", "upos", "xpos", "prefix", "feats")``: the
            lower-cased form, lemma, UPOS, XPOS, form prefix of
            ``prefix_length`` characters and FEATS.
        """
        check_is_fitted(self, "vocabularies_")
        if input_features is not None:
            raise ValueError("input_features must be None: ArcVectorizer reads sentences, "
                             "which have no input columns.")
        return np.array(ATTRIBUTES, dtype=object)

    def arc_features(self, A, word_off, a, b):
        """``(indptr, ids)`` of every arc of sentences ``a..b-1`` (see
        :func:`structlearn.kernels.arcs.arc_feature_ids`)."""
        return arc_feature_ids(A, word_off, a, b, TEMPLATES, self._table,
                               _dd_implies_plain(_template_ids(self.templates)))

    def arc_scores(self, A, word_off, a, b, coef):
        """Arc scores ``theta = A(x) coef`` of sentences ``a..b-1`` without
        materialising their features: the scores of :meth:`arc_features`
        (bit for bit), hashed and summed in one pass (see
        ``structlearn.kernels.arcs.arc_scores_direct``).  ``coef``: the
        weights, or their weight table (``_weight_table(coef)``, which
        building costs a pass over the features: a caller scoring several
        batches with the same weights builds it once)."""
        w = coef if isinstance(coef, _WeightTable) else self._weight_table(coef)
        return arc_scores_direct(A, word_off, a, b, TEMPLATES, w.table,
                                 _dd_implies_plain(_template_ids(self.templates)))

    def _weight_table(self, coef):
        """The weight table of ``coef``: the feature table's keys, each beside
        its feature's weight (its bits as the value), so that a lookup at
        predict costs one cache miss, not a second one into ``coef``."""
        check_is_fitted(self, "_keys")
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        if coef.shape != (self.n_features_,):
            raise ValueError(f"coef must have shape ({self.n_features_},) (one weight per "
                             f"arc feature), got {coef.shape}.")
        return _WeightTable(_new_table(self._keys_by_id(), coef.view(np.int64)))

    @property
    def _table(self):
        """The feature table (key -> column id, :func:`_new_table`) that the
        training path reads: built from the keys when needed and kept until
        :meth:`_release_table` (a fitted parser releases it after its fit, as
        prediction reads a weight table instead)."""
        table = self.__dict__.get("_table_cache")
        if table is None:
            check_is_fitted(self, "_keys")
            table = self._table_cache = _new_table(
                self._keys, np.arange(len(self._keys), dtype=np.int64))
        return table

    def _release_table(self):
        """Free the feature table (rebuilt from the keys when next needed)."""
        self.__dict__.pop("_table_cache", None)

    def _keys_by_id(self):
        """The key of every feature column (sorted: column ids are ranks)."""
        return self._keys

    def __getstate__(self):
        # the feature table is not pickled: it is rebuilt from the keys (an
        # eighth of its size with 5.5 M features: 44 MB instead of 256 MB)
        state = dict(super().__getstate__())
        state.pop("_table_cache", None)
        return state

    def __setstate__(self, state):
        state = dict(state)
        if isinstance(state.get("_table"), np.ndarray):
            # pickled with its feature table (before the keys were)
            state["_keys"] = _keys_by_value(state.pop("_table"), state["n_features_"])
        super().__setstate__(state)


class _WeightTable:
    """A weight table (``structlearn.kernels.arcs.fill_table`` with the
    weights' bits as values), told apart from a weight vector."""

    __slots__ = ("table",)

    def __init__(self, table):
        self.table = table

    @property
    def nbytes(self):
        return self.table.nbytes


def _new_table(keys, values):
    """The open-addressing table of ``keys`` -> ``values`` (int64) at most half
    full, allocated by NumPy (which asks Linux for transparent huge pages on
    large arrays: the table is hundreds of MB read at random, and with 4 KB
    pages nearly every lookup would also miss the TLB) and filled by
    ``structlearn.kernels.arcs.fill_table``."""
    n_buckets = 1 << int(np.ceil(np.log2(max(4, 2 * len(keys) / BUCKET))))
    size = 2 * BUCKET * n_buckets
    buf = np.zeros(size + 8, dtype=np.int64)
    skip = (-buf.ctypes.data % 64) // 8   # buckets aligned on cache lines
    table = buf[skip:skip + size]
    fill_table(table, keys, values)
    return table


def _keys_by_value(table, n):
    """Keys of a feature table of ``n`` keys whose values are ``0..n-1``,
    indexed by value, in the layout older pickles hold (one slot per key:
    the key at ``2 s``, its value at ``2 s + 1``, in any order; before the
    tables had buckets, :func:`_new_table`)."""
    k, v = table[0::2], table[1::2]
    used = k != 0
    keys = np.empty(n, dtype=np.int64)
    keys[v[used]] = k[used]
    return keys


def _dd_implies_plain(allowed):
    """Whether every kept direction-distance feature has its plain feature
    kept: true with all templates (a plain feature is counted on every gold
    arc its conjoined one is on, so ``min_freq`` keeps it too) and with a
    template subset that keeps the plain template of every conjoined one."""
    if allowed is None:
        return True
    kept = set(int(t) for t in allowed)
    return all(t - N_BASE in kept for t in kept if t >= N_BASE)


def _template_ids(templates):
    """Indices of the arc template names ``templates`` (None: None)."""
    if templates is None:
        return None
    if isinstance(templates, str) or not hasattr(templates, "__iter__"):
        raise ValueError(f"templates must be a list of template names or None, got "
                         f"{templates!r}.")
    names = template_names()
    index = {n: t for t, n in enumerate(names)}
    templates = list(templates)
    unknown = [t for t in templates if t not in index]
    if unknown:
        raise ValueError(f"unknown arc templates {unknown[:3]!r} (of {len(unknown)}); "
                         f"valid names are structlearn.kernels.arcs.template_names(), e.g. "
                         f"{names[0]!r}.")
    if not templates:
        raise ValueError("templates is empty: at least one arc template is needed.")
    return np.array(sorted(index[t] for t in templates), dtype=np.int64)
