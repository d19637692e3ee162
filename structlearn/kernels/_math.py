"""Small numerical helpers shared by the kernels."""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._lazy import njit_inner


@njit(cache=True, nogil=True)
def logaddexp(a, b):
    """Overflow-free ``log(exp(a) + exp(b))`` (either may be ``-inf``)."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the CPU to fetch ``arr[idx]`` (1-D, no bounds check) into its
    caches (``llvm.prefetch``, read, high locality): start a memory load
    that a later read needs, so several misses overlap."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _float_of_bits(typingctx, bits):
    """The float64 whose IEEE-754 bit pattern is the int64 ``bits``."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01   # ln 2 split in two (Cody & Waite):
_LN2_LO = 1.90821492927058770002e-10   # n * _LN2_HI is exact for |n| < 2^11
_EXP_LO = -708.0                       # below: 0 (np.exp: subnormals from -708.4)
_EXP_HI = 709.0                        # above: inf (np.exp: from 709.8)


@njit_inner()
def fast_exp(x):
    """``exp(x)`` in plain arithmetic that LLVM vectorises (the range
    checks at the end become selects): a loop of these runs ~6x faster
    than one of ``np.exp`` (a call into the C library per element, which
    does not vectorise without Intel's SVML).

    ``x = n ln 2 + r`` with ``n`` the nearest integer to ``x / ln 2`` (the
    reduction in two parts, Cody & Waite, so ``r`` keeps its bits),
    ``|r| <= ln(2) / 2``; ``e^r`` by its Taylor polynomial of degree 13
    (truncation error ``< 2e-17`` relative) in Horner form; ``2^n`` written
    into the exponent bits.  Within 1 ulp of ``np.exp`` on ``[-708, 709]``
    (measured: 2.2e-16 relative at most,
    ``tests/kernels/test_math_kernels.py``); 0 below
    -708 (including ``-inf``; ``np.exp`` gives subnormals down to -745, which
    no caller here can tell from 0), ``inf`` above 709 (``np.exp`` overflows
    from 709.8) and NaN for NaN.  For the hot loops of the chain and
    semi-Markov recursions, whose arguments are shifted scores ``<= 0``.
    """
    y = min(max(x, _EXP_LO), _EXP_HI)
    n = np.floor(y * _LOG2E + 0.5)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    v = p * _float_of_bits((np.int64(n) + 1023) << 52)
    if x < _EXP_LO:
        v = 0.0
    if x > _EXP_HI:
        v = np.inf
    if x != x:
        v = x
    return v
