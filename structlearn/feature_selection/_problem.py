"""The estimators' side of feature selection: :class:`SelectionProblem`,
what their public hook ``selection_problem(X, y, loss=None)`` returns, and
the restrictors that drop unselected features from each input form."""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["ArrayRestrictor", "DictRestrictor", "SelectedSentences", "SelectionProblem",
           "SequenceArrayRestrictor", "TemplateRestrictor"]


@dataclass(eq=False)
class SelectionProblem:
    """What an estimator hands to feature selection: its training problem
    and the input column (feature) of every parameter.

    Returned by the estimators' public hook ``selection_problem(X, y,
    loss=None)`` (e.g. :meth:`structlearn.SequenceTagger.selection_problem`),
    which :class:`GroupLassoSelector` calls on a clone of its estimator; an
    estimator of another library takes part in feature selection by
    implementing that method.  Groups of parameters are formed from the
    columns (``groups='label'``: one group per column), their templates
    (``groups='template'``) or, for array input, user-given column groups.

    Parameters
    ----------
    problem : Problem
        The training problem (see :class:`structlearn.solvers.Problem`; a
        :class:`structlearn.solvers.SparseProblem` makes the steps sparse).
    param_column : array-like of int (n_params,)
        Input column (feature) of every parameter; -1 for parameters of no
        feature (transitions, biases), which are never penalised.
    n_columns : int
        Number of input columns (features).
    column_template : array-like of int (n_columns,)
        Template of every column (an index into ``template_names``).
    template_names : list of str
    restrictor : object
        Drops the unselected features from the estimator's own input form:
        ``restrictor.transform(X, keep, templates, by_template)`` with
        ``keep`` the mask of kept columns, ``templates`` the names of the
        kept templates and ``by_template`` whether whole templates were
        selected.  One of :class:`ArrayRestrictor`,
        :class:`SequenceArrayRestrictor`, :class:`DictRestrictor`,
        :class:`TemplateRestrictor`, or any object with that method.
    column_names : callable or None, default=None
        Returns the names of the columns (the groups of ``groups='label'``);
        None when the columns are not features conjoined with labels.
    """

    problem: object
    param_column: np.ndarray
    n_columns: int
    column_template: np.ndarray
    template_names: list
    restrictor: object
    column_names: object = None

    def __post_init__(self):
        self.param_column = np.asarray(self.param_column, dtype=np.int64)
        self.n_columns = int(self.n_columns)
        self.column_template = np.asarray(self.column_template, dtype=np.int64)
        self.template_names = list(self.template_names)
        n_params = int(self.problem.n_params)
        if self.param_column.shape != (n_params,) or \
                self.param_column.max(initial=-1) >= self.n_columns:
            raise ValueError(f"param_column must give a column < n_columns "
                             f"({self.n_columns}) or -1 for each of the problem's "
                             f"{n_params} parameters.")
        if self.column_template.shape != (self.n_columns,) or \
                self.column_template.min(initial=0) < 0 or \
                self.column_template.max(initial=-1) >= len(self.template_names):
            raise ValueError(f"column_template must give one of the "
                             f"{len(self.template_names)} templates for each of the "
                             f"{self.n_columns} columns.")
        if self.column_names is not None and not callable(self.column_names):
            raise ValueError("column_names must be a callable returning the column names, "
                             "or None.")


class SelectedSentences(list):
    """A list of sentences that carries the arc templates selected by a
    :class:`~structlearn.feature_selection.GroupLassoSelector` (``arc_templates``).

    :class:`structlearn.DependencyParser` with ``templates=None`` fits on
    these templates only, so that a selector followed by a parser is a
    pipeline.  (Slicing returns a plain list.)
    """

    def __init__(self, sentences, arc_templates):
        super().__init__(sentences)
        self.arc_templates = list(arc_templates)


class TemplateRestrictor:
    """Restrictor of parser sentences: the sentences themselves, as
    :class:`~structlearn.feature_selection.SelectedSentences` carrying the
    kept templates (the features are computed from the sentences, so only
    whole templates can be dropped).

    Parameters
    ----------
    template_names : list of str
    """

    def __init__(self, template_names):
        self.template_names = template_names

    def transform(self, X, keep, templates, by_template):
        """The sentences ``X`` marked with ``templates``."""
        from ..feature_extraction import check_sentences

        check_sentences(X)
        return SelectedSentences(X, templates)


class ArrayRestrictor:
    """Restrictor of a 2-D array / sparse matrix: the kept columns.

    Parameters
    ----------
    n_columns : int
        Columns of the training input (checked on transform).
    """

    def __init__(self, n_columns):
        self.n_columns = n_columns

    def transform(self, X, keep, templates, by_template):
        """The columns ``keep`` of ``X``."""
        from sklearn.utils import check_array

        X = check_array(X, accept_sparse="csr", dtype=None, ensure_all_finite=False)
        if X.shape[1] != self.n_columns:
            raise ValueError(f"X has {X.shape[1]} features, but the selector was fitted "
                             f"on {self.n_columns} features.")
        return X[:, np.flatnonzero(keep)]


class SequenceArrayRestrictor(ArrayRestrictor):
    """Restrictor of sequences of 2-D arrays / sparse matrices: the kept
    columns of each.

    Parameters
    ----------
    n_columns : int
        Columns of every training sequence (checked on transform).
    """

    def transform(self, X, keep, templates, by_template):
        """The columns ``keep`` of every sequence of ``X``."""
        cols = np.flatnonzero(keep)
        out = []
        for i, seq in enumerate(X):
            if isinstance(seq, (list, tuple)) and len(seq) == 0:
                out.append(seq)
                continue
            if not hasattr(seq, "shape") or len(seq.shape) != 2 or \
                    seq.shape[1] != self.n_columns:
                raise ValueError(f"sequence {i} (X[{i}]) must be a 2-D array with "
                                 f"{self.n_columns} columns, as in fit.")
            out.append(seq[:, cols])
        return out


class DictRestrictor:
    """Restrictor of sequences of feature dicts: drops the keys of
    unselected templates (``by_template``) or the items whose feature was
    not selected.

    Parameters
    ----------
    vectorizer : TokenVectorizer
        The fitted vectorizer of the training input (maps an item to its
        column).
    """

    def __init__(self, vectorizer):
        self.vectorizer = vectorizer

    def transform(self, X, keep, templates, by_template):
        """The token dicts of ``X`` without the unselected features."""
        from ..feature_extraction import TokenVectorizer

        if TokenVectorizer._input_type(X) == "array":
            raise ValueError("X holds arrays but the selector was fitted on feature dicts.")
        for i, seq in enumerate(X):
            for t, tok in enumerate(seq):
                if not isinstance(tok, Mapping):
                    raise ValueError(f"sequence {i}, position {t} (X[{i}][{t}]): expected "
                                     f"a dict of features, got {type(tok).__name__}.")
        if by_template:
            kept = set(templates)
            return [[{k: v for k, v in tok.items() if k in kept} for tok in seq]
                    for seq in X]
        column = self.vectorizer._item_column
        # a value that expands into several features (nested dict, list) is
        # kept whole when its template has a kept feature
        kept_templates = set(templates)

        def keep_item(k, v):
            c = column(k, v)
            if c is None:
                return k in kept_templates
            return c >= 0 and bool(keep[c])

        return [[{k: v for k, v in tok.items() if keep_item(k, v)} for tok in seq]
                for seq in X]
