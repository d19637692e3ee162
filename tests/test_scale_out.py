"""Scale-out: fits and model selection on a Dask cluster through joblib.

A ``LocalCluster`` of two worker processes on the loopback interface stands
in for a cluster of machines: the estimators are pickled to the workers,
fitted there and shipped back, and ``GridSearchCV`` / ``cross_validate`` run
their folds on the workers through joblib's ``dask`` backend.  The results
must equal those of a local run exactly (same folds, same seeds).
"""

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from structlearn import LabelRanker, SequenceTagger
from structlearn.datasets import load_ewt_pos, load_label_ranking

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning",
    # the cluster's own shutdown chatter is not ours to test
    "ignore::ResourceWarning", "ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       silence_logs=50)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _worker_pids(client):
    return set(client.run(lambda: __import__("os").getpid()).values())


def test_fits_run_on_dask_workers_and_come_back_identical(client):
    X, y = load_ewt_pos("train")
    X, y = X[:50], y[:50]   # 150 before issue 20
    local = SequenceTagger(loss="hinge", max_iter=3, random_state=0).fit(X, y)

    def fit_remotely(est, X, y):
        import os
        return est.fit(X, y), os.getpid()

    futures = [client.submit(fit_remotely, clone(local), X, y, pure=False) for _ in range(2)]
    for remote, pid in client.gather(futures):
        assert pid in _worker_pids(client)  # it really ran on a worker
        assert (remote.coef_ != local.coef_).nnz == 0  # sparse (feature, tag) weights
        assert remote.predict(X) == local.predict(X)


def test_grid_search_and_cross_validate_under_the_dask_joblib_backend(client):
    X, Y = load_label_ranking("iris")
    cv = KFold(3, shuffle=True, random_state=0)
    pipe = make_pipeline(StandardScaler(), LabelRanker(random_state=0))
    grid = {"labelranker__loss": ["perceptron", "sparsemap"],
            "labelranker__alpha": [1e-3, 1e-1]}

    local = GridSearchCV(pipe, grid, cv=cv).fit(X, Y)
    with joblib.parallel_backend("dask"):
        remote = GridSearchCV(pipe, grid, cv=cv, n_jobs=-1).fit(X, Y)
        scores = cross_validate(pipe, X, Y, cv=cv, n_jobs=-1)
    assert remote.best_params_ == local.best_params_
    np.testing.assert_array_equal(remote.cv_results_["mean_test_score"],
                                  local.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(
        scores["test_score"], cross_validate(pipe, X, Y, cv=cv)["test_score"])
    # the search did use the workers: every one of them holds structlearn
    loaded = client.run(lambda: "structlearn" in __import__("sys").modules)
    assert len(loaded) == 2 and all(loaded.values())
