"""Output structures: one class per output space, oracles over part scores."""

from .base import IntractableError, Structure
from .chain import Chain
from .cube import Knapsack, UnitCube
from .order import OrderSimplex
from .ranking import Birkhoff, Permutahedron
from .segments import Segments
from .tree import Tree

__all__ = ["Structure", "IntractableError", "UnitCube", "Knapsack",
           "OrderSimplex", "Permutahedron", "Birkhoff", "Chain", "Tree", "Segments"]
