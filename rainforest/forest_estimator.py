"""What the random forest estimators share: the fit (profile, grow the trees together, prune), the
out-of-bag pass, routing rows down every tree, feature importances and the model file.

:class:`ForestEstimator` is mixed into :class:`rainforest.RandomForestClassifier` and
:class:`rainforest.RandomForestRegressor`; each adds its parameters, what a leaf predicts
(:meth:`ForestEstimator._leaf_values`: class distributions, or mean targets) and what the out-of-bag
estimates are called and scored by.  How the trees grow together is :mod:`rainforest.forest`'s
docstring.
"""
from __future__ import annotations

import json
import logging
import math
import warnings

import numpy as np

from .bootstrap import poisson_thresholds, tree_seeds
from .budget import parse_bytes
from .combinations import Combinations, draw_combinations
from .errors import DataError
from .forest_file import ForestParts, check_forest_format, forest_document, read_forest
from .forest_grow import ForestGrower, ForestSpec
from .forest_oob import OobPass, kept_blocks, oob_estimates, oob_from_rows, spilled_blocks, tree_input
from .forest_rows import Columns
from .inputs import feature_tables, in_memory_rows
from .model_check import check_document
from .model_file import params_from_json, write_model
from .nodes import Nodes
from .params import is_int
from .profile import quantile_edges
from .pruning import cost_complexity_prune
from .rowhash import M32
from .row_encoding import stores_weights
from .schema import CATEGORICAL, NUMERIC, Attribute, Schema
from .threads import numba_threads
from .tree import Tree
from .tree_setup import batch_size_for, class_weights, grow_params, profile_pass, value_key_cap

__all__ = ["ForestEstimator"]

log = logging.getLogger("rainforest")


class ForestEstimator:
    """Mixin of the random forest estimators (see the module docstring); the other base is
    :class:`rainforest.base.Classifier` or :class:`rainforest.base.Regressor`."""

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
    def _fit_forest(self, X, y, target, sample_weight, features):
        """The fit (with ``warm_start``, of the trees beyond those already grown): the profiling pass,
        the trees grown together, ``ccp_alpha``'s pruning, the out-of-bag pass and the fitted attributes."""
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
            schema, profile = profile_pass(self, data, run.kinds, batch_size, seed, key_cap=value_key_cap(self, data))
            class_weight = class_weights(getattr(self, "class_weight", None), schema.label.classes,
                                         profile.label_counts, profile.n_rows)
            params = grow_params(self, profile.n_rows, algorithm="hybrid" if self.algorithm == "hybrid" else "read")
            seeds = tree_seeds(seed, start, self.n_estimators)
            combos, per_tree = self._combinations(schema, profile, seeds)
            columns = Columns(schema, combos, class_weight, stores_weights(schema, class_weight))
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
            try:  # the spill folder lives on for the out-of-bag estimates, and goes after them or an error
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
                    usable = (not warm and not schema.label.regression
                              and (class_weight is None or bool(np.all(class_weight != 0))))
                    inputs = None if combos is None else [  # each tree's columns among the kept ones
                        np.concatenate([np.arange(p), p + t * per_tree + np.arange(per_tree)]) for t in range(n_new)]
                    self._set_oob(source, schema, batch_size, (grower, columns.attributes, inputs) if usable else None)
                else:
                    for name in self._oob_attributes:
                        if hasattr(self, name):
                            delattr(self, name)
            finally:
                grower.release()
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
    #: the attributes :meth:`_set_oob_estimates` sets (removed by a fit without ``oob_score``)
    _oob_attributes: tuple = ()

    def _set_oob_estimates(self, estimates: np.ndarray, y: np.ndarray, counted: np.ndarray) -> None:
        """Set the out-of-bag attributes from each row's estimate (the mean of :meth:`_leaf_values` over
        its out-of-bag trees), its target and whether it counts (weight not 0)."""
        raise NotImplementedError

    def _thresholds(self) -> np.ndarray:
        return poisson_thresholds(self.bootstrap_rate_) if self.bootstrap_rate_ is not None else np.empty(0, np.int64)

    def _set_oob(self, source, schema: Schema, batch_size: int, kept=None) -> None:
        """The out-of-bag attributes: from ``kept`` (``(grower, attributes, inputs)``: the grower holding
        every row of the fit, encoded, in memory or in its spill folder, in row order, for a classifier
        without class weights of 0; the kept columns' attributes; each tree's columns among them, or
        None) where given and no row has weight 0, else from a pass.  (A row of weight 0 is left out of the profile, so its value may fall
        between an exact attribute's values, or its category be unseen: its slot does not say how the
        trees route it, and it gets an estimate though it does not count.)"""
        columns = list(self._base_names()) + [schema.label.name] + ([schema.weight] if schema.weight else [])
        task = OobPass(self._encoder(), self.estimators_, self.tree_seeds_, self.combinations_, self._leaf_values,
                       self._thresholds(), self._n_outputs(), schema.label, schema.weight)
        state = None
        if kept is not None:
            grower, attributes, inputs = kept
            if grower.rows_in_memory is not None:
                where, blocks = "memory", kept_blocks(grower.rows_in_memory)
            elif grower.rows_on_disk is not None:
                where, blocks = "the spill folder", spilled_blocks(grower.rows_on_disk, batch_size)
            else:
                where, blocks = None, None
            if blocks is not None:
                state = oob_from_rows(task, blocks, attributes, self.n_rows_, inputs)
                if state is not None:
                    log.info("out-of-bag estimates from the rows kept in %s (no pass over the data)", where)
        if state is None:
            state = source.run_pass(task, columns, batch_size)
        estimates, y, counted, uncovered = oob_estimates(state, self._n_outputs())
        self._set_oob_estimates(estimates, y, counted)
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

    def _leaf_values(self, t: int) -> np.ndarray:
        """What each node of tree ``t`` predicts, one row per node: its class distribution (a
        classifier's), or its mean target (a regressor's, one column)."""
        key = ("leaf values", t)
        if key not in self._cache:
            tree = self.estimators_[t]
            self._cache[key] = tree.value[:, :1].copy() if tree.regression else tree.leaf_proba()
        return self._cache[key]

    def _n_outputs(self) -> int:
        """Columns of :meth:`_leaf_values`: the classes, or one for a regressor."""
        return 1 if self._regression else self.n_classes_

    def _mean_leaf_values(self, X) -> np.ndarray:
        """The mean over the trees of :meth:`_leaf_values` at each row's leaves (scikit-learn's forest
        prediction), shape ``(n_rows, _n_outputs())``."""
        parts = []
        with numba_threads(self.n_jobs, rows=in_memory_rows(X)):
            for table in self._tables(X):
                Xe = np.ascontiguousarray(self._encoder().encode(table))
                total = np.zeros((len(Xe), self._n_outputs()))
                for t, tree in enumerate(self.estimators_):
                    total += self._leaf_values(t)[tree.apply(self._tree_input(t, Xe))]
                parts.append(total / len(self.estimators_))
        return np.concatenate(parts) if parts else np.empty((0, self._n_outputs()))

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
    def from_document(cls, doc: dict, path: str = "<document>") -> "ForestEstimator":
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


