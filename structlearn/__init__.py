"""structlearn: structured prediction with linear models, scikit-learn style.

Estimators: :class:`LabelRanker`, :class:`OrdinalRegressor`,
:class:`MultiLabelClassifier`, :class:`SequenceTagger`, :class:`SegmentTagger`,
:class:`DependencyParser`.
Losses live in :mod:`structlearn.losses`,
output structures in :mod:`structlearn.structures`.
"""

__version__ = "0.1.0.dev0"

from .estimators import (  # noqa: E402
    DependencyParser,
    LabelRanker,
    MultiLabelClassifier,
    OrdinalRegressor,
    SegmentTagger,
    SequenceTagger,
)

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier", "SequenceTagger",
           "SegmentTagger", "DependencyParser", "__version__"]
