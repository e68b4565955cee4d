"""AdaBoost (SAMME) out of core: one pass per round, weights recomputed as rows stream by."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path, numeric_xy
from rainforest import AdaBoostClassifier, DataError, DecisionTreeClassifier, NaiveBayesClassifier
from rainforest.storage import ParquetSource


def test_boosted_stumps_beat_a_stump_on_adult_with_one_pass_per_round():
    train, test = dataset_path("adult_train"), dataset_path("adult_test")
    stump = DecisionTreeClassifier(max_depth=1).fit(train, target="class")
    source = ParquetSource(train)
    boosted = AdaBoostClassifier(n_estimators=20).fit(source, target="class")
    assert boosted.n_passes_per_round_ == [1] * len(boosted.estimators_) and len(boosted.estimators_) == 20
    assert boosted.n_passes_ == 20 + 1  # the rounds plus the profiling pass
    assert boosted.score(test, target="class") > stump.score(test, target="class") + 0.05


def test_boosted_stumps_beat_a_stump_on_magic():
    X, y, _ = numeric_xy("magic", np.float64)
    rng = np.random.default_rng(0)
    train = rng.random(len(y)) < 0.7
    stump = DecisionTreeClassifier(max_depth=1).fit(X[train], y[train])
    boosted = AdaBoostClassifier(n_estimators=30).fit(X[train], y[train])
    assert boosted.n_passes_ == 31
    assert boosted.score(X[~train], y[~train]) > stump.score(X[~train], y[~train]) + 0.03


def test_samme_weights_follow_the_errors():
    X, y, _ = numeric_xy("letter", np.float64)  # 26 classes: SAMME's log(K - 1) term matters
    boosted = AdaBoostClassifier(DecisionTreeClassifier(max_depth=3), n_estimators=8).fit(X, y)
    k = len(boosted.classes_)
    err = boosted.estimator_errors_
    np.testing.assert_allclose(boosted.estimator_weights_, np.log((1 - err) / err) + np.log(k - 1))
    assert (err < 1 - 1 / k).all()
    assert boosted.n_passes_ == 1 + sum(boosted.n_passes_per_round_) and max(boosted.n_passes_per_round_) <= 3
    single = DecisionTreeClassifier(max_depth=3).fit(X, y)
    assert boosted.score(X, y) > single.score(X, y)
    proba = boosted.predict_proba(X[:100])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (boosted.classes_[proba.argmax(axis=1)] == boosted.predict(X[:100])).all()


def test_the_weights_of_a_round_are_those_of_in_memory_adaboost():
    # round 2's tree equals a tree grown on explicitly reweighted rows (SAMME update of round 1)
    X, y, _ = numeric_xy("magic", np.float64)
    boosted = AdaBoostClassifier(n_estimators=2).fit(X, y)
    first = DecisionTreeClassifier(max_depth=1).fit(X, y)
    wrong = first.predict(X) != y
    alpha = boosted.estimator_weights_[0]
    second = DecisionTreeClassifier(max_depth=1).fit(X, y, sample_weight=np.exp(alpha * wrong))
    tree = boosted.estimators_[1]
    assert tree.feature[0] == second.tree_.feature[0] and tree.threshold[0] == second.tree_.threshold[0]
    scale = second.tree_.weighted_n_node_samples[0] / tree.weighted_n_node_samples[0]
    np.testing.assert_allclose(tree.value * scale, second.tree_.value, rtol=1e-9)


def test_boosted_naive_bayes_one_pass_per_round():
    table = pq.read_table(dataset_path("adult_train"))
    boosted = AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=4).fit(table, target="class")
    rounds = len(boosted.estimators_)
    assert rounds >= 2 and boosted.n_passes_per_round_ == [1] * rounds
    assert boosted.n_passes_ == rounds + 1  # one closing pass measures the last learner
    # the first learner is plain naive Bayes, and the first error is its weighted training error
    nb = NaiveBayesClassifier().fit(table, target="class")
    np.testing.assert_allclose(boosted.estimators_[0].theta_, nb.theta_)
    y = table.column("class").to_numpy(zero_copy_only=False)
    assert boosted.estimator_errors_[0] == pytest.approx(np.mean(nb.predict(table.drop_columns(["class"])) != y))


def test_bad_learners_and_parameters():
    X, y, _ = numeric_xy("magic", np.float64)
    with pytest.raises(ValueError, match="estimator"):
        AdaBoostClassifier("stump").fit(X, y)
    with pytest.raises(ValueError, match="n_estimators"):
        AdaBoostClassifier(n_estimators=0).fit(X, y)
    with pytest.raises(ValueError, match="gaussian"):
        AdaBoostClassifier(NaiveBayesClassifier(numeric="binned")).fit(X, y)
    noise = pa.table({"x": np.zeros(100), "y": np.arange(100) % 2})
    with pytest.raises(DataError, match="no better than chance"):
        AdaBoostClassifier().fit(noise, target="y")


def test_rounds_spill_the_rows_they_cannot_keep_and_boost_the_same_trees(monkeypatch):
    """Adult's encoded rows (358 kB) pass a quarter of 300 kB: each round's tree spills them in its
    first growth pass (with the round's weights) and reads its other levels from the spill folder,
    one pass a round where RF-Read takes one a level; with 1 GB they are kept in memory.  The
    trees and the estimator weights are RF-Read's in every case."""
    from rainforest import spill as spill_module

    commits = []
    commit = spill_module.Spill.commit
    monkeypatch.setattr(spill_module.Spill, "commit", lambda self: commits.append(1) or commit(self))
    table = pq.read_table(dataset_path("adult_train"))

    def fit(algorithm, budget):
        base = DecisionTreeClassifier(max_depth=4, max_bins=32, algorithm=algorithm, memory_budget=budget)
        return AdaBoostClassifier(base, n_estimators=3).fit(table, target="class")

    read = fit("read", "300KB")
    assert read.n_passes_ == 1 + 3 * 4 and not commits
    spilled = fit("hybrid", "300KB")
    assert spilled.n_passes_ == 1 + 3 and len(commits) == 3  # one spill a round
    kept = fit("hybrid", "1GB")
    assert kept.n_passes_ == 1 + 3 and len(commits) == 3
    for model in (spilled, kept):
        assert [t.to_json() for t in model.estimators_] == [t.to_json() for t in read.estimators_]
        np.testing.assert_array_equal(model.estimator_weights_, read.estimator_weights_)
