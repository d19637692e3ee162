"""Syntactic-construction labels derived from UD English EWT.

This module builds the bundled multilabel text data set returned by
:func:`structlearn.datasets.load_ewt_constructions`: each sentence of the
Universal Dependencies English Web Treebank (UD v2.16, CC BY-SA 4.0) is
labelled with the syntactic constructions its *gold* basic dependency tree
contains.  The builder is kept in the package so the bundled files can be
regenerated (and checked) from the original CoNLL-U files.
"""

import gzip
import io
import os

import numpy as np

from ._base import open_text
from ._conllu import iter_conllu as _iter_sentences

_MIN_WORDS = 4
_N_SENTENCES = {"train": 1500, "test": 500}
_NEGATORS = frozenset({"not", "never"})


def _passive(toks):
    return any(t[3] in ("aux:pass", "nsubj:pass", "csubj:pass") for t in toks)


def _relative_clause(toks):
    return any(t[3] == "acl:relcl" for t in toks)


def _clausal_complement(toks):
    return any(t[3] in ("ccomp", "xcomp") for t in toks)


def _coordination(toks):
    return any(t[3] == "conj" for t in toks)


def _compound(toks):
    return any(t[3] == "compound" for t in toks)


def _negation(toks):
    return any(t[3] == "advmod" and t[1].lower() in _NEGATORS for t in toks)


def _numeric_modifier(toks):
    return any(t[3] == "nummod" for t in toks)


def _possessive(toks):
    return any(t[3] == "nmod:poss" for t in toks)


#: ``(label name, description, predicate)``; predicates receive the list of
#: syntactic words of a sentence as ``(form, lemma, upos, deprel)`` tuples.
CONSTRUCTIONS = (
    ("passive", "passive voice: a dependent labelled aux:pass, nsubj:pass or "
     "csubj:pass", _passive),
    ("relative_clause", "relative clause: acl:relcl", _relative_clause),
    ("clausal_complement", "clausal complement: ccomp or xcomp",
     _clausal_complement),
    ("coordination", "coordination: conj", _coordination),
    ("compound", "nominal compound: compound (not compound:prt)", _compound),
    ("negation", "negation: an advmod whose lemma is 'not' or 'never'",
     _negation),
    ("numeric_modifier", "numeric modifier: nummod", _numeric_modifier),
    ("possessive", "possessive: nmod:poss", _possessive),
)

LABEL_NAMES = tuple(c[0] for c in CONSTRUCTIONS)


def iter_conllu(path):
    """Yield ``(sent_id, text, words)`` for each sentence of a CoNLL-U file.

    ``words`` lists the syntactic words (integer IDs only; multiword-token
    ranges and empty nodes are skipped) as ``(form, lemma, upos, deprel)``,
    the strings of the file (``"_"`` where a field is missing).  The file is
    parsed (lazily) by :func:`structlearn.datasets.read_conllu`'s parser.
    """
    for sentence in _iter_sentences(path):
        meta = sentence.metadata
        words = [(t["form"], _raw(t["lemma"]), _raw(t["upos"]), _raw(t["deprel"]))
                 for t in sentence.tokens]
        yield meta.get("sent_id"), meta.get("text"), words


def _raw(value):
    """The file's string of a field read as None for ``_``."""
    return "_" if value is None else value


def construction_labels(words):
    """0/1 vector of the constructions present in one sentence."""
    return np.array([int(pred(words)) for _, _, pred in CONSTRUCTIONS],
                    dtype=np.int64)


def build_ewt_constructions(conllu_path, n_sentences, min_words=_MIN_WORDS):
    """Label the first ``n_sentences`` eligible sentences of a CoNLL-U file.

    A sentence is eligible when it has at least ``min_words`` syntactic words
    whose UPOS is not ``PUNCT``.

    Returns
    -------
    sent_ids : list of str
    texts : list of str
        The ``# text =`` lines.
    Y : ndarray of shape (n, len(LABEL_NAMES)), dtype int64
    """
    sent_ids, texts, rows = [], [], []
    for sent_id, text, words in iter_conllu(conllu_path):
        if sum(w[2] != "PUNCT" for w in words) < min_words:
            continue
        if text is None:
            raise ValueError(f"{conllu_path}: sentence {sent_id} has no '# text'.")
        sent_ids.append(sent_id)
        texts.append(text)
        rows.append(construction_labels(words))
        if len(texts) == n_sentences:
            break
    if len(texts) < n_sentences:
        raise ValueError(
            f"{conllu_path}: only {len(texts)} eligible sentences, "
            f"{n_sentences} requested."
        )
    return sent_ids, texts, np.vstack(rows)


def write_constructions_tsv(path, sent_ids, texts, Y):
    """Write the data set as a reproducible gzipped TSV (mtime 0)."""
    buf = io.StringIO()
    buf.write("\t".join(("sent_id", "text") + LABEL_NAMES) + "\n")
    for sid, text, row in zip(sent_ids, texts, Y):
        for field in (sid, text):
            if "\t" in field or "\n" in field:
                raise ValueError(f"Tab or newline in field {field!r}.")
        buf.write("\t".join([sid, text] + [str(int(v)) for v in row]) + "\n")
    with open(path, "wb") as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9
    ) as gz:
        gz.write(buf.getvalue().encode("utf-8"))


def read_constructions_tsv(path):
    """Read a file written by :func:`write_constructions_tsv`.

    Returns
    -------
    sent_ids : list of str
    texts : list of str
    Y : ndarray of shape (n, n_labels), dtype int64
    label_names : list of str
    """
    path = os.fspath(path)
    with open_text(path) as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if header[:2] != ["sent_id", "text"]:
            raise ValueError(f"{path}: unexpected header {header[:2]}.")
        label_names = header[2:]
        sent_ids, texts, rows = [], [], []
        for lineno, line in enumerate(fh, start=2):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(header):
                raise ValueError(
                    f"{path}:{lineno}: {len(fields)} fields, expected {len(header)}."
                )
            sent_ids.append(fields[0])
            texts.append(fields[1])
            rows.append([int(v) for v in fields[2:]])
    Y = np.array(rows, dtype=np.int64).reshape(len(rows), len(label_names))
    return sent_ids, texts, Y, label_names
