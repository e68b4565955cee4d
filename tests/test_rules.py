"""The exactness rules shared by the tree, the forest and BOAT (rainforest/rules.py)."""
import numpy as np
import pytest

from rainforest.criteria import ENTROPY, GAIN_RATIO, GINI, impurity
from rainforest.grow import GrowParams
from rainforest.rules import (EPSILON, branch_summary, branch_totals, depth_limit, impurity_decrease, keeps_split,
                              node_criterion, node_totals, pre_leaf, split_outcome)


def test_pre_leaf_over_arrays_is_the_rule_node_by_node():
    """The forest applies the rule to every child at once; each answer must be the one-node answer."""
    rng = np.random.default_rng(0)
    params = GrowParams(min_samples_split=5, min_samples_leaf=3)
    depth = rng.integers(0, 6, 200)
    n = rng.integers(0, 12, 200)
    weight = rng.uniform(0, 10, 200)
    imp = np.where(rng.random(200) < 0.2, 0.0, rng.uniform(0, 1, 200))
    min_weight = rng.uniform(0, 3, 200)
    together = pre_leaf(depth, n, weight, imp, params, 4, min_weight)
    one_by_one = [bool(pre_leaf(int(d), int(k), float(w), float(i), params, 4, float(m)))
                  for d, k, w, i, m in zip(depth, n, weight, imp, min_weight)]
    assert together.tolist() == one_by_one
    assert True in one_by_one and False in one_by_one


def test_pre_leaf_conditions():
    params = GrowParams(min_samples_split=4, min_samples_leaf=2)
    grows = dict(depth=1, n=10, weight=10.0, node_impurity=0.5, params=params, max_depth=depth_limit(None),
                 min_weight_leaf=1.0)
    assert not pre_leaf(**grows)
    assert pre_leaf(**{**grows, "depth": 3, "max_depth": depth_limit(3)})
    assert pre_leaf(**{**grows, "n": 3})  # below min_samples_split
    assert pre_leaf(**{**grows, "params": GrowParams(min_samples_split=4, min_samples_leaf=6)})  # 10 < 2 * 6
    assert pre_leaf(**{**grows, "weight": 1.5})  # below twice the minimum leaf weight
    assert pre_leaf(**{**grows, "node_impurity": EPSILON})  # pure


def test_impurity_decrease_is_scikit_learns_operation_order():
    child_imp = np.array([0.3, 0.45])
    child_w = np.array([7.0, 3.0])
    assert impurity_decrease(0.5, child_imp, child_w, 10.0) == 0.5 - (3.0 / 10.0 * 0.45) - (7.0 / 10.0 * 0.3)
    three = impurity_decrease(0.5, np.array([0.1, 0.2, 0.3]), np.array([2.0, 3.0, 5.0]), 10.0)
    assert three == 0.5 - 2.0 / 10.0 * 0.1 - 3.0 / 10.0 * 0.2 - 5.0 / 10.0 * 0.3


def test_split_outcome_and_keeps_split_agree():
    child_value = np.array([[4.0, 1.0], [0.0, 5.0]])
    node_imp = float(impurity(np.array([4.0, 6.0]), 10.0, GINI))
    child_imp, keep = split_outcome(node_imp, child_value, GINI, 20.0, 0.0)
    assert child_imp == [float(impurity(child_value[0], 5.0, GINI)), 0.0]
    improvement = 10.0 / 20.0 * impurity_decrease(node_imp, np.array(child_imp), np.array([5.0, 5.0]), 10.0)
    assert keep and improvement > 0
    assert split_outcome(node_imp, child_value, GINI, 20.0, improvement + 2 * EPSILON)[1] is False
    assert split_outcome(node_imp, child_value, GINI, 20.0, improvement)[1] is True
    assert keeps_split(np.array([improvement * 2]), np.array([10.0]), np.array([20.0]), improvement).tolist() == [True]


def test_node_totals_with_and_without_a_row_channel():
    block = np.array([[1.0, 2.0], [3.0, 0.5]])  # two slots, two classes: weighted counts
    value, n, weight, imp = node_totals(block, 2, ENTROPY)
    assert value.tolist() == [4.0, 2.5] and weight == 6.5 and n == 6  # rows are the weight, rounded
    assert imp == impurity(np.array([4.0, 2.5]), 6.5, ENTROPY)
    counted = np.array([[1.0, 2.0, 2.0], [3.0, 0.5, 3.0]])  # a last channel counts the rows
    assert node_totals(counted, 2, GINI)[1] == 5
    assert node_criterion(GAIN_RATIO) == ENTROPY and node_criterion(GINI) == GINI


def test_branch_totals_sum_each_branchs_slots():
    block = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 4.0], [1.0, 1.0]])
    out = branch_totals(block, np.array([0, 1, 0, 1]), 2)
    assert out.tolist() == [[1.0, 4.0], [3.0, 2.0]]


@pytest.mark.parametrize("missing_branch", [0, 1])
def test_a_split_summed_per_branch_splits_as_its_slots(missing_branch):
    """rules.branch_summary keeps of an exact split's many refined slots what splitting uses: the
    branches' totals, bit for bit (fractional weights summed in slot order), and the missing slot's
    branch, last."""
    rng = np.random.default_rng(missing_branch)
    n = 5_000
    block = rng.uniform(0, 3, (n, 3)) * rng.integers(0, 2, (n, 1))  # fractional sums, empty slots
    br = np.where(np.arange(n) < rng.integers(1, n - 1), 0, 1).astype(np.int64)
    br[-1] = missing_branch
    small_br, small_block = branch_summary(block, br, 2)
    assert small_block.shape == (2, 3) and small_br[-1] == missing_branch
    assert np.array_equal(branch_totals(small_block, small_br, 2), branch_totals(block, br, 2))
    assert not np.array_equal(branch_totals(small_block, small_br[::-1].copy(), 2), branch_totals(block, br, 2))
