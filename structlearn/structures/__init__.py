"""Output structures: one class per output space, oracles over part scores.

The structures are imported on first access (PEP 562): a task loads only
its own structure's kernels.
"""

import importlib

_WHERE = {"Structure": "base", "IntractableError": "base", "UnitCube": "cube",
          "Knapsack": "cube", "OrderSimplex": "order", "Permutahedron": "ranking",
          "Birkhoff": "ranking", "Chain": "chain", "Tree": "tree", "Segments": "segments"}

__all__ = ["Structure", "IntractableError", "UnitCube", "Knapsack",
           "OrderSimplex", "Permutahedron", "Birkhoff", "Chain", "Tree", "Segments"]


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
