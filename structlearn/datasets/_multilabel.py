"""Reader of the Mulan multilabel data sets (Weka ARFF + Mulan XML).

The reader accepts ``str`` or path-like arguments; ARFF files whose name
ends in ``.gz`` are decompressed transparently.
"""

import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from ._conll import _text_lines

__all__ = ["read_arff_multilabel"]

_MULAN_NS = "http://mulan.sourceforge.net/labels"
_DENSE_WEIGHT = re.compile(r",\s*\{\s*[0-9.eE+-]+\s*\}$")


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
    lines : list of int
        The file line of every row (for error messages).
    """
    attributes, rows, lines = [], [], []
    in_data = False
    with _text_lines(path) as (_, fh):
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
                seen = set()
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
                        if j in seen:
                            raise ValueError(
                                f"{path}:{lineno}: sparse index {j} appears twice in the "
                                f"row (attribute {attributes[j][0]!r}).")
                        seen.add(j)
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
            lines.append(lineno)
    if not in_data:
        raise ValueError(f"{path}: no @data section found.")
    return attributes, rows, lines


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


def _nominal_column(col, values, name, path, as_label, lines):
    """Encode a nominal column: numeric values as floats, else indices
    (``lines``: the file line of every row, for errors)."""
    try:
        codes = {v: float(v) for v in values}
    except ValueError:
        codes = {v: float(i) for i, v in enumerate(values)}
    if not as_label:
        codes["?"] = np.nan
    out = np.empty(len(col), dtype=np.float64)
    for i, v in enumerate(col):
        c = codes.get(v)
        if c is None:
            raise ValueError(
                f"{path}:{lines[i]}: attribute {name!r} has value {v!r} outside its "
                f"declared values {values}.")
        out[i] = c
    return out


def _numeric_column(col, name, path, lines, what="numeric attribute"):
    """A numeric column as floats (``?``: NaN); a value that is not a
    finite number is an error naming its line."""
    out = np.empty(len(col), dtype=np.float64)
    for i, v in enumerate(col):
        if v == "?":
            out[i] = np.nan
            continue
        try:
            out[i] = float(v)
        except ValueError:
            raise ValueError(f"{path}:{lines[i]}: {what} {name!r} has the value {v!r}, "
                             f"not a number.") from None
        if not np.isfinite(out[i]):
            raise ValueError(f"{path}:{lines[i]}: {what} {name!r} has the value {v!r}; "
                             f"values must be finite ('?' marks a missing value).")
    return out


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
    attributes, rows, lines = _read_arff(arff_path)
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
            X[:, c] = _numeric_column(col, name, arff_path, lines)
        elif kind == "nominal":
            X[:, c] = _nominal_column(col, values, name, arff_path, False, lines)
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
            i = list(col).index("?")
            raise ValueError(f"{arff_path}:{lines[i]}: label {name!r} has a missing "
                             f"value ('?').")
        if kind == "nominal":
            vals = _nominal_column(col, values, name, arff_path, True, lines)
        elif kind == "numeric":
            vals = _numeric_column(col, name, arff_path, lines, "label")
        else:
            raise ValueError(f"{arff_path}: label {name!r} has type {kind!r}.")
        bad = ~np.isin(vals, (0.0, 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{arff_path}:{lines[i]}: label {name!r} has the value {col[i]!r}; "
                f"labels are 0 or 1."
            )
        Y[:, c] = vals.astype(np.int64)
    feature_names = [attributes[j][0] for j in feat_idx]
    return X, Y, feature_names, list(label_names)
