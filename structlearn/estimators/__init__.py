"""scikit-learn estimators, one per task.

Each estimator's module is imported on first access (PEP 562), so that
``import structlearn`` stays cheap and using one estimator imports only the
structures, losses and kernels it needs (``python -X importtime -c "import
structlearn"``).
"""

from .._lazy_exports import lazy_exports

_WHERE = {"LabelRanker": "ranking", "OrdinalRegressor": "ordinal",
          "MultiLabelClassifier": "multilabel", "SequenceTagger": "sequence",
          "SegmentTagger": "segments", "DependencyParser": "parsing"}

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier", "SequenceTagger",
           "SegmentTagger", "DependencyParser"]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
