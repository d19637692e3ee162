"""Reader and writer of CoNLL-U files (Universal Dependencies format).

:func:`read_conllu` (and :func:`iter_conllu`, which yields the same
sentences one at a time) is the one CoNLL-U parser of the package; both
accept ``str`` or path-like arguments or an open text file object (e.g.
:class:`io.StringIO`); files whose name ends in ``.gz`` are decompressed
transparently.  :func:`write_conllu` writes the sentences back byte for byte.
"""

import gzip
import os
import re
from collections.abc import Mapping

import numpy as np

from ._conll import _text_lines

__all__ = ["read_conllu", "write_conllu", "ConlluSentence", "with_predictions",
           "conllu_targets"]


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
        fields, a field is empty (a missing value is ``_``) or holds a NUL
        byte, an ID is not an integer, a range ``n-m`` or a decimal
        ``n.k``, the integer IDs of a sentence are not ``1..n`` in order,
        a HEAD is not an integer in ``0..n`` (or ``_``), the heads of a
        sentence (when all given) are not a tree -- exactly one root, no
        self-loop, no cycle --, FEATS is not a list of ``Name=Value`` pairs,
        a comment line follows a token line, or a line of a file is not
        UTF-8 (a leading byte-order mark is allowed).

    Examples
    --------
    >>> import io
    >>> s = read_conllu(io.StringIO(
    ...     "# text = Hi!\\n1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t0:root\\t"
    ...     "SpaceAfter=No\\n2\\t!\\t!\\tPUNCT\\t.\\t_\\t1\\tpunct\\t1:punct\\t_\\n\\n"))
    >>> s[0].forms, s[0].heads, s[0].tokens[0]["misc"]
    (['Hi', '!'], [0, 1], {'SpaceAfter': 'No'})
    """
    return list(iter_conllu(path_or_file))


class _SentenceBlock:
    """The lines of the sentence being read, checked as they come.

    :meth:`add` takes a non-blank line (comment or word line) and
    :meth:`finish` closes the block at a blank line or the end of the file,
    checking what needs the whole sentence (HEAD range, multiword-token
    ends).  Error messages name the file and the line.
    """

    __slots__ = ("comments", "tokens", "token_lines", "mwt", "empty",
                 "first_line", "last_empty")

    def __init__(self):
        self.comments = []
        self.tokens = []
        self.token_lines = []
        self.mwt = []           # (fields, line number)
        self.empty = []
        self.first_line = None
        self.last_empty = (None, 0)

    def add(self, line, where):
        """Add one non-blank line (``where`` = ``"<name>:<line number>"``)."""
        if line.startswith("#"):
            if self.tokens or self.mwt or self.empty:
                raise ValueError(
                    f"{where}: comment line after the word lines of a "
                    "sentence (comments must precede the words; is a blank "
                    "line missing?)."
                )
            self.comments.append(line)
            return
        cols = line.split("\t")
        if len(cols) != 10:
            raise ValueError(
                f"{where}: expected 10 tab-separated fields, got "
                f"{len(cols)}: {line[:80]!r}."
            )
        if "\x00" in line:
            field = next(f for f, c in zip(CONLLU_FIELDS, cols) if "\x00" in c)
            raise ValueError(f"{where}: NUL byte in {field.upper()}: {line[:80]!r}.")
        for field, c in zip(CONLLU_FIELDS, cols):
            if not c.strip() or c != c.strip():
                raise ValueError(
                    f"{where}: {field.upper()} is empty or has leading or trailing "
                    f"spaces ({c!r}); a missing value is written '_'.")
        ident = cols[0]
        n = len(self.tokens)
        fields = _parse_conllu_fields(cols, where)
        if _INT_ID.match(ident):
            if int(ident) != n + 1:
                raise ValueError(
                    f"{where}: word ID {ident} out of order; expected "
                    f"{n + 1} (IDs must be 1..n in order)."
                )
            fields["id"] = n + 1
            self.tokens.append(fields)
            self.token_lines.append(where)
            return
        m = _RANGE_ID.match(ident)
        if m:
            start, end = int(m.group(1)), int(m.group(2))
            if start != n + 1 or end <= start:
                raise ValueError(
                    f"{where}: multiword token range {ident} must start at "
                    f"the next word ID {n + 1} and end after it."
                )
            self.mwt.append((fields, where))
            return
        m = _EMPTY_ID.match(ident)
        if m:
            major, minor = int(m.group(1)), int(m.group(2))
            last_major, last_minor = self.last_empty
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
            self.last_empty = (major, minor)
            self.empty.append(fields)
            return
        raise ValueError(
            f"{where}: ID must be an integer, a range 'n-m' or a decimal "
            f"'n.k'; got {ident!r}."
        )

    def finish(self, name):
        """The block as a :class:`ConlluSentence` (None for no lines)."""
        tokens = self.tokens
        if not tokens:
            if self.comments or self.mwt or self.empty:
                first = "?" if self.first_line is None else self.first_line
                raise ValueError(
                    f"{name}:{first}: sentence without any word line (integer ID)."
                )
            return None
        n = len(tokens)
        for tok, where in zip(tokens, self.token_lines):
            if tok["head"] is not None and tok["head"] > n:
                raise ValueError(
                    f"{where}: HEAD {tok['head']} is outside 0..{n} "
                    f"(the sentence has {n} words)."
                )
        if all(tok["head"] is not None for tok in tokens):
            _check_tree([tok["head"] for tok in tokens], self.token_lines)
        for mwt, where in self.mwt:
            end = int(mwt["id"].split("-")[1])
            if end > n:
                raise ValueError(
                    f"{where}: multiword token {mwt['id']} extends past "
                    f"the last word {n}."
                )
        return ConlluSentence(tokens, self.comments, [m for m, _ in self.mwt],
                              self.empty)


def _check_tree(heads, lines):
    """The basic dependency tree of a sentence (HEAD of words ``1..n``, all
    given): exactly one root (HEAD 0), no word its own head, no cycle; an
    error names the line of the offending word."""
    roots = [i for i, h in enumerate(heads) if h == 0]
    if len(roots) != 1:
        where = lines[roots[1]] if roots else lines[0]
        raise ValueError(
            f"{where}: the sentence has {len(roots)} words with HEAD 0 "
            f"({'words ' + ', '.join(str(r + 1) for r in roots) if roots else 'none'});"
            f" a dependency tree has exactly one root.")
    for i, h in enumerate(heads):
        if h == i + 1:
            raise ValueError(f"{lines[i]}: word {i + 1} is its own head (HEAD {h}).")
    state = [0] * len(heads)        # 0 unvisited, 1 on the current path, 2 reaches the root
    for i in range(len(heads)):
        path = []
        j = i
        while j >= 0 and state[j] == 0:
            state[j] = 1
            path.append(j)
            j = heads[j] - 1
        if j >= 0 and state[j] == 1:
            cycle = path[path.index(j):]
            raise ValueError(
                f"{lines[j]}: the heads of words "
                f"{' -> '.join(str(k + 1) for k in cycle + [j])} form a cycle "
                f"(not a tree).")
        for k in path:
            state[k] = 2


def iter_conllu(path_or_file):
    """Yield the sentences of a CoNLL-U file one at a time.

    The CoNLL-U parser of the package: :func:`read_conllu` returns the list
    of what it yields, and readers that need only the first sentences of a
    large treebank stop early.  Same input, output and errors as
    :func:`read_conllu`; an error is raised when the parse reaches it (the
    HEAD range and the multiword-token ends of a sentence are checked at
    its end), after the sentences before it have been yielded.
    """
    block = _SentenceBlock()
    with _text_lines(path_or_file) as (name, fh):
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                if line:
                    raise ValueError(
                        f"{name}:{lineno}: blank line containing whitespace."
                    )
                sentence = block.finish(name)
                if sentence is not None:
                    yield sentence
                block = _SentenceBlock()
                continue
            if block.first_line is None:
                block.first_line = lineno
            block.add(line, f"{name}:{lineno}")
    sentence = block.finish(name)
    if sentence is not None:
        yield sentence


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


def _copy_line(fields):
    """A copy of one word line's dict (its FEATS and MISC dicts copied too)."""
    out = dict(fields)
    for key in ("feats", "misc"):
        if isinstance(out.get(key), Mapping):
            out[key] = dict(out[key])
    return out


def _prediction_parts(pred, i, n):
    """Heads (list of int) and DEPRELs (list of str, or None) of one prediction."""
    labelled = (isinstance(pred, (tuple, list)) and len(pred) == 2
                and all(hasattr(p, "__len__") and not isinstance(p, (str, bytes, Mapping))
                        for p in pred))
    heads, deprels = (pred if labelled else (pred, None))
    if isinstance(heads, (str, bytes, Mapping)) or not hasattr(heads, "__len__"):
        raise ValueError(f"predictions[{i}] must be a head array or a (heads, deprels) "
                         f"pair; got {type(pred).__name__}.")
    if len(heads) != n:
        raise ValueError(f"predictions[{i}] has {len(heads)} heads but sentence {i} has "
                         f"{n} words.")
    out = []
    for t, h in enumerate(heads):
        if isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)) \
                or not 0 <= h <= n:
            raise ValueError(f"predictions[{i}], word {t + 1}: head must be an integer "
                             f"in 0..{n}; got {h!r}.")
        out.append(int(h))
    if deprels is None:
        return out, None
    if len(deprels) != n:
        raise ValueError(f"predictions[{i}] has {len(deprels)} deprels but sentence {i} "
                         f"has {n} words.")
    for t, d in enumerate(deprels):
        if not isinstance(d, str) or not d or d != d.strip() or "\t" in d \
                or "\n" in d:
            raise ValueError(f"predictions[{i}], word {t + 1}: deprel must be a "
                             f"non-empty string without whitespace at its ends, tabs or "
                             f"newlines; got {d!r}.")
    return out, [str(d) for d in deprels]


def with_predictions(sentences, predictions):
    """Copies of CoNLL-U sentences carrying predicted trees.

    Every word's HEAD is replaced by the predicted one and its DEPREL by
    the predicted relation, or cleared to ``_`` when the predictions are
    unlabelled (so that a gold relation is never written beside a
    predicted head).  DEPS, the enhanced graph, is cleared to ``_`` on
    every word and empty nodes (which only exist in the enhanced graph)
    are dropped, so that an enhanced (ELAS) evaluation of the output never
    scores the gold graph.  Everything else -- comments, FORM to XPOS,
    FEATS, MISC, multiword-token lines -- is copied.  The input sentences
    are not modified.

    Parameters
    ----------
    sentences : list of ConlluSentence
        The parsed sentences (e.g. from :func:`read_conllu`).
    predictions : list
        One per sentence: a head array (1-based, 0 = root), or a ``(heads,
        deprels)`` pair, as :meth:`structlearn.DependencyParser.predict`
        returns them.

    Returns
    -------
    list of ConlluSentence
        New sentences, ready for :func:`write_conllu`.

    Raises
    ------
    ValueError
        If the lists differ in length, or a prediction's length, a head
        (not an integer in ``0..n``) or a relation (not a non-empty
        one-line string) does not fit its sentence, naming the sentence
        and word.

    Examples
    --------
    >>> import io
    >>> gold = read_conllu(io.StringIO(
    ...     "1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t0:root\\t_\\n"
    ...     "2\\t!\\t!\\tPUNCT\\t.\\t_\\t1\\tpunct\\t1:punct\\t_\\n\\n"))
    >>> out = with_predictions(gold, [([2, 0], ["discourse", "root"])])
    >>> out[0].heads, out[0].deprels, [t["deps"] for t in out[0].tokens]
    ([2, 0], ['discourse', 'root'], [None, None])
    >>> with_predictions(gold, [[0, 1]])[0].deprels
    [None, None]
    """
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, "__len__"):
        raise ValueError(f"sentences must be a list of ConlluSentence; got "
                         f"{type(sentences).__name__}.")
    if isinstance(predictions, (str, bytes)) or not hasattr(predictions, "__len__"):
        raise ValueError(f"predictions must be a list (one per sentence); got "
                         f"{type(predictions).__name__}.")
    if len(sentences) != len(predictions):
        raise ValueError(f"{len(sentences)} sentences but {len(predictions)} "
                         "predictions.")
    out = []
    for i, (sent, pred) in enumerate(zip(sentences, predictions)):
        if not isinstance(sent, ConlluSentence):
            raise ValueError(f"sentences[{i}] must be a ConlluSentence; got "
                             f"{type(sent).__name__}.")
        heads, deprels = _prediction_parts(pred, i, len(sent.tokens))
        tokens = []
        for t, tok in enumerate(sent.tokens):
            new = _copy_line(tok)
            new["head"] = heads[t]
            new["deprel"] = None if deprels is None else deprels[t]
            new["deps"] = None
            tokens.append(new)
        out.append(ConlluSentence(tokens, list(sent.comments),
                                  [_copy_line(m) for m in sent.multiword_tokens], []))
    return out


def conllu_targets(sentences, labelled=True):
    """Parser targets of CoNLL-U sentences: ``(heads, deprels)`` pairs or heads.

    Parameters
    ----------
    sentences : list of ConlluSentence
    labelled : bool, default=True
        True: one ``(heads, deprels)`` pair per sentence (a labelled
        :class:`structlearn.DependencyParser`); False: head lists.

    Returns
    -------
    list
        ``y`` for :meth:`structlearn.DependencyParser.fit`.

    Raises
    ------
    ValueError
        If a word has no HEAD (or, when labelled, no DEPREL), naming the
        sentence and word.

    Examples
    --------
    >>> import io
    >>> s = read_conllu(io.StringIO(
    ...     "1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t_\\t_\\n"
    ...     "2\\t!\\t!\\tPUNCT\\t.\\t_\\t1\\tpunct\\t_\\t_\\n\\n"))
    >>> conllu_targets(s), conllu_targets(s, labelled=False)
    ([([0, 1], ['root', 'punct'])], [[0, 1]])
    """
    if not isinstance(labelled, (bool, np.bool_)):
        raise ValueError(f"labelled must be a bool; got {labelled!r}.")
    out = []
    for i, sent in enumerate(sentences):
        if not isinstance(sent, ConlluSentence):
            raise ValueError(f"sentences[{i}] must be a ConlluSentence; got "
                             f"{type(sent).__name__}.")
        heads, deprels = sent.heads, sent.deprels
        for t, (h, d) in enumerate(zip(heads, deprels)):
            if h is None or (labelled and d is None):
                what = "HEAD" if h is None else "DEPREL"
                sid = f" ({sent.sent_id})" if sent.sent_id else ""
                raise ValueError(f"sentence {i}{sid}, word {t + 1}: no {what} ('_').")
        out.append((heads, deprels) if labelled else heads)
    return out
