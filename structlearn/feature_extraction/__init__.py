"""Token feature extraction for sequence models.

:class:`TokenVectorizer` turns a list of sequences into ONE sparse CSR matrix
holding the tokens of all sequences, one row per token, plus an offsets array
``tok_off`` (``tok_off[i]:tok_off[i + 1]`` are the rows of sequence ``i``).
It also records, for every output column, the *template* the column came
from, so that features can be grouped per template (e.g. for group-sparse
feature selection).

Two input forms are accepted (they cannot be mixed):

**Feature dicts** (the format of python-crfsuite / sklearn-crfsuite): ``X`` is
a list of sequences, each a list (or tuple) of per-token dicts.  A dict
``{key: value}`` yields features as follows (``key`` must be a ``str``):

==========================  ==================================  ============
value                       feature(s) produced                 value
==========================  ==================================  ============
``str`` ``v``               ``"key=v"``                         1.0
``int`` / ``float`` ``x``   ``"key"``                           ``float(x)``
``True``                    ``"key"``                           1.0
``False``                   nothing (absent)                    --
``dict`` ``{sub: w}``       features of ``{"key:sub": w}``      as for ``w``
                            (recursively)
``list``/``tuple``/``set``  one ``"key=s"`` per string ``s``    1.0 each
of strings
==========================  ==================================  ============

Notes on the conventions:

* python-crfsuite's documentation describes a string value as
  ``{"key=value": 1.0}``; its implementation actually joins key and value
  with ``":"``.  Here the documented ``"="`` is used, so ``"w[0]=the"`` reads
  unambiguously as "template ``w[0]`` has value ``the``".  A list of strings
  is treated like several string values (python-crfsuite likewise gives
  ``{"k": "a"}`` and ``{"k": ["a"]}`` the same attribute), so
  ``{"k": ["a", "b"]}`` is ``{"k=a": 1, "k=b": 1}``; a string repeated in the
  list counts once per occurrence (value 2.0 for two); python-crfsuite
  likewise passes the attribute once per occurrence.
* Nested dicts join the key path with ``":"`` as python-crfsuite does:
  ``{"k": {"sub": "v", "n": 2.0}}`` gives ``"k:sub=v"`` (1.0) and ``"k:n"``
  (2.0).
* Values equal to 0 (and ``False``) are dropped: the matrix is sparse and a
  zero feature is the same as an absent one.  A feature that only ever
  occurs with value 0 does not "occur" for ``min_freq`` and gets no column.
* The same feature name produced twice for one token (e.g. ``"k": "a"`` and
  ``"k=a": 1.0``) is summed.
* numpy scalars (``np.float64``, ``np.int32``, ``np.bool_``, ``np.str_``)
  are accepted like their Python counterparts.  ``None``, bytes, complex
  numbers, lists of non-strings and any other type are rejected with a
  ``ValueError``, as are NaN / infinite values.  python-crfsuite's alternative
  item format (a bare list of feature-name strings instead of a dict) is not
  accepted: write ``{name: 1.0}`` or ``{name: True}``.

**Template of a feature** = the *top-level* dict key it came from, whatever
the value type: ``"w[0]=the"`` belongs to template ``"w[0]"``, ``"len"`` (a
number) to ``"len"``, and ``"k:sub=v"`` (nested) to ``"k"``.  Nested dicts
and lists are therefore ways to put a whole bag of features into one group;
the number of templates is bounded by the number of distinct top-level keys.
(Two templates must not produce the same feature name, e.g. key ``"a=b"``
with a number and key ``"a"`` with the string ``"b"``: fit raises a
``ValueError`` naming both keys and where they occur, rather than merge
two different features into one column.  Within one template, a list item
``"s"`` and the string ``"s"`` are one feature.)

**Arrays**: ``X`` is a list of 2-D numpy arrays and/or scipy.sparse matrices
of shape ``(n_tokens_i, d)`` with the same ``d``.  Column ``j`` is its own
template ``"xj"``; ``min_freq`` and ``n_features`` do not apply.

Output columns are always ordered by template: ``templates_`` is
non-decreasing, so the columns of template ``g`` form one contiguous block.
"""

from . import _arcs, _dicts
from ._arcs import ArcVectorizer
from ._templates import TEMPLATES, column_features
from ._tokens import TokenVectorizer

__all__ = ["ArcVectorizer", "TokenVectorizer", "column_features", "TEMPLATES"]

# Also importable from here, as before the split into modules (not in
# ``__all__``): the sentence helpers of the parsing estimator and feature
# selection, the encoded-batch parts read by the token feature map, and
# the pair-table restorer named by pickles of a fitted TokenVectorizer.
check_sentences = _arcs.check_sentences
sentence_attributes = _arcs.sentence_attributes
_Encoded = _dicts._Encoded
_where = _dicts._where
_water_fill = _dicts._water_fill
_restore_pair_table = _dicts._restore_pair_table
