"""The semi-Markov kernels against brute-force enumeration of segmentations."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from structlearn.kernels.segments import (
    check_segment_codes,
    segment_encode_batch,
    segment_marginals_batch,
    segment_part_offsets,
    segment_score_batch,
    segment_viterbi_batch,
)


def segmentations(L, K, M):
    """Every segmentation of ``L`` tokens as flat codes (2 k + 1 starts a
    segment of label k, 2 k continues it); ``M`` the longest segment, of
    every label or per label."""
    Mk = np.broadcast_to(M, (K,))
    M = int(Mk.max())
    out = []

    def cuts(t):
        if t == L:
            yield []
            return
        for ln in range(1, min(M, L - t) + 1):
            for rest in cuts(t + ln):
                yield [ln] + rest

    for lengths in cuts(0):
        for labels in itertools.product(range(K), repeat=len(lengths)):
            if any(ln > Mk[k] for ln, k in zip(lengths, labels)):
                continue
            codes = []
            for ln, k in zip(lengths, labels):
                codes += [2 * k + 1] + [2 * k] * (ln - 1)
            out.append(np.array(codes, dtype=np.int64))
    return out


def reference_encoding(codes, L, K, M):
    """phi(y) written out from the definition (segment list first)."""
    size = L * M * K + K * K + 2 * K
    phi = np.zeros(size)
    segs = []
    t = 0
    while t < L:
        e = t
        while e + 1 < L and codes[e + 1] % 2 == 0:
            e += 1
        segs.append((t, e, codes[t] // 2))
        t = e + 1
    for s, e, k in segs:
        phi[(e * M + (e - s)) * K + k] = 1
    for (_, _, a), (_, _, b) in zip(segs[:-1], segs[1:]):
        phi[L * M * K + a * K + b] += 1
    phi[L * M * K + K * K + segs[0][2]] = 1
    phi[L * M * K + K * K + K + segs[-1][2]] = 1
    return phi


CASES = [(1, 1, 1), (1, 3, 2), (3, 2, 2), (4, 2, 3), (5, 3, 2), (5, 2, 5), (4, 3, 1),
         # per-label longest segments
         (5, 3, (1, 3, 2)), (4, 2, (4, 1))]


def _mk(K, M):
    """``(M, Mk)``: the layout's longest segment and the per-label ones."""
    Mk = np.ascontiguousarray(np.broadcast_to(M, (K,)), dtype=np.int64)
    return int(Mk.max()), Mk


@pytest.mark.parametrize("L, K, M", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_segment_kernels_match_enumeration(L, K, M, seed):
    ys = segmentations(L, K, M)
    M, Mk = _mk(K, M)
    rng = np.random.RandomState(seed)
    tok_off = np.array([0, L], dtype=np.int64)
    part_off = segment_part_offsets(tok_off, K, M)
    theta = rng.randn(part_off[-1]) * 2
    Phi = np.array([reference_encoding(y, L, K, M) for y in ys])
    for y, phi in zip(ys, Phi):
        np.testing.assert_array_equal(segment_encode_batch(y, part_off, tok_off, K, M), phi)
        assert segment_score_batch(theta, y, part_off, tok_off, K, M)[0] == \
            pytest.approx(phi @ theta, abs=1e-12)
        assert check_segment_codes(y, tok_off, K, Mk)[2] == 0
    scores = Phi @ theta
    best = segment_viterbi_batch(theta, part_off, tok_off, K, M, Mk)
    assert reference_encoding(best, L, K, M) @ theta == pytest.approx(scores.max(), abs=1e-12)
    mu, logZ = segment_marginals_batch(theta, part_off, tok_off, K, M, Mk)
    assert logZ[0] == pytest.approx(logsumexp(scores), abs=1e-10)
    p = np.exp(scores - logsumexp(scores))
    np.testing.assert_allclose(mu, p @ Phi, atol=1e-10)


def test_segment_batch_of_several_sequences_is_the_sequences_one_by_one():
    rng = np.random.RandomState(3)
    K, M = 3, 3
    Mk = np.array([3, 1, 2])
    lengths = [4, 1, 6, 2]
    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    part_off = segment_part_offsets(tok_off, K, M)
    theta = rng.randn(part_off[-1]) * 3
    y = segment_viterbi_batch(theta, part_off, tok_off, K, M, Mk)
    mu, logZ = segment_marginals_batch(theta, part_off, tok_off, K, M, Mk)
    for i, L in enumerate(lengths):
        one = np.array([0, L], dtype=np.int64)
        po = segment_part_offsets(one, K, M)
        th = theta[part_off[i]:part_off[i + 1]]
        np.testing.assert_array_equal(segment_viterbi_batch(th, po, one, K, M, Mk),
                                      y[tok_off[i]:tok_off[i + 1]])
        m1, z1 = segment_marginals_batch(th, po, one, K, M, Mk)
        np.testing.assert_allclose(m1, mu[part_off[i]:part_off[i + 1]], rtol=1e-12)
        assert z1[0] == pytest.approx(logZ[i], rel=1e-12)


def test_segment_kernels_are_stable_for_large_scores():
    rng = np.random.RandomState(4)
    tok_off = np.array([0, 5], dtype=np.int64)
    part_off = segment_part_offsets(tok_off, 2, 3)
    theta = rng.randn(part_off[-1]) * 1e6
    Mk = np.array([3, 3])
    mu, logZ = segment_marginals_batch(theta, part_off, tok_off, 2, 3, Mk)
    assert np.all(np.isfinite(mu)) and np.isfinite(logZ[0])
    y = segment_viterbi_batch(theta, part_off, tok_off, 2, 3, Mk)
    # at this scale the distribution is the MAP vertex
    np.testing.assert_allclose(mu, segment_encode_batch(y, part_off, tok_off, 2, 3),
                               atol=1e-6)


@pytest.mark.parametrize("codes, reason", [([1, 0, 4], 1), ([0, 1], 2), ([1, 2], 3),
                                           ([1, 0, 0], 4), ([3, 2, 1], 0)])
def test_invalid_segmentation_codes_are_reported(codes, reason):
    y = np.array(codes, dtype=np.int64)
    i, t, r = check_segment_codes(y, np.array([0, len(codes)], dtype=np.int64), 2,
                                  np.array([2, 2]))
    assert r == reason
    assert (i, t) == ((-1, -1) if reason == 0 else (0, {1: 2, 2: 0, 3: 1, 4: 2}[reason]))


# ------------------------------------------------------------- the structure
def _segments(lengths, K, M, seed=0, **kw):
    from structlearn.structures import Segments

    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    st = Segments(K, tok_off, M, **kw)
    theta = np.random.RandomState(seed).randn(st.n_parts) * 2
    return st, theta


def _spans(codes):
    out, t = [], 0
    while t < len(codes):
        e = t
        while e + 1 < len(codes) and codes[e + 1] % 2 == 0:
            e += 1
        out.append((t, e, codes[t] // 2))
        t = e + 1
    return out


def _reference_cost(pred, gold, precision, recall, mismatch):
    """Sarawagi & Gupta's segment cost, from the span lists."""
    gold_spans = {(s, e): k for s, e, k in _spans(gold)}
    total = 0.0
    for s, e, k in _spans(pred):
        if (s, e) in gold_spans:
            total += mismatch[gold_spans[(s, e)], k]
        else:
            total += precision[k] + sum(recall[k2] for s2, _, k2 in _spans(gold)
                                        if s <= s2 <= e)
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_segment_cost_is_affine_and_matches_its_definition(seed):
    rng = np.random.RandomState(seed)
    K, M, L = 3, 3, 5
    prec, rec = rng.rand(K) + 0.1, rng.rand(K) + 0.1
    mis = rng.rand(K, K)
    np.fill_diagonal(mis, 0.0)
    st, _ = _segments([L], K, M, precision=prec, recall=rec, mismatch=mis)
    ys = segmentations(L, K, M)
    gold = ys[rng.randint(len(ys))]
    c = st.cost_vector(st.encode(gold))
    for pred in ys[::7]:
        want = _reference_cost(pred, gold, prec, rec, mis)
        assert st.encode(pred) @ c == pytest.approx(want, abs=1e-12)
        assert st.cost(pred, gold)[0] == pytest.approx(want, abs=1e-12)
    assert st.cost(gold, gold)[0] == 0.0
    # decode inverts encode
    for y in ys[::11]:
        np.testing.assert_array_equal(st.decode(st.encode(y)), y)


def test_segment_sparsemap_is_the_projection_of_enumerated_vertices():
    from scipy.optimize import minimize

    K, M, L = 2, 2, 3
    st, theta = _segments([L], K, M, seed=5)
    mu = st.sparsemap(theta)
    Phi = np.array([reference_encoding(y, L, K, M) for y in segmentations(L, K, M)])
    nu = int(st.n_unary[0])

    def negdual(p):   # max_p <theta, Phi^T p> - 1/2 ||(Phi^T p)_U||^2 over the simplex
        m = Phi.T @ p
        return -(theta @ m - 0.5 * m[:nu] @ m[:nu])

    cons = ({"type": "eq", "fun": lambda p: p.sum() - 1},)
    res = minimize(negdual, np.full(len(Phi), 1 / len(Phi)), bounds=[(0, 1)] * len(Phi),
                   constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    assert -res.fun == pytest.approx(theta @ mu - 0.5 * mu[:nu] @ mu[:nu], abs=1e-7)
    np.testing.assert_allclose(mu[:nu], (Phi.T @ res.x)[:nu], atol=1e-4)
    # the support's distribution reproduces mu
    mu2, V, w, _ = st.sparsemap_support(theta)
    np.testing.assert_allclose(w @ V, mu2, atol=1e-9)
    np.testing.assert_allclose(mu2, mu, atol=1e-9)


def test_segments_reject_invalid_codes_and_parameters():
    from structlearn.structures import Segments

    st, _ = _segments([3], 2, 2)
    with pytest.raises(ValueError, match="longer than its label's max_length 2"):
        st.encode(np.array([1, 0, 0]))
    st, _ = _segments([3], 2, (3, 1))
    st.encode(np.array([1, 0, 0]))
    with pytest.raises(ValueError, match="at sequence 0, token 1: a segment longer than its "
                                         "label's max_length 1"):
        st.encode(np.array([3, 2, 1]))
    for bad in [0, (2, 0), (1, 2, 3), 1.5]:
        with pytest.raises(ValueError, match="max_length must be a positive integer"):
            Segments(2, [0, 3], bad)
    with pytest.raises(ValueError, match="does not start a segment"):
        st.encode(np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="mismatch"):
        Segments(2, [0, 3], 2, mismatch=np.ones((2, 2)))
    with pytest.raises(ValueError, match="precision"):
        Segments(2, [0, 3], 2, precision=[-1, 1])


# ------------------------------------------------- loss-augmented oracles
ORACLE_CASES = [(1, 1, 1), (1, 2, 1), (3, 2, 2), (4, 2, 3), (5, 3, 2), (4, 1, 4),
                (5, 3, (2, 1, 3))]


def _penalties(rng, K, integer):
    if integer:
        prec, rec = rng.randint(0, 3, K).astype(float), rng.randint(0, 3, K).astype(float)
        mis = rng.randint(0, 3, (K, K)).astype(float)
    else:
        prec, rec, mis = rng.rand(K) + 0.1, rng.rand(K), rng.rand(K, K) * 2
    np.fill_diagonal(mis, 0.0)
    return dict(precision=prec, recall=rec, mismatch=mis)


@pytest.mark.parametrize("L, K, M", ORACLE_CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_segment_second_best_is_the_best_other_segmentation(L, K, M, seed):
    st, theta = _segments([L], K, M, seed=seed)
    ys = segmentations(L, K, M)
    scores = np.array([st.encode(y) @ theta for y in ys])
    for gold in [ys[int(np.argmax(scores))], ys[seed % len(ys)]]:
        y2 = st.second_best(theta, gold)
        others = [s for y, s in zip(ys, scores) if not np.array_equal(y, gold)]
        if not others:                       # a single segmentation
            np.testing.assert_array_equal(y2, gold)
            continue
        assert not np.array_equal(y2, gold)
        assert st.encode(y2) @ theta == pytest.approx(max(others), abs=1e-10)


@pytest.mark.parametrize("L, K, M", ORACLE_CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_segment_slack_violator_maximises_the_slack_scaled_margin(L, K, M, seed):
    rng = np.random.RandomState(seed)
    pen = _penalties(rng, K, integer=True) if seed else {}
    st, theta = _segments([L], K, M, seed=seed, **pen)
    ys = segmentations(L, K, M)
    gold = ys[rng.randint(len(ys))]
    # a scale at which some violations are positive and some are not
    theta = theta * 0.3
    s_y = st.encode(gold) @ theta
    vals = [st.cost(y, gold)[0] * (1 - s_y + st.encode(y) @ theta) for y in ys]
    phi_hat = st.slack_violator(theta, gold)
    y_hat = st.decode(phi_hat)
    got = st.cost(y_hat, gold)[0] * (1 - s_y + phi_hat @ theta)
    assert got == pytest.approx(max(max(vals), 0.0), abs=1e-10)
    if max(vals) <= 0:
        np.testing.assert_array_equal(y_hat, gold)


def test_segment_slack_violator_needs_integer_penalties():
    from structlearn.structures import IntractableError

    st, theta = _segments([3], 2, 2, precision=[0.5, 1.0])
    assert not st.has_exact_slack
    with pytest.raises(IntractableError, match="integer"):
        st.slack_violator(theta, np.array([1, 1, 1]))
    assert _segments([3], 2, 2, precision=[2, 1])[0].has_exact_slack


def _poslearn_reference(st, theta, gold, L, K, M):
    """PosLearn from its definition: per span (s, e), the best of
    cost(s, e, k) (1 - s(y) + s(y')) over the segmentations y' that
    contain a segment (s, e, k) of positive cost."""
    ys = segmentations(L, K, M)
    M = int(np.max(M))              # the layout's
    phi_y = st.encode(gold)
    s_y = phi_y @ theta
    c = st.cost_vector(phi_y)
    value, grad = 0.0, np.zeros_like(theta)
    for s in range(L):
        for e in range(s, min(L, s + M)):
            best, arg = 0.0, None
            for y in ys:
                for s2, e2, k in _spans(y):
                    if (s2, e2) == (s, e):
                        ck = c[(e * M + (e - s)) * K + k]
                        v = ck * (1 - s_y + st.encode(y) @ theta)
                        if ck > 0 and v > best + 1e-12:
                            best, arg = v, (ck, st.encode(y))
            if arg is not None:
                value += best
                grad += arg[0] * (arg[1] - phi_y)
    return value, grad


@pytest.mark.parametrize("L, K, M", ORACLE_CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_segment_poslearn_matches_its_definition(L, K, M, seed):
    rng = np.random.RandomState(seed)
    pen = _penalties(rng, K, integer=False) if seed else {}
    st, theta = _segments([L], K, M, seed=seed, **pen)
    theta = theta * 0.3
    ys = segmentations(L, K, M)
    gold = ys[rng.randint(len(ys))]
    value, grad = st.poslearn_value_and_grad(theta, gold)
    want_v, want_g = _poslearn_reference(st, theta, gold, L, K, M)
    assert value[0] == pytest.approx(want_v, abs=1e-10)
    np.testing.assert_allclose(grad, want_g, atol=1e-10)


def test_segment_violators_on_a_batch_are_the_sequences_one_by_one():
    K, M = 3, 3
    lengths = [4, 1, 6, 2]
    st, theta = _segments(lengths, K, M, seed=7)
    theta = theta * 0.3
    gold = st.argmax(-theta)        # a poor gold: violated everywhere
    y2 = st.second_best(theta, gold)
    phi_s = st.slack_violator(theta, gold)
    v, g = st.poslearn_value_and_grad(theta, gold)
    for i, L in enumerate(lengths):
        one, th = _segments([L], K, M)[0], theta[st.part_off[i]:st.part_off[i + 1]]
        sl = slice(st.tok_off[i], st.tok_off[i + 1])
        np.testing.assert_array_equal(one.second_best(th, gold[sl]), y2[sl])
        np.testing.assert_array_equal(one.slack_violator(th, gold[sl]),
                                      phi_s[st.part_off[i]:st.part_off[i + 1]])
        v1, g1 = one.poslearn_value_and_grad(th, gold[sl])
        assert v1[0] == pytest.approx(v[i], rel=1e-12)
        np.testing.assert_allclose(g1, g[st.part_off[i]:st.part_off[i + 1]], rtol=1e-12)
