"""Readers for the benchmark file formats (pure functions of a path).

All readers accept ``str`` or path-like arguments; files whose name ends in
``.gz`` are decompressed transparently (except the Chu & Ghahramani partition
files, whose names carry a numeric suffix).  The CoNLL readers also accept an
open text file object (e.g. :class:`io.StringIO`).
"""

import contextlib
import csv
import gzip
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ._base import open_text

__all__ = [
    "read_label_ranking_csv",
    "read_arff_multilabel",
    "read_chu_ghahramani",
    "read_wine_quality",
    "read_conll_columns",
    "read_conll2002",
    "read_conllu",
    "write_conllu",
    "ConlluSentence",
]

_MULAN_NS = "http://mulan.sourceforge.net/labels"
_DENSE_WEIGHT = re.compile(r",\s*\{\s*[0-9.eE+-]+\s*\}$")


# ---------------------------------------------------------------------------
# label ranking CSV
# ---------------------------------------------------------------------------
def read_label_ranking_csv(path):
    """Read a label-ranking CSV file (scikit-lr / KEBI layout).

    The first line is ``n_samples,n_features,n_labels``; each following line
    holds ``n_features`` feature values followed by ``n_labels`` integer
    ranks, where the ``j``-th rank is the position of label ``j`` (1 = most
    preferred).

    Parameters
    ----------
    path : str or path-like
        File to read (``.gz`` is decompressed transparently).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
        Features.
    Y : ndarray of shape (n_samples, n_labels), dtype int64
        Rank vectors, ``Y[i, j]`` = rank of label ``j`` for sample ``i``.
        Rows of the complete label-ranking benchmarks are permutations of
        ``1..n_labels``; ties (repeated ranks, as in partial label ranking
        files) are accepted by the reader.

    Raises
    ------
    ValueError
        If the header is malformed or disagrees with the data (row count or
        row length), or if a rank is not an integer in ``1..n_labels``.
    """
    path = os.fspath(path)
    with open_text(path) as fh:
        header = fh.readline().strip()
        parts = header.split(",")
        try:
            n, d, k = (int(p) for p in parts)
        except ValueError:
            raise ValueError(
                f"{path}: line 1 must be 'n_samples,n_features,n_labels'; got "
                f"{header!r}."
            ) from None
        if n < 0 or d < 0 or k < 1:
            raise ValueError(f"{path}: invalid header values {header!r}.")
        try:
            data = np.loadtxt(fh, delimiter=",", dtype=np.float64, ndmin=2)
        except ValueError as exc:
            raise ValueError(f"{path}: malformed data row: {exc}") from exc
    if data.size == 0:
        data = data.reshape(0, d + k)
    if data.shape[0] != n:
        raise ValueError(
            f"{path}: header announces {n} samples but the file has "
            f"{data.shape[0]} data rows."
        )
    if data.shape[1] != d + k:
        raise ValueError(
            f"{path}: header announces {d} features + {k} labels = {d + k} "
            f"columns but the rows have {data.shape[1]} columns."
        )
    X = np.ascontiguousarray(data[:, :d])
    ranks = data[:, d:]
    bad = ~((ranks == np.round(ranks)) & (ranks >= 1) & (ranks <= k)).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{path}: data row {i} (line {i + 2}) has ranks {ranks[i].tolist()}, "
            f"expected integers in 1..{k}."
        )
    return X, np.ascontiguousarray(ranks.astype(np.int64))


# ---------------------------------------------------------------------------
# ARFF (Weka) + Mulan XML
# ---------------------------------------------------------------------------
def _unquote(token):
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        body = token[1:-1]
        return re.sub(r"\\(.)", r"\1", body)
    return token


def _split_quoted(text, sep=","):
    """Split ``text`` on ``sep`` outside single or double quotes."""
    if "'" not in text and '"' not in text:
        return [t.strip() for t in text.split(sep)]
    out, cur, quote, escaped = [], [], None, False
    for ch in text:
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\" and quote:
            cur.append(ch)
            escaped = True
        elif quote:
            cur.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            cur.append(ch)
            quote = ch
        elif ch == sep:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out


def _parse_attribute(line, path, lineno):
    """Return ``(name, kind, nominal_values)`` for an ``@attribute`` line."""
    rest = line[len("@attribute"):].strip()
    if rest[:1] in ("'", '"'):
        q = rest[0]
        m = re.match(r"%s((?:[^%s\\]|\\.)*)%s\s*(.*)$" % (q, q, q), rest)
        if m is None:
            raise ValueError(f"{path}:{lineno}: unterminated attribute name.")
        name, type_str = re.sub(r"\\(.)", r"\1", m.group(1)), m.group(2)
    else:
        m = re.match(r"([^\s{]+)\s*(\S.*)$", rest)
        if m is None:
            raise ValueError(f"{path}:{lineno}: malformed @attribute line.")
        name, type_str = m.group(1), m.group(2)
    type_str = type_str.strip()
    if type_str.startswith("{"):
        if not type_str.endswith("}"):
            raise ValueError(f"{path}:{lineno}: unterminated nominal value list.")
        values = [_unquote(v) for v in _split_quoted(type_str[1:-1])]
        return name, "nominal", values
    kind = type_str.split()[0].lower() if type_str else ""
    if kind in ("numeric", "real", "integer"):
        return name, "numeric", None
    if kind in ("string", "date"):
        return name, kind, None
    raise ValueError(
        f"{path}:{lineno}: unsupported attribute type {type_str!r} for "
        f"attribute {name!r}."
    )


def _read_arff(path):
    """Parse a dense or sparse ARFF file.

    Returns
    -------
    attributes : list of (name, kind, nominal_values)
    rows : list of list of str
        One string per attribute and instance; sparse rows are expanded
        (omitted numeric values become ``"0"``, omitted nominal values the
        first declared value) and missing values are ``"?"``.
    """
    attributes, rows = [], []
    in_data = False
    with open_text(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                low = line.lower()
                if low.startswith("@attribute"):
                    attributes.append(_parse_attribute(line, path, lineno))
                elif low.startswith("@data"):
                    in_data = True
                    n_attr = len(attributes)
                    defaults = [
                        (a[2][0] if a[1] == "nominal" else "0") for a in attributes
                    ]
                elif low.startswith("@relation") or low.startswith("@end"):
                    continue
                else:
                    raise ValueError(f"{path}:{lineno}: unexpected header line {line[:60]!r}.")
                continue
            if line.startswith("{"):
                if not line.endswith("}"):
                    raise ValueError(f"{path}:{lineno}: unterminated sparse row.")
                values = list(defaults)
                body = line[1:-1].strip()
                if body:
                    for item in _split_quoted(body):
                        idx, _, val = item.partition(" ")
                        try:
                            j = int(idx)
                        except ValueError:
                            raise ValueError(
                                f"{path}:{lineno}: bad sparse entry {item!r}."
                            ) from None
                        if not 0 <= j < n_attr:
                            raise ValueError(
                                f"{path}:{lineno}: sparse index {j} out of range "
                                f"(file declares {n_attr} attributes)."
                            )
                        values[j] = _unquote(val)
            else:
                # drop an optional trailing instance weight "{w}"
                line = _DENSE_WEIGHT.sub("", line)
                values = [_unquote(v) for v in _split_quoted(line)]
                if len(values) != n_attr:
                    raise ValueError(
                        f"{path}:{lineno}: data row has {len(values)} values, the "
                        f"header declares {n_attr} attributes."
                    )
            rows.append(values)
    if not in_data:
        raise ValueError(f"{path}: no @data section found.")
    return attributes, rows


def _read_mulan_labels(xml_path):
    """Label names listed in a Mulan XML file, in document order."""
    try:
        root = ET.parse(os.fspath(xml_path)).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{xml_path}: invalid XML: {exc}") from exc
    names = []
    for el in root.iter():
        tag = el.tag
        if tag in (f"{{{_MULAN_NS}}}label", "label"):
            name = el.get("name")
            if name is None:
                raise ValueError(f"{xml_path}: <label> element without a name.")
            names.append(name)
    if not names:
        raise ValueError(
            f"{xml_path}: no <label name=...> elements (namespace {_MULAN_NS})."
        )
    if len(set(names)) != len(names):
        raise ValueError(f"{xml_path}: duplicated label names.")
    return names


def _nominal_column(col, values, name, path, as_label):
    """Encode a nominal column: numeric values as floats, else indices."""
    try:
        codes = {v: float(v) for v in values}
    except ValueError:
        codes = {v: float(i) for i, v in enumerate(values)}
    if not as_label:
        codes["?"] = np.nan
    try:
        return np.array([codes[v] for v in col], dtype=np.float64)
    except KeyError as exc:
        raise ValueError(
            f"{path}: attribute {name!r} has value {exc.args[0]!r} outside its "
            f"declared values {values}."
        ) from None


def read_arff_multilabel(arff_path, xml_path):
    """Read a Mulan multilabel data set (Weka ARFF + Mulan XML label list).

    Parameters
    ----------
    arff_path : str or path-like
        ARFF file with dense rows (comma-separated values) or sparse rows
        (``{index value, ...}``).  Numeric attributes become floats, ``?``
        becomes NaN; nominal feature attributes are encoded by their value
        when it is numeric, else by their index in the declared value list.
    xml_path : str or path-like
        Mulan XML file listing the label attributes
        (``<labels xmlns="http://mulan.sourceforge.net/labels"><label
        name="..."/>...``).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
        All attributes that are not labels, in ARFF order.
    Y : ndarray of shape (n_samples, n_labels), dtype int64
        Binary label indicator matrix with columns in **XML order** (labels
        are matched by name, not by position in the ARFF file).
    feature_names : list of str
        Names of the columns of ``X``.
    label_names : list of str
        Names of the columns of ``Y`` (XML order).

    Raises
    ------
    ValueError
        If a label named in the XML is not an ARFF attribute, a label is not
        a binary nominal/numeric attribute, a label value is missing or not
        0/1, or the ARFF file is malformed.
    """
    arff_path = os.fspath(arff_path)
    label_names = _read_mulan_labels(xml_path)
    attributes, rows = _read_arff(arff_path)
    index = {a[0]: j for j, a in enumerate(attributes)}
    missing = [n for n in label_names if n not in index]
    if missing:
        raise ValueError(
            f"{arff_path}: labels {missing} listed in {xml_path} are not "
            "attributes of the ARFF file."
        )
    label_idx = [index[n] for n in label_names]
    label_set = set(label_idx)
    feat_idx = [j for j in range(len(attributes)) if j not in label_set]
    n = len(rows)
    table = np.array(rows, dtype=object).reshape(n, len(attributes))

    X = np.empty((n, len(feat_idx)), dtype=np.float64)
    for c, j in enumerate(feat_idx):
        name, kind, values = attributes[j]
        col = table[:, j]
        if kind == "numeric":
            try:
                X[:, c] = [np.nan if v == "?" else float(v) for v in col]
            except ValueError as exc:
                raise ValueError(
                    f"{arff_path}: numeric attribute {name!r}: {exc}"
                ) from None
        elif kind == "nominal":
            X[:, c] = _nominal_column(col, values, name, arff_path, False)
        else:
            raise ValueError(
                f"{arff_path}: feature attribute {name!r} has type {kind!r}; "
                "only numeric and nominal features are supported."
            )

    Y = np.empty((n, len(label_idx)), dtype=np.int64)
    for c, j in enumerate(label_idx):
        name, kind, values = attributes[j]
        col = table[:, j]
        if "?" in set(col):
            raise ValueError(f"{arff_path}: label {name!r} has missing values.")
        if kind == "nominal":
            vals = _nominal_column(col, values, name, arff_path, True)
        elif kind == "numeric":
            vals = np.array([float(v) for v in col])
        else:
            raise ValueError(f"{arff_path}: label {name!r} has type {kind!r}.")
        if not np.isin(vals, (0.0, 1.0)).all():
            raise ValueError(
                f"{arff_path}: label {name!r} takes values other than 0/1."
            )
        Y[:, c] = vals.astype(np.int64)
    feature_names = [attributes[j][0] for j in feat_idx]
    return X, Y, feature_names, list(label_names)


# ---------------------------------------------------------------------------
# Chu & Ghahramani ordinal partitions
# ---------------------------------------------------------------------------
def _find_partition_files(folder, n_bins, partition):
    """Locate ``<prefix>_train_<K>.<i>`` / ``<prefix>_test_<K>.<i>``."""
    folder = Path(folder)
    candidates = [folder / f"{n_bins}bins", folder]
    pattern = re.compile(
        r"^(?P<prefix>.+)_(?P<split>train|test)_%d\.%d$" % (n_bins, partition)
    )
    for cand in candidates:
        if not cand.is_dir():
            continue
        found = {}
        for entry in os.listdir(cand):
            m = pattern.match(entry)
            if m:
                found.setdefault(m.group("split"), []).append(cand / entry)
        if found:
            for split in ("train", "test"):
                files = found.get(split, [])
                if len(files) != 1:
                    raise ValueError(
                        f"{cand}: expected exactly one {split} file for "
                        f"{n_bins} bins, partition {partition}; found "
                        f"{[f.name for f in files]}."
                    )
            return found["train"][0], found["test"][0]
    raise FileNotFoundError(
        f"No partition files '*_train_{n_bins}.{partition}' / "
        f"'*_test_{n_bins}.{partition}' in {folder / f'{n_bins}bins'} or {folder}."
    )


def _read_ordinal_table(path, n_bins):
    try:
        data = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: malformed row: {exc}") from exc
    if data.shape[1] < 2:
        raise ValueError(f"{path}: expected features and a label column.")
    y = data[:, -1]
    ok = (y == np.round(y)) & (y >= 1) & (y <= n_bins)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(
            f"{path}: row {i} has label {y[i]!r}, expected an integer in "
            f"1..{n_bins}."
        )
    return np.ascontiguousarray(data[:, :-1]), y.astype(np.int64)


def read_chu_ghahramani(folder, n_bins, partition):
    """Read one train/test partition of a Chu & Ghahramani ordinal data set.

    Parameters
    ----------
    folder : str or path-like
        Data set folder, e.g. ``.../ordinal_chu_ghahramani/abalone``; the
        partition files are looked up in its ``<n_bins>bins/`` sub-folder (or
        in ``folder`` itself).  Files are matched by the pattern
        ``<prefix>_train_<n_bins>.<partition>`` / ``<prefix>_test_...``, so
        every naming variant of the benchmark works (e.g. ``auto.data_...``,
        ``wpbc_...``, or ``diabetes.data.ord_...`` for Diabetes with 10 bins).
    n_bins : {5, 10}
        Number of ordinal levels K.
    partition : int
        Partition number, 1..20.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features), dtype float64
    y_train : ndarray of shape (n_train,), dtype int64
        Ordinal labels in ``1..n_bins``.
    X_test : ndarray of shape (n_test, n_features), dtype float64
    y_test : ndarray of shape (n_test,), dtype int64

    Raises
    ------
    FileNotFoundError
        If the partition files are not found.
    ValueError
        If ``n_bins``/``partition`` are not positive integers, train and test
        have different numbers of features, or a label is not in
        ``1..n_bins``.
    """
    for name, val in (("n_bins", n_bins), ("partition", partition)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
            raise ValueError(f"{name} must be a positive integer; got {val!r}.")
    train_path, test_path = _find_partition_files(folder, int(n_bins), int(partition))
    return _read_partition_pair(train_path, test_path, int(n_bins))


def _read_partition_pair(train_path, test_path, n_bins):
    X_train, y_train = _read_ordinal_table(train_path, n_bins)
    X_test, y_test = _read_ordinal_table(test_path, n_bins)
    if X_train.shape[1] != X_test.shape[1]:
        raise ValueError(
            f"{train_path} has {X_train.shape[1]} features but {test_path} has "
            f"{X_test.shape[1]}."
        )
    return X_train, y_train, X_test, y_test


# ---------------------------------------------------------------------------
# Wine Quality
# ---------------------------------------------------------------------------
def _read_wine_quality_full(path):
    path = os.fspath(path)
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter=";", quotechar='"')
        try:
            header = next(reader)
        except StopIteration:
            raise ValueError(f"{path}: empty file.") from None
        rows = [r for r in reader if r]
    header = [h.strip() for h in header]
    if not header or header[-1] != "quality":
        raise ValueError(
            f"{path}: expected a ';'-separated header ending with \"quality\"; "
            f"got {header}."
        )
    width = len(header)
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ValueError(
                f"{path}: line {i + 2} has {len(r)} fields, header has {width}."
            )
    try:
        data = np.array(rows, dtype=np.float64).reshape(len(rows), width)
    except ValueError as exc:
        raise ValueError(f"{path}: non-numeric value: {exc}") from exc
    y = data[:, -1]
    if not np.all(y == np.round(y)):
        raise ValueError(f"{path}: quality scores must be integers.")
    return np.ascontiguousarray(data[:, :-1]), y.astype(np.int64), header[:-1]


def read_wine_quality(path):
    """Read a UCI Wine Quality CSV file.

    Parameters
    ----------
    path : str or path-like
        ``winequality-red.csv`` or ``winequality-white.csv`` (``;``-separated
        with a quoted header line; ``.gz`` is decompressed transparently).

    Returns
    -------
    X : ndarray of shape (n_samples, 11), dtype float64
        Physicochemical measurements, in header order.
    y : ndarray of shape (n_samples,), dtype int64
        Sensory quality score (ordinal, 0-10; 3-9 occur).

    Raises
    ------
    ValueError
        If the header does not end with ``quality`` or a row is malformed.
    """
    X, y, _ = _read_wine_quality_full(path)
    return X, y


# ---------------------------------------------------------------------------
# CoNLL column files and CoNLL-U
# ---------------------------------------------------------------------------
@contextlib.contextmanager
def _text_lines(path_or_file):
    """Yield ``(name, file)`` for a path (``.gz`` aware) or a text file object.

    File objects are not closed; paths are opened and closed here.
    """
    if hasattr(path_or_file, "read"):
        name = getattr(path_or_file, "name", None)
        yield (name if isinstance(name, str) else "<file>"), path_or_file
        return
    path = os.fspath(path_or_file)
    with open_text(path) as fh:
        yield path, fh


def read_conll_columns(path_or_file, columns=None):
    """Read a CoNLL column file (one token per line, one sentence per block).

    Each non-blank line holds the whitespace-separated columns of one token
    (e.g. ``word POS chunk`` in CoNLL-2000); a blank line ends a sentence.
    Lines whose first column is ``-DOCSTART-`` (document separators of the
    CoNLL-2002/2003 files) are skipped, as are the empty sentences they leave.

    Parameters
    ----------
    path_or_file : str, path-like or text file object
        File to read; a path ending in ``.gz`` is decompressed transparently.
    columns : sequence of str, default=None
        Names of the columns.  When given, every line must have exactly
        ``len(columns)`` columns and tokens are returned as dicts.

    Returns
    -------
    sentences : list of list
        One list per sentence, one item per token: a tuple of the column
        values (strings) when ``columns`` is None, else a dict
        ``{column name: value}``.

    Raises
    ------
    ValueError
        If a line has a different number of columns than the first token
        line of the file (or than ``columns``); the message gives the line
        number.

    Examples
    --------
    >>> import io
    >>> read_conll_columns(io.StringIO("He PRP B-NP\\nran VBD B-VP\\n\\n"))
    [[('He', 'PRP', 'B-NP'), ('ran', 'VBD', 'B-VP')]]
    """
    if columns is not None:
        if isinstance(columns, str):
            raise ValueError(
                f"columns must be a sequence of column names, not the string "
                f"{columns!r}."
            )
        columns = tuple(columns)
        if not columns or len(set(columns)) != len(columns):
            raise ValueError(
                f"columns must be a non-empty sequence of distinct names; got "
                f"{list(columns)!r}."
            )
    width = len(columns) if columns is not None else None
    width_line = None
    sentences, current = [], []
    with _text_lines(path_or_file) as (name, fh):
        for lineno, raw in enumerate(fh, start=1):
            fields = raw.split()
            if not fields:
                if current:
                    sentences.append(current)
                    current = []
                continue
            if fields[0] == "-DOCSTART-":
                if current:
                    sentences.append(current)
                    current = []
                continue
            if width is None:
                width, width_line = len(fields), lineno
            elif len(fields) != width:
                origin = (f"columns={list(columns)!r}" if width_line is None
                          else f"line {width_line}")
                raise ValueError(
                    f"{name}:{lineno}: line has {len(fields)} columns, expected "
                    f"{width} (as in {origin}): {raw.rstrip()[:80]!r}."
                )
            current.append(dict(zip(columns, fields)) if columns is not None
                           else tuple(fields))
    if current:
        sentences.append(current)
    return sentences


_IOB2_TAG = re.compile(r"(?:O|[BI]-[^\s-][^\s]*)\Z")


def read_conll2002(path_or_file, encoding="utf-8"):
    """Read a CoNLL-2002 named-entity file (``word POS tag`` per line).

    The format of the CoNLL-2002 shared task files (``esp.train``,
    ``ned.testb``, ...): one token per line with three space-separated
    columns -- the word, its part-of-speech tag and its IOB2 named-entity
    tag (``O``, ``B-PER``, ``I-PER``, ``B-LOC``, ... ``I-MISC``) -- and a
    blank line after each sentence.

    A line ``-DOCSTART- -DOCSTART- O`` (in the Dutch files: the start of an
    article, written as the first line of the article's first sentence, with
    no blank line after it) is **dropped and treated as a sentence
    boundary**: the tokens before it end a sentence, those after it start a
    new one, and it never appears in the output (so it is neither a token
    nor a sentence of its own).

    Parameters
    ----------
    path_or_file : str, path-like or text file object
        File to read; a path ending in ``.gz`` is decompressed transparently.
        A text file object is read as it is (``encoding`` is then ignored).
    encoding : str, default="utf-8"
        Encoding of a file given by path.  The copies of the NLTK data
        (fetched by :func:`fetch_conll2002`) are UTF-8; the original
        CoNLL-2002 distribution is ISO-8859-1: pass ``encoding="latin-1"``
        for those files.

    Returns
    -------
    words : list of list of str
        The tokens of each sentence.
    pos : list of list of str
        Their part-of-speech tags.
    tags : list of list of str
        Their IOB2 named-entity tags.

    Raises
    ------
    ValueError
        If a line does not have exactly three columns, if its tag is not an
        IOB2 tag (``O``, ``B-<type>`` or ``I-<type>``), or if it cannot be
        decoded with ``encoding``; the message names the file and the line
        number.

    Examples
    --------
    >>> import io
    >>> read_conll2002(io.StringIO("-DOCSTART- -DOCSTART- O\\nJan N B-PER\\n"
    ...                            "loopt V O\\n\\n"))
    ([['Jan', 'loopt']], [['N', 'V']], [['B-PER', 'O']])
    """
    words, pos, tags = [], [], []
    cur_w, cur_p, cur_t = [], [], []

    def flush():
        if cur_w:
            words.append(list(cur_w))
            pos.append(list(cur_p))
            tags.append(list(cur_t))
            cur_w.clear()
            cur_p.clear()
            cur_t.clear()

    if hasattr(path_or_file, "read"):
        name = getattr(path_or_file, "name", None)
        name = name if isinstance(name, str) else "<file>"
        lines = ((line, None) for line in path_or_file)
        fh = None
    else:
        name = os.fspath(path_or_file)
        opener = gzip.open if name.endswith(".gz") else open
        fh = opener(name, "rb")
        lines = ((None, line) for line in fh)
    try:
        for lineno, (text, raw) in enumerate(lines, start=1):
            if text is None:
                try:
                    text = raw.decode(encoding)
                except UnicodeDecodeError as exc:
                    raise ValueError(
                        f"{name}:{lineno}: cannot decode the line as {encoding} "
                        f"({exc.reason} at byte {exc.start}); the original CoNLL-2002 "
                        f"files are ISO-8859-1: pass encoding='latin-1'."
                    ) from None
            fields = text.split()
            if not fields:
                flush()
                continue
            if fields[0] == "-DOCSTART-":
                flush()
                continue
            if len(fields) != 3:
                raise ValueError(
                    f"{name}:{lineno}: expected 3 columns (word, POS, IOB2 tag), got "
                    f"{len(fields)}: {text.rstrip()[:80]!r}."
                )
            if not _IOB2_TAG.match(fields[2]):
                raise ValueError(
                    f"{name}:{lineno}: {fields[2]!r} is not an IOB2 tag (expected 'O', "
                    f"'B-<type>' or 'I-<type>'): {text.rstrip()[:80]!r}."
                )
            cur_w.append(fields[0])
            cur_p.append(fields[1])
            cur_t.append(fields[2])
        flush()
    finally:
        if fh is not None:
            fh.close()
    return words, pos, tags


#: Names of the ten CoNLL-U fields, in column order.
CONLLU_FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head",
                 "deprel", "deps", "misc")

_INT_ID = re.compile(r"[1-9][0-9]*\Z")
_HEAD = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)\Z")
_EMPTY_ID = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)\Z")


class ConlluSentence:
    """One sentence of a CoNLL-U file.

    Parameters
    ----------
    tokens : list of dict
        The syntactic words (lines with an integer ID), in order.  Each dict
        has the keys of ``CONLLU_FIELDS``: ``id`` (int, 1-based),
        ``form`` and ``lemma`` (str), ``upos``, ``xpos``, ``deprel``,
        ``deps`` (str or None), ``feats`` and ``misc`` (dict or None) and
        ``head`` (int, 0 = root, or None).
    comments : list of str, default=None
        The comment lines preceding the tokens, verbatim with their leading
        ``#`` (e.g. ``"# sent_id = s1"``).
    multiword_tokens : list of dict, default=None
        Multiword-token lines (ID ``"3-4"``), same keys as ``tokens`` but
        ``id`` is the original string.  Not part of ``tokens``.
    empty_nodes : list of dict, default=None
        Empty nodes of the enhanced graph (ID ``"5.1"``), same keys, ``id``
        a string.  Not part of ``tokens``.

    Notes
    -----
    ``_`` (missing) is represented as None, except in ``form`` (kept as the
    string, since ``_`` may be the underscore character itself) and in
    ``lemma`` when the form is ``_``.  Multiword tokens are written back
    before their first word and empty nodes after the word whose number
    they extend, which is where CoNLL-U puts them, so that
    :func:`write_conllu` reproduces a valid file exactly.
    """

    __slots__ = ("tokens", "comments", "multiword_tokens", "empty_nodes")

    def __init__(self, tokens, comments=None, multiword_tokens=None,
                 empty_nodes=None):
        self.tokens = list(tokens)
        self.comments = list(comments or [])
        self.multiword_tokens = list(multiword_tokens or [])
        self.empty_nodes = list(empty_nodes or [])

    def __len__(self):
        return len(self.tokens)

    def __eq__(self, other):
        if not isinstance(other, ConlluSentence):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    __hash__ = None

    def __repr__(self):
        sid = self.sent_id
        ident = f"sent_id={sid!r}, " if sid is not None else ""
        return (f"ConlluSentence({ident}{len(self.tokens)} tokens, "
                f"text={self.text!r})")

    @property
    def metadata(self):
        """dict: ``key = value`` comments as a dict (``# key`` -> None)."""
        out = {}
        for line in self.comments:
            body = line[1:].strip()
            key, sep, value = body.partition("=")
            if key.strip():
                out[key.strip()] = value.strip() if sep else None
        return out

    @property
    def sent_id(self):
        """str or None: the ``# sent_id`` comment."""
        return self.metadata.get("sent_id")

    @property
    def text(self):
        """str or None: the ``# text`` comment."""
        return self.metadata.get("text")

    @property
    def forms(self):
        """list of str: the word forms."""
        return [t["form"] for t in self.tokens]

    @property
    def upos(self):
        """list: the universal POS tags (None where missing)."""
        return [t["upos"] for t in self.tokens]

    @property
    def heads(self):
        """list: the heads (1-based, 0 = root, None where missing)."""
        return [t["head"] for t in self.tokens]

    @property
    def deprels(self):
        """list: the dependency relations (None where missing)."""
        return [t["deprel"] for t in self.tokens]


def _parse_attributes(value, field, where):
    """Parse a FEATS or MISC column into a dict (None for ``_``)."""
    if value == "_":
        return None
    out = {}
    for item in value.split("|"):
        key, sep, val = item.partition("=")
        if not key or (field == "FEATS" and not sep):
            raise ValueError(
                f"{where}: malformed {field} item {item!r} in {value!r} "
                "(expected Name=Value pairs separated by '|')."
            )
        if key in out:
            raise ValueError(f"{where}: {field} repeats the attribute {key!r}.")
        out[key] = val if sep else None
    return out


def _parse_conllu_fields(cols, where):
    form = cols[1]
    lemma = None if cols[2] == "_" and form != "_" else cols[2]
    head = cols[6]
    if head == "_":
        head = None
    elif _HEAD.match(head):
        head = int(head)
    else:
        raise ValueError(
            f"{where}: HEAD must be a non-negative integer or '_'; got {head!r}."
        )
    return {
        "id": cols[0], "form": form, "lemma": lemma,
        "upos": None if cols[3] == "_" else cols[3],
        "xpos": None if cols[4] == "_" else cols[4],
        "feats": _parse_attributes(cols[5], "FEATS", where),
        "head": head,
        "deprel": None if cols[7] == "_" else cols[7],
        "deps": None if cols[8] == "_" else cols[8],
        "misc": _parse_attributes(cols[9], "MISC", where),
    }


def read_conllu(path_or_file):
    """Read a CoNLL-U file (Universal Dependencies format).

    Every token line has 10 tab-separated fields ``ID FORM LEMMA UPOS XPOS
    FEATS HEAD DEPREL DEPS MISC``; comment lines (``# sent_id = ...``,
    ``# text = ...``) precede the tokens of their sentence and a blank line
    ends each sentence.  Multiword-token lines (ID ``3-4``) and empty nodes
    (ID ``5.1``) are kept aside, so ``sentence.tokens`` holds exactly the
    syntactic words of the basic dependency tree, numbered ``1..n``.
    :func:`write_conllu` writes the sentences back byte for byte.

    Parameters
    ----------
    path_or_file : str, path-like or text file object
        File to read; a path ending in ``.gz`` is decompressed transparently.

    Returns
    -------
    sentences : list of ConlluSentence
        ``sentence.tokens`` is a list of dicts with keys ``id`` (int),
        ``form``, ``lemma``, ``upos``, ``xpos``, ``feats`` (dict or None),
        ``head`` (int, 1-based, 0 = root; None for ``_``), ``deprel``,
        ``deps``, ``misc`` (dict or None); ``_`` becomes None (see
        :class:`ConlluSentence` for the underscore in FORM/LEMMA).
        ``sentence.comments`` holds the comment lines verbatim.

    Raises
    ------
    ValueError
        With the line number, if a line does not have 10 tab-separated
        fields, an ID is not an integer, a range ``n-m`` or a decimal
        ``n.k``, the integer IDs of a sentence are not ``1..n`` in order,
        a HEAD is not an integer in ``0..n`` (or ``_``), FEATS is not a list
        of ``Name=Value`` pairs, or a comment line follows a token line.

    Examples
    --------
    >>> import io
    >>> s = read_conllu(io.StringIO(
    ...     "# text = Hi!\\n1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t0:root\\t"
    ...     "SpaceAfter=No\\n2\\t!\\t!\\tPUNCT\\t.\\t_\\t1\\tpunct\\t1:punct\\t_\\n\\n"))
    >>> s[0].forms, s[0].heads, s[0].tokens[0]["misc"]
    (['Hi', '!'], [0, 1], {'SpaceAfter': 'No'})
    """
    sentences = []
    state = {"comments": [], "tokens": [], "mwt": [], "empty": [], "lines": []}

    def flush(name):
        tokens = state["tokens"]
        if not tokens:
            if state["comments"] or state["mwt"] or state["empty"]:
                raise ValueError(
                    f"{name}:{state['lines'][0] if state['lines'] else '?'}: "
                    "sentence without any word line (integer ID)."
                )
            return
        n = len(tokens)
        for tok, lineno in zip(tokens, state["lines_tok"]):
            if tok["head"] is not None and tok["head"] > n:
                raise ValueError(
                    f"{name}:{lineno}: HEAD {tok['head']} is outside 0..{n} "
                    f"(the sentence has {n} words)."
                )
        for mwt, lineno in state["mwt"]:
            end = int(mwt["id"].split("-")[1])
            if end > n:
                raise ValueError(
                    f"{name}:{lineno}: multiword token {mwt['id']} extends past "
                    f"the last word {n}."
                )
        sentences.append(ConlluSentence(
            tokens, state["comments"], [m for m, _ in state["mwt"]],
            state["empty"]))

    def reset():
        state.update(comments=[], tokens=[], mwt=[], empty=[], lines=[],
                     lines_tok=[], last_empty=(None, 0))

    reset()
    with _text_lines(path_or_file) as (name, fh):
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                if line:
                    raise ValueError(
                        f"{name}:{lineno}: blank line containing whitespace."
                    )
                flush(name)
                reset()
                continue
            state["lines"].append(lineno)
            where = f"{name}:{lineno}"
            if line.startswith("#"):
                if state["tokens"] or state["mwt"] or state["empty"]:
                    raise ValueError(
                        f"{where}: comment line after the word lines of a "
                        "sentence (comments must precede the words; is a blank "
                        "line missing?)."
                    )
                state["comments"].append(line)
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise ValueError(
                    f"{where}: expected 10 tab-separated fields, got "
                    f"{len(cols)}: {line[:80]!r}."
                )
            ident = cols[0]
            n = len(state["tokens"])
            fields = _parse_conllu_fields(cols, where)
            if _INT_ID.match(ident):
                if int(ident) != n + 1:
                    raise ValueError(
                        f"{where}: word ID {ident} out of order; expected "
                        f"{n + 1} (IDs must be 1..n in order)."
                    )
                fields["id"] = n + 1
                state["tokens"].append(fields)
                state["lines_tok"].append(lineno)
                continue
            m = _RANGE_ID.match(ident)
            if m:
                start, end = int(m.group(1)), int(m.group(2))
                if start != n + 1 or end <= start:
                    raise ValueError(
                        f"{where}: multiword token range {ident} must start at "
                        f"the next word ID {n + 1} and end after it."
                    )
                state["mwt"].append((fields, lineno))
                continue
            m = _EMPTY_ID.match(ident)
            if m:
                major, minor = int(m.group(1)), int(m.group(2))
                last_major, last_minor = state["last_empty"]
                expected = last_minor + 1 if last_major == major else 1
                if major != n:
                    raise ValueError(
                        f"{where}: empty node {ident} out of order: it follows "
                        f"word {n}, so its ID must be {n}.k."
                    )
                if minor != expected:
                    raise ValueError(
                        f"{where}: empty node {ident} out of order; expected "
                        f"{n}.{expected}."
                    )
                state["last_empty"] = (major, minor)
                state["empty"].append(fields)
                continue
            raise ValueError(
                f"{where}: ID must be an integer, a range 'n-m' or a decimal "
                f"'n.k'; got {ident!r}."
            )
    flush(name)
    return sentences


def _format_attributes(value, field, where):
    if value is None:
        return "_"
    if isinstance(value, str):
        return _format_field(value, field, where)
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {field} must be a dict, a string or None; "
                         f"got {value!r}.")
    if not value:
        return "_"
    items = [k if v is None else f"{k}={v}" for k, v in value.items()]
    return _format_field("|".join(items), field, where)


def _format_field(value, field, where):
    if value is None:
        return "_"
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (str, int, np.integer)):
        raise ValueError(f"{where}: {field} must be a string; got {value!r}.")
    text = str(value)
    if not text or "\t" in text or "\n" in text or "\r" in text:
        raise ValueError(
            f"{where}: {field} {text!r} is empty or contains a tab or newline."
        )
    return text


def _format_line(tok, ident, where):
    head = tok.get("head")
    if head is not None:
        if isinstance(head, (bool, np.bool_)) or not isinstance(
                head, (int, np.integer)) or head < 0:
            raise ValueError(
                f"{where}: head must be a non-negative integer or None; got "
                f"{head!r}."
            )
        head = str(int(head))
    cols = [
        ident,
        _format_field(tok.get("form"), "form", where),
        _format_field(tok.get("lemma"), "lemma", where),
        _format_field(tok.get("upos"), "upos", where),
        _format_field(tok.get("xpos"), "xpos", where),
        _format_attributes(tok.get("feats"), "feats", where),
        "_" if head is None else head,
        _format_field(tok.get("deprel"), "deprel", where),
        _format_field(tok.get("deps"), "deps", where),
        _format_attributes(tok.get("misc"), "misc", where),
    ]
    return "\t".join(cols) + "\n"


def _sentence_parts(sent, i):
    if isinstance(sent, ConlluSentence):
        return sent.tokens, sent.comments, sent.multiword_tokens, sent.empty_nodes
    if isinstance(sent, Mapping) and "tokens" in sent:
        return (sent["tokens"], sent.get("comments") or [],
                sent.get("multiword_tokens") or [], sent.get("empty_nodes") or [])
    raise ValueError(
        f"sentences[{i}] must be a ConlluSentence or a dict with a 'tokens' "
        f"key; got {type(sent).__name__}."
    )


def _conllu_lines(sentences):
    """Yield the lines of the CoNLL-U serialisation of ``sentences``."""
    for i, sent in enumerate(sentences):
        tokens, comments, mwts, empties = _sentence_parts(sent, i)
        where = f"sentences[{i}]"
        if len(tokens) == 0:
            raise ValueError(f"{where} has no tokens.")
        for c in comments:
            if not isinstance(c, str) or not c.startswith("#") or "\n" in c:
                raise ValueError(
                    f"{where}: comment {c!r} must be a one-line string starting "
                    "with '#'."
                )
            yield c + "\n"
        before, after = {}, {}
        for m in mwts:
            match = _RANGE_ID.match(str(m.get("id")))
            if match is None:
                raise ValueError(f"{where}: multiword token id {m.get('id')!r} "
                                 "is not a range 'n-m'.")
            before.setdefault(int(match.group(1)), []).append(m)
        for e in empties:
            match = _EMPTY_ID.match(str(e.get("id")))
            if match is None:
                raise ValueError(f"{where}: empty node id {e.get('id')!r} is "
                                 "not a decimal 'n.k'.")
            after.setdefault(int(match.group(1)), []).append(e)
        for e in after.get(0, ()):
            yield _format_line(e, str(e["id"]), f"{where} empty node {e['id']}")
        for j, tok in enumerate(tokens, start=1):
            tid = tok.get("id", j)
            if isinstance(tid, (bool, np.bool_)) or tid != j:
                raise ValueError(
                    f"{where}: token {j - 1} has id {tid!r}; ids must be 1..n "
                    "in order."
                )
            for m in before.get(j, ()):
                yield _format_line(m, str(m["id"]),
                                   f"{where} multiword token {m['id']}")
            yield _format_line(tok, str(j), f"{where} token {j}")
            for e in after.get(j, ()):
                yield _format_line(e, str(e["id"]),
                                   f"{where} empty node {e['id']}")
        orphans = sorted(set(before) - set(range(1, len(tokens) + 1))) + sorted(
            set(after) - set(range(0, len(tokens) + 1)))
        if orphans:
            raise ValueError(
                f"{where}: multiword tokens or empty nodes refer to word(s) "
                f"{orphans} but the sentence has {len(tokens)} words."
            )
        yield "\n"


def write_conllu(sentences, path_or_file):
    """Write sentences in CoNLL-U format.

    The inverse of :func:`read_conllu`: ``write_conllu(read_conllu(f), g)``
    makes ``g`` byte-identical to a valid CoNLL-U file ``f`` (with ``\\n``
    line ends).  Each sentence is written as its comment lines, its word
    lines (multiword-token lines before their first word, empty nodes after
    the word they follow) and a blank line.

    Parameters
    ----------
    sentences : iterable of ConlluSentence or dict
        Sentences as returned by :func:`read_conllu`, or dicts with key
        ``tokens`` (list of dicts with the keys of ``CONLLU_FIELDS``;
        missing keys and None are written as ``_``; ``id`` must be
        ``1..n``) and optional ``comments``, ``multiword_tokens`` and
        ``empty_nodes``.
    path_or_file : str, path-like or text file object
        Destination.  A path ending in ``.gz`` is gzip-compressed with a
        zero timestamp, so identical content gives identical bytes.

    Raises
    ------
    ValueError
        Naming the sentence (and token), if ids are not ``1..n``, a head is
        not a non-negative integer, a field is empty or contains a tab or
        newline, or a comment does not start with ``#``.  Nothing is written
        to a path in that case.
    """
    text = "".join(_conllu_lines(sentences))  # validate before touching disk
    if hasattr(path_or_file, "write"):
        path_or_file.write(text)
        return
    path = os.fspath(path_or_file)
    data = text.encode("utf-8")
    if path.endswith(".gz"):
        with open(path, "wb") as raw, gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9
        ) as gz:
            gz.write(data)
    else:
        with open(path, "wb") as fh:
            fh.write(data)
