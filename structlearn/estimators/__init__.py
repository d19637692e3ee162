"""scikit-learn estimators, one per task.

Each estimator's module is imported on first access (PEP 562), so that
``import structlearn`` stays cheap and using one estimator imports only the
structures, losses and kernels it needs (``python -X importtime -c "import
structlearn"``).
"""

import importlib

_WHERE = {"LabelRanker": "ranking", "OrdinalRegressor": "ordinal",
          "MultiLabelClassifier": "multilabel", "SequenceTagger": "sequence",
          "SegmentTagger": "segments", "DependencyParser": "parsing"}

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier", "SequenceTagger",
           "SegmentTagger", "DependencyParser"]


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
