"""Random forests grown together: one pass per level for the whole forest.

Every tree of the forest grows level by level, and one pass over the data builds the
AVC-groups of the frontier nodes of *all* trees at once, so a forest of 100 trees of depth
10 costs about the passes of one tree (one profiling pass, one per level, one more for the
out-of-bag score), not 100 times as many.

* **Bootstrap without samples.** Row ``r`` appears ``m`` times in tree ``t``'s bootstrap,
  ``m`` a Poisson draw from the hash of ``r``'s stable identity and the tree's seed
  (:mod:`rainforest.bootstrap`): the counting kernel recomputes it as the rows stream by, so
  every pass, batch size, backend and machine sees the same bootstrap and no sample is ever
  stored.  Counts are weighted by ``m``; a last channel counts the in-bag rows themselves,
  so ``min_samples_*`` and ``n_node_samples`` mean distinct rows, as in scikit-learn.
* **Forest-RI.** Each node searches ``max_features`` attributes drawn from its tree's seed and
  its node id, and only their AVC-sets are built.  **Forest-RC** (``combination="linear"``):
  each tree gets numeric features that are random linear combinations of ``n_combined``
  numeric attributes (coefficients uniform in [-1, 1]), binned from the profiling pass's
  sample and computed per batch; nodes draw their ``max_features`` candidates among them.
* **Shared passes.** A pass's jobs are (tree, node) pairs; their AVC-groups are packed into
  passes of at most half the memory budget (one pass per level while they fit).  The
  counting kernel gives each thread whole trees, so every count is summed in row order by one
  thread: the forest is the same for any ``n_jobs``, batch size or source.
* **RF-Hybrid, forest-wide.** When the encoded rows of the whole data fit a quarter of the
  budget (local sources), the first growth pass keeps them, once for all trees, and counts
  nothing; later levels cost no pass.  Trees then grow a chunk at a time
  (:mod:`rainforest.in_bag`): each tree's in-bag rows are copied once (multiplicities drawn
  from the hash) and kept grouped by node, so a level reads each node's own rows in sequence
  instead of routing every row from the root.  The chunk's copies fit the room the kept rows
  leave in the first half of the budget; without room for one tree, every level is counted
  over the kept rows from the roots.

The trees are the project's :class:`rainforest.tree.Tree`; the forest saves to the
versioned JSON (``"rainforest.forest"`` inside a ``"rainforest.model"`` file).
"""
from __future__ import annotations

import numpy as np

from .base import Classifier
from .constraints import FOREST_PARAMS
from .dask_predict import lazy_on_dask
from .forest_estimator import ForestEstimator
from .forest_grow import ForestStats  # noqa: F401  (grow_stats_'s type, importable from here as before)
from .forest_kernels import bootstrap_block  # noqa: F401  (importable from here, as before)
from .model_file import register_reader


# -- the estimator -------------------------------------------------------------------------------
@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class RandomForestClassifier(ForestEstimator, Classifier):
    """A random forest whose trees grow together: one pass over the data per level for all of them.

    Parameters
    ----------
    n_estimators : int, default=100
        Number of trees.
    criterion : {"gini", "entropy", "gain_ratio"}, default="gini"
        Split quality, as :class:`DecisionTreeClassifier`'s.
    max_depth : int or None, default=None
        Maximum depth of each tree; ``None`` grows until leaves are pure or the other rules stop them.
    min_samples_split, min_samples_leaf, min_weight_fraction_leaf, min_impurity_decrease
        scikit-learn's stopping rules, per tree; sample counts are distinct in-bag rows.
    max_features : {"sqrt", "log2"}, int, float or None, default="sqrt"
        Attributes each node searches, drawn at random per node (Forest-RI): ``"sqrt"`` and
        ``"log2"`` of the number of candidates, an integer, a fraction of them, or ``None`` (all).
    bootstrap : bool, default=True
        Each tree sees a Poisson bootstrap of the rows (see Notes); ``False``: every row once.
    oob_score : bool, default=False
        Compute ``oob_score_`` and ``oob_decision_function_`` in one extra pass after growth.
    max_samples : int, float or None, default=None
        With ``bootstrap``: the expected bootstrap size, as a row count or a fraction of the
        rows (the Poisson rate); ``None`` is the number of rows.
    class_weight : dict, "balanced" or None, default=None
        Class weights, multiplied into every row's weight.
    ccp_alpha : float, default=0.0
        Each grown tree is pruned by minimal cost-complexity pruning with this parameter (on its
        bootstrap-weighted counts, as scikit-learn's forests); ``0.0`` does not prune.
    combination : {None, "linear"}, default=None
        ``"linear"`` is Forest-RC: each tree's candidates are ``n_combinations`` random linear
        combinations of ``n_combined`` numeric attributes (coefficients uniform in [-1, 1]),
        plus the categorical attributes. Needs binned mode.
    n_combined : int, default=2
        Attributes per linear combination (the textbook's ``L``).
    n_combinations : int or None, default=None
        Linear combinations per tree; ``None``: as many as there are numeric attributes.
    categorical_split, max_bins, categorical_features, memory_budget, batch_size, sample_size
        As :class:`DecisionTreeClassifier`'s. Half of ``memory_budget`` holds the AVC-groups
        of one pass; a level whose AVC-groups over all trees exceed it takes several passes.
    algorithm : {"hybrid", "read"}, default="hybrid"
        ``"hybrid"``: when the encoded rows of the whole data fit a quarter of ``memory_budget``
        (and the source is local), the first growth pass keeps them in memory, once for all
        trees, and later levels cost no pass. ``"read"``: every level is read from the source.
        Both grow the identical forest.
    n_jobs : int or None, default=-1
        Numba threads (trees are counted in parallel); the forest does not depend on it.
    random_state : int or None, default=0
        Seed of the trees' seeds (and of the profiling sample). rainforest is deterministic by
        default, as every learner; ``None`` draws a seed (kept as ``seed_``).
    warm_start : bool, default=False
        A later ``fit`` with more ``n_estimators`` grows only the new trees.
    verbose : int, default=0
        Print one line per pass when positive.

    Attributes
    ----------
    estimators_ : list of Tree
        The trees, in the project's flat format.
    tree_seeds_ : ndarray
        Each tree's 32-bit seed (bootstrap and attribute draws).
    seed_ : int
        The forest's seed (``random_state``, or the one drawn).
    classes_, n_classes_, n_features_in_, feature_names_in_
        As scikit-learn's.
    oob_score_ : float
        Accuracy of the out-of-bag predictions (``oob_score=True``), over the rows of weight > 0.
    oob_decision_function_ : ndarray of shape (n_rows, n_classes)
        Average class distribution over the trees that did not draw each row.
    feature_importances_ : ndarray
        Mean over the trees of their normalized impurity decreases.
    n_passes_ : int
        Passes over the data made by the last ``fit`` (profiling and out-of-bag passes included).
    n_passes_per_level_ : list of int
        Growth passes over the data per level.
    grow_stats_ : ForestStats
        Jobs per level, rows kept in memory (``kept_rows``), trees grown at once from copies of
        their in-bag rows (``trees_grown_together``, 0 if none), the largest AVC-groups of one pass.

    Notes
    -----
    The bootstrap is never materialized: tree ``t`` counts row ``r`` with multiplicity
    ``Poisson(rate)`` drawn by inverse CDF from ``row_hash(r, seed_t) / 2**63``, where ``r`` is
    the row's stable identity (the global row index of every source: the sorted file order and
    row order of Parquet, the row index in memory, the partition order on Dask, the scan
    order of a SQL source). So the forest is the same for any source, batch size or ``n_jobs``.
    """

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 min_weight_fraction_leaf=0.0, max_features="sqrt", min_impurity_decrease=0.0, bootstrap=True,
                 oob_score=False, max_samples=None, class_weight=None, ccp_alpha=0.0, combination=None, n_combined=2,
                 n_combinations=None, categorical_split="binary", max_bins=255, categorical_features="auto",
                 memory_budget="1GB", algorithm="hybrid", batch_size=None, sample_size=200_000, n_jobs=-1,
                 random_state=0, warm_start=False, verbose=0):
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
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.combination = combination
        self.n_combined = n_combined
        self.n_combinations = n_combinations
        self.categorical_split = categorical_split
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

    _parameter_constraints = FOREST_PARAMS
    _oob_attributes = ("oob_score_", "oob_decision_function_")

    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Grow the forest (with ``warm_start``, only the trees beyond those already grown).

        Parameters
        ----------
        X : path, list of paths, Source, pyarrow Table, DataFrame, Dask DataFrame or array-like
            As :meth:`DecisionTreeClassifier.fit`.
        y : array-like, optional
            Labels, when ``X`` holds only features.
        target : str, optional
            The label column, when ``X`` holds it.
        sample_weight : array-like or str, optional
            Row weights (multiplied with the bootstrap multiplicities), or a weight column's name.
        features : list of str, optional
            Feature columns; default all but the target and the weight.

        Returns
        -------
        self
        """
        return self._fit_forest(X, y, target, sample_weight, features)

    def predict_proba(self, X) -> np.ndarray:
        """The mean over the trees of the class distribution of each row's leaf (as scikit-learn)."""
        return self._mean_leaf_values(X)

    def _set_oob_estimates(self, estimates: np.ndarray, y: np.ndarray, counted: np.ndarray) -> None:
        """``oob_decision_function_`` and ``oob_score_``, the accuracy of its classes on the rows that count."""
        self.oob_decision_function_ = estimates
        hits = np.argmax(estimates, axis=1)[counted] == y[counted]
        self.oob_score_ = float(np.mean(hits)) if len(hits) else np.nan


register_reader("RandomForestClassifier", RandomForestClassifier.from_document)
