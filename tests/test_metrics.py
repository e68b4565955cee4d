"""rainforest.metrics: evaluation in one pass equals scikit-learn's metrics on the same predictions."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sklearn.metrics as skm

from rainforest import DataError, DecisionTreeClassifier, NaiveBayesClassifier, RandomForestClassifier
from rainforest.metrics import evaluate, precision_recall_fscore, roc_from_counts
from conftest import dataset_path
from rainforest.storage import DuckDBSource, ParquetSource, TableSource


@pytest.fixture(scope="module")
def letter():
    path = dataset_path("letter")
    table = pq.read_table(path)
    clf = DecisionTreeClassifier(max_depth=7).fit(table, target="class")
    return path, table, clf


@pytest.fixture(scope="module")
def adult():
    train, test = pq.read_table(dataset_path("adult_train")), dataset_path("adult_test")
    clf = RandomForestClassifier(n_estimators=5, max_depth=6, random_state=1).fit(train, target="class")
    return test, pq.read_table(test), clf


def _labels(table):
    return table.column("class").to_numpy(zero_copy_only=False)


def test_multiclass_metrics_equal_sklearn(letter):
    path, table, clf = letter
    ev = evaluate(clf, path, target="class", batch_size=1777)  # streamed in odd batches
    y, pred, proba = _labels(table), clf.predict(table), clf.predict_proba(table)
    assert ev.n_rows == table.num_rows
    assert list(ev.classes) == sorted(set(y))
    np.testing.assert_array_equal(ev.confusion_matrix, skm.confusion_matrix(y, pred))
    assert ev.accuracy() == pytest.approx(skm.accuracy_score(y, pred), abs=1e-15)
    assert ev.error_rate() == pytest.approx(1 - skm.accuracy_score(y, pred), abs=1e-15)
    assert ev.balanced_accuracy() == pytest.approx(skm.balanced_accuracy_score(y, pred), abs=1e-12)
    mcm = skm.multilabel_confusion_matrix(y, pred)
    tn, fp = mcm[:, 0, 0], mcm[:, 0, 1]
    for avg in (None, "macro", "weighted", "micro"):
        p, r, f, _ = skm.precision_recall_fscore_support(y, pred, average=avg, zero_division=0)
        np.testing.assert_allclose(ev.precision(avg), p, rtol=1e-12)
        np.testing.assert_allclose(ev.recall(avg), r, rtol=1e-12)
        np.testing.assert_allclose(ev.sensitivity(avg), r, rtol=1e-12)
        np.testing.assert_allclose(ev.f1(avg), f, rtol=1e-12)
        np.testing.assert_allclose(ev.fbeta(2.0, avg), skm.fbeta_score(y, pred, beta=2.0, average=avg,
                                                                        zero_division=0), rtol=1e-12)
    spec = tn / (tn + fp)
    np.testing.assert_allclose(ev.specificity(), spec, rtol=1e-12)
    assert ev.specificity("macro") == pytest.approx(spec.mean(), rel=1e-12)
    assert ev.specificity("weighted") == pytest.approx(np.average(spec, weights=mcm[:, 1].sum(axis=1)), rel=1e-12)
    assert ev.specificity("micro") == pytest.approx(tn.sum() / (tn.sum() + fp.sum()), rel=1e-12)
    # ROC one-vs-rest: every class's curve and the averaged AUCs
    assert ev.roc_auc() == pytest.approx(skm.roc_auc_score(y, proba, multi_class="ovr"), rel=1e-12)
    assert ev.roc_auc(average="weighted") == pytest.approx(
        skm.roc_auc_score(y, proba, multi_class="ovr", average="weighted"), rel=1e-12)
    per_class = ev.roc_auc(average=None)
    for c, label in enumerate(clf.classes_):
        for drop in (True, False):
            fpr, tpr, thr = ev.roc_curve(label, drop_intermediate=drop)
            efpr, etpr, ethr = skm.roc_curve(y == label, proba[:, c], drop_intermediate=drop)
            np.testing.assert_allclose(fpr, efpr, rtol=1e-12)
            np.testing.assert_allclose(tpr, etpr, rtol=1e-12)
            np.testing.assert_array_equal(thr, ethr)
        assert per_class[label] == pytest.approx(skm.roc_auc_score(y == label, proba[:, c]), rel=1e-12)
    assert "macro avg" in ev.report() and "ROC AUC" in ev.report()
    assert ev.summary()["per_class"]["A"]["support"] == float((y == "A").sum())


def test_binary_forest_metrics_and_roc_equal_sklearn(adult):
    path, table, clf = adult
    ev = evaluate(clf, path, target="class", batch_size=5000)
    y, pred, proba = _labels(table), clf.predict(table), clf.predict_proba(table)
    pos = ">50K"
    assert clf.classes_[1] == pos  # the default positive class is the greater one, as in scikit-learn
    np.testing.assert_array_equal(ev.confusion_matrix, skm.confusion_matrix(y, pred))
    for name in ("precision", "recall", "f1"):
        assert getattr(ev, name)("binary") == pytest.approx(
            getattr(skm, f"{name}_score")(y, pred, pos_label=pos), rel=1e-12)
    fpr, tpr, thr = ev.roc_curve()
    efpr, etpr, ethr = skm.roc_curve(y, proba[:, 1], pos_label=pos)
    np.testing.assert_allclose(fpr, efpr, rtol=1e-12)
    np.testing.assert_allclose(tpr, etpr, rtol=1e-12)
    np.testing.assert_allclose(thr, ethr, rtol=1e-15)
    assert ev.roc_auc() == pytest.approx(skm.roc_auc_score(y == pos, proba[:, 1]), rel=1e-12)
    # the other class's curve is the mirror: its AUC from its own column
    assert ev.roc_auc(pos_label="<=50K") == pytest.approx(skm.roc_auc_score(y == "<=50K", proba[:, 0]), rel=1e-12)


def test_weighted_metrics_equal_sklearn(adult):
    _, table, clf = adult
    w = np.random.default_rng(3).uniform(0.1, 3.0, table.num_rows)
    weighted = table.append_column("w", pa.array(w))
    ev = evaluate(clf, weighted, target="class", sample_weight="w", batch_size=4096)
    y, pred, proba = _labels(table), clf.predict(table), clf.predict_proba(table)
    np.testing.assert_allclose(ev.confusion_matrix, skm.confusion_matrix(y, pred, sample_weight=w), rtol=1e-10)
    assert ev.f1("macro") == pytest.approx(skm.f1_score(y, pred, average="macro", sample_weight=w), rel=1e-10)
    fpr, tpr, _ = ev.roc_curve()
    efpr, etpr, _ = skm.roc_curve(y, proba[:, 1], pos_label=">50K", sample_weight=w)
    np.testing.assert_allclose(fpr, efpr, rtol=1e-9)
    np.testing.assert_allclose(tpr, etpr, rtol=1e-9)
    assert ev.roc_auc() == pytest.approx(skm.roc_auc_score(y == ">50K", proba[:, 1], sample_weight=w), rel=1e-9)


def test_same_result_from_every_source_and_batch_size(letter, tmp_path):
    path, table, clf = letter
    for i in range(4):
        pq.write_table(table.slice(i * 5000, 5000), tmp_path / f"part-{i}.parquet")
    reference = evaluate(clf, table, target="class")
    for X, batch in ((str(tmp_path), 999), (ParquetSource(path), 65536), (DuckDBSource(parquet=path), 3000),
                     (TableSource(table=table), 1)):
        if batch == 1:
            X, batch = TableSource(table=table.slice(0, 1000)), 37  # small batches on a slice (kept fast)
            ev = evaluate(clf, X, target="class", batch_size=batch)
            part = evaluate(clf, table.slice(0, 1000), target="class")
            np.testing.assert_array_equal(ev.confusion_matrix, part.confusion_matrix)
            assert ev.roc_auc() == pytest.approx(part.roc_auc(), rel=1e-12)
            continue
        ev = evaluate(clf, X, target="class", batch_size=batch)
        np.testing.assert_array_equal(ev.confusion_matrix, reference.confusion_matrix)
        for label in clf.classes_:
            a, b = ev.curves[label], reference.curves[label]
            np.testing.assert_array_equal(a.scores, b.scores)
            np.testing.assert_array_equal(a.totals, b.totals)
            np.testing.assert_array_equal(a.positives, b.positives)


def test_dask_source_merges_partial_tallies(adult):
    dd = pytest.importorskip("dask.dataframe")
    _, table, clf = adult
    frame = dd.from_pandas(table.to_pandas(), npartitions=4)
    from rainforest.storage import DaskSource
    ev = evaluate(clf, DaskSource(frame), target="class")
    ref = evaluate(clf, table, target="class")
    np.testing.assert_array_equal(ev.confusion_matrix, ref.confusion_matrix)
    assert ev.roc_auc() == pytest.approx(ref.roc_auc(), rel=1e-12)


def test_threshold_moving_changes_predictions_as_expected(adult, letter):
    _, table, clf = adult
    y, p = _labels(table), clf.predict_proba(table)[:, 1]
    positives = []
    for t in (0.0, 0.2, 0.5, 0.8, 1.01):
        ev = evaluate(clf, table, target="class", threshold=t)
        pred = np.where(p >= t, ">50K", "<=50K")
        np.testing.assert_array_equal(ev.confusion_matrix, skm.confusion_matrix(y, pred))
        positives.append(ev.confusion_matrix[:, 1].sum())
        assert ev.threshold == t
    assert positives[0] == table.num_rows and positives[-1] == 0
    assert all(a >= b for a, b in zip(positives, positives[1:])) and positives[1] > positives[3]
    # with pos_label the threshold applies to the other class's probability
    ev = evaluate(clf, table, target="class", threshold=0.9, pos_label="<=50K")
    np.testing.assert_array_equal(ev.confusion_matrix, skm.confusion_matrix(y, np.where(1 - p >= 0.9, "<=50K", ">50K")))
    _, ltable, lclf = letter
    with pytest.raises(ValueError, match="two-class"):
        evaluate(lclf, ltable, target="class", threshold=0.5)


def test_labels_unknown_to_the_model_are_errors(letter):
    _, table, clf = letter
    small = table.slice(0, 400)
    labels = np.array(small.column("class").to_pylist(), dtype=object)
    labels[:7] = "new"
    data = small.set_column(small.schema.get_field_index("class"), "class", pa.array(labels.tolist()))
    ev = evaluate(clf, data, target="class")
    assert "new" in list(ev.classes)
    pred = clf.predict(data)
    np.testing.assert_array_equal(ev.confusion_matrix, skm.confusion_matrix(labels.astype(str), pred.astype(str),
                                                                            labels=list(ev.classes)))
    assert "new" not in ev.curves  # no score column, so no ROC curve for it


def test_continuous_scores_rounded_bound_the_roc_counts(adult):
    _, table, _ = adult
    nb = NaiveBayesClassifier().fit(table, target="class")
    exact = evaluate(nb, table, target="class")
    rounded = evaluate(nb, table, target="class", score_decimals=3)
    assert len(rounded.curves[">50K"].scores) <= 1001 < len(exact.curves[">50K"].scores)
    # rounding ties scores (a tie counts half in the AUC): close, not equal
    assert rounded.roc_auc() == pytest.approx(exact.roc_auc(), abs=1e-2)
    np.testing.assert_array_equal(rounded.confusion_matrix, exact.confusion_matrix)


def test_plot_roc_writes_a_png_atomically(adult, letter, tmp_path):
    pytest.importorskip("matplotlib")
    _, table, clf = adult
    ev = evaluate(clf, table.slice(0, 2000), target="class")
    out = ev.plot_roc(tmp_path / "roc.png")
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(tmp_path) == ["roc.png"]  # no temporary file left
    _, ltable, lclf = letter
    evaluate(lclf, ltable.slice(0, 2000), target="class").plot_roc(tmp_path / "ovr.png")
    assert (tmp_path / "ovr.png").stat().st_size > 1000
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ev.plot_roc(tmp_path / "missing" / "roc.png")


def test_bad_input_names_the_column(adult):
    _, table, clf = adult
    with pytest.raises(DataError, match="'label'"):
        evaluate(clf, table, target="label")
    nulls = table.slice(0, 100).set_column(table.schema.get_field_index("class"), "class",
                                          pa.array([None] + table.column("class").to_pylist()[1:100]))
    skipped = evaluate(clf, nulls, target="class")  # a row without a label is skipped and counted
    assert skipped.n_missing_labels == 1 and skipped.n_rows == 99
    np.testing.assert_array_equal(skipped.confusion_matrix,
                                  evaluate(clf, table.slice(1, 99), target="class").confusion_matrix)
    with pytest.raises(ValueError, match="not fitted"):
        evaluate(DecisionTreeClassifier(), table, target="class")
    with pytest.raises(ValueError, match="pos_label"):
        evaluate(clf, table, target="class", pos_label="nope")
    with pytest.raises(ValueError, match="average"):
        evaluate(clf, table.slice(0, 100), target="class").precision("mean")


def test_confusion_matrix_helpers_match_sklearn_edge_cases():
    y = np.array([0, 0, 1, 2, 2, 2])
    pred = np.array([0, 0, 0, 0, 2, 2])  # class 1 never predicted: precision 0 by zero_division
    cm = skm.confusion_matrix(y, pred)
    for avg in (None, "macro", "weighted", "micro"):
        got = precision_recall_fscore(cm, average=avg)
        exp = skm.precision_recall_fscore_support(y, pred, average=avg, zero_division=0)[:3]
        for g, e in zip(got, exp):
            np.testing.assert_allclose(g, e)
    got = precision_recall_fscore(cm, average="macro", zero_division=1.0)
    exp = skm.precision_recall_fscore_support(y, pred, average="macro", zero_division=1.0)[:3]
    np.testing.assert_allclose(got, exp)
    # a curve from per-score counts is scikit-learn's curve from the rows
    scores = np.array([0.1, 0.1, 0.4, 0.4, 0.4, 0.9])
    truth = np.array([0, 1, 0, 1, 1, 1])
    u, inv = np.unique(scores, return_inverse=True)
    fpr, tpr, thr = roc_from_counts(u, np.bincount(inv, truth), np.bincount(inv))
    efpr, etpr, ethr = skm.roc_curve(truth, scores)
    np.testing.assert_allclose(fpr, efpr)
    np.testing.assert_allclose(tpr, etpr)
    np.testing.assert_array_equal(thr, ethr)
