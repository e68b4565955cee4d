"""scikit-learn style estimators over sources of any size."""
from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager

import numba
import numpy as np

from rainforest.storage import SqlSource

from .avc import avc_group, root_avc
from .budget import parse_bytes
from .criteria import CRITERIA
from .dask_predict import lazy_on_dask
from .errors import DataError, ModelError, NotFittedError
from .grow import GrowParams, grow_tree
from .inputs import attribute_kinds, feature_tables, training_data
from .model_check import check_document
from .params import ClassifierMixin, ParamsMixin
from .profile import ProfileTask
from .pruning import (_check_ccp_alpha, cost_complexity_path, cost_complexity_prune, pessimistic_prune,
                      reduced_error_prune, validation_counts, validation_errors)
from .atomic import write_atomic
from .tree import Tree

MODEL_FORMAT = "rainforest.model"
MODEL_VERSION = 1


ALGORITHMS = ("hybrid", "write", "vertical", "read")


@contextmanager
def numba_threads(n_jobs):
    """Run with ``n_jobs`` Numba threads (-1 or None: all cores); results do not depend on it."""
    cores = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None or n_jobs == -1:
        n = cores
    elif isinstance(n_jobs, (int, np.integer)) and n_jobs != 0:
        n = max(1, min(cores, n_jobs if n_jobs > 0 else cores + 1 + n_jobs))
    else:
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}")
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class DecisionTreeClassifier(ClassifierMixin, ParamsMixin):
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
        ``"write"`` (RF-Write, with RF-Vertical) also writes, when a level
        needs several reads, its rows partitioned by node to a temporary
        spill folder, and later reads take only their partitions.
        ``"hybrid"`` (RF-Hybrid, with both) also keeps, during a pass, the
        encoded rows of nodes whose families fit a quarter of
        ``memory_budget``, and grows their subtrees in memory: a level whose
        nodes are all in memory costs no pass.
    spill_dir : str or None, default=None
        Where RF-Write makes its temporary spill folder (the system's
        temporary directory when None). The folder is removed when ``fit``
        ends, fails or is interrupted.
    batch_size : int or None, default=None
        Rows per record batch; ``None`` derives it from ``memory_budget``.
        The tree does not depend on it.
    binning_sample : int, default=200000
        Rows sampled (uniformly, by a hash of the row number) to place the bin
        edges of numeric attributes with more than ``max_bins`` distinct values.
    n_jobs : int or None, default=-1
        Threads for the Numba kernels; -1 or None uses all cores. The tree does not depend on it.
    random_state : int, default=0
        Seed of the binning sample.
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
                 memory_budget="1GB", algorithm="hybrid", spill_dir=None, batch_size=None, binning_sample=200_000,
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
        self.binning_sample = binning_sample
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # -- parameters ------------------------------------------------------
    def _check_params(self) -> int:
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {self.criterion!r}")
        if self.categorical_split not in ("binary", "multiway"):
            raise ValueError(f"categorical_split must be 'binary' or 'multiway', got {self.categorical_split!r}")
        if self.max_bins is not None and not (_is_int(self.max_bins) and 2 <= self.max_bins <= 1 << 20):
            raise ValueError(f"max_bins must be None or an integer from 2 to {1 << 20}, got {self.max_bins!r}")
        if self.max_depth is not None and not (_is_int(self.max_depth) and self.max_depth >= 1):
            raise ValueError(f"max_depth must be None or an integer >= 1, got {self.max_depth!r}")
        _check_count_or_fraction("min_samples_split", self.min_samples_split, 2)
        _check_count_or_fraction("min_samples_leaf", self.min_samples_leaf, 1)
        if not 0.0 <= self.min_weight_fraction_leaf <= 0.5:
            raise ValueError(f"min_weight_fraction_leaf must be in [0, 0.5], got {self.min_weight_fraction_leaf!r}")
        if not self.min_impurity_decrease >= 0:
            raise ValueError(f"min_impurity_decrease must be >= 0, got {self.min_impurity_decrease!r}")
        _check_ccp_alpha(self.ccp_alpha)
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(map(repr, ALGORITHMS))}, got {self.algorithm!r}")
        if self.batch_size is not None and not (_is_int(self.batch_size) and self.batch_size >= 1):
            raise ValueError(f"batch_size must be None or a positive integer, got {self.batch_size!r}")
        if not (_is_int(self.binning_sample) and self.binning_sample >= 1000):
            raise ValueError(f"binning_sample must be an integer >= 1000, got {self.binning_sample!r}")
        return parse_bytes(self.memory_budget)

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
        budget = self._check_params()
        data = training_data(X, y, target, sample_weight, features)
        source = data.source
        kinds = attribute_kinds(source, data.features, self.categorical_features)
        passes_before = source.n_passes
        batch_size = self._batch_size(budget, len(data.features))
        with numba_threads(self.n_jobs):
            schema, profile = self._profile(data, kinds, batch_size)
            class_weight = self._class_weights(schema.label.classes, profile.label_counts, profile.n_rows)
            n_rows = profile.n_rows
            del profile  # its distinct values are the schema's cuts: held once, by the schema, from here on
            params = self._grow_params(n_rows)
            tree, stats = grow_tree(source, schema, params, budget, batch_size, class_weight, self.verbose, n_rows)
        self.tree_ = tree
        self.pruning_ = []
        if self.ccp_alpha > 0:
            self._record_pruning(cost_complexity_prune(tree, self.ccp_alpha), "cost_complexity",
                                 ccp_alpha=_json_number(self.ccp_alpha))
        self._set_fitted_inputs(schema.label.classes, data.features, data.has_names)
        self.n_passes_ = source.n_passes - passes_before
        self.n_passes_per_level_ = stats.passes_per_level
        self.grow_stats_ = stats
        self.n_rows_ = n_rows
        return self

    # -- pruning ---------------------------------------------------------------
    def cost_complexity_pruning_path(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """The minimal cost-complexity pruning path of the tree grown on ``X``, as scikit-learn's.

        Grows a tree with these parameters but ``ccp_alpha=0.0`` (so it costs a fit; this
        estimator is not changed). For the path of an already fitted, unpruned tree, without
        a pass over the data, use ``rainforest.pruning.cost_complexity_path(clf.tree_)``.

        Parameters
        ----------
        X, y, target, sample_weight, features
            As :meth:`fit`.

        Returns
        -------
        CostComplexityPath
            ``ccp_alphas`` (increasing, from 0.0) and ``impurities`` (the total weighted leaf
            impurity of each subtree), scikit-learn's, also readable as ``path["ccp_alphas"]``;
            and ``n_leaves`` of each subtree.
        """
        grown = type(self)(**{**self.get_params(), "ccp_alpha": 0.0})
        grown.fit(X, y, target=target, sample_weight=sample_weight, features=features)
        return cost_complexity_path(grown.tree_)

    def prune_cost_complexity(self, ccp_alpha: float):
        """Prune the fitted tree in place with cost-complexity parameter ``ccp_alpha`` (no pass).

        What ``ccp_alpha`` does in :meth:`fit`, without growing the tree again: pick an alpha
        from :func:`rainforest.pruning.cost_complexity_path` of ``tree_`` and prune. The
        ``ccp_alpha`` parameter is not changed; ``pruning_`` records the pruning.

        Returns
        -------
        self
        """
        self._check_fitted()
        self._record_pruning(cost_complexity_prune(self.tree_, ccp_alpha), "cost_complexity",
                             ccp_alpha=_json_number(ccp_alpha))
        return self

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

    def _record_pruning(self, pruned: Tree, method: str, **details) -> None:
        self.pruning_ = list(getattr(self, "pruning_", [])) + [
            {"method": method, **details, "nodes_before": int(self.tree_.node_count),
             "nodes_after": int(pruned.node_count)}]
        self.tree_ = pruned

    def _batch_size(self, budget: int, n_features: int) -> int:
        row_bytes = 8 * 4 * (n_features + 2)
        return self.batch_size or int(min(1 << 18, max(1024, budget // 4 // row_bytes)))

    def _profile(self, data, kinds, batch_size):
        """The profiling pass: the schema (classes, categories, cuts) and what it counted."""
        task = ProfileTask(kinds, data.target, data.weight, data.source.description, exact=self.max_bins is None,
                           max_bins=self.max_bins or 0, sample_rows=self.binning_sample,
                           seed=int(self.random_state or 0))
        columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
        profile = data.source.run_pass(task, columns, batch_size)
        return task.schema(profile), profile

    def _grow_params(self, n_rows: int) -> GrowParams:
        return GrowParams(criterion=self.criterion, multiway=self.categorical_split == "multiway",
                          max_depth=self.max_depth,
                          min_samples_split=_resolve_count(self.min_samples_split, n_rows, 2),
                          min_samples_leaf=_resolve_count(self.min_samples_leaf, n_rows, 1),
                          min_weight_fraction_leaf=self.min_weight_fraction_leaf,
                          min_impurity_decrease=self.min_impurity_decrease, hybrid=self.algorithm == "hybrid",
                          write=self.algorithm in ("hybrid", "write"), vertical=self.algorithm != "read",
                          spill_dir=self.spill_dir)

    def _class_weights(self, classes, counts, n_rows):
        cw = self.class_weight
        if cw is None:
            return None
        if isinstance(cw, str):
            if cw != "balanced":
                raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
            return np.array([n_rows / (len(classes) * counts[c]) for c in classes], dtype=np.float64)
        if not isinstance(cw, dict):
            raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
        for k in cw:
            if k not in counts:
                raise ValueError(f"class_weight names class {k!r}, which is not in the target")
        return np.array([float(cw.get(c, 1.0)) for c in classes], dtype=np.float64)

    # -- prediction ------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "tree_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def _leaves(self, X) -> np.ndarray:
        """Leaf of every row of ``X`` (streamed batch by batch for paths and sources)."""
        self._check_fitted()
        tree = self.tree_
        if isinstance(X, SqlSource):  # scored in the database: only leaf indices come back
            X.check_columns(tree.feature_names)
            parts = [np.asarray(a.to_numpy(zero_copy_only=False), np.int64)
                     for a in X.column_values(tree.to_sql(X.dialect, "leaf", types=X.schema))]
            return np.concatenate(parts) if parts else np.empty(0, np.int64)
        encoder = tree.encoder()
        tables = feature_tables(X, tree.feature_names, strict_names=hasattr(self, "feature_names_in_"),
                                batch_size=self.batch_size or 65536)
        with numba_threads(self.n_jobs):
            parts = [tree.apply(encoder.encode(t)) for t in tables]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def apply(self, X) -> np.ndarray:
        """Index of the leaf each row ends in."""
        return self._leaves(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities: the class distribution of each row's leaf."""
        leaves = self._leaves(X)  # checks that the model is fitted
        return self.tree_.leaf_proba()[leaves]

    @property
    def feature_importances_(self) -> np.ndarray:
        """Normalised total impurity decrease brought by each feature (as scikit-learn)."""
        self._check_fitted()
        return self.tree_.feature_importances()

    def get_depth(self) -> int:
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        self._check_fitted()
        return self.tree_.n_leaves

    def export_text(self, **kwargs) -> str:
        """The tree as indented text (see :meth:`Tree.export_text`)."""
        self._check_fitted()
        return self.tree_.export_text(**kwargs)

    def predict_in_database(self, source, *, into=None, columns=(), proba=False):
        """Score a SQL source where it lives: the tree runs as a ``CASE`` expression (:meth:`Tree.to_sql`).

        Parameters
        ----------
        source : storage.DuckDBSource or storage.PostgresSource
        into : str or tuple of str, optional
            A table to write (created; an existing one is an error). Without it, a DuckDB
            source returns a lazy ``duckdb.DuckDBPyRelation``; PostgreSQL needs ``into``.
        columns : sequence of str, default=()
            Source columns to carry beside the predictions (an id, the label).
        proba : bool, default=False
            Also the probability of each class, as columns ``proba_<class>``.

        Returns
        -------
        duckdb.DuckDBPyRelation, or the name of the table written.

        Notes
        -----
        The table is written by one ``CREATE TABLE ... AS SELECT`` statement, so a failure
        leaves no half-written table.
        """
        self._check_fitted()
        if not isinstance(source, SqlSource):
            raise DataError(f"predict_in_database needs a DuckDBSource or a PostgresSource, got {type(source).__name__}")
        tree = self.tree_
        source.check_columns(list(columns) + tree.feature_names)
        items = [source.quote(c) for c in columns]
        items.append(f"{tree.to_sql(source.dialect, 'class', types=source.schema)} AS {source.quote('prediction')}")
        if proba:
            items += [f"{tree.to_sql(source.dialect, 'proba', proba_of=c, types=source.schema)} "
                      f"AS {source.quote(f'proba_{c}')}" for c in tree.classes]
        return source.select(", ".join(items), into=into)

    # -- persistence -----------------------------------------------------------
    def save(self, path) -> None:
        """Write the model as versioned JSON (no pickle), atomically."""
        self._check_fitted()
        write_model(path, self, self.n_passes_, has_feature_names=hasattr(self, "feature_names_in_"),
                    tree=self.tree_.to_dict(), pruning=getattr(self, "pruning_", []))


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


def load(path):
    """Load a model written by ``save``.

    Raises
    ------
    ModelError
        If the file is not a valid rainforest model (the message names the file and the field); a
        ValueError.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such model file: {path!r}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ModelError(f"{path!r} is not a rainforest model (invalid JSON: {exc})", path) from None
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise ModelError(f"{path!r} is not a rainforest model", path)
    if doc.get("version") != MODEL_VERSION:
        raise ModelError(f"{path!r} has model format version {doc.get('version')!r}; this build reads {MODEL_VERSION}",
                         path)
    if doc.get("estimator") == "RandomForestClassifier":  # the forest reads its own document (rainforest/forest.py)
        from .forest import RandomForestClassifier
        return RandomForestClassifier.from_document(doc, path)
    if doc.get("estimator") == "NaiveBayesClassifier":  # rainforest/bayes.py
        from .bayes import NaiveBayesClassifier
        return NaiveBayesClassifier.from_document(doc, path)
    if doc.get("estimator") == "AdaBoostClassifier":  # rainforest/boosting.py
        from .boosting import AdaBoostClassifier
        return AdaBoostClassifier.from_document(doc, path)
    classes = {"DecisionTreeClassifier": DecisionTreeClassifier}
    if not isinstance(doc.get("estimator"), str) or doc["estimator"] not in classes:
        raise ModelError(f"{path!r} holds an unknown estimator {doc.get('estimator')!r}", path)
    check_document(doc, path, classes[doc["estimator"]])
    est = classes[doc["estimator"]](**_params_from_json(doc["params"]))
    tree = Tree.from_dict(doc["tree"])
    est.tree_ = tree
    est.classes_ = np.asarray(tree.classes)
    est.n_classes_ = len(tree.classes)
    est.n_outputs_ = 1
    est.n_features_in_ = tree.n_features
    if doc.get("has_feature_names"):
        est.feature_names_in_ = np.asarray(tree.feature_names, dtype=object)
    est.n_passes_ = doc.get("n_passes")
    est.pruning_ = list(doc.get("pruning", []))  # files written before pruning existed have none
    return est


def write_model(path, estimator, n_passes, params: dict | None = None, **parts) -> None:
    """Write the one model file: format, version, the estimator's class, its parameters (default:
    ``get_params()`` made JSON-able) and passes, then the learner's own ``parts``; atomically."""
    doc = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "estimator": type(estimator).__name__,
           "params": _jsonable_params(estimator.get_params()) if params is None else params,
           "n_passes": n_passes, **parts}
    write_atomic(path, json.dumps(doc, sort_keys=True, allow_nan=False))


def _jsonable_params(params: dict) -> dict:
    out = dict(params)
    if "ccp_alpha" in out:  # inf (prune to the root) is legal, and JSON has no infinity
        out["ccp_alpha"] = _json_number(out["ccp_alpha"])
    if isinstance(out.get("class_weight"), dict):
        out["class_weight"] = {"pairs": [[_plain(k), float(v)] for k, v in out["class_weight"].items()]}
    if isinstance(out.get("categorical_features"), (list, tuple, np.ndarray)):
        out["categorical_features"] = [_plain(c) for c in out["categorical_features"]]
    return out


def _params_from_json(params: dict) -> dict:
    out = dict(params)
    if out.get("ccp_alpha") == "inf":
        out["ccp_alpha"] = math.inf
    if isinstance(out.get("class_weight"), dict):
        out["class_weight"] = {k: v for k, v in out["class_weight"]["pairs"]}
    return out


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def _json_number(x):
    """A number as JSON can hold it: ``"inf"`` for infinity."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return x
    return "inf" if x == math.inf else x


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_count_or_fraction(name, v, least):
    if _is_int(v):
        if v < least:
            raise ValueError(f"{name} must be an integer >= {least} or a fraction in (0, 1], got {v!r}")
    elif isinstance(v, float):
        if not 0.0 < v <= 1.0:
            raise ValueError(f"{name} must be an integer >= {least} or a fraction in (0, 1], got {v!r}")
    else:
        raise ValueError(f"{name} must be an integer or a float, got {v!r}")


def _resolve_count(v, n_rows, least) -> int:
    return int(v) if _is_int(v) else max(least, int(math.ceil(v * n_rows)))
