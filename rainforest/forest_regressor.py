"""The regression forest: regression trees (:class:`rainforest.DecisionTreeRegressor`'s squared error)
grown together, one pass over the data per level for the whole forest, as the classifier's forest
(:mod:`rainforest.forest`): the same bootstrap from the row hash, Forest-RI and Forest-RC, the same
passes, row store and memory bound; a prediction is the mean of the trees' leaf means.
"""
from __future__ import annotations

import numpy as np

from .base import Regressor
from .constraints import FOREST_REGRESSION_PARAMS
from .dask_predict import lazy_on_dask
from .forest_estimator import ForestEstimator
from .model_file import register_reader
from .regression_metrics import r2_score

__all__ = ["RandomForestRegressor"]


@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class RandomForestRegressor(ForestEstimator, Regressor):
    """A random forest of regression trees grown together: one pass over the data per level for all of them.

    Parameters
    ----------
    n_estimators : int, default=100
        Number of trees.
    criterion : {"squared_error"}, default="squared_error"
        Variance reduction, as :class:`rainforest.DecisionTreeRegressor`'s.
    max_depth : int or None, default=None
        Maximum depth of each tree; ``None`` grows until leaves are pure or the other rules stop them.
    min_samples_split, min_samples_leaf, min_weight_fraction_leaf, min_impurity_decrease
        scikit-learn's stopping rules, per tree; sample counts are distinct in-bag rows.
    max_features : {"sqrt", "log2"}, int, float or None, default=1.0
        Attributes each node searches, drawn at random per node: ``1.0`` (all, scikit-learn's
        default for regression forests: the trees differ by their bootstraps), ``"sqrt"``,
        ``"log2"``, an integer or a fraction of them.
    bootstrap : bool, default=True
        Each tree sees a Poisson bootstrap of the rows (see
        :class:`rainforest.RandomForestClassifier`'s Notes); ``False``: every row once.
    oob_score : bool, default=False
        Compute ``oob_score_`` (R²) and ``oob_prediction_`` in one extra pass after growth.
    max_samples : int, float or None, default=None
        With ``bootstrap``: the expected bootstrap size, as a row count or a fraction of the rows.
    ccp_alpha : float, default=0.0
        Each grown tree is pruned by minimal cost-complexity pruning with this parameter.
    combination, n_combined, n_combinations
        Forest-RC, as :class:`rainforest.RandomForestClassifier`'s.
    max_bins, categorical_features, memory_budget, algorithm, batch_size, sample_size, n_jobs
        As :class:`rainforest.RandomForestClassifier`'s. ``max_bins=None`` is exact mode.
    random_state : int or None, default=0
        Seed of the trees' seeds (and of the profiling sample); ``None`` draws one (``seed_``).
    warm_start : bool, default=False
        A later ``fit`` with more ``n_estimators`` grows only the new trees.
    verbose : int, default=0
        Print one line per pass when positive.

    Attributes
    ----------
    estimators_ : list of Tree
        The regression trees; ``estimators_[t].value[:, 0]`` is each node's weighted mean target.
    tree_seeds_, seed_, n_features_in_, feature_names_in_, feature_importances_
        As :class:`rainforest.RandomForestClassifier`'s.
    oob_score_ : float
        R² of the out-of-bag predictions (``oob_score=True``), over the rows of weight > 0.
    oob_prediction_ : ndarray of shape (n_rows,)
        Each row's mean prediction over the trees that did not draw it.
    n_passes_, n_passes_per_level_, grow_stats_
        As :class:`rainforest.RandomForestClassifier`'s.

    Examples
    --------
    >>> from rainforest import RandomForestRegressor
    >>> reg = RandomForestRegressor(n_estimators=50, max_depth=12).fit("data/train/", target="price")  # doctest: +SKIP
    >>> reg.predict("data/test/")  # doctest: +SKIP
    """

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features=1.0, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, max_samples=None, ccp_alpha=0.0, combination=None, n_combined=2,
                 n_combinations=None, max_bins=255, categorical_features="auto", memory_budget="1GB",
                 algorithm="hybrid", batch_size=None, sample_size=200_000, n_jobs=-1, random_state=0,
                 warm_start=False, verbose=0):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.combination = combination
        self.n_combined = n_combined
        self.n_combinations = n_combinations
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.memory_budget = memory_budget
        self.algorithm = algorithm
        self.batch_size = batch_size
        self.sample_size = sample_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    _parameter_constraints = FOREST_REGRESSION_PARAMS  # declared in rainforest/constraints.py
    _oob_attributes = ("oob_score_", "oob_prediction_")

    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Grow the forest (with ``warm_start``, only the trees beyond those already grown).

        Parameters
        ----------
        X : path, list of paths, Source, pyarrow Table, DataFrame, Dask DataFrame or array-like
            As :meth:`rainforest.DecisionTreeRegressor.fit`.
        y : array-like, optional
            Numeric targets, when ``X`` holds only features.
        target : str, optional
            The numeric target column, when ``X`` holds it.
        sample_weight : array-like or str, optional
            Row weights (multiplied with the bootstrap multiplicities), or a weight column's name.
        features : list of str, optional
            Feature columns; default all but the target and the weight.

        Returns
        -------
        self
        """
        return self._fit_forest(X, y, target, sample_weight, features)

    def predict(self, X) -> np.ndarray:
        """The mean over the trees of each row's leaf mean (as scikit-learn's forest)."""
        return self._mean_leaf_values(X)[:, 0]

    def _set_oob_estimates(self, estimates: np.ndarray, y: np.ndarray, counted: np.ndarray) -> None:
        """``oob_prediction_`` and ``oob_score_``, its R² on the rows that count (scikit-learn's, unweighted)."""
        self.oob_prediction_ = estimates[:, 0]
        self.oob_score_ = r2_score(y[counted], self.oob_prediction_[counted]) if counted.any() else np.nan


register_reader("RandomForestRegressor", RandomForestRegressor.from_document)
