"""scikit-learn estimators, one per task."""

from .multilabel import MultiLabelClassifier
from .ordinal import OrdinalRegressor
from .ranking import LabelRanker

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier"]
