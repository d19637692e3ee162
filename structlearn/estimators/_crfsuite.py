"""What users of sklearn-crfsuite look for on :class:`~structlearn.SequenceTagger`.

sklearn-crfsuite's ``CRF`` names its parameters after CRFsuite's options and
exposes the model as dictionaries; the tagger keeps scikit-learn's names
for its parameters (so that one grid search covers every loss) and offers
the dictionaries, the single-sequence methods and an error that translates
the old parameter names.
"""

import numpy as np

#: sklearn-crfsuite ``CRF`` parameters -> what to use instead.
CRFSUITE_PARAMETERS = {
    "algorithm": "solver ('lbfgs' is CRFsuite's 'lbfgs'; loss='perceptron' its 'ap', "
                 "loss='hinge' with solver='sgd' close to 'pa'; 'l2sgd' is solver='sgd')",
    "c1": "alpha and l1_ratio (CRFsuite penalises the summed loss: alpha = (c1 + 2 * c2) "
          "/ n_sequences, l1_ratio = c1 / (c1 + 2 * c2))",
    "c2": "alpha (CRFsuite penalises the summed loss: alpha = 2 * c2 / n_sequences; with "
          "c1 too, alpha = (c1 + 2 * c2) / n_sequences and l1_ratio = c1 / (c1 + 2 * c2))",
    "max_iterations": "max_iter",
    "all_possible_states": "feature_support ('all' = True, 'observed' = False)",
    "all_possible_transitions": "nothing: every transition always has a weight "
                                "(restrict them with constraints=)",
    "epsilon": "tol",
    "delta": "tol (the relative decrease over the last 10 L-BFGS iterations, "
             "CRFsuite's delta with period=10)",
    "period": "nothing: the L-BFGS stopping period is fixed at 10 (tol is CRFsuite's delta)",
    "num_memories": "nothing: the L-BFGS history is fixed (10 pairs)",
    "linesearch": "nothing: L-BFGS uses a Wolfe line search",
    "max_linesearch": "nothing: L-BFGS uses a Wolfe line search",
    "calibration_eta": "nothing: SGD step sizes are set from the data",
    "calibration_rate": "nothing: SGD step sizes are set from the data",
    "calibration_samples": "nothing: SGD step sizes are set from the data",
    "calibration_candidates": "nothing: SGD step sizes are set from the data",
    "calibration_max_trials": "nothing: SGD step sizes are set from the data",
    "pa_type": "loss ('hinge', 'hinge-slack', ...)",
    "c": "alpha",
    "error_sensitive": "loss='hinge-slack' or 'poslearn' (cost-sensitive updates)",
    "averaging": "loss='perceptron' (always averaged)",
    "variance": "alpha",
    "gamma": "tol",
    "model_filename": "joblib.dump(estimator, path) (the model is a Python object)",
    "keep_tempfiles": "nothing: no temporary files are written",
    "trainer_cls": "nothing",
}


def check_crfsuite_names(cls, kwargs):
    """A TypeError naming the structlearn equivalent of every
    sklearn-crfsuite parameter in ``kwargs``."""
    bad = [k for k in kwargs if k in CRFSUITE_PARAMETERS]
    if bad:
        lines = "; ".join(f"{k!r} -> {CRFSUITE_PARAMETERS[k]}" for k in bad)
        raise TypeError(f"{cls.__name__} got sklearn-crfsuite parameter(s) {bad}; "
                        f"the structlearn equivalents: {lines}.")


class CRFsuiteCompatMixin:
    """sklearn-crfsuite's names on a fitted tagger."""

    def __new__(cls, *args, **kwargs):
        check_crfsuite_names(cls, kwargs)
        return super().__new__(cls)

    def _attribute_names(self):
        """Feature names as CRFsuite writes them: ``key:value`` for a string
        value of a dict feature, the key alone for a numeric one."""
        vec = self.vectorizer_
        names = [str(n) for n in vec.feature_names_out_]
        templates = getattr(vec, "templates_", None)
        tnames = getattr(vec, "template_names_", None)
        if templates is None or tnames is None or vec.input_type_ != "dict":
            return names
        out = []
        for name, t in zip(names, templates):
            key = str(tnames[t])
            out.append(key + ":" + name[len(key) + 1:]
                       if name.startswith(key + "=") else name)
        return out

    @property
    def state_features_(self):
        """Dict ``{(attribute, label): weight}`` of the non-zero token
        feature weights, named as sklearn-crfsuite names them (the per-tag
        bias ``intercept_`` is not among them: CRFsuite has none)."""
        names = self._attribute_names()
        coef = self.coef_.tocoo()
        return {(names[j], self.classes_[k]): float(v)
                for k, j, v in zip(coef.row, coef.col, coef.data) if v != 0.0}

    @property
    def transition_features_(self):
        """Dict ``{(label_from, label_to): weight}`` of the non-zero
        transition weights (``transition_``), as in sklearn-crfsuite."""
        T = self.transition_
        return {(a, b): float(T[i, j]) for i, a in enumerate(self.classes_)
                for j, b in enumerate(self.classes_) if T[i, j] != 0.0}

    def predict_single(self, xseq, known=None):
        """Tags of one sequence (``predict([xseq])[0]``)."""
        return self.predict([xseq], known=None if known is None else [known])[0]

    def predict_marginals_single(self, xseq, known=None):
        """Marginals of one sequence as a list of ``{tag: probability}``
        dicts, one per token (sklearn-crfsuite's format)."""
        return self.predict_marginals([xseq], known=None if known is None else [known],
                                      as_dicts=True)[0]

    def _marginal_dicts(self, mu):
        classes = self.classes_
        return [[{c: float(p) for c, p in zip(classes, row)} for row in np.asarray(m)]
                for m in mu]
