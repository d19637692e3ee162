"""scikit-learn estimators, one per task."""

from .multilabel import MultiLabelClassifier
from .ordinal import OrdinalRegressor
from .ranking import LabelRanker
from .parsing import DependencyParser
from .segments import SegmentTagger
from .sequence import SequenceTagger

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier", "SequenceTagger",
           "SegmentTagger", "DependencyParser"]
