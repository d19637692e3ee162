"""structlearn: structured prediction with linear models, scikit-learn style.

Estimators: :class:`LabelRanker`, :class:`OrdinalRegressor`,
:class:`MultiLabelClassifier`.  Losses live in :mod:`structlearn.losses`,
output structures in :mod:`structlearn.structures`.
"""

__version__ = "0.1.0.dev0"

from .estimators import LabelRanker, MultiLabelClassifier, OrdinalRegressor  # noqa: E402

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier", "__version__"]
