"""``BoatClassifier``: BOAT's two passes, the exact tree, and incremental updates."""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import weakref

import numpy as np
import pyarrow as pa

from rainforest.base import Classifier
from rainforest.budget import parse_bytes
from rainforest.errors import DataError, NotFittedError
from rainforest.constraints import BOAT_PARAMS
from rainforest.estimators import DecisionTreeClassifier
from rainforest.grow import GrowParams
from rainforest.inputs import to_source
from rainforest.profile import ProfileTask
from rainforest.schema import CATEGORICAL, Attribute, Schema
from rainforest.threads import numba_threads
from rainforest.tree_setup import grow_params, value_key_cap
from rainforest.write_behind import write_ahead

from . import coarse as coarse_mod
from . import deepen
from .assemble import nodes_to_tree
from .cleanup import CleanupTask, NodeFiles, route_rows, stats_layout
from .deletion import RowsToDelete
from .finish import FamilySource, Finisher
from .sample import SampledProfileTask

CONCAVE = ("gini", "entropy")


class BoatClassifier(Classifier):
    """BOAT (Gehrke, Ganti, Ramakrishnan, Loh, SIGMOD 1999): the exact decision tree in two passes.

    Pass 1 profiles the data (as exact-mode :class:`rainforest.DecisionTreeClassifier` does) and
    draws a uniform sample by a hash of each row's number.  ``n_bootstrap`` trees grown in memory
    on bootstrap samples of it give the coarse splitting criteria (an interval for a numeric
    split point, the branches of a categorical split) where they all agree.  Pass 2 streams
    every row down that coarse tree, counting per node and bucket, and writes the rows it cannot
    route (inside an interval) or that reach the coarse tree's frontier to Parquet files in a
    work folder.  Then, top down, each node's exact split is computed and verified (a lower
    bound of the impurity in every bucket, valid because gini and entropy are concave); a node
    that fails is rebuilt, and every frontier node finished, by RainForest over its family
    read from the work folder.  The tree is the one ``DecisionTreeClassifier(max_bins=None)``
    (and scikit-learn's exact tree) builds, node for node; no pass over the data is added by
    failures.

    Parameters
    ----------
    criterion : {"gini", "entropy"}, default="gini"
        Concave impurities only: the verification bound needs concavity ("gain_ratio" is refused).
    max_depth : int or None, default=None
    min_samples_split : int or float, default=2
    min_samples_leaf : int or float, default=1
        As in :class:`rainforest.DecisionTreeClassifier` (a float is a fraction of the rows).
    sample_size : int, default=100000
        Rows in the in-memory sample (all rows when fewer), drawn in the profiling pass as
        :class:`rainforest.DecisionTreeClassifier`'s ``sample_size`` is.
    n_bootstrap : int, default=20
        Bootstrap trees; more widen the intervals (fewer failures, more interval rows).
    n_buckets : int, default=256
        Buckets per numeric attribute and coarse node (from the sample's values at the node).
    max_family_rows : int or None, default=None
        A node whose rows (estimated from the sample) are at most this many is left to RainForest
        (read from the work folder, in memory when it fits). ``None``: a quarter of
        ``memory_budget`` over 8 bytes per column, and below that bound a node whose split is
        stable (the bootstrap trees agree and hold at most 2 % of its sample rows) is still
        expanded while its rows exceed a fifth of the data and 2M. Every :meth:`update` regrows
        each family it touches, so smaller families make updates cheaper where splits are
        stable, at the price of a longer cleanup pass (10M Agrawal F1 rows: a 1 % update 0.15-0.18
        of a fit with the stable families, 0.31-0.37 without; F6 and F7 keep their families; see
        ``docs/boat.md``). A number sets the families' size alone: every node the trees agree on
        is expanded down to it.
    categorical_features : "auto" or list, default="auto"
    memory_budget : int or str, default="1GB"
        Budget of the RainForest growth below the frontier, and the default ``max_family_rows``.
    spill_dir : str or None, default=None
        Where the work folder (``rainforest-boat-*``) is made; the system's temporary directory when None.
        It holds a copy of the training rows, one Parquet folder per coarse node, kept for
        :meth:`update` until :meth:`close` (or garbage collection, or a failed fit) removes it.
    batch_size : int or None, default=None
        Rows per batch of the two passes (65536 when None); the tree does not depend on it.
    n_jobs : int or None, default=-1
    random_state : int or None, default=0
        Seed of the sample and of the bootstrap draws. rainforest is deterministic by default, as
        every learner (``None`` is 0 here).
    verbose : int, default=0

    Attributes
    ----------
    tree_ : Tree
    n_passes_ : int
        Passes over the data by the last ``fit`` (2) or ``update`` (over the changed rows).
    n_verification_failures_ : int
        Coarse nodes whose exact split could not be verified (last ``fit`` / ``update``).
    n_rebuilt_subtrees_ : int
        Subtrees rebuilt by RainForest because their check failed (not served from the cache).
    n_frontier_subtrees_ : int
        Frontier subtrees grown by RainForest (an update regrows only those whose rows changed).
    n_work_reads_, n_work_rows_read_ : int
        Reads of the work folder's node files by the last ``fit`` / ``update``'s finish (each pass of
        a subtree grown over its family, each node's held rows, each read of buckets' rows) and the
        rows they gave: what the work folder, not the data, cost (an update serving a subtree from
        the cache reads none of its rows; deletions' rewrites of the files they touch are not counted).
    n_regrown_rows_ : int
        Rows of the subtrees RainForest grew in the last ``fit`` / ``update`` (each family's rows once).
    n_refiled_rows_ : int
        Rows filed again under the exact splits of the subtrees grown because their coarse node held
        more interval rows than half the budget holds (see ``docs/boat.md``): those splits become coarse
        nodes, which later updates verify instead of regrowing the family.
    verification_failures_ : list of (int, str)
        The failed coarse nodes and why.
    n_coarse_nodes_ : int
        Internal nodes of the coarse tree: those the bootstrap trees agreed on, and the splits of refiled
        families (``n_refiled_rows_``).
    """

    def __init__(self, *, criterion="gini", max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 sample_size=100_000, n_bootstrap=20, n_buckets=256, max_family_rows=None,
                 categorical_features="auto", memory_budget="1GB", spill_dir=None, batch_size=None, n_jobs=-1,
                 random_state=0, verbose=0):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.sample_size = sample_size
        self.n_bootstrap = n_bootstrap
        self.n_buckets = n_buckets
        self.max_family_rows = max_family_rows
        self.categorical_features = categorical_features
        self.memory_budget = memory_budget
        self.spill_dir = spill_dir
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # -- parameters ------------------------------------------------------------------------
    _parameter_constraints = BOAT_PARAMS
    _fitted_attribute = "tree_"

    def _tree_params(self) -> dict:
        """The parameters of the equivalent exact-mode tree estimator (its model file)."""
        return dict(criterion=self.criterion, max_bins=None, max_depth=self.max_depth,
                    min_samples_split=self.min_samples_split, min_samples_leaf=self.min_samples_leaf,
                    categorical_features=self.categorical_features, memory_budget=self.memory_budget,
                    batch_size=self.batch_size, n_jobs=self.n_jobs, random_state=self.random_state)

    def validate_params(self) -> None:
        """The declared constraints, after the one BOAT adds: a concave impurity."""
        if self.criterion not in CONCAVE:
            raise ValueError(f"BOAT needs a concave impurity (its verification bounds rely on it): criterion must "
                             f"be 'gini' or 'entropy', got {self.criterion!r}")
        super().validate_params()

    def _grow_params(self, n_rows: int, spill_dir: str) -> GrowParams:
        return grow_params(self, n_rows, spill_dir=spill_dir)

    # -- work folder -------------------------------------------------------------------------
    def close(self) -> None:
        """Remove the work folder (the model stays usable for prediction, not for :meth:`update`)."""
        fin = getattr(self, "_finalizer", None)
        if fin is not None:
            fin()
        self._finalizer = None
        self._state = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _new_work_folder(self) -> str:
        if self.spill_dir is not None and not os.path.isdir(self.spill_dir):
            raise FileNotFoundError(f"spill_dir {self.spill_dir!r} is not a folder")
        return tempfile.mkdtemp(prefix="rainforest-boat-", dir=self.spill_dir)

    @property
    def work_folder_(self) -> str | None:
        """The folder holding the node files (None once closed)."""
        state = getattr(self, "_state", None)
        return None if state is None else state["work"]

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, X, y=None, *, target=None, features=None):
        """Build the tree in two passes over ``X`` (what :meth:`DecisionTreeClassifier.fit` accepts,
        without weights).

        Returns
        -------
        self
        """
        with self.fitting(X, y, target=target, features=features) as run:
            source = run.source
            if getattr(source, "distributed", False):
                hint = "give it transfer='rows'" if hasattr(source, "transfer") else "read the data through a local source"
                raise DataError(f"BOAT writes its node files in this process; the rows of {source.description} stay "
                                f"where they are (use DecisionTreeClassifier, or {hint})")
            self.close()
            self._fit_source(source, run.kinds, run.data.target, parse_bytes(self.memory_budget), None,
                             value_key_cap(self, run.data))
            run.classes = self._state["schema"].label.classes
        return self

    def _fit_source(self, source, kinds: dict, target: str, budget: int, file_schema, key_cap: int | None) -> None:
        """The two passes and the finish over ``source``.  A numeric column with more than ``key_cap``
        distinct values is keyed (:mod:`rainforest.value_keys`), as in ``DecisionTreeClassifier(max_bins=None)``:
        the profile does not hold its millions of values, and the finish's subtrees count it in bins."""
        work = self._new_work_folder()
        finalizer = weakref.finalize(self, shutil.rmtree, work, True)
        try:
            columns = list(kinds) + [target]
            batch_size = self.batch_size or 65536
            with numba_threads(self.n_jobs):
                # keyed columns in more bins on more rows, as a tree's (the finish grows its subtrees so)
                ptask = ProfileTask(kinds, target, None, source.description, exact=True, max_bins=0,
                                    seed=int(self.random_state or 0), key_cap=key_cap, key_budget=budget)
                stask = SampledProfileTask(ptask, columns, int(self.sample_size), int(self.random_state or 0))
                state = source.run_pass(stask, columns, batch_size)
                schema = ptask.schema(state.profile)
                n_rows = state.profile.n_rows
                params = self._grow_params(n_rows, work)
                sample = stask.sample_table(state)
                sample_X = schema.encode(sample) if sample.num_rows else np.empty((0, len(kinds)))
                coarse = self._coarse_tree(sample, sample_X, kinds, target, schema, params, n_rows, budget)
                offsets = stats_layout(schema, int(self.n_buckets))
                files = NodeFiles(os.path.join(work, "nodes"), coarse.n_nodes, write_ahead(budget))
                file_schema = file_schema or pa.schema([source.schema.field(c) for c in columns])
                task = CleanupTask(coarse, schema, offsets, files, columns, file_schema)
                try:
                    stats = source.run_pass(task, columns, batch_size)
                    files.commit()
                except BaseException:
                    files.abort()
                    raise
                finisher = Finisher(coarse, schema, offsets, files, params, budget, batch_size, columns)
                self._state = {"work": work, "schema": schema, "profile": state.profile, "coarse": coarse,
                               "stats": stats, "files": files, "finisher": finisher, "kinds": kinds,
                               "target": target, "columns": columns, "n_rows": n_rows, "budget": budget,
                               "file_schema": file_schema, "offsets": offsets, "key_cap": key_cap,
                               "sample_X": sample_X}
                self._finish()
        except BaseException:
            finalizer()
            self._state = None
            raise
        old = getattr(self, "_finalizer", None)
        if old is not None:
            old()
        self._finalizer = finalizer

    def _coarse_tree(self, sample: pa.Table, X: np.ndarray, kinds, target, schema: Schema, params: GrowParams,
                     n_rows: int, budget: int):
        n_s = sample.num_rows
        family = self.max_family_rows if self.max_family_rows is not None else \
            budget // 4 // (8 * (len(kinds) + 1))
        stable = coarse_mod.stable_family_rows(n_rows, family) if self.max_family_rows is None else None
        smallest = family if stable is None else stable  # the bootstrap trees grow down to it
        trees, boot_schema = [], schema
        if n_s and n_rows > family:
            try:
                boot_schema = coarse_mod.sample_schema(sample, kinds, target, "the BOAT sample")
            except DataError:  # one class in the sample, or an empty column there: no coarse tree
                boot_schema = None
            if boot_schema is not None:
                boot = GrowParams(criterion=params.criterion, max_depth=params.max_depth,
                                  min_samples_split=max(params.min_samples_split,
                                                        int(math.ceil(smallest * n_s / n_rows))),
                                  min_samples_leaf=max(1, int(params.min_samples_leaf * n_s / n_rows)),
                                  spill_dir=params.spill_dir)
                trees = coarse_mod.bootstrap_trees(sample, boot_schema, boot, int(self.n_bootstrap), budget,
                                                   int(self.random_state or 0))
        return coarse_mod.build_coarse_tree(trees, boot_schema or schema, schema, X, n_rows, family, self.max_depth,
                                            int(self.n_buckets), stable)

    def _finish(self) -> None:
        s = self._state
        with numba_threads(self.n_jobs):
            root, report = s["finisher"].finish(s["stats"], s["n_rows"])
            n_refiled = 0  # the state takes each refiled family as it is committed (deepen.refile_oversized)
            for s["coarse"], s["stats"], n in deepen.refile_oversized(report, root, s["coarse"], s["stats"], s["files"],
                                                                      s["finisher"], s["sample_X"], int(self.n_buckets),
                                                                      self.batch_size or 65536):
                n_refiled += n
        self.tree_ = nodes_to_tree(root, s["schema"], self.criterion)
        self.verification_failures_ = report.failures
        self.n_verification_failures_ = len(report.failures)
        self.n_rebuilt_subtrees_ = report.rebuilt
        self.n_frontier_subtrees_ = report.regrown
        self.n_work_reads_, self.n_work_rows_read_ = report.work_reads, report.work_rows
        self.n_regrown_rows_ = report.grown_rows
        self.n_rows_ = s["n_rows"]
        self.n_refiled_rows_ = n_refiled
        self.n_coarse_nodes_ = int(np.sum(s["coarse"].feature >= 0))

    # -- updates ---------------------------------------------------------------------------------
    def update(self, inserted=None, deleted=None):
        """Insert and delete rows, and bring the tree to the one a fit on the changed data builds.

        Parameters
        ----------
        inserted, deleted : path, Source, table, DataFrame or None
            Rows with the training columns (features and target). A deleted row must be in the
            data (equal in every column); each removes one such row.

        Returns
        -------
        self

        Notes
        -----
        The changed rows stream down the coarse tree: counts are added or subtracted, the node
        files gain or lose them, then every coarse node is verified again. Only subtrees whose
        rows changed, or whose check fails, are regrown. When the change alters the set of
        classes or categories (or a fractional ``min_samples_*``), the tree is rebuilt from the
        work folder plus the inserted rows.
        """
        self._check_fitted()
        s = getattr(self, "_state", None)
        if s is None:
            raise NotFittedError("this BoatClassifier's work folder was closed; fit again to update")
        need = s["columns"]
        sources = {}
        for name, X in (("inserted", inserted), ("deleted", deleted)):
            if X is not None:
                src = to_source(X)
                src.check_columns(need)
                sources[name] = src
        passes_before = sum(src.n_passes for src in sources.values())
        counts = {name: self._profile_of(src) for name, src in sources.items()}
        with numba_threads(self.n_jobs):
            if "deleted" in sources:
                self._check_known(counts["deleted"], sources["deleted"].description)
                self._delete(sources["deleted"])
            n_rows = s["n_rows"] + sum((1 if k == "inserted" else -1) * p.n_rows for k, p in counts.items())
            if n_rows <= 0:
                raise DataError("the update deletes every row")
            if "inserted" in sources and not self._schema_holds(counts, n_rows):
                self._rebuild(sources["inserted"])
            elif "deleted" in sources and not self._schema_holds(counts, n_rows):
                self._rebuild(None)
            else:
                if "inserted" in sources:
                    self._insert(sources["inserted"])
                s["n_rows"] = n_rows
                self._account(counts)
                self._finish()
        self.n_passes_ = sum(src.n_passes for src in sources.values()) - passes_before
        return self

    def _profile_of(self, src):
        s = self._state
        task = ProfileTask(s["kinds"], s["target"], None, src.description, exact=True, max_bins=0)
        return src.run_pass(task, s["columns"], self.batch_size or 65536)

    def _check_known(self, profile, where: str) -> None:
        schema = self._state["schema"]
        for c in profile.label_counts:
            if c not in schema.label.classes:
                raise DataError(f"{where} deletes rows of class {c!r}, which the data does not hold")
        for a in schema.attributes:
            if a.kind == CATEGORICAL:
                for v in profile.columns[a.name].counts:
                    if v not in a.categories:
                        raise DataError(f"{where} deletes rows whose column {a.name!r} is {v!r}, a value the data "
                                        f"does not hold")

    def _schema_holds(self, counts: dict, n_rows: int) -> bool:
        """Whether the changed data keep the classes, the categories and the resolved stopping rules."""
        s = self._state
        prof = s["profile"]
        sign = {"inserted": 1, "deleted": -1}

        def changed(old: dict, key) -> set:
            out = dict(old)
            for name, p in counts.items():
                for v, c in key(p).items():
                    out[v] = out.get(v, 0) + sign[name] * c
            return {v for v, c in out.items() if c > 0}

        if changed(prof.label_counts, lambda p: p.label_counts) != set(s["schema"].label.classes):
            return False
        for a in s["schema"].attributes:
            if a.kind == CATEGORICAL and changed(prof.columns[a.name].counts,
                                                 lambda p: p.columns[a.name].counts) != set(a.categories):
                return False
        new = self._grow_params(n_rows, s["work"])
        old = s["finisher"].params
        return (new.min_samples_split, new.min_samples_leaf) == (old.min_samples_split, old.min_samples_leaf)

    def _account(self, counts: dict) -> None:
        """Keep the profile's class and category counts, and add inserted numeric values to the cuts."""
        s = self._state
        prof = s["profile"]
        for name, p in counts.items():
            sign = 1 if name == "inserted" else -1
            for v, c in p.label_counts.items():
                prof.label_counts[v] = prof.label_counts.get(v, 0) + sign * c
            for col, cp in p.columns.items():
                for v, c in cp.counts.items():
                    prof.columns[col].counts[v] = prof.columns[col].counts.get(v, 0) + sign * c
        if "inserted" in counts:
            attrs = []
            for a in s["schema"].attributes:
                if a.kind != CATEGORICAL and a.keys is None:  # a keyed column has no values to add to
                    new = counts["inserted"].columns[a.name].distinct_values()
                    a = Attribute(a.name, a.kind, exact=True, cuts=np.union1d(a.cuts, new))
                attrs.append(a)
            schema = Schema(attrs, s["schema"].label, None)
            s["schema"] = schema
            s["finisher"].schema = schema

    def _encoded(self, src):
        """``(table, X, y)`` per batch of ``src``, cast to the work folder's column types."""
        s = self._state
        for _, batch in src.scan(s["columns"], self.batch_size or 65536):
            table = pa.Table.from_batches([batch])
            if not table.schema.equals(s["file_schema"]):
                table = table.cast(s["file_schema"])
            yield table, s["schema"].encode(table), s["schema"].label.codes(table.column(s["target"]))

    def _insert(self, src) -> None:
        """Add the inserted rows' counts and append them to their nodes' files: both or neither (an error
        or an interrupt drops the files' new rows and leaves the counts as they were)."""
        s = self._state
        stats = s["stats"].copy()
        try:
            for table, X, y in self._encoded(src):
                node, _ = route_rows(s["coarse"], s["schema"], s["offsets"], stats, X, y, np.zeros(len(y), np.int64))
                s["files"].write(table, node)
            s["files"].commit()
        except BaseException:
            s["files"].abort()
            raise
        s["stats"] = stats

    def _delete(self, src) -> None:
        """Subtract the deleted rows' counts and remove them from their nodes' files, each streamed into a
        new file (all checked first: a row not in the data is an error and changes nothing)."""
        s = self._state
        stats = s["stats"].copy()
        per_node: dict[int, list] = {}
        for table, X, y in self._encoded(src):
            node, _ = route_rows(s["coarse"], s["schema"], s["offsets"], stats, X, y, np.zeros(len(y), np.int64), -1)
            for k in np.unique(node).tolist():
                per_node.setdefault(k, []).append(table.filter(pa.array(node == k)))
        files: NodeFiles = s["files"]
        rewritten = {}
        try:
            for k, parts in per_node.items():
                rows = RowsToDelete(pa.concat_tables(parts))
                rewritten[k] = files.rewrite(k, rows.keep, s["columns"])
                missing = rows.missing_row()
                if missing is not None:
                    raise DataError(f"{src.description} deletes a row that is not in the training data: {missing}")
        except BaseException:
            files.discard(rewritten)
            raise
        files.commit_rewrites(rewritten)
        s["stats"] = stats

    def _rebuild(self, inserted) -> None:
        """Fit again over the work folder's rows (plus ``inserted``): the schema itself changed."""
        s = self._state
        files: NodeFiles = s["files"]
        paths = [p for k in range(s["coarse"].n_nodes) for p in files.files(k)]
        from rainforest.storage import ParquetSource
        parts = [ParquetSource(paths, partitioning=None)] + ([inserted] if inserted is not None else [])
        self._fit_source(FamilySource(parts=parts, name="the BOAT work folder and the inserted rows"), s["kinds"],
                         s["target"], s["budget"], s["file_schema"], s["key_cap"])
        self.n_rebuilt_subtrees_ += 1

    # -- prediction and persistence (the equivalent exact tree estimator's) -------------------
    def _as_tree_estimator(self) -> DecisionTreeClassifier:
        self._check_fitted()
        return DecisionTreeClassifier.from_tree(self.tree_, has_feature_names=hasattr(self, "feature_names_in_"),
                                                n_passes=self.n_passes_, **self._tree_params())

    def apply(self, X) -> np.ndarray:
        """Index of the leaf each row ends in."""
        return self._as_tree_estimator().apply(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities: the class distribution of each row's leaf."""
        return self._as_tree_estimator().predict_proba(X)

    def export_text(self, **kwargs) -> str:
        return self._as_tree_estimator().export_text(**kwargs)

    def save(self, path) -> None:
        """Write the model as the exact ``DecisionTreeClassifier``'s JSON: :func:`rainforest.load`
        reads it back as that tree model (BOAT's work folder is not saved)."""
        self._as_tree_estimator().save(path)
