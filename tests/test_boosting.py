"""AdaBoost (SAMME) out of core: trees boosted from rows encoded once (two passes over the data),
or one pass per round with the weights recomputed as rows stream by."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path, numeric_xy
from rainforest import AdaBoostClassifier, DataError, DecisionTreeClassifier, NaiveBayesClassifier
from rainforest.storage import ParquetSource


def test_boosted_stumps_beat_a_stump_on_adult_reading_the_data_twice():
    train, test = dataset_path("adult_train"), dataset_path("adult_test")
    stump = DecisionTreeClassifier(max_depth=1).fit(train, target="class")
    source = ParquetSource(train)
    boosted = AdaBoostClassifier(n_estimators=20).fit(source, target="class")
    # the profile, then one pass encoding the rows that every round reads (listed as the first round's)
    assert boosted.n_passes_per_round_ == [1] + [0] * 19 and len(boosted.estimators_) == 20
    assert boosted.n_passes_ == 2 and source.n_passes == 2
    assert boosted.score(test, target="class") > stump.score(test, target="class") + 0.05
    # rounds that read the data (one pass a stump) boost the same stumps
    read = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, algorithm="read"), n_estimators=20).fit(
        train, target="class")
    assert read.n_passes_ == 21 and read.n_passes_per_round_ == [1] * 20
    assert [t.to_json() for t in read.estimators_] == [t.to_json() for t in boosted.estimators_]


def test_boosted_stumps_beat_a_stump_on_magic():
    X, y, _ = numeric_xy("magic", np.float64)
    rng = np.random.default_rng(0)
    train = rng.random(len(y)) < 0.7
    stump = DecisionTreeClassifier(max_depth=1).fit(X[train], y[train])
    boosted = AdaBoostClassifier(n_estimators=30).fit(X[train], y[train])
    assert boosted.n_passes_ == 2
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
    # the votes: each tree's leaf class weighted by its alpha, added in learner order, as SAMME's
    votes = np.zeros((len(X), k))
    for tree, alpha in zip(boosted.estimators_, boosted.estimator_weights_):
        votes[np.arange(len(X)), np.argmax(tree.value[tree.apply(np.asarray(X, np.float64))], axis=1)] += alpha
    assert np.array_equal(boosted.decision_function(X), votes / boosted.estimator_weights_.sum())


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


def _scratch_left(folder) -> list:
    return sorted(str(p) for p in folder.rglob("*"))


def test_boosted_naive_bayes_reads_files_once(tmp_path, monkeypatch):
    """Naive Bayes rounds weigh every row from its raw values, so over files the first pass keeps a local
    copy of the rows (storage.row_copy.CopiedSource) and the later rounds, and the closing pass, read it:
    the source is read once, the model is the one every round reading the source gives (rows in
    memory are not copied: a pass a round), and no copy is left after the fit or after an error."""
    import tempfile

    from rainforest import boosting
    from rainforest.storage import row_copy

    table = pq.read_table(dataset_path("adult_train"))
    files = tmp_path / "adult"
    files.mkdir()
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), files / "part-0.parquet")
    pq.write_table(table.slice(half), files / "part-1.parquet")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def fit(data):
        return AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=4).fit(data, target="class")

    in_memory = fit(table)  # rows in memory are not copied: a pass a round, and a closing one
    rounds = len(in_memory.estimators_)
    assert rounds >= 2 and in_memory.n_passes_per_round_ == [1] * rounds and in_memory.n_passes_ == rounds + 1
    with monkeypatch.context() as m:  # the rounds reading the files themselves
        m.setattr(boosting, "copy_pays", lambda source: False)
        reference = fit(str(files))
    assert reference.n_passes_per_round_ == [1] * rounds and reference.n_passes_ == rounds + 1
    once = fit(ParquetSource(str(files)))
    assert once.n_passes_per_round_ == [1] + [0] * (rounds - 1) and once.n_passes_ == 1
    assert once.estimator_weights_.tolist() == reference.estimator_weights_.tolist()
    assert [e.model_dict() for e in once.estimators_] == [e.model_dict() for e in reference.estimators_]
    assert _scratch_left(scratch) == []

    # a disk that fills up drops the copy with a warning: every pass reads the files, the same model
    def no_room(path, schema):
        raise OSError(28, "No space left on device", path)

    with monkeypatch.context() as m:
        m.setattr(row_copy.pa.ipc, "new_file", no_room)
        with pytest.warns(RuntimeWarning, match="local copy of the rows .* failed"):
            full = fit(str(files))
    assert full.n_passes_per_round_ == [1] * rounds and full.n_passes_ == rounds + 1
    assert [e.model_dict() for e in full.estimators_] == [e.model_dict() for e in reference.estimators_]
    assert _scratch_left(scratch) == []

    # an error in a later round (here an interrupt) leaves no copy behind
    alpha = AdaBoostClassifier._alpha
    calls = []

    def interrupted(self, err, k):
        calls.append(err)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return alpha(self, err, k)

    monkeypatch.setattr(AdaBoostClassifier, "_alpha", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fit(str(files))
    assert len(calls) == 2 and _scratch_left(scratch) == []


def test_boosted_naive_bayes_queries_duckdb_once(tmp_path):
    """Over a DuckDB table (rows streamed out), the rounds read the local copy of the first query's rows."""
    duckdb = pytest.importorskip("duckdb")
    from rainforest.storage import DuckDBSource

    table = pq.read_table(dataset_path("adult_train"))
    con = duckdb.connect(str(tmp_path / "adult.duckdb"))
    con.register("t", table)
    con.execute("CREATE TABLE adult AS SELECT * FROM t")
    con.unregister("t")
    reference = AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=3).fit(table, target="class")
    source = DuckDBSource(table="adult", connection=con)
    boosted = AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=3).fit(source, target="class")
    assert boosted.n_passes_ == 1
    assert [e.model_dict() for e in boosted.estimators_] == [e.model_dict() for e in reference.estimators_]
    con.close()


def test_boosted_naive_bayes_scores_each_learner_once_and_boosts_the_same_model(monkeypatch):
    """Each round scores only its newest learner (its wrong-bits kept, a bit a row): every learner
    predicts every row once, where scoring all learners so far each round costs rounds squared.
    The model file is the one scoring every learner again gives (bits off: BITS_ROOM 0)."""
    from rainforest import boosting

    table = pq.read_table(dataset_path("adult_train"))
    scored = []
    predict = NaiveBayesClassifier.predict_joint_log_proba
    monkeypatch.setattr(NaiveBayesClassifier, "predict_joint_log_proba",
                        lambda self, X: scored.append(len(X)) or predict(self, X))

    def fit():
        scored.clear()
        model = AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=6).fit(table, target="class")
        return model, sum(scored)

    with_bits, rows_scored = fit()
    rounds = len(with_bits.estimators_)
    assert rounds >= 4 and rows_scored == rounds * table.num_rows
    monkeypatch.setattr(boosting, "BITS_ROOM", 0)
    again, rows_scored_again = fit()
    assert rows_scored_again == table.num_rows * rounds * (rounds + 1) // 2  # learner j scores rounds - j passes
    assert again.estimator_weights_.tolist() == with_bits.estimator_weights_.tolist()
    assert [e.model_dict() for e in again.estimators_] == [e.model_dict() for e in with_bits.estimators_]


def test_trees_read_from_the_source_score_each_learner_once(monkeypatch):
    """Rounds whose trees read the source at every level (``algorithm="read"``, no boosting store) score
    each learner once, at the first pass after it (its wrong-bits then serve every later pass), where
    scoring every learner at every pass costs rounds squared times depth; the same trees."""
    from rainforest import boosting

    table = pq.read_table(dataset_path("adult_train"))
    scored = []
    class_indices = AdaBoostClassifier._class_indices
    monkeypatch.setattr(AdaBoostClassifier, "_class_indices", staticmethod(
        lambda learners, batch: scored.append(len(learners) * batch.num_rows) or class_indices(learners, batch)))

    def fit():
        scored.clear()
        base = DecisionTreeClassifier(max_depth=3, algorithm="read")
        return AdaBoostClassifier(base, n_estimators=5).fit(table, target="class"), sum(scored)

    with_bits, rows_scored = fit()
    rounds = len(with_bits.estimators_)
    assert rounds == 5 and with_bits.n_passes_per_round_[1:] == [3] * 4
    assert rows_scored == (rounds - 1) * table.num_rows  # the last tree weighs no round
    monkeypatch.setattr(boosting, "BITS_ROOM", 0)
    again, rows_scored_again = fit()
    assert rows_scored_again == 3 * table.num_rows * sum(range(rounds))  # every pass, every learner so far
    assert [t.to_json() for t in again.estimators_] == [t.to_json() for t in with_bits.estimators_]


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


def _weighted_adult():
    """Adult with a weight column: fractional weights, and a row in 20 of weight 0."""
    table = pq.read_table(dataset_path("adult_train"))
    rng = np.random.default_rng(3)
    w = rng.choice([0.5, 1.0, 2.25], size=table.num_rows)
    w[rng.random(table.num_rows) < 0.05] = 0.0
    return table.append_column("w", pa.array(w))


def _boost(table, budget, algorithm="hybrid", weight=None, spill_dir=None, max_bins=32, rounds=3):
    base = DecisionTreeClassifier(max_depth=4, max_bins=max_bins, algorithm=algorithm, memory_budget=budget,
                                  spill_dir=spill_dir)
    return AdaBoostClassifier(base, n_estimators=rounds).fit(table, target="class", sample_weight=weight)


@pytest.mark.parametrize("max_bins", [32, None], ids=["binned", "exact"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_rounds_grow_from_the_encoded_rows_kept_or_spilled_and_boost_the_same_trees(max_bins, weighted, tmp_path,
                                                                                   monkeypatch):
    """Adult's encoded rows (about 360 kB binned) fit a quarter of 1 GB but not of 300 kB (3 MB in exact
    mode, whose slots are wider): the store keeps them
    in memory or spills them, and every round grows its tree from there (2 passes over the data in all),
    where RF-Read reads the data at every level of every round.  Trees, weights and errors are RF-Read's
    bit for bit, with fractional weights and rows of weight 0 too."""
    from rainforest import boost_store

    where = []
    fill = boost_store.BoostStore.fill.__func__
    monkeypatch.setattr(boost_store.BoostStore, "fill", classmethod(
        lambda cls, *a, **k: (lambda s: where.append(None if s is None else s.spill is not None) or s)(
            fill(cls, *a, **k))))
    table, weight = (_weighted_adult(), "w") if weighted else (pq.read_table(dataset_path("adult_train")), None)
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    read = _boost(table, "1GB", "read", weight, max_bins=max_bins)
    assert read.n_passes_ == 1 + 3 * 4 and where == []
    small = "300KB" if max_bins else "3MB"  # exact mode's AVC-groups need more (fnlwgt: 21k values)
    for budget, spilled in (("1GB", False), (small, True)):
        model = _boost(table, budget, weight=weight, spill_dir=str(spill_dir), max_bins=max_bins)
        assert where[-1] is spilled
        assert model.n_passes_ == 2 and model.n_passes_per_round_ == [1, 0, 0]
        assert [t.to_json() for t in model.estimators_] == [t.to_json() for t in read.estimators_]
        np.testing.assert_array_equal(model.estimator_weights_, read.estimator_weights_)
        np.testing.assert_array_equal(model.estimator_errors_, read.estimator_errors_)
        assert list(spill_dir.iterdir()) == []  # the store's folder (and every round's) is gone


def test_the_rounds_weigh_by_the_learners_errors_kept_as_bits(monkeypatch):
    """A mutation: a store that never marks a row wrong boosts other trees (round 2 on equal weights)."""
    from rainforest import boost_store

    table = pq.read_table(dataset_path("adult_train"))
    good = _boost(table, "1GB")
    monkeypatch.setattr(boost_store, "set_flags", lambda row, first, wrong: None)
    bad = _boost(table, "1GB")
    assert good.estimators_[0].to_json() == bad.estimators_[0].to_json()
    assert good.estimators_[1].to_json() != bad.estimators_[1].to_json()


@pytest.mark.parametrize("when", ["writing", "reading"])
@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_the_store_folder_is_removed_after_an_error_or_an_interrupt(when, error, tmp_path, monkeypatch):
    """An interrupt or an error while the store is written (the encoding pass) or read (a later round)
    leaves no folder behind; while the fit runs, the store's folder is there."""
    from rainforest import boost_store, spill

    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    seen = []
    if when == "writing":
        append = spill.Spill._append
        calls = []

        def failing_append(self, p, rows):
            calls.append(1)
            if len(calls) == 2:
                raise error("injected")
            return append(self, p, rows)
        monkeypatch.setattr(spill.Spill, "_append", failing_append)
    else:
        predicted = boost_store.predicted_classes

        def failing_prediction(*args):
            seen.append(len(list(spill_dir.iterdir())))
            if len(seen) == 3:
                raise error("injected")
            return predicted(*args)
        monkeypatch.setattr(boost_store, "predicted_classes", failing_prediction)
    with pytest.raises(error, match="injected"):
        _boost(pq.read_table(dataset_path("adult_train")), "300KB", spill_dir=str(spill_dir))
    if when == "reading":
        assert seen and min(seen) >= 1  # the store's folder, while the rounds read it
    assert list(spill_dir.iterdir()) == []

