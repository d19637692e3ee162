"""Output structures: one class per output space, oracles over part scores.

The structures are imported on first access (PEP 562): a task loads only
its own structure's kernels.
"""

from .._lazy_exports import lazy_exports

_WHERE = {"Structure": "base", "IntractableError": "base", "UnitCube": "cube",
          "Knapsack": "cube", "OrderSimplex": "order", "Permutahedron": "ranking",
          "Birkhoff": "ranking", "Chain": "chain", "Tree": "tree", "Segments": "segments"}

__all__ = ["Structure", "IntractableError", "UnitCube", "Knapsack",
           "OrderSimplex", "Permutahedron", "Birkhoff", "Chain", "Tree", "Segments"]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
