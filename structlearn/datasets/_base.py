"""Shared helpers: data home, bundled files, checksums and downloads."""

import gzip
import hashlib
import io
import os
import shutil
import tempfile
from pathlib import Path
from urllib.request import urlopen

__all__ = ["get_data_home", "ChecksumError"]

#: Directory holding the files bundled with the package.
DATA_DIR = Path(__file__).resolve().parent / "data"

_DEFAULT_DATA_HOME = Path("~") / "structlearn_data"
_ENV_DATA_HOME = "STRUCTLEARN_DATA"


class ChecksumError(OSError):
    """Raised when a file's SHA-256 digest differs from the expected one.

    It subclasses :class:`OSError` because a corrupted or truncated cache
    file is an I/O problem of the local storage, not a programming error.
    """


def get_data_home(data_home=None):
    """Return the folder in which downloaded benchmark files are cached.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit folder.  When None, the environment variable
        ``STRUCTLEARN_DATA`` is used if set, else ``~/structlearn_data``.
        The folder is **not** created here (it is created on the first
        download), so that read-only folders such as a shared copy of the
        data can be used.

    Returns
    -------
    data_home : pathlib.Path
        Absolute path of the cache folder (``~`` expanded).

    Notes
    -----
    The cache mirrors the layout of the project's reference data folder,
    one sub-folder per collection::

        <data_home>/label_ranking/iris.csv
        <data_home>/multilabel_emotions/emotions-train.arff
        <data_home>/multilabel_emotions/emotions.xml
        <data_home>/ordinal_chu_ghahramani/Auto-Mpg/10bins/auto.data_train_10.1

    so passing the path of such a copy as ``data_home`` works offline.
    """
    if data_home is None:
        data_home = os.environ.get(_ENV_DATA_HOME) or _DEFAULT_DATA_HOME
    return Path(os.path.expandvars(os.fspath(data_home))).expanduser().resolve()


def sha256_of(path, chunk_size=1 << 20):
    """Hex SHA-256 digest of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_checksum(path, expected):
    """Raise :class:`ChecksumError` if ``path`` does not hash to ``expected``."""
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumError(
            f"SHA-256 mismatch for {path}: expected {expected}, got {actual}. "
            "The file is corrupted, truncated or a different version; delete it "
            "to have it downloaded again."
        )


def download(url, dest, expected_sha256, timeout=60.0):
    """Download ``url`` to ``dest`` atomically, verifying its SHA-256.

    The content is streamed into a temporary file in the destination folder,
    hashed on the fly and moved into place with :func:`os.replace` only if
    the digest matches, so an interrupted or corrupted download never leaves
    a partial file under the final name.

    Parameters
    ----------
    url : str
        Source URL (any scheme :func:`urllib.request.urlopen` supports,
        including ``file://``).
    dest : pathlib.Path
        Final location of the file.
    expected_sha256 : str
        Hex SHA-256 digest the downloaded bytes must have.
    timeout : float, default=60.0
        Socket timeout in seconds.

    Returns
    -------
    dest : pathlib.Path

    Raises
    ------
    ChecksumError
        If the downloaded bytes have a different digest.
    OSError
        If the download fails (``urllib.error.URLError`` is an OSError).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp_name, actual = stream_to_temp(url, dest.parent, f".{dest.name}.", timeout)
    try:
        if actual != expected_sha256:
            raise ChecksumError(
                f"SHA-256 mismatch for the file downloaded from {url}: expected "
                f"{expected_sha256}, got {actual}. Nothing was written to {dest}."
            )
        os.replace(tmp_name, dest)
    except BaseException:
        remove_if_exists(tmp_name)
        raise
    return dest


def stream_to_temp(url, folder, prefix, timeout=60.0):
    """Stream ``url`` into a new temporary file ``folder/<prefix>*.part``.

    Returns ``(path, sha256 hex digest)``; the caller renames or removes
    the file (on an error here it is removed).
    """
    fd, tmp_name = tempfile.mkstemp(prefix=prefix, suffix=".part", dir=folder)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urlopen(url, timeout=timeout) as resp:
            while True:
                block = resp.read(1 << 16)
                if not block:
                    break
                digest.update(block)
                out.write(block)
    except BaseException:
        remove_if_exists(tmp_name)
        raise
    return tmp_name, digest.hexdigest()


def write_atomically(dest, data):
    """Write the bytes ``data`` to ``dest`` through a temporary file in its
    folder and :func:`os.replace`: ``dest`` is never left partial."""
    dest = Path(dest)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dest)
    except BaseException:
        remove_if_exists(tmp)
        raise


def remove_if_exists(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def open_text(path, encoding="utf-8"):
    """Open a text file for reading, transparently decompressing ``.gz``."""
    path = os.fspath(path)
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding=encoding)
    return open(path, encoding=encoding)


def bundled_path(filename):
    """Absolute path of a file bundled in ``structlearn/datasets/data``."""
    path = DATA_DIR / filename
    if not path.is_file():
        raise FileNotFoundError(
            f"Bundled data file {path} is missing; the structlearn installation "
            "is incomplete (package data not installed?)."
        )
    return path


def copy_bundled(filename, dest):
    """Decompress/copy a bundled file to ``dest`` (used by tests and tools)."""
    src = bundled_path(filename)
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rb") as fin, open(dest, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return Path(dest)
