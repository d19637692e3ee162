"""structlearn: structured prediction with linear models, scikit-learn style.

Estimators: :class:`LabelRanker`, :class:`OrdinalRegressor`,
:class:`MultiLabelClassifier`, :class:`SequenceTagger`, :class:`SegmentTagger`,
:class:`DependencyParser`; :func:`precompile` compiles their kernels ahead of
the first fit.  Losses live in :mod:`structlearn.losses`,
output structures in :mod:`structlearn.structures`.
"""

__version__ = "0.1.0.dev0"

from ._lazy_exports import lazy_exports  # noqa: E402

__all__ = ["LabelRanker", "OrdinalRegressor", "MultiLabelClassifier", "SequenceTagger",
           "SegmentTagger", "DependencyParser", "precompile", "__version__"]


# the estimators are imported on first access (PEP 562): ``import
# structlearn`` does not import scikit-learn, SciPy or Numba, and one
# estimator imports only what its task needs
__getattr__, __dir__ = lazy_exports(
    __name__, {**{name: "estimators" for name in __all__
                  if name not in ("precompile", "__version__")},
               "precompile": "_precompile"}, __all__)
