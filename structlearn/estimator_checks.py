"""scikit-learn's estimator checks: which fail by design, and why.

scikit-learn's common checks (``check_estimator``,
``parametrize_with_checks``) feed every classifier 1-D class labels and
every multi-output estimator columns of classes ``0..2``.  Some of our
estimators take targets those checks cannot generate, and two design
choices differ from a plain classifier's; :func:`expected_failed_checks`
lists the checks that fail for these reasons, with the reason, in the form
scikit-learn's own mechanism takes (``expected_failed_checks=``, since
scikit-learn 1.6)::

    from sklearn.utils.estimator_checks import check_estimator
    from structlearn.estimator_checks import expected_failed_checks

    check_estimator(est, expected_failed_checks=expected_failed_checks(est))

Every other check must pass, and does in our test suite, on the oldest
supported and the newest scikit-learn.
"""

__all__ = ["expected_failed_checks"]

#: checks that fit on the generic targets (class labels, regression targets
#: or columns of classes 0..2), which a label ranker or a multilabel
#: classifier rejects with a ValueError by design
_TARGET_CHECKS = {
    "LabelRanker": [
        "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
        "check_estimator_sparse_array", "check_estimator_sparse_matrix",
        "check_estimator_sparse_tag", "check_estimators_dtypes",
        "check_estimators_fit_returns_self", "check_estimators_nan_inf",
        "check_estimators_overwrite_params", "check_estimators_pickle",
        "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample",
        "check_fit2d_predict1d", "check_fit_check_is_fitted", "check_fit_idempotent",
        "check_fit_score_takes_y", "check_methods_sample_order_invariance",
        "check_methods_subset_invariance", "check_n_features_in",
        "check_n_features_in_after_fitting", "check_pipeline_consistency",
        "check_positive_only_tag_during_fit", "check_readonly_memmap_input"],
    "MultiLabelClassifier": [
        "check_classifier_data_not_an_array", "check_classifiers_classes",
        "check_classifiers_one_label", "check_classifiers_train",
        "check_decision_proba_consistency", "check_dict_unchanged",
        "check_dont_overwrite_parameters", "check_dtype_object",
        "check_estimator_sparse_array", "check_estimator_sparse_matrix",
        "check_estimator_sparse_tag", "check_estimators_dtypes",
        "check_estimators_fit_returns_self", "check_estimators_overwrite_params",
        "check_f_contiguous_array_estimator", "check_fit2d_1feature",
        "check_fit2d_predict1d", "check_fit_score_takes_y",
        "check_methods_sample_order_invariance", "check_methods_subset_invariance",
        "check_n_features_in_after_fitting", "check_non_transformer_estimators_n_iter",
        "check_positive_only_tag_during_fit", "check_readonly_memmap_input"],
}


#: the sample-weight checks, which fit on the generic targets too
_SW_TARGET_CHECKS = [
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data", "check_sample_weights_list",
    "check_sample_weights_not_an_array", "check_sample_weights_not_overwritten",
    "check_sample_weights_pandas_series", "check_sample_weights_shape"]
_TARGET_CHECKS["LabelRanker"] += _SW_TARGET_CHECKS + ["check_all_zero_sample_weights_error"]
_TARGET_CHECKS["MultiLabelClassifier"] += _SW_TARGET_CHECKS + [
    "check_classifiers_one_label_sample_weights"]

_SW_FLAT = ("the weighted and the repeated fits minimise the same objective (equal to "
            "1e-13 with tol=1e-12), but on the check's 15 separable samples of 30 "
            "features the non-CRF losses vanish and only the penalty alpha/2 ||W||^2 "
            "(alpha=1e-3) curves the objective: points of equal objective lie up to "
            "sqrt(2 gap / alpha) apart, ~1e-5 at the precision of float64, not the "
            "check's rtol=1e-7 (loss='crf' passes; tests/estimators/test_sample_weight.py "
            "checks the equivalence within the solvers' certificates)")
_SW_SGD = ("SGD is stochastic: the repeated data are another sequence of steps, so the "
           "fits agree up to SGD's noise only; solver='bcfw' certifies the optimum")
_CW_SGD = ("SGD samples the examples uniformly and scales their gradients by their "
           "weights: the check's class weights 1000 : 1e-4 : 1e-4 make its few "
           "epochs' steps too uneven to settle; solver='bcfw' passes")

_TARGET_REASON = {
    "LabelRanker": "the targets are rank matrices (a permutation of 1..k per row); the "
                   "generic check fits on class labels or regression targets, which "
                   "fit rejects with a ValueError (tests/estimators/test_estimators.py "
                   "re-checks the same invariants with rank targets)",
    "MultiLabelClassifier": "the targets are 0/1 indicator matrices; the generic check "
                            "fits on 1-D labels or columns of classes 0..2, which fit "
                            "rejects with a ValueError (tests/estimators/test_estimators.py "
                            "re-checks the same invariants with indicator targets)",
}

_CALIBRATED = ("with decoding='calibrated' (the default) predict minimises the expected "
               "task cost under the loss's marginals (Blondel 2019, Sec. 5): the median "
               "class, or each label whose marginal exceeds 1/2 -- not the argmax or the "
               "sign of decision_function, which returns the model's scores theta = Wx + b "
               "(the better ranking scores for ROC curves); with decoding='map' the check "
               "passes")

_SPARSE_MULTIOUTPUT = (
    "the projection and SparseMAP losses give sparse marginals (a clipped score, tied "
    "at 0 and 1): with decoding='calibrated' predict keeps the labels whose marginal "
    "exceeds 1/2, not the sign of decision_function; with decoding='map' predict is "
    "that sign, not the rounded predict_proba; and predict_proba's ties do not rank "
    "as decision_function does.  With loss='crf' the check passes")

_BOUNDED = ("with min_labels / max_labels the targets must respect the bounds: the "
            "generic check fits on a single label or on rows with more labels than "
            "max_labels, which fit rejects with a ValueError")

#: the checks that fail when label counts are bounded (on top of the others)
_BOUNDED_CHECKS = [
    "check_classifier_multioutput", "check_classifiers_multilabel_output_format_decision_function",
    "check_classifiers_multilabel_output_format_predict",
    "check_classifiers_multilabel_representation_invariance", "check_estimators_nan_inf",
    "check_estimators_pickle", "check_fit2d_1sample", "check_fit_check_is_fitted",
    "check_fit_idempotent", "check_n_features_in", "check_pipeline_consistency",
    "check_all_zero_sample_weights_error"]

_SPARSE_PROBA = ("the projection and SparseMAP losses give sparse marginals: "
                 "predict_proba holds exact zeros (and ones), which the check forbids; "
                 "with loss='crf' the check passes")


def expected_failed_checks(estimator):
    """The scikit-learn checks ``estimator`` fails by design, with the reason.

    Parameters
    ----------
    estimator : estimator instance
        Any estimator (an estimator of another library gets ``{}``).

    Returns
    -------
    dict
        ``{check name: reason}``, for ``check_estimator(...,
        expected_failed_checks=...)`` or ``parametrize_with_checks(...,
        expected_failed_checks=expected_failed_checks)``.
    """
    name = type(estimator).__name__
    if type(estimator).__module__.split(".")[0] != "structlearn":
        return {}
    from .losses import get_loss
    from .structures import OrderSimplex, UnitCube

    out = {check: _TARGET_REASON[name] for check in _TARGET_CHECKS.get(name, [])}
    if name not in ("OrdinalRegressor", "MultiLabelClassifier"):
        return out
    loss = get_loss(estimator.loss)
    # marginals (not a MAP vertex) are what calibrated decoding and
    # predict_proba read
    marginals = loss.mean_set(OrderSimplex if name == "OrdinalRegressor" else UnitCube) \
        is not None
    calibrated = marginals and estimator.decoding == "calibrated"
    if name == "OrdinalRegressor":
        solver = "sgd" if estimator.solver == "auto" and not loss.smooth else estimator.solver
        if solver == "sgd":
            out.update(dict.fromkeys(_SW_TARGET_CHECKS[:2], _SW_SGD))
            out["check_class_weight_classifiers"] = _CW_SGD
        elif not loss.gibbs_likelihood:
            out.update(dict.fromkeys(_SW_TARGET_CHECKS[:2], _SW_FLAT))
    if name == "OrdinalRegressor" and calibrated:
        out.update(dict.fromkeys(["check_classifiers_train", "check_classifiers_classes"],
                                 _CALIBRATED))
    if name == "MultiLabelClassifier":
        if marginals and not loss.gibbs_likelihood:    # (CRF on the cube: mu > 1/2
            out["check_classifier_multioutput"] = _SPARSE_MULTIOUTPUT   # iff theta > 0)
        if estimator.min_labels > 0 or estimator.max_labels is not None:
            out.update(dict.fromkeys(_BOUNDED_CHECKS, _BOUNDED))
        if marginals and not loss.gibbs_likelihood:
            out["check_classifiers_multilabel_output_format_predict_proba"] = _SPARSE_PROBA
    return out
