"""Reader of the label-ranking CSV files (scikit-lr / KEBI layout).

The reader accepts ``str`` or path-like arguments; files whose name ends in
``.gz`` are decompressed transparently.
"""

import os

import numpy as np

from ._conll import _text_lines

__all__ = ["read_label_ranking_csv"]


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
        Naming the file and line (and the column of a bad value): if the
        header is malformed or disagrees with the data (row count or row
        length), a value is not a finite number, or a rank is not an
        integer in ``1..n_labels``.  Blank lines are skipped.
    """
    path = os.fspath(path)
    rows = []
    with _text_lines(path) as (_, lines):
        header = None
        for lineno, line in enumerate(lines, start=1):
            line = line.strip()
            if header is None:
                header = line
                try:
                    n, d, k = (int(p) for p in header.split(","))
                except ValueError:
                    raise ValueError(
                        f"{path}: line 1 must be 'n_samples,n_features,n_labels'; got "
                        f"{header!r}."
                    ) from None
                if n < 0 or d < 0 or k < 1:
                    raise ValueError(f"{path}: invalid header values {header!r}.")
                continue
            if not line:
                continue
            rows.append(_parse_row(line, d, k, f"{path}:{lineno}"))
    if header is None:
        raise ValueError(f"{path}: the file is empty (no header line).")
    if len(rows) != n:
        raise ValueError(
            f"{path}: header announces {n} samples but the file has "
            f"{len(rows)} data rows."
        )
    data = np.array(rows, dtype=np.float64).reshape(len(rows), d + k)
    X = np.ascontiguousarray(data[:, :d])
    return X, np.ascontiguousarray(data[:, d:].astype(np.int64))


def _parse_row(line, d, k, where):
    """The ``d`` features and ``k`` ranks of a data line, checked: finite
    numbers, integer ranks in ``1..k``; errors name the line and column."""
    cells = line.split(",")
    if len(cells) != d + k:
        raise ValueError(
            f"{where}: {len(cells)} columns, but the header announces {d} features + "
            f"{k} labels = {d + k}.")
    values = []
    for j, cell in enumerate(cells):
        what = f"feature {j + 1}" if j < d else f"the rank of label {j - d + 1}"
        try:
            v = float(cell)
        except ValueError:
            raise ValueError(f"{where}: column {j + 1} ({what}) is not a number: "
                             f"{cell.strip()!r}.") from None
        if not np.isfinite(v):
            raise ValueError(f"{where}: column {j + 1} ({what}) is {cell.strip()}; "
                             f"values must be finite.")
        if j >= d and not (v == round(v) and 1 <= v <= k):
            raise ValueError(f"{where}: column {j + 1} ({what}) is {cell.strip()}; "
                             f"ranks are integers in 1..{k}.")
        values.append(v)
    return values
