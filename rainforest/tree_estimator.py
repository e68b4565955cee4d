"""What the decision tree estimators share: the fit (profile, grow, prune), pruning by cost-complexity,
prediction's routing, exports, scoring in a database and the model file.

:class:`TreeEstimator` is mixed into :class:`rainforest.DecisionTreeClassifier` and
:class:`rainforest.DecisionTreeRegressor`; each adds its parameters and what it predicts from a leaf
(class probabilities, or the leaf's mean target).
"""
from __future__ import annotations

import numpy as np

from .budget import parse_bytes
from .errors import DataError
from .grow import grow_tree
from .inputs import feature_tables, in_memory_rows, is_sql_source
from .model_check import check_document
from .model_file import json_number, params_from_json, write_model
from .pruning import cost_complexity_path, cost_complexity_prune
from .threads import numba_threads
from .tree import Tree
from .tree_setup import batch_size_for, class_weights, grow_params, profile_pass, value_key_cap

__all__ = ["TreeEstimator"]


class TreeEstimator:
    """Mixin of the decision tree estimators (see the module docstring); the other base is
    :class:`rainforest.base.Classifier` or :class:`rainforest.base.Regressor`."""

    _fitted_attribute = "tree_"

    def _fit_tree(self, X, y, target, sample_weight, features):
        """The fit: the profiling pass, growth, ``ccp_alpha``'s pruning and the fitted attributes."""
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features) as run:
            budget = parse_bytes(self.memory_budget)
            data = run.data
            batch_size = batch_size_for(self, budget, len(data.features))
            # a tree's keyed columns take more bins on more rows (BOAT's too); a forest's keep EXACT_BINS: its
            # AVC-groups are per tree, and more bins were not measured there
            schema, profile = profile_pass(self, data, run.kinds, batch_size, self.random_state or 0,
                                           value_key_cap(self, data), key_budget=budget)
            class_weight = class_weights(getattr(self, "class_weight", None), schema.label.classes,
                                         profile.label_counts, profile.n_rows)
            n_rows = profile.n_rows
            del profile  # its distinct values are the schema's cuts: held once, by the schema, from here on
            params = grow_params(self, n_rows)
            tree, stats = grow_tree(data.source, schema, params, budget, batch_size, class_weight, self.verbose,
                                    n_rows)
            run.classes = schema.label.classes
        self.tree_ = tree
        self.pruning_ = []
        if self.ccp_alpha > 0:
            self._record_pruning(cost_complexity_prune(tree, self.ccp_alpha), "cost_complexity",
                                 ccp_alpha=json_number(self.ccp_alpha))
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
        grown = type(self)(**{**self.get_params(deep=False), "ccp_alpha": 0.0})
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
                             ccp_alpha=json_number(ccp_alpha))
        return self

    def _record_pruning(self, pruned: Tree, method: str, **details) -> None:
        self.pruning_ = list(getattr(self, "pruning_", [])) + [
            {"method": method, **details, "nodes_before": int(self.tree_.node_count),
             "nodes_after": int(pruned.node_count)}]
        self.tree_ = pruned

    # -- prediction ------------------------------------------------------
    def _leaves(self, X) -> np.ndarray:
        """Leaf of every row of ``X`` (streamed batch by batch for paths and sources)."""
        self._check_fitted()
        tree = self.tree_
        if is_sql_source(X) and X.distributed:  # rows stay in the database: only leaf indices come back
            X.check_columns(tree.feature_names)
            parts = [np.asarray(a.to_numpy(zero_copy_only=False), np.int64)
                     for a in X.column_values(tree.to_sql(X.dialect, "leaf", types=X.schema))]
            return np.concatenate(parts) if parts else np.empty(0, np.int64)
        encoder = tree.encoder()
        tables = feature_tables(X, tree.feature_names, strict_names=hasattr(self, "feature_names_in_"),
                                batch_size=self.batch_size or 65536)
        with numba_threads(self.n_jobs, rows=in_memory_rows(X)):
            parts = [tree.apply(encoder.encode(t)) for t in tables]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def apply(self, X) -> np.ndarray:
        """Index of the leaf each row ends in."""
        return self._leaves(X)

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
            Also the probability of each class, as columns ``proba_<class>`` (a classifier's).

        Returns
        -------
        duckdb.DuckDBPyRelation, or the name of the table written.

        Notes
        -----
        The table is written by one ``CREATE TABLE ... AS SELECT`` statement, so a failure
        leaves no half-written table.
        """
        self._check_fitted()
        if not is_sql_source(source):
            raise DataError(f"predict_in_database needs a DuckDBSource or a PostgresSource, got {type(source).__name__}")
        tree = self.tree_
        if proba and tree.regression:
            raise ValueError("proba=True needs a classifier; a regressor's prediction is its one value")
        source.check_columns(list(columns) + tree.feature_names)
        items = [source.quote(c) for c in columns]
        items.append(f"{tree.to_sql(source.dialect, types=source.schema)} AS {source.quote('prediction')}")
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

    @classmethod
    def from_tree(cls, tree: Tree, *, has_feature_names: bool, n_passes=None, pruning=(), **params):
        """A fitted estimator holding ``tree`` (grown elsewhere: a model file, BOAT), with ``params``.

        Parameters
        ----------
        tree : Tree
        has_feature_names : bool
            Whether the training data had named columns (sets ``feature_names_in_``).
        n_passes : int, optional
            The passes the fit that grew ``tree`` made.
        pruning : sequence of dict, default=()
            The prunings applied to it (``pruning_``).
        **params
            The estimator's parameters.
        """
        est = cls(**params)
        est.tree_ = tree
        est._set_fitted_inputs(tree.classes, list(tree.feature_names), has_feature_names)
        est.n_passes_ = n_passes
        est.pruning_ = list(pruning)
        return est

    @classmethod
    def from_document(cls, doc: dict, path: str = "<document>") -> "TreeEstimator":
        """The estimator saved in ``doc`` (a parsed model file whose estimator is this class)."""
        check_document(doc, path, cls)
        return cls.from_tree(Tree.from_dict(doc["tree"]), has_feature_names=bool(doc.get("has_feature_names")),
                             n_passes=doc.get("n_passes"),
                             pruning=doc.get("pruning", []),  # files written before pruning existed have none
                             **params_from_json(doc["params"]))


