"""Tagging constraints and partial labels of :class:`~structlearn.SequenceTagger`.

Two kinds of restriction of the tag sequences a chain may output:

* **transition constraints** -- which tag may follow which, and which may
  start or end a sequence -- given as a scheme name, from which the rules
  are derived from the tag names, or as a boolean matrix;
* **partial labels** -- per token, a known tag, ``None`` (any tag) or a set
  of tags (one of them) -- for training targets and for forced decoding.

Both become codes the :class:`~structlearn.structures.Chain` structure turns
into score offsets (:func:`structlearn.kernels.chain.chain_offsets`).
"""

import numbers

import numpy as np

#: The chunk schemes ``constraints=`` derives transition rules for, with the
#: prefixes of their tags (``'O'`` is outside every chunk).
SCHEMES = {
    "BIO": ("B", "I"),
    "IOB2": ("B", "I"),
    "IOB1": ("B", "I"),
    "BIOES": ("B", "I", "E", "S"),
    "BILOU": ("B", "I", "L", "U"),
}


def _split(tag, scheme):
    """``(prefix, type)`` of a tag under a scheme (``('O', None)`` for O)."""
    if tag == "O":
        return "O", None
    if isinstance(tag, str):
        prefix, sep, ctype = tag.partition("-")
        if sep and prefix in SCHEMES[scheme]:
            if scheme == "BILOU":  # the same rules as BIOES
                prefix = {"L": "E", "U": "S"}.get(prefix, prefix)
            return prefix, ctype
    raise ValueError(
        f"tag {tag!r} does not follow the {scheme} scheme (constraints={scheme!r}): "
        f"tags must be 'O' or '<prefix>-<type>' with a prefix in "
        f"{list(SCHEMES[scheme])}.")


def _scheme_rules(scheme):
    """``(follows(prev, next), can_start(tag), can_end(tag))`` on parsed tags."""
    if scheme in ("BIO", "IOB2"):
        def follows(p, q):
            return q[0] != "I" or (p[0] in ("B", "I") and p[1] == q[1])
        return follows, lambda q: q[0] != "I", lambda q: True
    if scheme == "IOB1":
        # B-X only separates two adjacent chunks of type X
        def follows(p, q):
            return q[0] != "B" or (p[0] in ("B", "I") and p[1] == q[1])
        return follows, lambda q: q[0] != "B", lambda q: True

    def follows(p, q):  # BIOES / BILOU
        inside = p[0] in ("B", "I")
        if inside:
            return q[0] in ("I", "E") and p[1] == q[1]
        return q[0] in ("O", "B", "S")
    return follows, lambda q: q[0] in ("O", "B", "S"), lambda q: q[0] in ("O", "E", "S")


def allowed_transitions(constraints, classes):
    """The allowed ``(transitions (K, K), start (K,), end (K,))`` boolean
    arrays of ``constraints`` over the tags ``classes``, or None for
    ``constraints=None``.

    ``constraints`` is a scheme name of :data:`SCHEMES` (case-insensitive;
    every tag must be ``'O'`` or ``'<prefix>-<type>'``) or a boolean
    array-like of shape (K, K) over ``classes`` in their order (row: the
    previous tag, column: the next), which leaves start and end free.
    """
    if constraints is None:
        return None
    K = len(classes)
    if isinstance(constraints, str):
        scheme = constraints.upper()
        if scheme not in SCHEMES:
            raise ValueError(f"constraints must be None, a scheme name among "
                             f"{sorted(SCHEMES)} or a boolean (n_tags, n_tags) matrix, "
                             f"got {constraints!r}.")
        parsed = [_split(c, scheme) for c in classes]
        follows, can_start, can_end = _scheme_rules(scheme)
        trans = np.array([[follows(p, q) for q in parsed] for p in parsed],
                         dtype=bool).reshape(K, K)
        start = np.array([can_start(q) for q in parsed], dtype=bool)
        end = np.array([can_end(q) for q in parsed], dtype=bool)
        return trans, start, end
    if isinstance(constraints, (bytes, numbers.Number)) or not hasattr(constraints, "__len__"):
        raise ValueError(f"constraints must be None, a scheme name among {sorted(SCHEMES)} "
                         f"or a boolean (n_tags, n_tags) matrix, got {constraints!r}.")
    trans = np.asarray(constraints)
    if trans.shape != (K, K):
        raise ValueError(f"constraints must be a ({K}, {K}) boolean matrix over the "
                         f"{K} tags (classes_ = {list(classes)!r}), got shape "
                         f"{trans.shape}.")
    if trans.dtype != bool:
        if not np.isin(trans, (0, 1)).all():
            raise ValueError("constraints must be a boolean matrix (True: allowed), "
                             "got values other than 0/1/True/False.")
        trans = trans.astype(bool)
    return trans.copy(), np.ones(K, dtype=bool), np.ones(K, dtype=bool)


def label_array(classes):
    """The labels as a 1-D object array (``np.asarray`` would make tuple
    labels a 2-D array and hand back rows, not the labels)."""
    out = np.empty(len(classes), dtype=object)
    for k, c in enumerate(classes):
        out[k] = c
    return out


def _is_label_set(lab):
    return isinstance(lab, (set, frozenset))


def label_codes(y, index=None, name="y"):
    """Codes of possibly partial label sequences.

    Each position of each sequence of ``y`` holds a label, ``None`` (any
    label) or a non-empty set of labels (one of them).  Returns ``(codes,
    sets, classes)``: the flat int64 codes (a class index ``>= 0``, or ``-1 -
    s`` for row ``s`` of ``sets``), the boolean ``(n_sets, K)`` table whose
    row 0 is every class, and the classes.  With ``index`` (a dict class ->
    index) the classes are fixed and an unknown label is an error; without,
    they are every label seen (sorted), and the caller passes them back.
    """
    from .sequence import _sorted_labels

    if index is None:
        seen = set()
        for seq in y:
            for lab in seq:
                if _is_label_set(lab):
                    seen.update(lab)
                elif lab is not None:
                    seen.add(lab)
        classes = _sorted_labels(seen)
        if not classes:
            raise ValueError(f"{name} has no known label: at least one position must be "
                             f"labelled (or restricted to a set) to define the tags.")
        index = {c: k for k, c in enumerate(classes)}
    else:
        classes = list(index)
    K = len(classes)
    set_rows = {None: 0}
    rows = [np.ones(K, dtype=bool)]
    codes = []
    for i, seq in enumerate(y):
        for t, lab in enumerate(seq):
            if lab is None:
                codes.append(-1)
                continue
            if _is_label_set(lab):
                if not lab:
                    raise ValueError(f"{name}[{i}][{t}] is an empty set: a restricted "
                                     f"position needs at least one allowed label.")
                members = frozenset(lab)
                for m in members:
                    if m not in index:
                        raise ValueError(f"{name}[{i}][{t}] allows {m!r}, which is not a "
                                         f"tag of the model (classes_ = {classes!r}).")
                if len(members) == 1:
                    codes.append(index[next(iter(members))])
                    continue
                s = set_rows.get(members)
                if s is None:
                    s = set_rows[members] = len(rows)
                    row = np.zeros(K, dtype=bool)
                    row[[index[m] for m in members]] = True
                    rows.append(row)
                codes.append(-1 - s)
                continue
            if lab not in index:
                raise ValueError(f"{name}[{i}][{t}] = {lab!r} is not a tag of the model "
                                 f"(classes_ = {classes!r}).")
            codes.append(index[lab])
    return np.array(codes, dtype=np.int64), np.array(rows, dtype=bool).reshape(-1, K), classes


def first_violation(seq_codes, allowed):
    """Where a fully labelled code sequence breaks the transition rules:
    ``(t, what)`` or None."""
    trans, start, end = allowed
    if len(seq_codes) == 0:
        return None
    if not start[seq_codes[0]]:
        return 0, "cannot start a sequence"
    for t in range(1, len(seq_codes)):
        if not trans[seq_codes[t - 1], seq_codes[t]]:
            return t, "cannot follow the previous tag"
    if not end[seq_codes[-1]]:
        return len(seq_codes) - 1, "cannot end a sequence"
    return None
