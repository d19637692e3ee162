"""Numba kernels of the sparseptron (:mod:`structlearn.feature_selection`):
weights stored per atom (group of parameters) as ``theta_p = c_a xi_p``,
so that shrinking a whole group is one scalar product (Martins et al.
2011, Sec. 4)."""

from numba import njit


@njit(cache=True, nogil=True)
def atom_step(xi, atom_of, scale, sq, members_ptr, members, cols, vals, eta):
    """Gradient step ``theta -= eta g`` on the scaled atoms; returns whether
    any entry of ``g`` was non-zero.  A deleted atom (``scale == 0``) touched
    by the gradient restarts from zero weights."""
    moved = False
    for e in range(len(cols)):
        g = vals[e]
        if g == 0.0:
            continue
        moved = True
        p = cols[e]
        a = atom_of[p]
        if a < 0:
            xi[p] -= eta * g
            continue
        c = scale[a]
        if c == 0.0:
            for q in range(members_ptr[a], members_ptr[a + 1]):
                xi[members[q]] = 0.0
            scale[a] = 1.0
            sq[a] = 0.0
            c = 1.0
        old = xi[p]
        new = old - eta * g / c
        xi[p] = new
        sq[a] += new * new - old * old
    return moved


@njit(cache=True, nogil=True)
def atom_gather(xi, atom_of, scale, params, out):
    """``out[p] = theta_p`` for the parameters ``params``."""
    for k in range(len(params)):
        p = params[k]
        a = atom_of[p]
        out[p] = xi[p] if a < 0 else scale[a] * xi[p]


@njit(cache=True, nogil=True)
def atom_fold(xi, scale, sq, members_ptr, members, tiny):
    """Fold scales below ``tiny`` (but not 0) into the weights."""
    for a in range(len(scale)):
        c = scale[a]
        if c != 0.0 and abs(c) < tiny:
            for q in range(members_ptr[a], members_ptr[a + 1]):
                xi[members[q]] *= c
            sq[a] *= c * c
            scale[a] = 1.0
