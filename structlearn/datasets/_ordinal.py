"""Readers of the ordinal regression benchmarks: the Chu & Ghahramani
partitions and the UCI Wine Quality files.

The readers accept ``str`` or path-like arguments; Wine Quality files whose
name ends in ``.gz`` are decompressed transparently (not the Chu &
Ghahramani partition files, whose names carry a numeric suffix).
"""

import csv
import os
import re
from pathlib import Path

import numpy as np

from ._base import open_text

__all__ = ["read_chu_ghahramani", "read_wine_quality"]


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
