"""The regression tree: CART's variance reduction over sources of any size, on the classifier's engine.

A regressor's AVC cells hold, per (node, attribute value), the weight, the weighted sum of the target
and of its square (:func:`rainforest.counting.add_row`), the target less the middle of its range so
that the sums keep their precision (:func:`rainforest.profile.target_shift`); the split search ranks
thresholds by scikit-learn's proxy (:func:`rainforest.split_scores.score_binary`), and every pass, row
store and memory bound is the classifier's.
"""
from __future__ import annotations

import numpy as np

from .base import Regressor
from .constraints import REGRESSION_TREE_PARAMS
from .dask_predict import lazy_on_dask
from .model_file import register_reader
from .tree_estimator import TreeEstimator

__all__ = ["DecisionTreeRegressor"]


@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class DecisionTreeRegressor(TreeEstimator, Regressor):
    """A regression tree grown from AVC-groups, over data of any size.

    The same engine, passes and memory bound as :class:`rainforest.DecisionTreeClassifier`; a split
    minimises the children's weighted variance (scikit-learn's ``squared_error``), a leaf predicts
    the weighted mean target of its training rows. In exact mode (``max_bins=None``) it builds the
    tree scikit-learn's ``DecisionTreeRegressor`` builds, node for node.

    Parameters
    ----------
    criterion : {"squared_error"}, default="squared_error"
        Variance reduction (CART's least squares). The absolute error is not offered: its best split
        needs the children's medians, which no pass of mergeable sums gives.
    max_bins : int or None, default=255
        Numeric attributes are cut into at most this many quantile bins; ``None`` is exact mode
        (thresholds midway between adjacent values present at the node). In exact mode a regressor
        counts one AVC slot per distinct value.
    max_depth : int or None, default=None
    min_samples_split : int or float, default=2
    min_samples_leaf : int or float, default=1
    min_weight_fraction_leaf : float, default=0.0
    min_impurity_decrease : float, default=0.0
        As :class:`rainforest.DecisionTreeClassifier`'s, the impurity being the weighted variance.
    ccp_alpha : float, default=0.0
        Minimal cost-complexity pruning after growth, as scikit-learn's.
    categorical_features : "auto" or list, default="auto"
        Columns to treat as categorical besides string and boolean columns. A categorical split
        sends the categories whose mean target is below a cut left (the optimal two-way subset for
        squared error: Breiman et al., 1984).
    memory_budget, algorithm, spill_dir, batch_size, sample_size, n_jobs, random_state, verbose
        As :class:`rainforest.DecisionTreeClassifier`'s.

    Attributes
    ----------
    tree_ : Tree
        The fitted tree; ``tree_.value[:, 0]`` is each node's weighted mean target.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Feature names, when the training data had named columns.
    n_passes_ : int
        Passes over the data made by the last ``fit``, the profiling pass included.
    n_passes_per_level_ : list of int
    grow_stats_ : GrowStats
    pruning_ : list of dict

    Examples
    --------
    >>> from rainforest import DecisionTreeRegressor
    >>> reg = DecisionTreeRegressor(max_depth=10).fit("data/train/", target="price")  # doctest: +SKIP
    >>> reg.predict("data/test/")  # doctest: +SKIP
    """

    def __init__(self, *, criterion="squared_error", max_bins=255, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, min_impurity_decrease=0.0, ccp_alpha=0.0,
                 categorical_features="auto", memory_budget="1GB", algorithm="hybrid", spill_dir=None,
                 batch_size=None, sample_size=200_000, n_jobs=-1, random_state=0, verbose=0):
        self.criterion = criterion
        self.max_bins = max_bins
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.ccp_alpha = ccp_alpha
        self.categorical_features = categorical_features
        self.memory_budget = memory_budget
        self.algorithm = algorithm
        self.spill_dir = spill_dir
        self.batch_size = batch_size
        self.sample_size = sample_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = REGRESSION_TREE_PARAMS  # declared in rainforest/constraints.py

    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Grow the tree.

        Parameters
        ----------
        X : path, list of paths, Source, pyarrow Table, DataFrame or array-like
            A path (Parquet file, folder, glob) or a :class:`rainforest.storage.Source` streams the
            data out of core; tables and arrays are passed over in memory the same way.
        y : array-like, optional
            Numeric targets, when ``X`` holds only features.
        target : str, optional
            The numeric target column, when ``X`` holds it.
        sample_weight : array-like or str, optional
            Row weights, or the name of a weight column.
        features : list of str, optional
            Feature columns; default all but the target and the weight.

        Returns
        -------
        self
        """
        return self._fit_tree(X, y, target, sample_weight, features)

    def predict(self, X) -> np.ndarray:
        """The weighted mean target of each row's leaf."""
        leaves = self._leaves(X)  # checks that the model is fitted
        return self.tree_.value[leaves, 0]


register_reader("DecisionTreeRegressor", DecisionTreeRegressor.from_document)
