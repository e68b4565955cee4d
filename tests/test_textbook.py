"""The textbook running example (Han, Kamber & Pei): buys_computer."""
import pytest

from conftest import dataset_path
from rainforest import DecisionTreeClassifier, root_avc_group
from rainforest.criteria import entropy, gini_index, information_gain, partition_impurity


@pytest.fixture(scope="module")
def group():
    return root_avc_group(dataset_path("buys_computer"), "class")


def test_information_gain_of_each_attribute(group):
    assert group.classes == ["No", "Yes"]
    assert entropy(group["age"].counts.sum(axis=0)) == pytest.approx(0.940, abs=5e-4)
    # the book rounds Info_A(D) before subtracting, hence 1e-3
    assert information_gain(group["age"].counts) == pytest.approx(0.246, abs=1e-3)
    assert information_gain(group["income"].counts) == pytest.approx(0.029, abs=1e-3)
    assert information_gain(group["student"].counts) == pytest.approx(0.151, abs=1e-3)
    assert information_gain(group["credit_rating"].counts) == pytest.approx(0.048, abs=1e-3)


def test_avc_set_counts(group):
    age = group["age"]
    assert age.values == ["31-40", "<=30", ">40"]
    assert age.counts.tolist() == [[0, 4], [3, 2], [2, 3]]


def test_information_gain_splits_the_root_on_age():
    clf = DecisionTreeClassifier(criterion="entropy", categorical_split="multiway")
    clf.fit(dataset_path("buys_computer"), target="class")
    tree = clf.tree_
    assert tree.feature_names[tree.feature[0]] == "age"
    assert tree.n_children[0] == 3
    # the middle-aged branch is a pure "yes" leaf, as in the book's figure
    middle = tree.first_child[0] + tree.cat_branch[tree.cat_offset[0] + tree.categories[0].index("31-40")]
    assert tree.first_child[middle] == -1 and tree.classes[tree.value[middle].argmax()] == "Yes"
    assert clf.score(dataset_path("buys_computer"), target="class") == 1.0


def test_gini_of_income_subsets(group):
    total = group["income"].counts.sum(axis=0)
    assert gini_index(total) == pytest.approx(0.459, abs=5e-4)
    inc = dict(zip(group["income"].values, group["income"].counts))
    low_medium = inc["Low"] + inc["Medium"]
    assert partition_impurity([low_medium, inc["High"]], "gini") == pytest.approx(0.443, abs=5e-4)
    others = [partition_impurity([inc[a] + inc[b], inc[c]], "gini")
              for a, b, c in [("Low", "High", "Medium"), ("Medium", "High", "Low")]]
    assert all(g > 0.443 for g in others)


def test_best_binary_subset_on_income_is_low_medium_vs_high():
    clf = DecisionTreeClassifier(criterion="gini", max_depth=1)
    clf.fit(dataset_path("buys_computer"), target="class", features=["income"])
    t = clf.tree_
    cats = t.categories[0]
    branch = {c: t.cat_branch[t.cat_offset[0] + k] for k, c in enumerate(cats)}
    assert branch["Low"] == branch["Medium"] != branch["High"]
    w = t.weighted_n_node_samples
    kids = [t.first_child[0], t.first_child[0] + 1]
    assert sum(w[k] / w[0] * t.impurity[k] for k in kids) == pytest.approx(0.443, abs=5e-4)


def test_gain_ratio_of_income(group):
    from rainforest.criteria import gain_ratio, split_info
    income = group["income"].counts  # 4 low, 6 medium, 4 high
    assert split_info(income) == pytest.approx(1.557, abs=5e-4)
    assert gain_ratio(income) == pytest.approx(0.019, abs=1e-3)


def test_gain_ratio_tree_splits_the_root_on_age(group):
    from rainforest.criteria import gain_ratio
    ratios = {a: gain_ratio(group[a].counts) for a in ("age", "income", "student", "credit_rating")}
    assert max(ratios, key=ratios.get) == "age"
    clf = DecisionTreeClassifier(criterion="gain_ratio", categorical_split="multiway")
    clf.fit(dataset_path("buys_computer"), target="class")
    t = clf.tree_
    assert t.feature_names[t.feature[0]] == "age" and t.n_children[0] == 3
    assert clf.score(dataset_path("buys_computer"), target="class") == 1.0
