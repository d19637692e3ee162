"""structlearn: structured prediction with linear models, scikit-learn style.

Estimators: :class:`LabelRanker`, :class:`OrdinalRegressor`,
:class:`MultiLabelClassifier`, :class:`SequenceTagger`, :class:`SegmentTagger`,
:class:`DependencyParser`.
Losses live in :mod:`structlearn.losses`,
output structures in :mod:`structlearn.structures`.
"""

__version__ = "0.1.0.dev0"

import importlib

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier", "SequenceTagger",
           "SegmentTagger", "DependencyParser", "__version__"]


def __getattr__(name):
    # the estimators are imported on first access (PEP 562): ``import
    # structlearn`` does not import scikit-learn, SciPy or Numba, and one
    # estimator imports only what its task needs
    if name in __all__:
        value = getattr(importlib.import_module(".estimators", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
