"""The feature-map protocol and the batch that carries a map's handle."""

from typing import Protocol, runtime_checkable

import numpy as np


class RaggedBatch:
    """A batch of examples of a ragged training problem.

    ``data`` is the feature map's handle on the examples' features,
    ``pos_off`` the offsets (from 0) of their positions, ``y`` their flat
    targets (one per position), ``structure`` the structure bound to the
    batch, ``sample_weight`` the examples' weights (None: all 1; see
    :class:`structlearn.solvers.RaggedProblem`) and ``block_sizes`` the
    sizes of their score blocks (the feature map's ``part_sizes``; only
    with weights).
    """

    __slots__ = ("data", "pos_off", "y", "structure", "sample_weight", "block_sizes")

    def __init__(self, data, pos_off, y, structure, sample_weight=None, block_sizes=None):
        self.data = data
        self.pos_off = np.ascontiguousarray(pos_off, dtype=np.int64)
        self.y = y
        self.structure = structure
        self.sample_weight = sample_weight
        self.block_sizes = block_sizes


@runtime_checkable
class FeatureMap(Protocol):
    """What a training problem needs from a joint feature map (see
    ``structlearn.feature_maps``)."""

    n_samples: int
    n_params: int
    penalized: np.ndarray
    pos_off: np.ndarray

    def chunk_ranges(self, n_min): ...

    def contiguous(self, a, b): ...

    def select(self, idx): ...

    def scores(self, z, batch, scale=1.0): ...

    def backprop(self, G, batch, g): ...

    def backprop_entries(self, G, batch): ...

    def params_of(self, idx): ...

    def sq_norms(self, y): ...

    def part_sizes(self): ...

    def unary_sizes(self): ...

    def block_entries(self, idx, D): ...

    def part_columns(self, rep, parts): ...
