"""rainforest.evaluation and storage.selection: splits, folds and weights from row identities, never materialized."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sklearn.metrics as skm
from scipy import stats

from conftest import dataset_path
from rainforest import DecisionTreeClassifier, NaiveBayesClassifier, RandomForestClassifier
from rainforest.bootstrap import bootstrap_counts, seed_keys
from rainforest.evaluation import (bootstrap_632, choose_threshold, compare, cross_validate, holdout,
                                   paired_t_test, predict_threshold, random_subsampling, resample, sampling_rates)
from rainforest.rowhash import row_hash
from rainforest.storage import DuckDBSource, ParquetSource, SourceError, TableSource
from rainforest.storage.selection import (FOLD, ROW_WEIGHT, ClassRateRule, FoldRule, SplitRule, select_rows, weight_rows)


@pytest.fixture(scope="module")
def magic():
    return pq.read_table(dataset_path("magic"))


@pytest.fixture(scope="module")
def magic_folder(magic, tmp_path_factory):
    folder = tmp_path_factory.mktemp("magic")
    for i, start in enumerate(range(0, magic.num_rows, 4000)):
        pq.write_table(magic.slice(start, 4000), folder / f"part-{i:02d}.parquet", row_group_size=1500)
    return str(folder)


def _column(source, name, batch_size=65536):
    return np.concatenate([b.column(0).to_numpy(zero_copy_only=False) for _, b in source.scan([name], batch_size)])


def _folds(source, rule, batch_size=65536):
    return _column(weight_rows(source, rule, column=FOLD, drop_zero=False), FOLD, batch_size).astype(int)


def _dealt_reference(labels, k, seed):
    """The block dealing written out row by row: each class's rows, in order, in blocks of k, each block
    dealt to the folds by a Fisher-Yates shuffle from the hash of (block, position) under the class's keys."""
    from rainforest.rowhash import hash_row
    classes, order, out = {}, {}, np.empty(len(labels), int)
    for i, v in enumerate(labels):
        c = classes.setdefault(v, len(classes))
        n = order.setdefault(c, [0, None])
        if n[0] % k == 0:
            b = n[0] // k
            s1, s2 = seed_keys(int(row_hash(np.array([c]), seed)[0]) & 0xFFFFFFFF)
            perm = list(range(k))
            for q in range(k - 1, 0, -1):
                r = int(hash_row(np.int64(b * k + q), np.int64(s1), np.int64(s2))) % (q + 1)
                perm[q], perm[r] = perm[r], perm[q]
            n[1] = perm
        out[i] = n[1][n[0] % k]
        n[0] += 1
    return out


# -- fold assignment ---------------------------------------------------------------------------------
def test_stratified_folds_are_exactly_balanced_and_the_documented_deal(magic):
    y = magic.column("class").to_numpy()
    folds = _folds(TableSource(table=magic), FoldRule(5, 7, "class"), batch_size=999)
    for c in np.unique(y):
        counts = np.bincount(folds[y == c], minlength=5)
        assert counts.max() - counts.min() <= 1  # exact, not only in expectation
    head = magic.slice(0, 600)
    np.testing.assert_array_equal(_folds(TableSource(table=head), FoldRule(5, 7, "class"), 64),
                                  _dealt_reference(head.column("class").to_pylist(), 5, 7))
    # another seed is another assignment; unstratified folds are balanced overall
    assert (folds != _folds(TableSource(table=magic), FoldRule(5, 8, "class"))).mean() > 0.7
    plain = np.bincount(_folds(TableSource(table=magic), FoldRule(5, 7)), minlength=5)
    assert plain.max() - plain.min() <= 1


def test_hash_folds_are_the_row_identity_hash(magic):
    folds = _folds(TableSource(table=magic), FoldRule(4, 3, balanced=False), batch_size=1000)
    h = row_hash(np.arange(magic.num_rows), 3)
    np.testing.assert_array_equal(folds, np.minimum(h // np.uint64((1 << 63) // 4), 3).astype(int))
    counts = np.bincount(folds)
    assert np.all(np.abs(counts - magic.num_rows / 4) < 4 * np.sqrt(magic.num_rows * 3 / 16))


def test_folds_are_the_same_on_every_source_and_batch_size(magic, magic_folder):
    rule = FoldRule(5, 11, "class")
    reference = _folds(TableSource(table=magic), rule)
    for source, batch in ((ParquetSource(magic_folder), 777), (DuckDBSource(parquet=magic_folder), 5000),
                          (TableSource(table=magic), 1 << 20)):
        np.testing.assert_array_equal(_folds(source, rule, batch), reference)
    # a selection keeps exactly the rows of its folds, in order, and counts a pass on its base
    base = ParquetSource(magic_folder)
    kept = select_rows(base, rule.select([0, 2]))
    x = _column(kept, "FLength", 1234)
    np.testing.assert_array_equal(x, magic.column("FLength").to_numpy()[np.isin(reference, [0, 2])])
    assert base.n_passes == 1 and kept.n_passes == 1
    with pytest.raises(SourceError, match="'label'"):
        select_rows(base, FoldRule(3, 0, "label"))


# -- cross-validation equals the in-memory computation ------------------------------------------------
@pytest.mark.parametrize("params", [dict(max_depth=6, max_bins=None),  # exact thresholds
                                    dict(max_depth=6, max_bins=32, sample_size=1000)])  # binned: sample by row id
def test_cross_validation_on_a_folder_equals_the_in_memory_folds(magic, magic_folder, params):
    k = 4
    cv = cross_validate(DecisionTreeClassifier(**params), magic_folder, target="class", n_folds=k, seed=5,
                        scoring="f1_macro", batch_size=2500)
    folds = _folds(TableSource(table=magic), FoldRule(k, 5, "class"))
    y = magic.column("class").to_numpy()
    fit_passes = 0
    for f in range(k):
        ref = DecisionTreeClassifier(**params).fit(magic.filter(pa.array(folds != f)), target="class")
        assert ref.tree_.to_dict() == cv.estimators[f].tree_.to_dict()
        test = magic.filter(pa.array(folds == f))
        pred = ref.predict(test)
        assert cv.scores[f] == pytest.approx(skm.f1_score(y[folds == f], pred, average="macro"), rel=1e-12)
        np.testing.assert_array_equal(cv.evaluations[f].confusion_matrix, skm.confusion_matrix(y[folds == f], pred))
        assert cv.evaluations[f].roc_auc() == pytest.approx(
            skm.roc_auc_score(y[folds == f], ref.predict_proba(test)[:, 1]), rel=1e-12)
        fit_passes += cv.estimators[f].n_passes_
    assert cv.n_passes == fit_passes + 1  # k fits and one pass scoring every fold
    assert cv.pooled.confusion_matrix.sum() == magic.num_rows
    assert cv.mean() == pytest.approx(np.mean(cv.scores))


def test_cross_validation_of_a_forest_on_duckdb_equals_parquet(magic_folder):
    forest = RandomForestClassifier(n_estimators=3, max_depth=4, random_state=2)
    a = cross_validate(forest, DuckDBSource(parquet=magic_folder), target="class", n_folds=3, seed=1)
    b = cross_validate(forest, magic_folder, target="class", n_folds=3, seed=1, batch_size=3333)
    np.testing.assert_array_equal(a.scores, b.scores)
    for x, y in zip(a.estimators, b.estimators):
        assert [t.to_dict() for t in x.estimators_] == [t.to_dict() for t in y.estimators_]


def test_holdout_and_random_subsampling(magic):
    y = magic.column("class").to_numpy()
    h = holdout(DecisionTreeClassifier(max_depth=5), magic, target="class", test_size=0.25, seed=4)
    test = _column(select_rows(TableSource(table=magic), SplitRule(0.25, 4, "class", part="test")), "class")
    for c in (0, 1):  # stratified: a quarter of each class to within one row per block of 4
        assert abs((test == c).sum() - (y == c).sum() / 4) <= 1
    assert h.evaluation.n_rows == len(test)
    ref = DecisionTreeClassifier(max_depth=5).fit(
        select_rows(TableSource(table=magic), SplitRule(0.25, 4, "class", part="train")), target="class")
    assert ref.tree_.to_dict() == h.estimator.tree_.to_dict()
    assert h.score == pytest.approx(h.evaluation.accuracy())
    rs = random_subsampling(DecisionTreeClassifier(max_depth=3), magic, target="class", n_repeats=3, seed=1,
                            test_size=0.3)
    assert len(rs.scores) == 3 and len(set(rs.scores)) > 1  # independent splits
    assert all(0.6 < s < 0.9 for s in rs.scores)
    plain = _column(select_rows(TableSource(table=magic), SplitRule(0.3, 2, balanced=False, part="test")), "class")
    assert abs(len(plain) / len(y) - 0.3) < 0.02


def test_bootstrap_632_equals_the_in_memory_samples(magic):
    small = magic.take(np.arange(0, magic.num_rows, 3))  # both classes (magic is sorted by class)
    res = bootstrap_632(DecisionTreeClassifier(max_depth=4, max_bins=None), small, target="class", n_bootstraps=2,
                        seed=3)
    y = small.column("class").to_numpy()
    for b, model in enumerate(res.estimators):
        seed = [s for s in _bootstrap_seeds(3, 2)][b]
        m = bootstrap_counts(np.arange(small.num_rows), seed).astype(float)
        drawn = small.filter(pa.array(m > 0)).append_column("m", pa.array(m[m > 0]))
        ref = DecisionTreeClassifier(max_depth=4, max_bins=None).fit(drawn, target="class", sample_weight="m")
        assert ref.tree_.to_dict() == model.tree_.to_dict()
        pred = ref.predict(small)
        oob = np.mean(pred[m == 0] == y[m == 0])
        sample = np.average(pred[m > 0] == y[m > 0], weights=m[m > 0])
        assert res.oob_accuracy[b] == pytest.approx(oob, rel=1e-12)
        assert res.sample_accuracy[b] == pytest.approx(sample, rel=1e-12)
        assert res.scores[b] == pytest.approx(0.632 * oob + 0.368 * sample, rel=1e-12)
    assert 0.3 < (m == 0).mean() < 0.44  # about e**-1 of the rows are out of bag


def _bootstrap_seeds(seed, n):
    from rainforest.bootstrap import tree_seeds
    from rainforest.evaluation import _BOOTSTRAP_SALT
    return [int(s) for s in tree_seeds(seed ^ _BOOTSTRAP_SALT, 0, n)]


def test_paired_t_test_on_the_same_folds(magic):
    r = compare(DecisionTreeClassifier(max_depth=6), NaiveBayesClassifier(), magic, target="class", n_folds=4, seed=2)
    exp = stats.ttest_rel(r.scores_a, r.scores_b)
    assert r.statistic == pytest.approx(exp.statistic) and r.pvalue == pytest.approx(exp.pvalue)
    assert r.df == 3 and r.mean_difference > 0  # the tree beats naive Bayes on magic
    same = paired_t_test([0.8, 0.9, 0.7], [0.8, 0.9, 0.7])
    assert same.statistic == 0 and same.pvalue == 1
    with pytest.raises(ValueError, match="same length"):
        paired_t_test([1, 2, 3], [1, 2])


# -- class imbalance ------------------------------------------------------------------------------------
def test_resampling_weights_are_deterministic_identical_everywhere_with_the_expected_mean(magic, magic_folder):
    rates = {0: 0.3, 1: 2.5}
    y = magic.column("class").to_numpy()

    def weights(source, batch, seed=9):
        return _column(weight_rows(source, ClassRateRule("class", tuple(rates.items()), seed), drop_zero=False),
                       ROW_WEIGHT, batch)

    w = weights(TableSource(table=magic), 65536)
    for source, batch in ((ParquetSource(magic_folder), 1001), (DuckDBSource(parquet=magic_folder), 4096),
                          (TableSource(table=magic), 17)):
        np.testing.assert_array_equal(weights(source, batch), w)
    assert not np.array_equal(weights(TableSource(table=magic), 65536, seed=10), w)
    assert set(np.unique(w[y == 0])) == {0, 1} and set(np.unique(w[y == 1])) == {2, 3}
    for c, r in rates.items():
        n, frac = (y == c).sum(), r - np.floor(r)
        assert abs(w[y == c].mean() - r) < 4 * np.sqrt(frac * (1 - frac) / n)  # a Bernoulli on the fraction


def test_undersampling_and_oversampling_fit_the_weighted_data(magic):
    y = magic.column("class").to_numpy()
    counts = {0: int((y == 0).sum()), 1: int((y == 1).sum())}
    assert sampling_rates(counts)[0] == pytest.approx(counts[1] / counts[0]) and sampling_rates(counts)[1] == 1
    under = resample(magic, target="class", seed=1)  # default: undersample to the smallest class
    assert under.column is None  # rates <= 1: a plain selection, unit weights
    kept = _column(under, "class")
    assert abs((kept == 0).sum() - counts[1]) < 4 * np.sqrt(counts[1]) and (kept == 1).sum() == counts[1]
    over = resample(magic, target="class", strategy="oversample", seed=1)
    clf = DecisionTreeClassifier(max_depth=5).fit(over, target="class", sample_weight=over.column)
    w = _column(over, ROW_WEIGHT)
    ref = DecisionTreeClassifier(max_depth=5).fit(magic.append_column("w", pa.array(w)), target="class",
                                                  sample_weight="w")
    assert clf.tree_.to_dict() == ref.tree_.to_dict()
    # balancing raises the minority class's recall, as class_weight="balanced" does
    base = DecisionTreeClassifier(max_depth=5).fit(magic, target="class")
    minority = 1 if counts[1] < counts[0] else 0
    recall = lambda m: np.mean(m.predict(magic)[y == minority] == minority)  # noqa: E731
    assert recall(clf) > recall(base)
    with pytest.raises(ValueError, match="rate"):
        resample(magic, target="class", rates={0: -1})


# -- threshold moving -------------------------------------------------------------------------------------
def test_choose_threshold_maximizes_f1_and_minimizes_cost(magic):
    rows = np.arange(magic.num_rows)
    train, valid = magic.take(rows[rows % 3 > 0]), magic.take(rows[rows % 3 == 0])  # magic is sorted by class
    clf = RandomForestClassifier(n_estimators=4, max_depth=5, random_state=0).fit(train, target="class")
    y, p = valid.column("class").to_numpy(), clf.predict_proba(valid)[:, 1]
    choice = choose_threshold(clf, valid, target="class", objective="f1")
    f1 = lambda t: skm.f1_score(y, (p >= t).astype(int), zero_division=0)  # noqa: E731
    assert choice.value == pytest.approx(f1(choice.threshold), rel=1e-12)
    assert choice.value == pytest.approx(max(f1(t) for t in np.unique(p)), rel=1e-12)  # the best of all cuts
    assert choice.value >= f1(0.5)
    cost = lambda t, fp, fn: fp * np.sum((p >= t) & (y == 0)) + fn * np.sum((p < t) & (y == 1))  # noqa: E731
    cheap_fn = choose_threshold(clf, valid, target="class", objective="cost", cost_fp=1, cost_fn=10)
    cheap_fp = choose_threshold(clf, valid, target="class", objective="cost", cost_fp=10, cost_fn=1)
    assert cheap_fn.value == pytest.approx(min(cost(t, 1, 10) for t in list(np.unique(p)) + [np.inf]))
    assert cheap_fn.threshold < cheap_fp.threshold  # costly misses lower the threshold
    pred = predict_threshold(clf, valid, cheap_fn.threshold)
    np.testing.assert_array_equal(pred, np.where(p >= cheap_fn.threshold, 1, 0))
    assert (pred == 1).sum() > (clf.predict(valid) == 1).sum()
    with pytest.raises(ValueError, match="objective"):
        choose_threshold(clf, valid, target="class", objective="auc")


def test_cross_validation_over_dask_streams_the_partitions_in_order(datasets):
    dd = pytest.importorskip("dask.dataframe")
    from rainforest.storage import DaskSource
    table = pq.read_table(datasets("mushroom"))
    source = DaskSource(dd.from_pandas(table.to_pandas(), npartitions=3))
    a = cross_validate(DecisionTreeClassifier(max_depth=3), source, target="class", n_folds=3)
    b = cross_validate(DecisionTreeClassifier(max_depth=3), table, target="class", n_folds=3)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert source.n_passes == a.n_passes
