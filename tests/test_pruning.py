"""Pruning: cost-complexity (scikit-learn's, node for node), C4.5 pessimistic, reduced error."""
import json

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.tree import DecisionTreeClassifier as SkTree
from sklearn.tree._tree import Tree as SkTreeArrays
from sklearn.tree._tree import _build_pruned_tree_ccp, ccp_pruning_path

from conftest import dataset_path, numeric_xy
from oracle import compare_with_sklearn
from rainforest import DecisionTreeClassifier, load
from rainforest.datasets import agrawal_table
from rainforest.errors import DataError
from rainforest.pruning import (c45_added_errors, cost_complexity_path, cost_complexity_prune, depth_first_order,
                                estimated_errors, leaf_error_estimates, parents, pessimistic_prune, prune,
                                reduced_error_prune, validation_counts)
from rainforest.tree import Tree
from rainforest.storage import ParquetSource, TableSource


def _agrawal(n=20_000, function=7):
    t = agrawal_table(n, function=function, seed=3)
    cols = [c for c in t.column_names if c != "class"]
    X = np.column_stack([t.column(c).to_numpy().astype(np.float32) for c in cols])
    return X, t.column("class").to_numpy(), cols


def _rows(name, n):
    """``n`` rows spread over a shared dataset (some files are sorted by class)."""
    t = pq.read_table(dataset_path(name))
    return t.take(np.linspace(0, t.num_rows - 1, min(n, t.num_rows)).astype(np.int64))


def _xy(name):
    return _agrawal() if name == "agrawal" else numeric_xy(name)


# -- scikit-learn as the oracle -----------------------------------------------------------------
def sklearn_arrays(tree: Tree) -> SkTreeArrays:
    """Our (binary, numeric) tree as a scikit-learn ``Tree`` object, numbered depth first as
    scikit-learn numbers its nodes, so its pruning code can run on exactly our tree."""
    order = depth_first_order(tree)
    pos = np.empty(len(order), np.int64)
    pos[order] = np.arange(len(order))
    probe = SkTree(max_depth=1).fit([[0.0], [1.0]], [0, 1]).tree_.__getstate__()["nodes"]
    nodes = np.zeros(len(order), probe.dtype)
    fc = tree.first_child[order]
    nodes["left_child"] = np.where(fc >= 0, pos[np.maximum(fc, 0)], -1)
    nodes["right_child"] = np.where(fc >= 0, pos[np.maximum(fc, 0) + 1], -1)
    nodes["feature"] = tree.feature[order]
    nodes["threshold"] = tree.threshold[order]
    nodes["impurity"] = tree.impurity[order]
    nodes["n_node_samples"] = tree.n_node_samples[order]
    nodes["weighted_n_node_samples"] = tree.weighted_n_node_samples[order]
    value = tree.value[order] / tree.value[order].sum(axis=1, keepdims=True)  # scikit-learn keeps fractions
    out = SkTreeArrays(tree.n_features, np.array([tree.n_classes], np.intp), 1)
    out.__setstate__({"max_depth": tree.max_depth, "node_count": len(order), "nodes": nodes,
                      "values": np.ascontiguousarray(value[:, None, :])})
    return out


def assert_same_tree(ours: Tree, sk) -> None:
    """Node for node: leaves, split attributes and thresholds, class distributions, sample counts."""
    assert ours.node_count == sk.node_count
    mine, theirs = [], []  # matched nodes, walked together from the roots
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        mine.append(i)
        theirs.append(j)
        assert (ours.first_child[i] < 0) == (sk.children_left[j] < 0), (i, j)
        if ours.first_child[i] >= 0:
            stack += [(ours.first_child[i], sk.children_left[j]), (ours.first_child[i] + 1, sk.children_right[j])]
    i, j = np.array(mine), np.array(theirs)
    np.testing.assert_array_equal(ours.feature[i], np.where(sk.children_left[j] >= 0, sk.feature[j], -2))
    inner = ours.first_child[i] >= 0
    np.testing.assert_array_equal(ours.threshold[i][inner], sk.threshold[j][inner])
    np.testing.assert_allclose(ours.value[i] / ours.value[i].sum(axis=1, keepdims=True), sk.value[j, 0],
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ours.weighted_n_node_samples[i], sk.weighted_n_node_samples[j], rtol=1e-12)
    np.testing.assert_allclose(ours.impurity[i], sk.impurity[j], rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(ours.n_node_samples[i], sk.n_node_samples[j])


def _alphas_to_try(path):
    """Alphas on the path (pruning exactly there), between two of them, and past the last."""
    a = np.unique(path.ccp_alphas)
    picks = a[np.linspace(1, len(a) - 1, 6).astype(int)]
    return list(picks) + [0.5 * (a[1] + a[2]), 1.5 * a[-1]]


@pytest.mark.parametrize("name", ["magic", "letter", "agrawal"])
def test_ccp_path_and_pruned_trees_are_sklearns_on_the_same_tree(name):
    # full-depth exact trees: scikit-learn's own pruning code run on our tree (ties in growth
    # cannot make the trees differ here)
    X, y, _ = _xy(name)
    tree = DecisionTreeClassifier(max_bins=None).fit(X, y).tree_
    sk = sklearn_arrays(tree)
    ours, theirs = cost_complexity_path(tree), ccp_pruning_path(sk)
    assert len(ours.ccp_alphas) > 100
    np.testing.assert_allclose(ours.ccp_alphas, theirs["ccp_alphas"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ours.impurities, theirs["impurities"], rtol=1e-12, atol=1e-15)
    assert ours.n_leaves[0] == tree.n_leaves and ours.n_leaves[-1] == 1 and np.all(np.diff(ours.n_leaves) < 0)
    for alpha in _alphas_to_try(ours):
        pruned = cost_complexity_prune(tree, alpha)
        expected = SkTreeArrays(tree.n_features, np.array([tree.n_classes], np.intp), 1)
        _build_pruned_tree_ccp(expected, sk, alpha)
        assert_same_tree(pruned, expected)
        k = np.searchsorted(ours.ccp_alphas, alpha, side="right") - 1  # the last subtree with alpha <= ccp_alpha
        assert pruned.n_leaves == ours.n_leaves[k]


CCP_CASES = [("magic", dict(max_depth=4)), ("letter", dict(max_depth=8, min_samples_leaf=20)),
             ("agrawal", dict(max_depth=6))]


@pytest.mark.parametrize("name,params", CCP_CASES)
def test_ccp_alpha_fits_sklearns_pruned_tree(name, params):
    X, y, _ = _xy(name)
    clf = DecisionTreeClassifier(max_bins=None, **params)
    assert compare_with_sklearn(clf.fit(X, y).tree_, X, y, **params).ties == 0  # so the grown trees are equal
    sk = SkTree(random_state=0, **params)
    ours, theirs = clf.cost_complexity_pruning_path(X, y), sk.cost_complexity_pruning_path(X, y)
    np.testing.assert_allclose(ours["ccp_alphas"], theirs["ccp_alphas"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ours["impurities"], theirs["impurities"], rtol=1e-12, atol=1e-15)
    for alpha in _alphas_to_try(ours)[1::2]:
        a = DecisionTreeClassifier(max_bins=None, ccp_alpha=alpha, **params).fit(X, y)
        b = SkTree(random_state=0, ccp_alpha=alpha, **params).fit(X, y)
        assert_same_tree(a.tree_, b.tree_)
        assert a.get_n_leaves() == b.get_n_leaves() < clf.get_n_leaves() and a.get_depth() == b.get_depth()
        np.testing.assert_allclose(a.feature_importances_, b.feature_importances_, rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-12)
        assert a.pruning_ == [{"method": "cost_complexity", "ccp_alpha": alpha, "nodes_before": clf.tree_.node_count,
                               "nodes_after": a.tree_.node_count}]


def test_ccp_alpha_with_sample_weights_is_sklearns():
    X, y, _ = _agrawal(8000)
    w = np.random.default_rng(1).integers(1, 4, len(y)).astype(np.float64)  # integers: sums exact in any order
    params = dict(max_depth=6)
    grown = DecisionTreeClassifier(max_bins=None, **params).fit(X, y, sample_weight=w)
    assert_same_tree(grown.tree_, SkTree(random_state=0, **params).fit(X, y, sample_weight=w).tree_)
    path = grown.cost_complexity_pruning_path(X, y, sample_weight=w)
    sk_path = SkTree(random_state=0, **params).cost_complexity_pruning_path(X, y, sample_weight=w)
    np.testing.assert_allclose(path.ccp_alphas, sk_path.ccp_alphas, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(path.impurities, sk_path.impurities, rtol=1e-12, atol=1e-15)
    for alpha in _alphas_to_try(path)[::3]:
        a = DecisionTreeClassifier(max_bins=None, ccp_alpha=alpha, **params).fit(X, y, sample_weight=w)
        assert_same_tree(a.tree_, SkTree(random_state=0, ccp_alpha=alpha, **params).fit(X, y, sample_weight=w).tree_)


def test_ccp_zero_does_not_prune_and_bad_alpha_is_refused():
    X, y, _ = _agrawal(3000)
    clf = DecisionTreeClassifier(max_bins=None, max_depth=5).fit(X, y)
    assert cost_complexity_prune(clf.tree_, 0.0) is clf.tree_ and clf.pruning_ == []
    assert cost_complexity_prune(clf.tree_, np.inf).node_count == 1
    for bad in (-0.1, np.nan, "0.1", True):
        with pytest.raises(ValueError, match="ccp_alpha"):
            DecisionTreeClassifier(ccp_alpha=bad).fit(X, y)


def test_prune_cost_complexity_after_fit_equals_ccp_alpha_and_inf_saves(tmp_path):
    X, y, _ = _agrawal(5000)
    grown = DecisionTreeClassifier(max_depth=8).fit(X, y)
    path = cost_complexity_path(grown.tree_)
    alpha = float(np.unique(path.ccp_alphas)[-4])
    fitted = DecisionTreeClassifier(max_depth=8, ccp_alpha=alpha).fit(X, y)
    assert grown.prune_cost_complexity(alpha) is grown and grown.ccp_alpha == 0.0
    assert grown.tree_.to_dict() == fitted.tree_.to_dict() and grown.pruning_ == fitted.pruning_
    assert grown.tree_.n_leaves == path.n_leaves[np.searchsorted(path.ccp_alphas, alpha, side="right") - 1] < 9
    stump = DecisionTreeClassifier(max_depth=8, ccp_alpha=np.inf).fit(X, y)
    assert stump.tree_.node_count == 1 and (stump.predict(X) == np.bincount(y).argmax()).all()
    stump.save(tmp_path / "stump.json")
    again = load(tmp_path / "stump.json")
    assert again.ccp_alpha == np.inf and again.pruning_ == stump.pruning_ and again.pruning_[0]["ccp_alpha"] == "inf"


# -- prune(): the structure ------------------------------------------------------------------------
def _collapsed_node(tree: Tree, leaves: np.ndarray, to_leaf: np.ndarray) -> np.ndarray:
    """Per row, the node where pruning stops it: the highest node of ``to_leaf`` on its path, else its leaf."""
    parent = parents(tree)
    out = leaves.copy()
    for r, leaf in enumerate(leaves):
        node = leaf
        while node != -1:
            if to_leaf[node]:
                out[r] = node
            node = parent[node]
    return out


@pytest.mark.parametrize("name,split", [("mushroom", "multiway"), ("adult_train", "binary")])
def test_prune_routes_rows_to_the_collapsed_nodes(name, split):
    # categorical branch tables (multiway and subsets), missing values: pruned trees route as the original
    table = _rows(name, 6000)
    clf = DecisionTreeClassifier(categorical_split=split, max_depth=6).fit(table, target="class")
    tree = clf.tree_
    assert (tree.cat_offset >= 0).sum() >= 3
    X = tree.encoder().encode(table)
    assert np.isnan(X).any()
    leaves = tree.apply(X)
    rng = np.random.default_rng(0)
    for p in (0.1, 0.3):
        inner = np.flatnonzero(~tree.is_leaf)[1:]  # the root stays a split
        to_leaf = np.zeros(tree.node_count, bool)
        to_leaf[rng.choice(inner, max(1, int(p * len(inner))), replace=False)] = True
        pruned = prune(tree, to_leaf)
        stop = _collapsed_node(tree, leaves, to_leaf)
        got = pruned.apply(X)
        np.testing.assert_array_equal(pruned.value[got], tree.value[stop])
        np.testing.assert_array_equal(pruned.n_node_samples[got], tree.n_node_samples[stop])
        assert len(np.unique(got)) == len(np.unique(stop)) and pruned.n_leaves < tree.n_leaves
        # a valid tree: breadth-first, children contiguous and after their parent, tables in range
        fc = pruned.first_child
        kids = np.concatenate([np.arange(f, f + n) for f, n in zip(fc, pruned.n_children) if f >= 0])
        np.testing.assert_array_equal(kids, np.arange(1, pruned.node_count))
        cat = np.flatnonzero(pruned.cat_offset >= 0)
        sizes = [len(pruned.categories[pruned.feature[i]]) + 1 for i in cat]
        assert sum(sizes) == len(pruned.cat_branch) and (pruned.cat_offset[cat] + sizes <= len(pruned.cat_branch)).all()
        assert Tree.from_dict(json.loads(pruned.to_json())).node_count == pruned.node_count
    assert prune(tree, np.zeros(tree.node_count, bool)).to_dict() == tree.to_dict()
    with pytest.raises(ValueError, match="one entry per node"):
        prune(tree, np.zeros(3, bool))


def test_ccp_on_a_multiway_tree_follows_its_own_path():
    table = _rows("adult_train", 8000)
    tree = DecisionTreeClassifier(categorical_split="multiway", criterion="entropy", max_depth=6).fit(
        table, target="class").tree_
    assert tree.n_children.max() > 2
    path = cost_complexity_path(tree)
    assert np.all(np.diff(path.ccp_alphas) >= 0) and np.all(np.diff(path.impurities) >= -1e-15)
    w = tree.weighted_n_node_samples
    for alpha in _alphas_to_try(path):
        pruned = cost_complexity_prune(tree, alpha)
        k = np.searchsorted(path.ccp_alphas, alpha, side="right") - 1
        assert pruned.n_leaves == path.n_leaves[k]
        leaf = pruned.is_leaf
        total = (pruned.weighted_n_node_samples[leaf] * pruned.impurity[leaf]).sum() / w[0]
        np.testing.assert_allclose(total, path.impurities[k], rtol=1e-12)


# -- pessimistic pruning ---------------------------------------------------------------------------
def _book_tree(leaves, root):
    """A root with one multiway categorical split into the given leaves (class counts)."""
    k = len(leaves)
    value = np.array([root] + list(leaves), np.float64)
    n = k + 1
    return Tree(feature_names=["x"], feature_kinds=["categorical"], categories=[[f"c{b}" for b in range(k)]],
                classes=["democrat", "republican"], criterion="entropy", target="party",
                feature=np.array([0] + [-2] * k, np.int32), threshold=np.array([np.nan] + [-2.0] * k),
                first_child=np.array([1] + [-1] * k, np.int32), n_children=np.array([k] + [0] * k, np.int32),
                missing_branch=np.array([0] + [-1] * k, np.int32), cat_offset=np.array([0] + [-1] * k, np.int32),
                cat_branch=np.array(list(range(k)) + [0], np.int32), value=value,
                n_node_samples=value.sum(axis=1).astype(np.int64), weighted_n_node_samples=value.sum(axis=1),
                impurity=np.zeros(n))


def test_pessimistic_pruning_reproduces_quinlans_example():
    # C4.5 (Quinlan 1993, ch. 4): leaves of 6, 9 and 1 cases without errors estimate
    # 6 x 0.206 + 9 x 0.143 + 1 x 0.750 = 3.273 errors; the node as a leaf (16 cases, 1 error)
    # 16 x 0.157 = 2.512, so the subtree is replaced by a leaf.
    assert c45_added_errors(6, 0) / 6 == pytest.approx(0.206, abs=5e-4)
    assert c45_added_errors(9, 0) / 9 == pytest.approx(0.143, abs=5e-4)
    assert c45_added_errors(1, 0) == pytest.approx(0.750, abs=5e-4)
    assert (1 + c45_added_errors(16, 1)) / 16 == pytest.approx(0.157, abs=5e-4)
    tree = _book_tree([[6, 0], [9, 0], [0, 1]], [15, 1])
    est = leaf_error_estimates(tree)
    # the book multiplies U rounded to three decimals: so within N x 0.0005
    assert est[1:].sum() == pytest.approx(3.273, abs=16 * 5e-4) and est[0] == pytest.approx(2.512, abs=16 * 5e-4)
    assert est[0] < est[1:].sum() and estimated_errors(tree) == est[1:].sum()
    pruned = pessimistic_prune(tree)
    assert pruned.node_count == 1 and pruned.value[0].tolist() == [15, 1]
    # a split that pays for itself stays: as a leaf 100 rows with 50 errors
    kept = pessimistic_prune(_book_tree([[50, 0], [0, 50]], [50, 50]))
    assert kept.node_count == 3


def test_c45_added_errors_branches():
    # the branches of C4.5's AddErrs, from its formulas
    assert c45_added_errors(0, 0) == 0.0
    assert c45_added_errors(4, 0, 0.1) == pytest.approx(4 * (1 - 0.1 ** 0.25))
    zero, one = c45_added_errors(10, 0), c45_added_errors(10, 1)
    assert c45_added_errors(10, 0.4) == pytest.approx(zero + 0.4 * (one - zero))  # fractional errors
    assert c45_added_errors(3, 2.6) == pytest.approx(0.67 * 0.4)  # e + 0.5 >= n
    z = 0.84 + (0.25 - 0.84) * (0.25 - 0.20) / 0.20  # C4.5's table, interpolated at CF = 25%
    c = z * z
    pr = (3.5 + c / 2 + np.sqrt(c * (3.5 * (1 - 3.5 / 40) + c / 4))) / (40 + c)
    assert c45_added_errors(40, 3) == pytest.approx(40 * pr - 3, rel=1e-12)
    assert c45_added_errors(40, 3, 0.1) > c45_added_errors(40, 3, 0.25) > c45_added_errors(40, 3, 0.4)
    for bad in (0.0, 1.0, -0.5, "0.25"):
        with pytest.raises(ValueError, match="confidence"):
            c45_added_errors(10, 1, bad)


def _best_estimate(tree: Tree, est: np.ndarray, i: int = 0) -> float:
    """Brute force: the least estimated errors over every pruning of the subtree at ``i``."""
    if tree.first_child[i] < 0:
        return est[i]
    below = sum(_best_estimate(tree, est, c) for c in range(tree.first_child[i], tree.first_child[i] + tree.n_children[i]))
    return min(est[i], below)


@pytest.mark.parametrize("name,split,cf", [("magic", "binary", 0.25), ("mushroom", "multiway", 0.1),
                                           ("adult_train", "binary", 0.25), ("adult_train", "multiway", 0.05)])
def test_pessimistic_pruning_properties(name, split, cf, tmp_path):
    table = _rows(name, 8000)
    clf = DecisionTreeClassifier(categorical_split=split, criterion="entropy", max_depth=8).fit(table, target="class")
    before = clf.tree_
    acc_before = clf.score(table, target="class")
    clf.prune_pessimistic(cf)
    after = clf.tree_
    assert after.node_count < before.node_count or name == "mushroom"  # mushroom's tree is near perfect
    assert estimated_errors(after, cf) <= estimated_errors(before, cf) + 1e-9
    assert estimated_errors(after, cf) == pytest.approx(_best_estimate(before, leaf_error_estimates(before, cf)))
    assert pessimistic_prune(after, cf).node_count == after.node_count  # a fixed point
    assert clf.pruning_ == [{"method": "pessimistic", "confidence": cf, "nodes_before": before.node_count,
                             "nodes_after": after.node_count}]
    # a pruned leaf predicts the majority of the training rows it now holds, and they reach it
    majority = after.value[after.is_leaf].max(axis=1).sum() / after.value[0].sum()
    assert clf.score(table, target="class") == pytest.approx(majority, abs=1e-12)
    assert majority <= acc_before
    _assert_model_round_trips(clf, table, tmp_path)


def _assert_model_round_trips(clf, table, tmp_path):
    """predict, export_text, to_sql, feature_importances_ and save/load agree for a pruned tree."""
    pred = clf.predict(table)
    text = clf.export_text()
    assert text.count("class: ") == clf.tree_.n_leaves
    imp = clf.feature_importances_
    assert imp.sum() == pytest.approx(1.0) and (imp[np.unique(clf.tree_.feature[~clf.tree_.is_leaf])] > 0).all()
    assert (imp[np.setdiff1d(np.arange(len(imp)), clf.tree_.feature)] == 0).all()
    con = duckdb.connect()
    con.register("t", table)
    sql = clf.tree_.to_sql("duckdb")
    in_db = np.array([r[0] for r in con.execute(f"SELECT {sql} FROM t").fetchall()], dtype=object)
    assert (in_db == pred.astype(object)).all()
    path = tmp_path / "pruned.json"
    clf.save(path)
    again = load(path)
    assert again.pruning_ == clf.pruning_ and again.get_params() == clf.get_params()
    assert again.tree_.to_dict() == clf.tree_.to_dict() and again.export_text() == text
    np.testing.assert_array_equal(again.predict(table), pred)
    np.testing.assert_array_equal(again.feature_importances_, imp)


def test_ccp_alpha_model_saves_and_loads(tmp_path):
    table = _rows("adult_train", 6000)
    clf = DecisionTreeClassifier(ccp_alpha=0.002).fit(table, target="class")
    assert 1 < clf.tree_.node_count < clf.pruning_[0]["nodes_before"]
    _assert_model_round_trips(clf, table, tmp_path)
    assert load(tmp_path / "pruned.json").ccp_alpha == 0.002


# -- reduced-error pruning -------------------------------------------------------------------------
def _reference_counts(tree: Tree, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Brute force: every validation row walked down the tree in Python, counted at every node it passes."""
    counts = np.zeros((tree.node_count, tree.n_classes))
    for x, label, weight in zip(X, y, w):
        node = 0
        while True:
            counts[node, label] += weight
            if tree.first_child[node] < 0:
                break
            v = x[tree.feature[node]]
            if np.isnan(v):
                b = tree.missing_branch[node]
            elif tree.cat_offset[node] >= 0:
                n_cat = len(tree.categories[tree.feature[node]])
                b = tree.cat_branch[tree.cat_offset[node] + min(int(v), n_cat)]
            else:
                b = 0 if v <= tree.threshold[node] else 1
            node = tree.first_child[node] + b
    return counts


def _reference_rep(tree: Tree, counts: np.ndarray):
    """Brute force reduced-error pruning, recursively: (nodes made leaves, validation errors)."""
    to_leaf = np.zeros(tree.node_count, bool)
    as_leaf = counts.sum(axis=1) - counts[np.arange(tree.node_count), np.argmax(tree.value, axis=1)]

    def walk(i):
        if tree.first_child[i] < 0:
            return as_leaf[i]
        below = sum(walk(c) for c in range(tree.first_child[i], tree.first_child[i] + tree.n_children[i]))
        if as_leaf[i] <= below:
            to_leaf[i] = True
            return as_leaf[i]
        return below

    return to_leaf, walk(0)


def test_reduced_error_pruning_one_pass_and_brute_force(tmp_path):
    train = _rows("adult_train", 8000)
    valid = _rows("adult_test", 3000)
    weights = np.random.default_rng(2).choice([0.5, 1.0, 2.0], valid.num_rows)
    pq.write_table(valid.append_column("w", pa.array(weights)), tmp_path / "valid.parquet")
    clf = DecisionTreeClassifier(max_depth=10, min_samples_leaf=2).fit(train, target="class")
    tree = clf.tree_
    X = tree.encoder().encode(valid)
    assert np.isnan(X).any() and (tree.cat_offset >= 0).any()
    y = np.searchsorted(tree.classes, valid.column("class").to_numpy(zero_copy_only=False))
    for weighted in (False, True):
        w = weights if weighted else np.ones(valid.num_rows)
        expected = _reference_counts(tree, X, y, w)
        source = ParquetSource(str(tmp_path / "valid.parquet"))
        counts = validation_counts(tree, source, "class", "w" if weighted else None, batch_size=1000)
        assert source.n_passes == 1
        np.testing.assert_allclose(counts, expected, rtol=1e-12)
        to_leaf, errors = _reference_rep(tree, expected)
        pruned, got_errors = reduced_error_prune(tree, counts)
        assert pruned.to_dict() == prune(tree, to_leaf).to_dict()
        assert got_errors == pytest.approx(errors)
        assert pruned.node_count < tree.node_count


def test_prune_reduced_error_on_the_estimator(tmp_path):
    train = pq.read_table(dataset_path("adult_train"))
    valid = pq.read_table(dataset_path("adult_test"))
    path = tmp_path / "valid.parquet"
    pq.write_table(valid, path)
    clf = DecisionTreeClassifier(min_samples_leaf=1).fit(train, target="class")
    before = clf.tree_.node_count
    acc = clf.score(valid, target="class")
    source = ParquetSource(str(path))
    passes = source.n_passes
    assert clf.prune_reduced_error(source, target="class") is clf
    assert source.n_passes - passes == 1
    record = clf.pruning_[-1]
    assert record["method"] == "reduced_error" and record["nodes_before"] == before
    assert clf.tree_.node_count == record["nodes_after"] < before / 3
    assert record["validation_rows"] == valid.num_rows
    assert record["validation_errors_before"] == pytest.approx((1 - acc) * valid.num_rows)
    assert record["validation_errors_after"] == pytest.approx((1 - clf.score(valid, target="class")) * valid.num_rows)
    assert record["validation_errors_after"] <= record["validation_errors_before"]
    # pruning again on the same rows changes nothing: every kept split earns its place
    again = clf.prune_reduced_error(valid, target="class")
    assert again.pruning_[-1]["nodes_after"] == record["nodes_after"]
    _assert_model_round_trips(clf, valid, tmp_path)


def test_reduced_error_with_arrays_and_weights():
    X, y, _ = _agrawal(6000, function=5)
    Xv, yv, _ = _agrawal(9000, function=5)
    Xv, yv = Xv[6000:], yv[6000:]  # rows the tree was not grown on
    clf = DecisionTreeClassifier(max_bins=None).fit(X, y)
    grown = clf.tree_
    w = np.where(yv == yv[0], 3.0, 1.0)
    errors_before = float(np.sum(w * (clf.predict(Xv) != yv)))
    assert clf.prune_reduced_error(Xv, yv, sample_weight=w) is clf
    record = clf.pruning_[-1]
    assert record["validation_rows"] == pytest.approx(w.sum())
    assert record["validation_errors_before"] == pytest.approx(errors_before)
    assert record["validation_errors_after"] == pytest.approx(float(np.sum(w * (clf.predict(Xv) != yv))))
    assert record["validation_errors_after"] < errors_before and clf.tree_.node_count < grown.node_count
    # the weights matter: unweighted counts give another pruning of the same tree
    table = pa.table({**{f"x{j}": Xv[:, j] for j in range(Xv.shape[1])}, "y": yv})
    unweighted, _ = reduced_error_prune(grown, validation_counts(grown, TableSource(table=table), "y"))
    assert unweighted.to_dict() != clf.tree_.to_dict()


def test_reduced_error_bad_validation_data(tmp_path):
    train = pq.read_table(dataset_path("buys_computer"))
    clf = DecisionTreeClassifier().fit(train, target="class")
    other = train.set_column(train.column_names.index("class"), "class",
                             pa.array(["maybe"] * train.num_rows))
    with pytest.raises(DataError, match="'maybe'"):
        clf.prune_reduced_error(other, target="class")
    with pytest.raises(DataError, match="not found"):
        clf.prune_reduced_error(train.drop_columns([train.column_names[0]]), target="class")
    with pytest.raises(DataError, match="target"):
        clf.prune_reduced_error(train)
