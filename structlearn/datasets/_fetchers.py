"""Download-and-cache fetchers for the benchmark collections.

Files are looked up under ``<data_home>/<collection>/<relative path>`` (see
:func:`~structlearn.datasets.get_data_home`), a layout that mirrors the
project's reference copy of the data, so a local copy can be used offline by
passing its folder as ``data_home``.  Every file, cached or freshly
downloaded, is checked against a pinned SHA-256 digest.

Sources (raw files at pinned commits):

- label ranking: https://github.com/alfaro96/scikit-lr, commit
  ``1525ae99c97db9f62928143e1cd973fe74ee85a2``,
  ``sklr/datasets/data/label_ranking/`` (MIT);
- Mulan: https://github.com/tsoumakas/mulan, commit
  ``43f6389095ad71984264db4387a8074b22bc7d4a``, ``data/multi-label/``;
- Chu & Ghahramani: https://github.com/bb515/probit, commit
  ``b000c2a2c830db1c9144809e8e3643d783ce0c25``, ``probit/data/``.
"""

from urllib.parse import quote

import numpy as np
from sklearn.utils import Bunch

from ._base import download, get_data_home, verify_checksum
from ._checksums import CHECKSUMS
from ._readers import (
    _read_partition_pair,
    read_arff_multilabel,
    read_label_ranking_csv,
)

__all__ = [
    "fetch_label_ranking",
    "fetch_mulan",
    "fetch_chu_ghahramani",
    "list_label_ranking_datasets",
    "list_mulan_datasets",
    "list_chu_ghahramani_datasets",
]

_LABEL_RANKING_COMMIT = "1525ae99c97db9f62928143e1cd973fe74ee85a2"
_MULAN_COMMIT = "43f6389095ad71984264db4387a8074b22bc7d4a"
_CHU_COMMIT = "b000c2a2c830db1c9144809e8e3643d783ce0c25"

#: Base URL of each cache folder; ``url = BASE_URLS[folder] + relative path``.
#: Tests replace these with ``file://`` URLs.
BASE_URLS = {
    "label_ranking": (
        "https://raw.githubusercontent.com/alfaro96/scikit-lr/"
        f"{_LABEL_RANKING_COMMIT}/sklr/datasets/data/label_ranking/"
    ),
    "multilabel_emotions": (
        "https://raw.githubusercontent.com/tsoumakas/mulan/"
        f"{_MULAN_COMMIT}/data/multi-label/emotions/"
    ),
    "multilabel_scene": (
        "https://raw.githubusercontent.com/tsoumakas/mulan/"
        f"{_MULAN_COMMIT}/data/multi-label/scene/"
    ),
    "multilabel_yeast": (
        "https://raw.githubusercontent.com/tsoumakas/mulan/"
        f"{_MULAN_COMMIT}/data/multi-label/yeast/"
    ),
    "ordinal_chu_ghahramani": (
        "https://raw.githubusercontent.com/bb515/probit/"
        f"{_CHU_COMMIT}/probit/data/"
    ),
}

_MULAN_DATASETS = ("emotions", "scene", "yeast")

# name -> (folder, {n_bins: file prefix}); ordered by data set size.
_CHU_DATASETS = {
    "diabetes": ("Diabetes", {5: "diabetes.data", 10: "diabetes.data.ord"}),
    "pyrimidines": ("pyrimidines", {5: "pyrim", 10: "pyrim"}),
    "triazines": ("triazines", {5: "triazines", 10: "triazines"}),
    "wisconsin": ("wisconsin", {5: "wpbc", 10: "wpbc"}),
    "machinecpu": ("machinecpu", {5: "machine", 10: "machine"}),
    "autompg": ("Auto-Mpg", {5: "auto.data", 10: "auto.data"}),
    "bostonhousing": ("bostonhousing", {5: "housing", 10: "housing"}),
    "stocksdomain": ("stocksdomain", {5: "stock", 10: "stock"}),
    "abalone": ("abalone", {5: "abalone", 10: "abalone"}),
}
_CHU_ALIASES = {
    "auto": "autompg", "automobile": "autompg", "pyrim": "pyrimidines",
    "wpbc": "wisconsin", "machine": "machinecpu", "cpu": "machinecpu",
    "housing": "bostonhousing", "boston": "bostonhousing",
    "stock": "stocksdomain", "stocks": "stocksdomain",
}
_N_PARTITIONS = 20


def _fetch_file(folder, relpath, data_home, download_if_missing):
    """Return the verified local path of ``<data_home>/<folder>/<relpath>``.

    Downloads the file first when it is missing and ``download_if_missing``.
    """
    home = get_data_home(data_home)
    path = home.joinpath(folder, *relpath.split("/"))
    expected = CHECKSUMS[folder][relpath]
    if path.is_file():
        verify_checksum(path, expected)
        return path
    if not download_if_missing:
        raise FileNotFoundError(
            f"Data file {folder}/{relpath} not found in data_home={home} "
            f"(looked for {path}) and download_if_missing=False."
        )
    url = BASE_URLS[folder] + quote(relpath)
    return download(url, path, expected)


def _check_name(name, choices, what):
    if not isinstance(name, str) or name.lower() not in choices:
        raise ValueError(
            f"Unknown {what} {name!r}; available: {sorted(choices)}."
        )
    return name.lower()


# ---------------------------------------------------------------------------
# label ranking
# ---------------------------------------------------------------------------
def list_label_ranking_datasets():
    """Names of the label-ranking benchmarks available to fetch.

    Returns
    -------
    names : list of str
        The 16 semi-synthetic data sets of Cheng, Hühn & Hüllermeier (2009),
        sorted alphabetically (``"authorship"`` ... ``"wisconsin"``).
    """
    return sorted(p[: -len(".csv")] for p in CHECKSUMS["label_ranking"])


def fetch_label_ranking(name, data_home=None, download_if_missing=True, *,
                        return_X_y=True):
    """Load a label-ranking benchmark, downloading it if needed.

    Parameters
    ----------
    name : str
        One of :func:`list_label_ranking_datasets` (e.g. ``"iris"``,
        ``"fried"``).
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.  The file is
        ``<data_home>/label_ranking/<name>.csv``.
    download_if_missing : bool, default=True
        Download the file from the pinned scikit-lr commit when it is not in
        the cache.  If False and the file is missing, raise.
    return_X_y : bool, default=True
        Return ``(X, Y)``; otherwise a :class:`~sklearn.utils.Bunch`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
    Y : ndarray of shape (n_samples, n_labels), dtype int64
        Rank vectors (``Y[i, j]`` = rank of label ``j``, 1 = best).
    bunch : Bunch
        If ``return_X_y=False``: ``data``, ``target``, ``target_names``
        (``"L1"``...), ``filename``, ``DESCR``.

    Raises
    ------
    ValueError
        For an unknown ``name``.
    FileNotFoundError
        If the file is missing and ``download_if_missing=False``.
    ChecksumError
        If the cached or downloaded file fails the SHA-256 check.
    """
    name = _check_name(name, set(list_label_ranking_datasets()),
                       "label-ranking data set")
    path = _fetch_file("label_ranking", f"{name}.csv", data_home,
                       download_if_missing)
    X, Y = read_label_ranking_csv(path)
    if return_X_y:
        return X, Y
    return Bunch(
        data=X, target=Y,
        target_names=[f"L{j + 1}" for j in range(Y.shape[1])],
        filename=str(path),
        DESCR=(f"Label-ranking benchmark {name!r} (Cheng, Huehn & Huellermeier "
               "2009), from scikit-lr. Y[i, j] is the rank of label j (1 = best)."),
    )


# ---------------------------------------------------------------------------
# Mulan multilabel
# ---------------------------------------------------------------------------
def list_mulan_datasets():
    """Names of the Mulan multilabel benchmarks available to fetch.

    Returns
    -------
    names : list of str
        ``["emotions", "scene", "yeast"]``.
    """
    return list(_MULAN_DATASETS)


def fetch_mulan(name, subset="train", data_home=None, download_if_missing=True,
                *, return_X_y=True):
    """Load a Mulan multilabel benchmark split, downloading it if needed.

    Parameters
    ----------
    name : {"emotions", "scene", "yeast"}
        Data set name.
    subset : {"train", "test", "all"}, default="train"
        The official split; ``"all"`` stacks train then test.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.  Files are
        ``<data_home>/multilabel_<name>/<name>-{train,test}.arff`` and
        ``<data_home>/multilabel_<name>/<name>.xml``.
    download_if_missing : bool, default=True
        Download missing files from the pinned Mulan commit.
    return_X_y : bool, default=True
        Return ``(X, Y)``; otherwise a :class:`~sklearn.utils.Bunch`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
    Y : ndarray of shape (n_samples, n_labels), dtype int64
        Binary indicator matrix, columns in the XML label order.
    bunch : Bunch
        If ``return_X_y=False``: ``data``, ``target``, ``feature_names``,
        ``target_names``, ``filenames``, ``DESCR``.

    Raises
    ------
    ValueError
        For an unknown ``name`` or ``subset``.
    FileNotFoundError
        If a file is missing and ``download_if_missing=False``.
    ChecksumError
        If a cached or downloaded file fails the SHA-256 check.
    """
    name = _check_name(name, set(_MULAN_DATASETS), "Mulan data set")
    if subset not in ("train", "test", "all"):
        raise ValueError(
            f"subset must be 'train', 'test' or 'all'; got {subset!r}."
        )
    folder = f"multilabel_{name}"
    xml = _fetch_file(folder, f"{name}.xml", data_home, download_if_missing)
    parts = ("train", "test") if subset == "all" else (subset,)
    Xs, Ys, files = [], [], [str(xml)]
    for part in parts:
        arff = _fetch_file(folder, f"{name}-{part}.arff", data_home,
                           download_if_missing)
        X, Y, feature_names, label_names = read_arff_multilabel(arff, xml)
        Xs.append(X)
        Ys.append(Y)
        files.append(str(arff))
    X, Y = np.vstack(Xs), np.vstack(Ys)
    if return_X_y:
        return X, Y
    return Bunch(
        data=X, target=Y, feature_names=feature_names,
        target_names=label_names, filenames=files,
        DESCR=f"Mulan multilabel data set {name!r}, {subset} split.",
    )


# ---------------------------------------------------------------------------
# Chu & Ghahramani ordinal regression
# ---------------------------------------------------------------------------
def list_chu_ghahramani_datasets():
    """Names of the Chu & Ghahramani (2005) ordinal benchmarks.

    Returns
    -------
    names : list of str
        Ordered by size: ``diabetes``, ``pyrimidines``, ``triazines``,
        ``wisconsin``, ``machinecpu``, ``autompg``, ``bostonhousing``,
        ``stocksdomain``, ``abalone``.
    """
    return list(_CHU_DATASETS)


def _chu_name(name):
    if not isinstance(name, str):
        raise ValueError(f"name must be a string; got {name!r}.")
    key = name.lower().replace("-", "").replace("_", "").replace(" ", "")
    key = _CHU_ALIASES.get(key, key)
    if key not in _CHU_DATASETS:
        raise ValueError(
            f"Unknown Chu & Ghahramani data set {name!r}; available: "
            f"{list_chu_ghahramani_datasets()}."
        )
    return key


def fetch_chu_ghahramani(name, n_bins=10, partition=1, data_home=None,
                         download_if_missing=True):
    """Load one partition of a Chu & Ghahramani ordinal benchmark.

    Parameters
    ----------
    name : str
        One of :func:`list_chu_ghahramani_datasets`; folder names
        (``"Auto-Mpg"``) and file prefixes (``"housing"``, ``"wpbc"``) are
        accepted as aliases, case-insensitively.
    n_bins : {5, 10}, default=10
        Number of ordinal levels.
    partition : int, default=1
        Partition number in ``1..20`` (the protocol reports mean and sd of
        the test error over all 20).
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.  Files are
        ``<data_home>/ordinal_chu_ghahramani/<Folder>/<K>bins/<prefix>_{train,test}_<K>.<i>``.
    download_if_missing : bool, default=True
        Download missing files from the pinned bb515/probit commit.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features), dtype float64
    y_train : ndarray of shape (n_train,), dtype int64
        Labels in ``1..n_bins``.
    X_test : ndarray of shape (n_test, n_features), dtype float64
    y_test : ndarray of shape (n_test,), dtype int64

    Raises
    ------
    ValueError
        For an unknown name, ``n_bins`` not in {5, 10} or ``partition`` not
        in 1..20.
    FileNotFoundError
        If a file is missing and ``download_if_missing=False``.
    ChecksumError
        If a cached or downloaded file fails the SHA-256 check.
    """
    key = _chu_name(name)
    if n_bins not in (5, 10) or isinstance(n_bins, bool):
        raise ValueError(f"n_bins must be 5 or 10; got {n_bins!r}.")
    if (isinstance(partition, bool) or not isinstance(partition, (int, np.integer))
            or not 1 <= partition <= _N_PARTITIONS):
        raise ValueError(
            f"partition must be an integer in 1..{_N_PARTITIONS}; got {partition!r}."
        )
    n_bins, partition = int(n_bins), int(partition)
    folder, prefixes = _CHU_DATASETS[key]
    prefix = prefixes[n_bins]
    paths = [
        _fetch_file(
            "ordinal_chu_ghahramani",
            f"{folder}/{n_bins}bins/{prefix}_{split}_{n_bins}.{partition}",
            data_home, download_if_missing,
        )
        for split in ("train", "test")
    ]
    return _read_partition_pair(paths[0], paths[1], n_bins)
