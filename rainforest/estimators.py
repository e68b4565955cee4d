"""The decision tree estimator over sources of any size, and the root AVC-group."""
from __future__ import annotations

import numpy as np

from .avc import avc_group, root_avc
from .base import Classifier
from .constraints import TREE_PARAMS
from .dask_predict import lazy_on_dask
from .inputs import attribute_kinds, training_data
from .model_file import load, register_reader
from .profile import ProfileTask
from .pruning import pessimistic_prune, reduced_error_prune, validation_counts, validation_errors
from .threads import numba_threads
from .tree_estimator import TreeEstimator

__all__ = ["DecisionTreeClassifier", "root_avc_group", "load"]


@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class DecisionTreeClassifier(TreeEstimator, Classifier):
    """A decision tree grown from AVC-groups, over data of any size.

    Each level of the tree costs one pass over the data (more when the level's
    AVC-groups exceed ``memory_budget``), plus one profiling pass; rows are
    never held in memory beyond one batch.

    Parameters
    ----------
    criterion : {"gini", "entropy", "gain_ratio"}, default="gini"
        Split quality: Gini index (CART), information gain (ID3) or gain ratio (C4.5).
    categorical_split : {"binary", "multiway"}, default="binary"
        Categorical attributes split into two subsets (CART) or one branch per
        category (ID3/C4.5). Numeric attributes always split in two.
    max_bins : int or None, default=255
        Numeric attributes are cut into at most this many quantile bins (fast,
        approximate thresholds). ``None`` is exact mode: thresholds midway
        between adjacent values present at the node, as in CART/C4.5 and
        scikit-learn.
    max_depth : int or None, default=None
        Maximum depth of the tree; ``None`` grows until the leaves are pure or
        the other stopping rules hold.
    min_samples_split : int or float, default=2
        Fewest rows a node needs to be split (a float is a fraction of the rows).
    min_samples_leaf : int or float, default=1
        Fewest rows in each child of a split (a float is a fraction of the rows).
    min_weight_fraction_leaf : float, default=0.0
        Smallest fraction of the total weight in each child of a split.
    min_impurity_decrease : float, default=0.0
        A node is split only if the weighted impurity decrease reaches this.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied with the sample weights.
    ccp_alpha : float, default=0.0
        Complexity parameter of minimal cost-complexity pruning, applied after growth as in
        scikit-learn: the subtree whose effective alpha is the largest not above ``ccp_alpha``
        (see :meth:`cost_complexity_pruning_path`). ``0.0`` does not prune.
    categorical_features : "auto" or list, default="auto"
        Columns to treat as categorical besides string and boolean columns
        (names, or positions for arrays). Integer columns are numeric unless named here.
    memory_budget : int or str, default="1GB"
        Bound on the memory growth uses: half of it for the AVC-groups of one
        pass (a level whose AVC-groups exceed it takes several passes), a
        quarter for rows kept in memory (RF-Hybrid), and batch sizes.
    algorithm : {"hybrid", "write", "vertical", "read"}, default="hybrid"
        How growth meets the budget; all build the identical tree.
        ``"read"`` (RF-Read) counts every level in passes over the data, and
        fails if one node's AVC-group exceeds the budget.
        ``"vertical"`` (RF-Vertical) then counts the attributes a group at a
        time instead (high-cardinality numerics in exact mode).
        ``"write"`` (RF-Write, with RF-Vertical) also writes the encoded rows
        once to a temporary spill folder, in the first read that later reads
        would repeat, and every later read takes them from there (only the
        partitions of its nodes), never from the source.
        ``"hybrid"`` (RF-Hybrid, with both) also keeps, during a pass, the
        encoded rows of nodes whose families fit a quarter of
        ``memory_budget``, and grows their subtrees in memory: a level whose
        nodes are all in memory costs no read. A binned tree then takes two
        passes over a local source at any size.
    spill_dir : str or None, default=None
        Where RF-Write makes its temporary spill folder (the system's
        temporary directory when None). The folder is removed when ``fit``
        ends, fails or is interrupted. When its disk cannot hold the encoded
        rows (checked before writing), the fit warns and reads the source
        at every level instead.
    batch_size : int or None, default=None
        Rows per record batch; ``None`` derives it from ``memory_budget``.
        The tree does not depend on it.
    sample_size : int, default=200000
        Rows the profiling pass samples (uniformly, by a hash of the row number
        and ``random_state``) to place the bin edges of numeric attributes with
        more than ``max_bins`` distinct values. (Every learner names the
        profiling pass's sample ``sample_size``; BOAT grows its bootstrap trees
        on it.)
    n_jobs : int or None, default=-1
        Threads for the Numba kernels; -1 or None uses all cores. The tree does not depend on it.
    random_state : int or None, default=0
        Seed of the profiling sample. rainforest is deterministic by default:
        every learner's ``random_state`` defaults to 0 (``None`` is 0 here).
    verbose : int, default=0
        Print one line per pass when positive.

    Attributes
    ----------
    tree_ : Tree
        The fitted tree (flat node arrays).
    classes_ : ndarray
        Class labels, sorted.
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Feature names, when the training data had named columns.
    n_passes_ : int
        Passes over the data made by the last ``fit``, the profiling pass included.
    n_passes_per_level_ : list of int
        Growth passes over the data per tree level.
    grow_stats_ : GrowStats
        What growth did besides passes: ``spill_reads`` and ``spill_bytes``
        (RF-Write), ``attribute_groups`` (more than 1 under RF-Vertical) and
        ``kept_rows`` (rows pulled into memory by RF-Hybrid).
    pruning_ : list of dict
        The prunings applied to ``tree_``, in order: ``{"method": "cost_complexity" |
        "pessimistic" | "reduced_error", <its parameter>, "nodes_before", "nodes_after", ...}``;
        empty when the tree is as grown. Saved with the model.

    Examples
    --------
    >>> from rainforest import DecisionTreeClassifier
    >>> clf = DecisionTreeClassifier(max_depth=10).fit("data/train/", target="label")  # doctest: +SKIP
    >>> clf.predict("data/test/")  # doctest: +SKIP
    """

    def __init__(self, *, criterion="gini", categorical_split="binary", max_bins=255, max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 min_impurity_decrease=0.0, class_weight=None, ccp_alpha=0.0, categorical_features="auto",
                 memory_budget="1GB", algorithm="hybrid", spill_dir=None, batch_size=None, sample_size=200_000,
                 n_jobs=-1, random_state=0, verbose=0):
        self.criterion = criterion
        self.categorical_split = categorical_split
        self.max_bins = max_bins
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.class_weight = class_weight
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

    _parameter_constraints = TREE_PARAMS  # declared in rainforest/constraints.py

    # -- fitting -------------------------------------------------------------
    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Grow the tree.

        Parameters
        ----------
        X : path, list of paths, Source, pyarrow Table, DataFrame or array-like
            A path (Parquet file, folder, glob) or a :class:`rainforest.storage.Source`
            streams the data out of core; tables and arrays are passed over in
            memory the same way.
        y : array-like, optional
            Labels, when ``X`` holds only features.
        target : str, optional
            The label column, when ``X`` holds it.
        sample_weight : array-like or str, optional
            Row weights, or the name of a weight column.
        features : list of str, optional
            Feature columns; default all but the target and the weight.

        Returns
        -------
        self
        """
        return self._fit_tree(X, y, target, sample_weight, features)

    # -- pruning by the training or validation classes -------------------------------------------
    def prune_pessimistic(self, confidence: float = 0.25):
        """Prune the fitted tree in place by C4.5's pessimistic (error-based) pruning; no pass.

        A subtree becomes a leaf when C4.5's estimate of the errors of the leaf (the upper
        limit of the binomial confidence interval at level ``confidence`` on its training
        rows) is at most the sum of the estimates of the subtree's leaves. Subtree replacement
        only, no subtree raising (see :func:`rainforest.pruning.pessimistic_prune`).

        Parameters
        ----------
        confidence : float, default=0.25
            C4.5's confidence factor CF, in (0, 1); smaller prunes more.

        Returns
        -------
        self
        """
        self._check_fitted()
        self._record_pruning(pessimistic_prune(self.tree_, confidence), "pessimistic",
                             confidence=float(confidence))
        return self

    def prune_reduced_error(self, X, y=None, *, target=None, sample_weight=None):
        """Prune the fitted tree in place by reduced-error pruning on validation data, in one pass.

        The pass routes every validation row to its leaf and counts it there (so at every node
        on its path); then, bottom-up, a subtree becomes a leaf when the node, predicting its
        training majority class, makes no more validation errors than the subtree. Nodes no
        validation row reaches become leaves. Validation errors never increase.

        Parameters
        ----------
        X : path, list of paths, Source, pyarrow Table, DataFrame or array-like
            Validation rows with the tree's feature columns (as :meth:`predict`) and, for a
            path, Source or table holding it, the label column ``target``.
        y : array-like, optional
            Validation labels, when ``X`` holds only features.
        target : str, optional
            The label column, when ``X`` holds it.
        sample_weight : array-like or str, optional
            Row weights, or the name of a weight column.

        Returns
        -------
        self
        """
        self._check_fitted()
        tree = self.tree_
        data = training_data(X, y, target, sample_weight, list(tree.feature_names))
        with numba_threads(self.n_jobs):
            counts = validation_counts(tree, data.source, data.target, data.weight, self.batch_size or 65536)
        pruned, errors_after = reduced_error_prune(tree, counts)
        self._record_pruning(pruned, "reduced_error", validation_rows=float(counts[0].sum()),
                             validation_errors_before=float(validation_errors(tree, counts)[tree.is_leaf].sum()),
                             validation_errors_after=errors_after)
        return self

    # -- prediction ------------------------------------------------------
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities: the class distribution of each row's leaf."""
        leaves = self._leaves(X)  # checks that the model is fitted
        return self.tree_.leaf_proba()[leaves]


register_reader("DecisionTreeClassifier", DecisionTreeClassifier.from_document)


def root_avc_group(X, target, *, categorical_features="auto", max_bins=None, features=None):
    """The AVC-group of the root: per attribute, class counts per value, in two passes.

    Parameters
    ----------
    X : path, Source, table or DataFrame
        The data, holding the label column ``target``.
    max_bins : int or None, default=None
        ``None`` counts per exact numeric value; an integer counts per bin.

    Returns
    -------
    AvcGroup
        ``group["age"].values`` and ``group["age"].counts`` (values x classes).
    """
    data = training_data(X, None, target, None, features)
    kinds = attribute_kinds(data.source, data.features, categorical_features)
    task = ProfileTask(kinds, data.target, None, data.source.description, exact=max_bins is None,
                       max_bins=max_bins or 0)
    schema = task.schema(data.source.run_pass(task, list(kinds) + [data.target]))
    return avc_group(schema, root_avc(data.source, schema))
