"""Naive Bayes in one pass: the textbook example, scikit-learn's numbers, partial_fit, out of core."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path, numeric_xy
from rainforest import DataError, NaiveBayesClassifier
from rainforest.storage import ParquetSource


def test_textbook_buys_computer():
    nb = NaiveBayesClassifier(alpha=0).fit(dataset_path("buys_computer"), target="class")
    assert nb.n_passes_ == 1
    x = pa.table({"age": ["<=30"], "income": ["Medium"], "student": ["Yes"], "credit_rating": ["Fair"]})
    joint = dict(zip(nb.classes_, np.exp(nb.predict_joint_log_proba(x))[0]))
    assert joint["Yes"] == pytest.approx(0.028, abs=5e-4)  # P(X|yes)P(yes) = 0.044 x 0.643
    assert joint["No"] == pytest.approx(0.007, abs=5e-4)  # P(X|no)P(no) = 0.019 x 0.357
    assert nb.predict(x)[0] == "Yes"


def test_feature_kinds_name_each_column_and_are_a_copy():
    from rainforest.schema import CATEGORICAL, NUMERIC

    table = pa.table({"age": [30.0, 40.0, 50.0], "city": ["a", "b", "a"], "y": ["p", "q", "p"]})
    nb = NaiveBayesClassifier().fit(table, target="y")
    assert nb.feature_kinds_ == {"age": NUMERIC, "city": CATEGORICAL}
    nb.feature_kinds_["age"] = CATEGORICAL  # a copy: the model keeps its own
    assert nb.feature_kinds_["age"] == NUMERIC
    assert not hasattr(NaiveBayesClassifier(), "feature_kinds_")


def test_laplacian_correction_of_zero_counts():
    # 1,000 "yes" rows: income low 0, medium 990, high 10; a few "no" rows make "low" a known value
    income = ["medium"] * 990 + ["high"] * 10 + ["low", "medium", "high"]
    label = ["yes"] * 1000 + ["no"] * 3
    nb = NaiveBayesClassifier(alpha=1).fit(pa.table({"income": income, "buys": label}), target="buys")
    yes = list(nb.classes_).index("yes")
    probs = dict(zip(nb.categories_[0], np.exp(nb.feature_log_prob_[0][yes])))
    assert probs["low"] == pytest.approx(1 / 1003, rel=1e-12)
    assert probs["medium"] == pytest.approx(991 / 1003, rel=1e-12)
    assert probs["high"] == pytest.approx(11 / 1003, rel=1e-12)


@pytest.mark.parametrize("name", ["magic", "letter", "shuttle"])
def test_gaussian_equals_sklearn(name):
    from sklearn.naive_bayes import GaussianNB
    X, y, _ = numeric_xy(name, np.float64)
    nb = NaiveBayesClassifier(batch_size=1000).fit(X, y)
    sk = GaussianNB().fit(X, y)
    np.testing.assert_allclose(nb.theta_, sk.theta_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(nb.var_, sk.var_, rtol=1e-9)
    np.testing.assert_allclose(nb.predict_proba(X), sk.predict_proba(X), atol=1e-9)
    np.testing.assert_allclose(nb.predict_log_proba(X[:500]), sk.predict_log_proba(X[:500]), rtol=1e-9, atol=1e-9)
    assert np.mean(nb.predict(X) == sk.predict(X)) == 1.0


def test_gaussian_var_smoothing_and_weights_equal_sklearn():
    from sklearn.naive_bayes import GaussianNB
    X, y, _ = numeric_xy("magic", np.float64)
    w = np.random.default_rng(0).uniform(0.2, 3.0, size=len(y))
    nb = NaiveBayesClassifier(var_smoothing=1e-3).fit(X, y, sample_weight=w)
    sk = GaussianNB(var_smoothing=1e-3).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(nb.predict_proba(X), sk.predict_proba(X), atol=1e-9)
    np.testing.assert_allclose(nb.class_count_, sk.class_count_, rtol=1e-12)


@pytest.mark.parametrize("name", ["mushroom", "connect_4"])
def test_categorical_equals_sklearn(name):
    from sklearn.naive_bayes import CategoricalNB
    from sklearn.preprocessing import OrdinalEncoder
    table = pq.read_table(dataset_path(name))
    features = [c for c in table.column_names if c != "class"]
    if name == "mushroom":  # CategoricalNB has no missing values: drop the column that has them
        features = [c for c in features if table.column(c).null_count == 0]
    nb = NaiveBayesClassifier(categorical_features=features).fit(table, target="class", features=features)
    raw = np.column_stack([table.column(c).to_numpy(zero_copy_only=False) for c in features]).astype(str)
    enc = OrdinalEncoder(categories=[[str(v) for v in cats] for cats in nb.categories_]).fit(raw)
    sk = CategoricalNB(alpha=1.0).fit(enc.transform(raw), table.column("class").to_numpy(zero_copy_only=False))
    X = table.select(features)
    np.testing.assert_allclose(nb.predict_proba(X), sk.predict_proba(enc.transform(raw)), atol=1e-9)
    for ours, theirs in zip(nb.feature_log_prob_, sk.feature_log_prob_):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_partial_fit_over_ten_batches_equals_one_fit():
    table = pq.read_table(dataset_path("adult_train"))
    whole = NaiveBayesClassifier().fit(table, target="class")
    parts = NaiveBayesClassifier()
    bounds = np.linspace(0, table.num_rows, 11).astype(int)
    for a, b in zip(bounds[:-1], bounds[1:]):
        parts.partial_fit(table.slice(a, b - a), target="class")
    np.testing.assert_allclose(parts.theta_, whole.theta_, rtol=1e-12)
    np.testing.assert_allclose(parts.var_, whole.var_, rtol=1e-10)
    np.testing.assert_array_equal(parts.class_count_, whole.class_count_)
    for p, w in zip(parts.category_count_, whole.category_count_):
        np.testing.assert_array_equal(p, w)
    test = dataset_path("adult_test")
    np.testing.assert_allclose(parts.predict_proba(test), whole.predict_proba(test), atol=1e-10)


def test_one_pass_over_parquet_with_nulls_and_unseen_values():
    source = ParquetSource(dataset_path("adult_train"))
    nb = NaiveBayesClassifier().fit(source, target="class")
    assert nb.n_passes_ == 1 and source.n_passes == 1
    assert nb.score(dataset_path("adult_test"), target="class") > 0.80
    t = pq.read_table(dataset_path("adult_test")).drop_columns(["class"]).slice(0, 50)
    odd = t.set_column(t.schema.get_field_index("workclass"), "workclass", pa.array(["Martian"] * 50))
    assert np.isfinite(nb.predict_log_proba(odd)).all()  # an unseen category is skipped, like a missing one


def test_numeric_columns_with_and_without_nulls_and_of_any_type_fit_together():
    """A batch's numeric columns reach the moment kernel as they are decoded: zero-copy in their own
    type (floats and integers without nulls) or filled (nulls as NaN); all of them are counted."""
    rng = np.random.default_rng(3)
    n = 1000
    y = rng.integers(0, 2, n)
    plain = rng.normal(y * 2.0, 1.0)
    holes = np.where(rng.random(n) < 0.2, np.nan, rng.normal(-y, 2.0))
    ints = rng.integers(0, 50, n) + 10 * y
    table = pa.table({"plain": plain, "holes": pa.array(holes, from_pandas=True), "ints": ints.astype(np.int32),
                      "y": y})
    nb = NaiveBayesClassifier(batch_size=300).fit(table, target="y")
    assert nb.n_passes_ == 1
    for j, values in enumerate([plain, holes, ints.astype(float)]):
        want = [np.nanmean(values[y == c]) for c in (0, 1)]
        np.testing.assert_allclose(nb.theta_[:, j], want, rtol=1e-12)
        np.testing.assert_allclose(nb.var_[:, j] - nb.epsilon_, [np.nanvar(values[y == c]) for c in (0, 1)],
                                   rtol=1e-10)


def test_one_pass_moments_fall_back_to_two_passes_where_they_would_lose_digits():
    """With a known shift (the class means of earlier batches) the moments take one pass; a shift far
    from the values, a missing value or an unknown shift gives the two-pass moments instead."""
    from rainforest.bayes_counts import column_moments

    rng = np.random.default_rng(5)
    codes = rng.integers(0, 2, 5000).astype(np.uint8)
    rows = np.bincount(codes).astype(np.float64)
    x = 1e9 + rng.normal(codes * 0.5, 1e-3)  # a tiny spread far from zero
    small = x - 1e9  # exact (Sterbenz): the reference moments, free of the offset's rounding
    want_mean = [1e9 + small[codes == c].mean() for c in (0, 1)]
    want_m2 = [((small[codes == c] - small[codes == c].mean()) ** 2).sum() for c in (0, 1)]

    def check(values, shift):
        W, mean, M2, spread = column_moments(values, codes, None, 2, np.asarray(shift, np.float64), rows)
        np.testing.assert_array_equal(W, rows)
        np.testing.assert_allclose(mean, want_mean, rtol=1e-15)
        np.testing.assert_allclose(M2, want_m2, rtol=1e-9)
        # the spread merges the classes' means (~1e9 each), so their difference keeps fewer digits;
        # it only scales var_smoothing
        assert spread[0] == len(values) and spread[2] == pytest.approx(((small - small.mean()) ** 2).sum(), rel=1e-6)

    check(x, [1e9, 1e9 + 0.5])  # near: one pass
    check(x, [np.nan, 1e9])  # a class seen first: two passes
    far = [0.0, 0.0]  # one pass from 0 would cancel 1e18-sized sums down to ~1e-3: no digit left
    naive = [(x[codes == c] ** 2).sum() - x[codes == c].sum() ** 2 / rows[c] for c in (0, 1)]
    assert not np.allclose(naive, want_m2, rtol=1e-3)
    check(x, far)
    holes = x.copy()
    holes[::7] = np.nan
    W, mean, M2, _ = column_moments(holes, codes, None, 2, np.array([1e9, 1e9 + 0.5]), rows)
    kept = ~np.isnan(holes)
    np.testing.assert_array_equal(W, [np.sum(kept & (codes == c)) for c in (0, 1)])
    np.testing.assert_allclose(mean, [holes[kept & (codes == c)].mean() for c in (0, 1)], rtol=1e-15)


@pytest.mark.parametrize("k", [1, 2, 4, 5, 7])
def test_shifted_sums_per_class_equal_numpy(k):
    """Up to MASKED_CLASSES classes the sums are read once per class (vectorised), above it once for
    all; both are each class's sums of x - shift and its square, and a NaN or an infinity reaches
    its class's sums so that column_moments takes two passes."""
    from rainforest.bayes_counts import MASKED_CLASSES, _shifted_sums

    assert 2 <= MASKED_CLASSES < 5
    rng = np.random.default_rng(k)
    codes = rng.integers(0, k, 10_001).astype(np.uint8)
    shift = rng.normal(100.0, 5.0, k)
    for x in (rng.normal(100.0, 30.0, codes.size), rng.integers(0, 200, codes.size).astype(np.int32)):
        S, Q = _shifted_sums(x, codes, k, shift)
        d = x - shift[codes]
        np.testing.assert_allclose(S, [d[codes == c].sum() for c in range(k)], rtol=1e-10)
        np.testing.assert_allclose(Q, [(d[codes == c] ** 2).sum() for c in range(k)], rtol=1e-12)
    for bad in (np.nan, np.inf):
        x = rng.normal(100.0, 30.0, codes.size)
        x[7] = bad
        S, Q = _shifted_sums(x, codes, k, shift)
        assert not np.isfinite(Q[codes[7]]) and np.isfinite(np.delete(S, codes[7])).all()


def test_moments_drifting_across_batches_equal_numpy():
    """Sorted data whose values move far between batches: each batch's shift is the earlier batches'
    mean, far from its own values, and the moments stay those of numpy."""
    rng = np.random.default_rng(8)
    n = 4000
    y = rng.integers(0, 2, n)
    level = np.repeat([0.0, 1e8, 1e12, -1e6], n // 4)  # a new level every batch of 1,000 rows
    x = level + rng.normal(y, 1e-2)
    ints = (np.repeat([0, 1 << 40, 7, -(1 << 35)], n // 4) + rng.integers(0, 9, n) + y).astype(np.int64)
    nb = NaiveBayesClassifier(batch_size=1000, var_smoothing=0).fit(pa.table({"x": x, "i": ints, "y": y}),
                                                                    target="y")
    for j, values in enumerate([x, ints.astype(np.float64)]):
        np.testing.assert_allclose(nb.theta_[:, j], [values[y == c].mean() for c in (0, 1)], rtol=1e-12)
        np.testing.assert_allclose(nb.var_[:, j], [values[y == c].var() for c in (0, 1)], rtol=1e-9)


def test_label_codes_are_narrow_and_close_gaps():
    from rainforest.bayes_counts import _label_codes

    codes, labels, rows = _label_codes(pa.array([7, 9, 9, 7, 12], pa.int8()))  # 8, 10 and 11 absent
    assert codes.dtype == np.uint8 and labels == [7, 9, 12]
    np.testing.assert_array_equal(codes, [0, 1, 1, 0, 2])
    np.testing.assert_array_equal(rows, [2, 2, 1])
    codes, labels, rows = _label_codes(pa.array([0, 300, 5], pa.int32()))  # more than 256 possible codes
    assert codes.dtype == np.int64 and labels == [0, 5, 300]
    np.testing.assert_array_equal(codes, [0, 2, 1])
    codes, labels, rows = _label_codes(pa.array(["b", "a", "b"]))
    assert codes.dtype == np.uint8 and labels == ["b", "a"]
    np.testing.assert_array_equal(rows, [2, 1])


def test_binned_numerics_take_two_passes_and_learn():
    X, y, _ = numeric_xy("magic", np.float64)
    binned = NaiveBayesClassifier(numeric="binned", max_bins=32).fit(X, y)
    assert binned.n_passes_ == 2
    assert all(t.shape[0] == 2 and t.shape[1] <= 32 for t in binned.category_count_)
    gaussian = NaiveBayesClassifier().fit(X, y)
    assert binned.score(X, y) > gaussian.score(X, y)  # magic is far from normal
    with pytest.raises(ValueError, match="partial_fit"):
        NaiveBayesClassifier(numeric="binned").partial_fit(X, y)


def test_missing_numeric_values_are_skipped():
    X, y, _ = numeric_xy("magic", np.float64)
    Xm = X.copy()
    Xm[::3, 0] = np.nan
    nb = NaiveBayesClassifier().fit(Xm, y)
    keep = ~np.isnan(Xm[:, 0])
    ref = NaiveBayesClassifier().fit(X[keep], y[keep])
    np.testing.assert_allclose(nb.theta_[:, 0], ref.theta_[:, 0], rtol=1e-12)
    assert np.isfinite(nb.predict_log_proba(Xm)).all()


def test_bad_input():
    with pytest.raises(DataError, match="single class"):
        NaiveBayesClassifier().fit(np.ones((5, 2)), np.zeros(5))
    with pytest.raises(DataError, match="'x0'"):
        NaiveBayesClassifier().fit(np.array([[1.0], [np.inf], [2.0]]), np.array([0, 1, 0]))
    X = np.arange(20.0).reshape(10, 2)
    X[7, 1] = -np.inf  # in the second batch of 4 rows: named by its column and its row in the data
    with pytest.raises(DataError, match=r"'x1' .* holds -inf at row 7"):
        NaiveBayesClassifier(batch_size=4).fit(X, np.arange(10) % 2)
    with pytest.raises(ValueError, match="numeric"):
        NaiveBayesClassifier(numeric="kernel").fit(np.ones((5, 2)), np.arange(5) % 2)


def test_gaussian_terms_kernel_is_numpys_expression_to_the_bit():
    """Prediction adds each numeric attribute's Gaussian term in a kernel: the same floats, bit for bit,
    as numpy's ``-0.5 * log(2 pi var) - 0.5 * (x - theta) ** 2 / var`` added where x is not NaN."""
    from rainforest.bayes_state import add_gaussian_terms

    rng = np.random.default_rng(5)
    for n_classes in (2, 7):
        x = rng.normal(3.0, 1e3, 5000) * rng.choice([1e-6, 1.0, 1e6], 5000)
        x[rng.random(5000) < 0.1] = np.nan
        theta = rng.normal(0.0, 1e3, n_classes)
        var = rng.random(n_classes) * 1e4 + 1e-9
        start = rng.normal(size=(5000, n_classes))
        expected = start.copy()
        ok = ~np.isnan(x)
        term = -0.5 * np.log(2.0 * np.pi * var)[None, :] - 0.5 * (x[:, None] - theta[None, :]) ** 2 / var
        expected[ok] += term[ok]
        got = start.copy()
        add_gaussian_terms(x, theta, var, -0.5 * np.log(2.0 * np.pi * var), got)
        assert np.array_equal(got, expected)


def test_table_terms_kernel_is_numpys_masked_gather_to_the_bit():
    """A counted attribute's log-probabilities are added in a kernel: numpy's ``jll[ok] +=
    log_probs[:, codes[ok]].T`` (codes -1: missing or unseen, skipped), bit for bit."""
    from rainforest.bayes_state import add_table_terms

    rng = np.random.default_rng(6)
    for n_classes, n_values in ((2, 5), (7, 300)):
        codes = rng.integers(-1, n_values, 4000)
        log_probs = np.log(rng.random((n_classes, n_values)))
        start = rng.normal(size=(4000, n_classes))
        expected = start.copy()
        ok = codes >= 0
        expected[ok] += log_probs[:, codes[ok]].T
        got = start.copy()
        add_table_terms(codes, log_probs, got)
        assert np.array_equal(got, expected)

