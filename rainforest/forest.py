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

import json
import math
import warnings

import numpy as np

from .bootstrap import poisson_thresholds, tree_seeds
from .combinations import Combinations, draw_combinations
from .dask_predict import lazy_on_dask
from .errors import DataError
from .base import Classifier
from .budget import parse_bytes
from .constraints import FOREST_PARAMS
from .forest_grow import ForestGrower, ForestSpec, ForestStats  # noqa: F401  (ForestStats: grow_stats_)
from .forest_file import (FOREST_FORMAT, FOREST_VERSION, ForestParts, check_forest_format,  # noqa: F401 (as before)
                          forest_document, read_forest)
from .forest_kernels import bootstrap_block  # noqa: F401  (importable from here, as before)
from .forest_oob import OobPass, oob_estimates, tree_input
from .forest_rows import Columns
from .inputs import feature_tables, in_memory_rows
from .model_check import check_document
from .model_file import params_from_json, register_reader, write_model
from .nodes import Nodes
from .params import is_int
from .profile import quantile_edges
from .pruning import cost_complexity_prune
from .rowhash import M32
from .schema import CATEGORICAL, NUMERIC, Attribute, Schema
from .threads import numba_threads
from .tree import Tree
from .tree_setup import batch_size_for, class_weights, grow_params, profile_pass

ALGORITHMS = ("hybrid", "read")


# -- the estimator -------------------------------------------------------------------------------
@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class RandomForestClassifier(Classifier):
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

    # -- parameters ----------------------------------------------------------------------------
    _parameter_constraints = FOREST_PARAMS
    _fitted_attribute = "estimators_"

    def _check_combined_params(self) -> None:
        """The rules that tie parameters together (each one alone is checked by its constraint)."""
        if self.oob_score and not self.bootstrap:
            raise ValueError("oob_score=True needs bootstrap=True: without a bootstrap no row is out of bag")
        if self.max_samples is not None and not self.bootstrap:
            raise ValueError("max_samples needs bootstrap=True")
        if self.combination == "linear" and self.max_bins is None:
            raise ValueError("combination='linear' needs binned mode: set max_bins (the combinations are binned "
                             "from the profiling sample)")

    def _resolve_max_features(self, n: int) -> int:
        mf = self.max_features
        if mf is None:
            return n
        if mf == "sqrt":
            return max(1, int(math.sqrt(n)))
        if mf == "log2":
            return max(1, int(math.log2(n)))
        if is_int(mf):
            if mf > n:  # as scikit-learn: more than there are is a mistake, not "all of them"
                raise ValueError(f"max_features={mf} is more than the {n} features each node can draw from")
            return int(mf)
        return max(1, int(mf * n))

    def _rate(self, n_rows: int) -> float | None:
        if not self.bootstrap:
            return None
        ms = self.max_samples
        if ms is None:
            return 1.0
        if is_int(ms):
            if ms > n_rows:
                raise ValueError(f"max_samples must be at most the number of rows ({n_rows:,}), got {ms!r}")
            return ms / n_rows
        return float(ms)

    # -- fitting -------------------------------------------------------------------------------
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
        self.validate_params()
        self._check_combined_params()
        warm = self.warm_start and hasattr(self, "estimators_")
        start = len(self.estimators_) if warm else 0
        if warm and self.n_estimators < start:
            raise ValueError(f"n_estimators={self.n_estimators} must be at least the {start} trees already grown "
                             f"when warm_start=True")
        if warm and self.n_estimators == start:
            warnings.warn("warm_start fit without more n_estimators grows no new tree", UserWarning, stacklevel=2)
            return self
        if warm:
            seed = self.seed_
        elif self.random_state is None:
            seed = int(np.random.SeedSequence().entropy) & M32
        else:
            seed = int(self.random_state)
        budget = parse_bytes(self.memory_budget)
        n_new = self.n_estimators - start
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features) as run:
            data, source = run.data, run.source
            if warm and list(data.features) != list(self.estimators_[0].feature_names[:len(data.features)]):
                raise DataError("warm_start: the data's feature columns differ from those the forest was grown on")
            batch_size = batch_size_for(self, budget, len(data.features))
            schema, profile = profile_pass(self, data, run.kinds, batch_size, seed)
            class_weight = class_weights(self.class_weight, schema.label.classes, profile.label_counts,
                                         profile.n_rows)
            params = grow_params(self, profile.n_rows, algorithm="hybrid" if self.algorithm == "hybrid" else "read")
            seeds = tree_seeds(seed, start, self.n_estimators)
            combos, per_tree = self._combinations(schema, profile, seeds)
            weighted = schema.weight is not None or class_weight is not None
            columns = Columns(schema, combos, class_weight, weighted)
            if combos is not None:  # the slots of every tree's combinations travel with each batch
                batch_size = self.batch_size or int(min(batch_size, max(1024, budget // 8 // (columns.width * 9))))
            p = len(schema.attributes)
            categorical = [j for j, a in enumerate(schema.attributes) if a.kind == CATEGORICAL]
            if combos is None:
                candidates = [np.arange(p)] * n_new
            else:
                candidates = [np.concatenate([p + t * per_tree + np.arange(per_tree), categorical]).astype(np.int64)
                              for t in range(n_new)]
            spec = ForestSpec(seeds, self._rate(profile.n_rows), self._resolve_max_features(len(candidates[0])),
                              candidates)
            data_columns = schema.names + [schema.label.name] + ([schema.weight] if schema.weight else [])
            grower = ForestGrower(source, columns, spec, params, budget, batch_size, self.verbose, profile.n_rows,
                             data_columns)
            grown = grower.grow()
            trees = [self._to_tree(nodes, schema, combos, per_tree, t) for t, nodes in enumerate(grown)]
            if self.ccp_alpha > 0:
                trees = [cost_complexity_prune(t, self.ccp_alpha) for t in trees]
            if warm:
                self.estimators_ = self.estimators_ + trees
                self.tree_seeds_ = np.concatenate([self.tree_seeds_, seeds])
                self.combinations_ = self.combinations_ + self._tree_combinations(combos, per_tree, n_new)
            else:
                self.estimators_ = trees
                self.tree_seeds_ = seeds
                self.combinations_ = self._tree_combinations(combos, per_tree, n_new)
            self.seed_ = seed
            self.bootstrap_rate_ = spec.rate
            self._set_fitted_inputs(schema.label.classes, data.features, data.has_names)
            self._cache = {}
            self.n_rows_ = profile.n_rows
            self.n_passes_per_level_ = grower.stats.passes_per_level
            self.grow_stats_ = grower.stats
            if self.oob_score:
                self._set_oob(source, schema, batch_size)
            else:
                for name in ("oob_score_", "oob_decision_function_"):
                    if hasattr(self, name):
                        delattr(self, name)
        return self

    def _combinations(self, schema: Schema, profile, seeds) -> tuple:
        """Forest-RC's combinations of every new tree (``per_tree`` each, concatenated), binned from the
        profiling pass's sample; ``(None, 0)`` for Forest-RI."""
        if self.combination is None:
            return None, 0
        numeric = np.array([j for j, a in enumerate(schema.attributes) if a.kind == NUMERIC], np.int64)
        if self.n_combined > len(numeric):
            raise ValueError(f"n_combined={self.n_combined} exceeds the {len(numeric)} numeric attributes")
        per_tree = self.n_combinations or 3 * len(numeric)
        feats, coefs = zip(*(draw_combinations(int(s), numeric, per_tree, self.n_combined) for s in seeds))
        # the sample's columns are the numeric attributes, in schema order
        sample = np.full((profile.n_sample, len(schema.attributes)), np.nan)
        sample[:, numeric] = profile.held_sample()
        # coefficients apply to attributes in units of their spread in the sample, so no attribute
        # dominates a combination by its scale alone
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            spread = np.nanstd(sample, axis=0)
        spread = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)
        feats = np.concatenate(feats)
        combos = Combinations(feats, np.concatenate(coefs) / spread[feats])
        values = combos.values(sample)
        max_bins = int(self.max_bins)
        combos.cuts = [quantile_edges(v[~np.isnan(v)], max_bins) for v in values.T]
        return combos, per_tree

    @staticmethod
    def _tree_combinations(combos, per_tree: int, n_new: int) -> list:
        if combos is None:
            return [None] * n_new
        return [combos.take(np.arange(t * per_tree, (t + 1) * per_tree)) for t in range(n_new)]

    def _to_tree(self, nodes: Nodes, schema: Schema, combos, per_tree: int, t: int) -> Tree:
        if combos is None:
            return nodes.to_tree(schema, self.criterion)
        p = len(schema.attributes)
        lo = p + t * per_tree
        nodes.feature = [f if f < p else f - lo + p for f in nodes.feature]  # the tree's own feature numbering
        mine = combos.take(np.arange(t * per_tree, (t + 1) * per_tree))
        own = Schema(list(schema.attributes) + mine.attributes(schema.names), schema.label, schema.weight)
        return nodes.to_tree(own, self.criterion)

    # -- out of bag --------------------------------------------------------------------------------
    def _thresholds(self) -> np.ndarray:
        return poisson_thresholds(self.bootstrap_rate_) if self.bootstrap_rate_ is not None else np.empty(0, np.int64)

    def _set_oob(self, source, schema: Schema, batch_size: int) -> None:
        columns = list(self._base_names()) + [schema.label.name] + ([schema.weight] if schema.weight else [])
        task = OobPass(self._encoder(), self.estimators_, self.tree_seeds_, self.combinations_, self._leaf_proba,
                       self._thresholds(), len(self.classes_), schema.label, schema.weight)
        self.oob_decision_function_, self.oob_score_, uncovered = oob_estimates(
            source.run_pass(task, columns, batch_size), self.n_classes_)
        if uncovered:
            warnings.warn("some rows are in the bootstrap of every tree, so they have no out-of-bag estimate; "
                          "grow more trees for a reliable oob_score_", UserWarning, stacklevel=3)

    # -- prediction ----------------------------------------------------------------------------
    def _base_names(self) -> list:
        return list(self.estimators_[0].feature_names[:self.n_features_in_])

    def _encoder(self) -> Schema:
        """Encodes raw batches of the model's feature columns (the trees' shared attributes)."""
        if "encoder" not in self._cache:
            tree = self.estimators_[0]
            p = self.n_features_in_
            self._cache["encoder"] = Schema([
                Attribute(n, CATEGORICAL if k == "categorical" else NUMERIC, categories=c or [])
                for n, k, c in zip(tree.feature_names[:p], tree.feature_kinds[:p], tree.categories[:p])])
        return self._cache["encoder"]

    def _leaf_proba(self, t: int) -> np.ndarray:
        key = ("proba", t)
        if key not in self._cache:
            self._cache[key] = self.estimators_[t].leaf_proba()
        return self._cache[key]

    def _tree_input(self, t: int, X: np.ndarray) -> np.ndarray:
        """``X`` (raw, C-ordered) with tree ``t``'s Forest-RC combinations appended."""
        return tree_input(self.combinations_[t], X)

    def _tables(self, X):
        self._check_fitted()
        return feature_tables(X, self._base_names(), strict_names=hasattr(self, "feature_names_in_"),
                              batch_size=self.batch_size or 65536)

    def apply(self, X) -> np.ndarray:
        """The leaf each row reaches in each tree, shape ``(n_rows, n_estimators)``."""
        parts = []
        with numba_threads(self.n_jobs, rows=in_memory_rows(X)):
            for table in self._tables(X):
                Xe = np.ascontiguousarray(self._encoder().encode(table))
                parts.append(np.column_stack([tree.apply(self._tree_input(t, Xe))
                                              for t, tree in enumerate(self.estimators_)]))
        return np.concatenate(parts) if parts else np.empty((0, len(self.estimators_)), np.int64)

    def predict_proba(self, X) -> np.ndarray:
        """The mean over the trees of the class distribution of each row's leaf (as scikit-learn)."""
        parts = []
        with numba_threads(self.n_jobs, rows=in_memory_rows(X)):
            for table in self._tables(X):
                Xe = np.ascontiguousarray(self._encoder().encode(table))
                proba = np.zeros((len(Xe), self.n_classes_))
                for t, tree in enumerate(self.estimators_):
                    proba += self._leaf_proba(t)[tree.apply(self._tree_input(t, Xe))]
                parts.append(proba / len(self.estimators_))
        return np.concatenate(parts) if parts else np.empty((0, self.n_classes_))

    @property
    def feature_importances_(self) -> np.ndarray:
        """Mean over the trees (those with a split) of their normalized impurity decreases; a Forest-RC
        combination's share goes to its attributes in proportion to their coefficients' magnitudes."""
        self._check_fitted()
        p = self.n_features_in_
        per_tree = []
        for tree, combos in zip(self.estimators_, self.combinations_):
            if tree.node_count <= 1:
                continue
            imp = tree.feature_importances()
            base = imp[:p].copy()
            if combos is not None:
                for q in range(len(combos.features)):
                    share = np.abs(combos.coefficients[q])
                    share = share / share.sum() if share.sum() > 0 else np.full(len(share), 1.0 / len(share))
                    np.add.at(base, combos.features[q], imp[p + q] * share)
            per_tree.append(base)
        if not per_tree:
            return np.zeros(p)
        mean = np.mean(per_tree, axis=0)
        total = mean.sum()
        return mean / total if total > 0 else mean

    # -- persistence -----------------------------------------------------------------------------
    def forest_dict(self) -> dict:
        """The forest as a ``"rainforest.forest"`` document: trees, seeds, bootstrap, combinations."""
        self._check_fitted()
        return forest_document(ForestParts(self.estimators_, self.tree_seeds_, self.seed_, self.bootstrap_rate_,
                                           self.n_features_in_, self.combinations_))

    def to_json(self) -> str:
        """:meth:`forest_dict` as canonical JSON (equal forests give equal text)."""
        return json.dumps(self.forest_dict(), sort_keys=True, allow_nan=False)

    def save(self, path) -> None:
        """Write the model as versioned JSON (no pickle), atomically; :func:`rainforest.load` reads it."""
        self._check_fitted()
        oob = {"oob_score": self.oob_score_} if hasattr(self, "oob_score_") else {}
        write_model(path, self, self.n_passes_, has_feature_names=hasattr(self, "feature_names_in_"),
                    forest=self.forest_dict(), **oob)

    @classmethod
    def from_document(cls, doc: dict, path: str = "<document>") -> "RandomForestClassifier":
        """The estimator saved in ``doc`` (a parsed model file whose estimator is this class)."""
        check_document(doc, path, cls)
        forest = doc.get("forest")
        check_forest_format(forest, path)
        est = cls(**params_from_json(doc["params"]))
        parts = read_forest(forest, path)
        est.estimators_, est.tree_seeds_, est.seed_ = parts.trees, parts.tree_seeds, parts.seed
        est.bootstrap_rate_, est.n_features_in_, est.combinations_ = (parts.bootstrap_rate, parts.n_features,
                                                                      parts.combinations)
        tree = est.estimators_[0]
        est._set_fitted_inputs(tree.classes, list(tree.feature_names[:est.n_features_in_]),
                               bool(doc.get("has_feature_names")))
        est.n_passes_ = doc.get("n_passes")
        if "oob_score" in doc:
            est.oob_score_ = doc["oob_score"]
        est._cache = {}
        return est


register_reader("RandomForestClassifier", RandomForestClassifier.from_document)
