"""Reader of the label-ranking CSV files (scikit-lr / KEBI layout).

The reader accepts ``str`` or path-like arguments; files whose name ends in
``.gz`` are decompressed transparently.
"""

import os

import numpy as np

from ._base import open_text

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
