"""Readers of the CoNLL column formats (CoNLL-2000 chunking, CoNLL-2002
named entities).

The readers accept ``str`` or path-like arguments, or an open text file
object (e.g. :class:`io.StringIO`); files whose name ends in ``.gz`` are
decompressed transparently.
"""

import contextlib
import gzip
import os
import re

__all__ = ["read_conll_columns", "read_conll2002"]


def _decoded_lines(name, fh):
    """The lines of a binary file as UTF-8 text, decoded one line at a time
    so that an undecodable byte is a ValueError naming its line; a UTF-8
    byte-order mark at the start is dropped."""
    for lineno, raw in enumerate(fh, start=1):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{name}:{lineno}: not valid UTF-8 (byte {raw[exc.start]:#04x} at "
                f"column {exc.start + 1}); CoNLL files are UTF-8: re-encode it, e.g. "
                f"iconv -f latin1 -t utf-8.") from None


def _text_file_lines(fh):
    """The lines of a text file object, a leading byte-order mark dropped."""
    for lineno, line in enumerate(fh, start=1):
        yield line[1:] if lineno == 1 and line.startswith("\ufeff") else line


@contextlib.contextmanager
def _text_lines(path_or_file):
    """Yield ``(name, lines)`` for a path (``.gz`` aware) or a text file object:
    an iterator of the text lines (line endings kept), UTF-8 with an
    optional byte-order mark.

    File objects are not closed; paths are opened and closed here.
    """
    if hasattr(path_or_file, "read"):
        name = getattr(path_or_file, "name", None)
        yield (name if isinstance(name, str) else "<file>"), _text_file_lines(path_or_file)
        return
    path = os.fspath(path_or_file)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        yield path, _decoded_lines(path, fh)


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
