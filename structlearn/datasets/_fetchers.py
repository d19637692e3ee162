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
  ``b000c2a2c830db1c9144809e8e3643d783ce0c25``, ``probit/data/``;
- CoNLL-2000 chunking: https://github.com/nltk/nltk_data, commit
  ``5db857e6f7df11eabb5e5665836db9ec8df07e28``,
  ``packages/corpora/conll2000.zip`` (members ``conll2000/{train,test}.txt``
  are extracted and checked);
- CoNLL-2002 named entities: the same nltk_data commit,
  ``packages/corpora/conll2002.zip`` (members ``conll2002/{esp,ned}.{train,
  testa,testb}`` and ``conll2002/README`` are extracted and checked);
  research use only, never redistributed with this package;
- UD English EWT: https://github.com/UniversalDependencies/UD_English-EWT,
  commit ``15d613d8447b3478787d4c278730a1e48a945efb`` (UD v2.16), CC BY-SA 4.0.
"""

import hashlib
import zipfile
from urllib.parse import quote

import numpy as np
from sklearn.utils import Bunch

from . import _base
from ._base import ChecksumError, download, get_data_home, verify_checksum
from ._checksums import CHECKSUMS
from ._conll import read_conll2002, read_conll_columns
from ._conllu import read_conllu
from ._label_ranking import read_label_ranking_csv
from ._multilabel import read_arff_multilabel
from ._ordinal import _read_partition_pair

__all__ = [
    "fetch_label_ranking",
    "fetch_mulan",
    "fetch_chu_ghahramani",
    "list_label_ranking_datasets",
    "list_mulan_datasets",
    "list_chu_ghahramani_datasets",
    "fetch_conll2000",
    "fetch_conll2002",
    "fetch_ud_treebank",
]

_LABEL_RANKING_COMMIT = "1525ae99c97db9f62928143e1cd973fe74ee85a2"
_MULAN_COMMIT = "43f6389095ad71984264db4387a8074b22bc7d4a"
_CHU_COMMIT = "b000c2a2c830db1c9144809e8e3643d783ce0c25"
_NLTK_DATA_COMMIT = "5db857e6f7df11eabb5e5665836db9ec8df07e28"
_UD_EWT_COMMIT = "15d613d8447b3478787d4c278730a1e48a945efb"

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
    "ud_english_ewt": (
        "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/"
        f"{_UD_EWT_COMMIT}/"
    ),
}

#: Cache folders whose files come out of a zip archive:
#: ``folder -> (archive URL, member name prefix)``; member
#: ``prefix + relative path`` is extracted to ``<data_home>/<folder>/``.
#: Tests replace the URL with a ``file://`` URL.
ARCHIVE_URLS = {
    "conll2000_chunking": (
        "https://raw.githubusercontent.com/nltk/nltk_data/"
        f"{_NLTK_DATA_COMMIT}/packages/corpora/conll2000.zip",
        "conll2000/",
    ),
    "conll2002_ner": (
        "https://raw.githubusercontent.com/nltk/nltk_data/"
        f"{_NLTK_DATA_COMMIT}/packages/corpora/conll2002.zip",
        "conll2002/",
    ),
}

# treebank code -> (cache folder, file name pattern)
_UD_TREEBANKS = {
    "en_ewt": ("ud_english_ewt", "en_ewt-ud-{subset}.conllu"),
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
    if folder in ARCHIVE_URLS:
        _download_archive(folder, home)
        return path
    url = BASE_URLS[folder] + quote(relpath)
    return download(url, path, expected)


def _download_archive(folder, home, timeout=60.0):
    """Download the zip archive of ``folder`` and extract its checked files.

    Every member listed in ``CHECKSUMS[folder]`` that is not yet in the cache
    is extracted, verified against its SHA-256 and moved into place
    atomically; on a mismatch nothing is written.
    """
    url, prefix = ARCHIVE_URLS[folder]
    dest_dir = home / folder
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp_zip, _ = _base.stream_to_temp(url, dest_dir, ".archive.", timeout)
    try:
        try:
            archive = zipfile.ZipFile(tmp_zip)
        except zipfile.BadZipFile as exc:
            raise ChecksumError(
                f"The file downloaded from {url} is not a valid zip archive "
                f"({exc}). Nothing was written to {dest_dir}."
            ) from None
        with archive:
            members = set(archive.namelist())
            payloads = {}
            for relpath, expected in CHECKSUMS[folder].items():
                dest = dest_dir.joinpath(*relpath.split("/"))
                if dest.is_file():
                    continue
                member = prefix + relpath
                if member not in members:
                    raise ChecksumError(
                        f"The archive downloaded from {url} has no member "
                        f"{member!r}; it is not the expected version. Nothing "
                        f"was written to {dest_dir}."
                    )
                data = archive.read(member)
                actual = hashlib.sha256(data).hexdigest()
                if actual != expected:
                    raise ChecksumError(
                        f"SHA-256 mismatch for {member} extracted from the file "
                        f"downloaded from {url}: expected {expected}, got "
                        f"{actual}. Nothing was written to {dest_dir}."
                    )
                payloads[dest] = data
        for dest, data in payloads.items():
            _base.write_atomically(dest, data)
    finally:
        _base.remove_if_exists(tmp_zip)


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


# ---------------------------------------------------------------------------
# CoNLL-2000 chunking
# ---------------------------------------------------------------------------
_CONLL2000_DESCR = """CoNLL-2000 shared task: text chunking (Tjong Kim Sang & Buchholz, 2000).

Wall Street Journal text (Penn Treebank sections 15-18 = train, 8,936
sentences; section 20 = test, 2,012 sentences) with Brill-tagger POS tags and
IOB2 chunk tags (B-NP, I-NP, B-VP, ..., O) derived from the treebank.
Standard metric: chunk span F1 on the test set (conlleval), see
structlearn.metrics.chunk_f1.  Distributed with the NLTK data; no license is
stated (WSJ-derived, customarily used for research).

E. F. Tjong Kim Sang and S. Buchholz. Introduction to the CoNLL-2000 shared
task: Chunking. CoNLL 2000.
"""


def fetch_conll2000(subset="train", data_home=None, download_if_missing=True):
    """Load the CoNLL-2000 chunking data, downloading it if needed.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        The standard split: ``train`` (WSJ sections 15-18, 8,936 sentences,
        211,727 tokens) or ``test`` (section 20, 2,012 sentences, 47,377
        tokens).
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.  The file is
        ``<data_home>/conll2000_chunking/<subset>.txt``.
    download_if_missing : bool, default=True
        Download ``conll2000.zip`` from the pinned nltk_data commit and
        extract ``train.txt`` and ``test.txt`` when the file is not in the
        cache.  If False and the file is missing, raise.

    Returns
    -------
    data : Bunch
        With the attributes

        - ``words`` : list of list of str -- the tokens of each sentence;
        - ``pos`` : list of list of str -- their POS tags (Penn Treebank
          tag set, assigned by the Brill tagger);
        - ``chunks`` : list of list of str -- their IOB2 chunk tags
          (``"B-NP"``, ``"I-NP"``, ``"O"``, ...), the target;
        - ``filename`` : str, ``DESCR`` : str.

        The three lists are aligned: ``len(words[i]) == len(pos[i]) ==
        len(chunks[i])``.

    Raises
    ------
    ValueError
        For an unknown ``subset`` or a malformed file.
    FileNotFoundError
        If the file is missing and ``download_if_missing=False``.
    ChecksumError
        If the cached or extracted file fails the SHA-256 check.

    Notes
    -----
    Evaluate with :func:`structlearn.metrics.chunk_f1` (the ``conlleval``
    definition of a chunk).
    """
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test'; got {subset!r}.")
    path = _fetch_file("conll2000_chunking", f"{subset}.txt", data_home,
                       download_if_missing)
    sentences = read_conll_columns(path, columns=None)
    if sentences and len(sentences[0][0]) != 3:
        raise ValueError(
            f"{path}: expected 3 columns (word, POS, chunk tag); got "
            f"{len(sentences[0][0])}."
        )
    words = [[t[0] for t in s] for s in sentences]
    pos = [[t[1] for t in s] for s in sentences]
    chunks = [[t[2] for t in s] for s in sentences]
    return Bunch(words=words, pos=pos, chunks=chunks, filename=str(path),
                 DESCR=_CONLL2000_DESCR)


# ---------------------------------------------------------------------------
# CoNLL-2002 named entities
# ---------------------------------------------------------------------------
_CONLL2002_LANGUAGES = {"esp": "Spanish", "ned": "Dutch"}

_CONLL2002_DESCR = """CoNLL-2002 shared task: language-independent named entity recognition
(Tjong Kim Sang, 2002), {language} part, {subset} split.

Spanish: EFE news agency articles (May 2000); train 8,323 / testa 1,915 /
testb 1,517 sentences.  Dutch: articles of the Belgian newspaper De Morgen
(2000), sentences shuffled within each article; train 15,806 / testa 2,895 /
testb 5,195 sentences.  Every token has a part-of-speech tag (Spanish: the
tags of X. Carreras; Dutch: the MBT tagger's, not checked) and an IOB2
named-entity tag over PER, LOC, ORG and MISC.  Protocol: train on train,
tune on testa, report entity-level F1 (conlleval) on testb, see
structlearn.metrics.chunk_f1.

LICENCE: research use only.  The distribution's README says: "Files in these
directories may only be used for research applications in the context of
the CoNLL-2002 shared task.  No permission is given for usage other
applications especially not for commercial applications."  The data are not
part of structlearn; they are downloaded from the NLTK data repository into
your data home.

E. F. Tjong Kim Sang. Introduction to the CoNLL-2002 shared task:
Language-independent named entity recognition. CoNLL 2002.
"""


def fetch_conll2002(language="esp", subset="train", data_home=None,
                    download_if_missing=True):
    """Load the CoNLL-2002 named-entity data, downloading it if needed.

    .. warning::

       **Research use only.**  The CoNLL-2002 data may only be used for
       research; commercial use is not permitted (the README of the
       distribution: "Files in these directories may only be used for
       research applications in the context of the CoNLL-2002 shared task.
       No permission is given for usage other applications especially not
       for commercial applications.").  For this reason the data are
       **not** shipped with structlearn: this function downloads them (from
       the NLTK data repository) into your data home, and you are
       responsible for complying with the licence.

    Parameters
    ----------
    language : {"esp", "ned"}, default="esp"
        ``"esp"``: Spanish (EFE news, 2000); ``"ned"``: Dutch (De Morgen,
        2000).
    subset : {"train", "testa", "testb"}, default="train"
        The standard split: ``train``, ``testa`` (development data, for
        tuning) and ``testb`` (the test data).  Sentences:
        Spanish 8,323 / 1,915 / 1,517, Dutch 15,806 / 2,895 / 5,195.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.  The file is
        ``<data_home>/conll2002_ner/<language>.<subset>``, so a folder that
        already holds a copy of the files in a ``conll2002_ner``
        sub-folder can be used offline.
    download_if_missing : bool, default=True
        Download ``conll2002.zip`` from the pinned nltk_data commit and
        extract the six data files and the README when the file is not in
        the cache.  If False and the file is missing, raise.

    Returns
    -------
    data : Bunch
        With the attributes

        - ``words`` : list of list of str -- the tokens of each sentence;
        - ``pos`` : list of list of str -- their part-of-speech tags (both
          languages have them; Dutch: MBT tagger, unchecked);
        - ``tags`` : list of list of str -- their IOB2 named-entity tags
          (``"B-PER"``, ``"I-PER"``, ``"B-LOC"``, ..., ``"O"``), the target;
        - ``language``, ``subset``, ``filename`` : str, ``DESCR`` : str.

        The three lists are aligned: ``len(words[i]) == len(pos[i]) ==
        len(tags[i])``.

    Raises
    ------
    ValueError
        For an unknown ``language`` or ``subset``, or a malformed file (the
        message names the file and the line).
    FileNotFoundError
        If the file is missing and ``download_if_missing=False``.
    ChecksumError
        If the cached or extracted file fails the SHA-256 check.

    Notes
    -----
    The Dutch files mark the start of each article by a line
    ``-DOCSTART- -DOCSTART- O``.  It is not a token: it is dropped, and
    treated as a sentence boundary (see :func:`read_conll2002`), so the
    returned sentences and token counts exclude it (Dutch train: 202,644
    tokens without the 287 such lines).

    The fetched files are the NLTK copy, re-encoded as UTF-8 (the original
    distribution is ISO-8859-1; only the bytes differ, not the tokens).

    Evaluate with :func:`structlearn.metrics.chunk_f1` (entity-level F1,
    the ``conlleval`` definition).  Cite E. F. Tjong Kim Sang,
    "Introduction to the CoNLL-2002 Shared Task: Language-Independent Named
    Entity Recognition", CoNLL 2002.
    """
    language = _check_name(language, set(_CONLL2002_LANGUAGES), "CoNLL-2002 language")
    if subset not in ("train", "testa", "testb"):
        raise ValueError(
            f"subset must be 'train', 'testa' or 'testb'; got {subset!r}."
        )
    path = _fetch_file("conll2002_ner", f"{language}.{subset}", data_home,
                       download_if_missing)
    words, pos, tags = read_conll2002(path, encoding="utf-8")
    return Bunch(words=words, pos=pos, tags=tags, language=language, subset=subset,
                 filename=str(path),
                 DESCR=_CONLL2002_DESCR.format(
                     language=_CONLL2002_LANGUAGES[language], subset=subset))


# ---------------------------------------------------------------------------
# Universal Dependencies
# ---------------------------------------------------------------------------
def fetch_ud_treebank(treebank="en_ewt", subset="train", data_home=None,
                      download_if_missing=True):
    """Load a Universal Dependencies treebank split, downloading it if needed.

    Parameters
    ----------
    treebank : {"en_ewt"}, default="en_ewt"
        Treebank code.  ``"en_ewt"``: English Web Treebank, UD v2.16
        (train 12,544 / dev 2,001 / test 2,077 sentences), CC BY-SA 4.0.
    subset : {"train", "dev", "test"}, default="train"
        The standard split.
    data_home : str or path-like, default=None
        Cache folder; see :func:`get_data_home`.  The file is
        ``<data_home>/ud_english_ewt/en_ewt-ud-<subset>.conllu``.
    download_if_missing : bool, default=True
        Download the file from the pinned UD_English-EWT commit when it is
        not in the cache.

    Returns
    -------
    sentences : list of ConlluSentence
        As returned by :func:`read_conllu`: ``sentence.tokens`` lists the
        syntactic words (dicts with ``form``, ``upos``, ``head`` (1-based,
        0 = root), ``deprel``, ...), ``sentence.comments`` the comment lines.

    Raises
    ------
    ValueError
        For an unknown ``treebank`` or ``subset``.
    FileNotFoundError
        If the file is missing and ``download_if_missing=False``.
    ChecksumError
        If the cached or downloaded file fails the SHA-256 check.

    Notes
    -----
    Standard protocol: train on train, tune on dev, report the unlabeled
    attachment score (:func:`structlearn.metrics.uas`, punctuation
    included) on test.  Cite N. Silveira et al., "A Gold Standard Dependency
    Corpus for English", LREC 2014.
    """
    key = _check_name(treebank, set(_UD_TREEBANKS), "UD treebank")
    if subset not in ("train", "dev", "test"):
        raise ValueError(
            f"subset must be 'train', 'dev' or 'test'; got {subset!r}."
        )
    folder, pattern = _UD_TREEBANKS[key]
    path = _fetch_file(folder, pattern.format(subset=subset), data_home,
                       download_if_missing)
    return read_conllu(path)
