"""AdaBoost (SAMME, multi-class) over data that stays out of core.

Boosting weights are never stored: each round's pass computes every row's
weight from the learners so far (``exp(sum of alpha_j over the learners that
got the row wrong)``) as the rows stream by, and counts with it.

* Trees: every round grows its tree from the rows encoded once after the
  profile (:mod:`rainforest.boost_store`; the weights computed as the store is
  read), so a fit reads its source twice.  Where rows may not be kept in this
  process (a Dask cluster, pushed-down SQL, ``algorithm="read"``), a round
  grows the tree in the usual passes over a source that adds the weight column
  (one pass for a stump).  The round's weighted error is read off the new
  tree's own leaves, so no other pass is needed.
* Naive Bayes: a learner's error needs its predictions, so each pass also
  splits the counts by whether the previous learner got the row right; its
  error and weight follow, and the new learner's counts are
  ``right + exp(alpha) * wrong``.  One pass per round, plus one closing pass
  that measures the last learner.
"""
from __future__ import annotations

import math
import uuid
from dataclasses import replace

import numpy as np
import pyarrow as pa

from rainforest.storage import worker_memo
from rainforest.storage.row_copy import CopiedSource, copy_pays
from rainforest.storage.worker_memo import remembered

from .base import Classifier
from .bayes import BayesCounts, BayesPass, NaiveBayesClassifier, reading_model
from .boost_store import BoostStore, StoreRound, boost_weights, boosted_log_weights
from .boosted_source import BoostedSource, SplitTask
from .budget import parse_bytes
from .dask_predict import lazy_on_dask
from .errors import DataError
from .estimators import DecisionTreeClassifier
from .grow import grow_tree
from .inputs import feature_tables
from .model_file import (BOOSTING_BASES, BOOSTING_FORMAT, BOOSTING_VERSION, CLASSES, jsonable_params,
                         params_from_json, register_reader, write_model)
from .constraints import ADABOOST_PARAMS
from .model_check import check_document
from .schema import Label, numeric_values
from .signals import termination_as_interrupt
from .slot_values import predicted_classes, slot_tables
from .tree import Tree, plain_value
from .tree_setup import batch_size_for, grow_params, profile_pass

BOOST_WEIGHT = "__boost_weight__"
# Bytes of wrong-bits a boosting fit whose rounds read the source (naive Bayes, or trees without the store)
# may keep per process (a bit per row and learner; 10M rows: 1.25 MB a learner): an eighth of the default
# memory budget, the boosting store's share of a tree's
BITS_ROOM = 128 << 20
PREVIOUS_WRONG = "__previous_wrong__"
# Bytes of raw batches each Dask worker may keep in memory for naive Bayes rounds (the rest go to its local
# disk, storage.partition_cache): a quarter of the default 1 GB budget, the share a tree's rounds give them
# (NaiveBayesClassifier takes no memory_budget)
BAYES_BATCHES_BYTES = parse_bytes("1GB") // 4


def slots_memo(memo: str) -> str:
    """The fit id under which a cluster's workers keep each batch's slots for a tree's later rounds: its
    own, so the slots' room (an eighth of the base's budget a process) and the wrong-bits' (BITS_ROOM)
    are counted apart."""
    return memo + "/slots"

#: the boosting part of a model file
#: the weak learners a model file may name, by class name: model_file.BOOSTING_BASES (the names the
#: model checks accept), each the class that registered its reader (both are imported above)
BASE_LEARNERS = {name: CLASSES[name] for name in BOOSTING_BASES}


def _scaled(counts: BayesCounts, s: float) -> BayesCounts:
    """The counts of rows whose weights are all multiplied by ``s``."""
    out = BayesCounts(n_rows=counts.n_rows, spread=counts.spread)
    out.class_weight = {c: w * s for c, w in counts.class_weight.items()}
    out.categories = {a: {k: w * s for k, w in d.items()} for a, d in counts.categories.items()}
    for a, per_class in counts.moments.items():
        out.moments[a] = {c: type(m)(m.w * s, m.mean, m.m2 * s) for c, m in per_class.items()}
    return out


@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class AdaBoostClassifier(Classifier):
    """AdaBoost with the SAMME rule, for any number of classes, over data of any size.

    Parameters
    ----------
    estimator : DecisionTreeClassifier or NaiveBayesClassifier, default=None
        The weak learner (its parameters are used for every round); ``None`` is a
        stump, ``DecisionTreeClassifier(max_depth=1)``. Naive Bayes must use
        ``numeric="gaussian"``. A tree's ``class_weight`` and ``ccp_alpha`` are
        refused (ValueError naming them): boosting sets the row weights itself,
        and prunes no round's tree. Its parameters are also reachable as
        ``estimator__<name>`` (``set_params(estimator__max_depth=3)``).
    n_estimators : int, default=50
        Most rounds; boosting stops early at a perfect learner or one no better
        than chance.
    learning_rate : float, default=1.0
        Shrinks each learner's weight ``alpha``.

    Attributes
    ----------
    estimators_ : list of Tree or NaiveBayesClassifier
        The fitted learners (a tree round's learner is its :class:`Tree`).
    estimator_weights_ : ndarray
        Their weights ``alpha``.
    estimator_errors_ : ndarray
        Their weighted training errors.
    n_passes_ : int
        Passes over the data made by ``fit``.
    n_passes_per_round_ : list of int
        Passes each round took (the profiling and closing passes not included; trees
        grown from the boosting store take none, and its encoding pass is listed as the
        first round's).
    classes_ : ndarray
    feature_names_in_ : ndarray of str
        The feature columns.
    target_ : str
        The label column.

    Notes
    -----
    :meth:`save` writes every round's learner (trees as :meth:`Tree.to_dict`,
    naive Bayes as its counts) and weight; a loaded model predicts bit for bit
    as the saved one.
    """

    def __init__(self, estimator=None, *, n_estimators=50, learning_rate=1.0):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate

    _parameter_constraints = ADABOOST_PARAMS
    _fitted_attribute = "estimators_"

    def _base(self):
        """The weak learner, checked: its kind, its parameters, and none boosting would ignore."""
        base = DecisionTreeClassifier(max_depth=1) if self.estimator is None else self.estimator
        if not isinstance(base, (DecisionTreeClassifier, NaiveBayesClassifier)):
            raise ValueError(f"estimator must be a DecisionTreeClassifier or a NaiveBayesClassifier, got {base!r}")
        base.validate_params()
        if isinstance(base, NaiveBayesClassifier) and base.numeric != "gaussian":
            raise ValueError("boosting naive Bayes needs numeric='gaussian'")
        if isinstance(base, DecisionTreeClassifier):
            if base.class_weight is not None:
                raise ValueError(f"estimator's class_weight={base.class_weight!r} would be ignored: boosting sets "
                                 f"the row weights itself (weigh the rows with sample_weight instead)")
            if base.ccp_alpha != 0:
                raise ValueError(f"estimator's ccp_alpha={base.ccp_alpha!r} would be ignored: boosting does not "
                                 f"prune its rounds' trees (limit them with max_depth instead)")
        return base

    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Boost ``n_estimators`` rounds; parameters as :meth:`DecisionTreeClassifier.fit`."""
        self.validate_params()
        base = self._base()
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features,
                          categorical_features=base.categorical_features, n_jobs=base.n_jobs) as run:
            self.estimators_, self.estimator_errors_, self.n_passes_per_round_ = [], [], []
            self._alphas: list[float] = []
            source = run.data.source
            # the learners' wrong-bits of the batches weighed, kept where they were weighed (this process, or a
            # cluster's workers: storage.worker_memo) for the later rounds, released when the fit ends
            memo = uuid.uuid4().hex
            try:
                if isinstance(base, DecisionTreeClassifier):
                    self._fit_trees(base, run.data, run.kinds, memo)
                else:
                    self._fit_bayes(base, run.data, run.kinds, memo)
            finally:
                for fit_id in (memo, slots_memo(memo)):
                    getattr(source, "forget", worker_memo.drop)(fit_id)
            # passes made over the fit's source, not counted there: the rounds' over a weighted view of it
            # (the boosting store's encoding pass is the source's own, listed as the first round's)
            run.extra_passes = sum(self.n_passes_per_round_) + self._closing_passes - self._store_passes
            run.classes = self.classes_
        self.estimator_weights_ = np.array(self._alphas)
        self.estimator_errors_ = np.array(self.estimator_errors_)
        # named even when fitted on an array: prediction picks the columns by these names
        self.feature_names_in_ = np.asarray(run.data.features, dtype=object)
        self.target_ = run.data.target
        return self

    # -- weights as the rows stream by ---------------------------------------------------
    def _weigher(self, label: Label, user_weight: str | None, log_norm: float, flag_last: bool, memo: str,
                 attributes: list | None = None):
        """The weights of a round's rows as they stream by (``weigh(batch, first_row)``), from the learners
        so far; with ``flag_last``, also whether the newest, not yet weighted learner gets each row wrong.

        Each learner's wrong-bits of a batch are kept where the batch was weighed (this process, or a
        cluster's worker: :mod:`rainforest.storage.worker_memo`, under the fit's id ``memo``, up to
        :data:`BITS_ROOM` a process), so a learner scores a row once, not once per later pass; a batch
        not held is scored again.  The weights are added from the bits in learner order
        (:func:`rainforest.boost_store.boosted_log_weights`): the floats of scoring every learner again.

        Where the caller has the batch's slots (``weigh(batch, first_row, slots=S)``, trees' rounds on a
        cluster; ``attributes``: the trees' schema's), a tree scores them as the boosting store scores its
        rows (:func:`rainforest.slot_values.predicted_classes`), not the raw rows encoded again."""
        learners, alphas = list(self.estimators_), list(self._alphas)
        unscored = flag_last and len(learners) > len(alphas)
        weights = np.asarray(alphas, np.float64)
        tables = slot_tables(attributes) if attributes is not None else None

        def classes(j: int, batch: pa.RecordBatch, slots: np.ndarray | None) -> np.ndarray:
            if slots is None or tables is None:
                return self._class_indices(learners[j:j + 1], batch)[0]
            return predicted_classes(learners[j], attributes, slots, tables)

        def weigh(batch: pa.RecordBatch, first_row: int, slots: np.ndarray | None = None) -> dict:
            given = numeric_values(batch.column(user_weight)) if user_weight else None
            y = label.codes(batch.column(label.name), absent=None if given is None else given == 0)
            n = len(y)
            flags = [remembered(memo, (j, first_row, n), lambda j=j: np.packbits(classes(j, batch, slots) != y),
                                BITS_ROOM)
                     for j in range(len(learners) if unscored else len(alphas))]
            wrong = np.unpackbits(flags[-1], count=n).astype(bool) if unscored else np.zeros(n, bool)
            lw = np.full(n, -log_norm)
            if len(weights):
                boosted_log_weights(np.stack(flags[:len(weights)]), weights, 0, -log_norm, lw)
            w = boost_weights(lw)
            if given is not None:
                w *= given
            out = {BOOST_WEIGHT: w}
            if flag_last:
                out[PREVIOUS_WRONG] = wrong
            return out

        return weigh

    @staticmethod
    def _class_indices(learners, batch) -> list[np.ndarray]:
        """For each learner, the index into ``classes_`` of each row's predicted class.

        The trees of one fit share one schema, so the batch is encoded once for all of them.
        """
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        encoded = None
        out = []
        for learner in learners:
            if isinstance(learner, NaiveBayesClassifier):
                out.append(np.argmax(learner.predict_joint_log_proba(table), axis=1))
                continue
            if encoded is None:  # row-major once, not copied again by each tree's apply
                encoded = np.ascontiguousarray(learner.encoder().encode(table.select(learner.feature_names)))
            out.append(np.argmax(learner.value, axis=1)[learner.apply(encoded)])  # each node's class, looked up
        return out

    def _alpha(self, err: float, k: int) -> float | None:
        """SAMME's learner weight, or None when boosting must stop (error no better than chance)."""
        if err >= 1.0 - 1.0 / k:
            return None
        err = max(err, 1e-300)
        return self.learning_rate * (math.log((1.0 - err) / err) + math.log(k - 1.0))

    # -- trees ------------------------------------------------------------------------------
    def _fit_trees(self, base: DecisionTreeClassifier, data, kinds, memo: str | None):
        budget = parse_bytes(base.memory_budget)
        batch_size = batch_size_for(base, budget, len(data.features) + 1)
        columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
        schema, profile = profile_pass(base, data, kinds, batch_size, base.random_state or 0)
        self.classes_ = np.asarray(schema.label.classes)
        k = len(self.classes_)
        params = grow_params(base, profile.n_rows)
        # boosting weights are fractions whatever the data's own: exact mode then counts a slot per value
        # (plan.counted_slots_for), keeping every float of the trees
        boosted_schema = replace(schema, weight=BOOST_WEIGHT, fractional_weights=True, _tables=None)
        # the rounds read the encoded rows (rainforest/boost_store.py), not the source: where rows may
        # stay in this process (not a cluster's, not a database's pushed-down ones) and on local disk
        store, self._store_passes, slots_at = None, 0, None
        if base.algorithm in ("hybrid", "write") and not getattr(data.source, "distributed", False):
            store = BoostStore.fill(data.source, schema, columns, batch_size, self.n_estimators, profile.n_rows,
                                    budget, base.algorithm == "hybrid", base.spill_dir)
            self._store_passes = int(store is not None)
        elif base.algorithm in ("hybrid", "write") and hasattr(data.source, "keep_batches"):
            # a cluster's workers keep the partitions' raw batches where the first round read them (a
            # quarter of the budget each in memory, the rest on local disk; released with the memo), and
            # their slots beside them: later rounds weigh them there, reading no source and encoding nothing
            data.source.keep_batches(memo, budget // 4)
            slots_at = slots_memo(memo)
        try:
            self._boost_trees(base, data, columns, schema, boosted_schema, params, budget, batch_size, profile.n_rows,
                              k, store, memo, slots_at)
        finally:
            if store is not None:
                store.remove()
        self._closing_passes = 0

    def _boost_trees(self, base, data, columns, schema, boosted_schema, params, budget, batch_size, n_rows, k,
                     store: BoostStore | None, memo: str | None, slots_at: str | None):
        """The rounds: each grows a tree from the store (the encoding pass counts as the first round's),
        or from the source with the weights computed as its rows stream by (``slots_at``: where a
        cluster's workers keep each batch's slots for the later rounds, :func:`slots_memo`; None: none)."""
        log_norm = 0.0
        for _ in range(self.n_estimators):
            if store is None:  # with slots kept, a round weighs the rows from its trees' predictions on them
                source = BoostedSource(base=data.source, needed=columns,
                                       weigh=self._weigher(schema.label, data.weight, log_norm, False, memo,
                                                           schema.attributes if slots_at else None),
                                       added={BOOST_WEIGHT: pa.float64()}, slots_memo=slots_at,
                                       slots_room=budget // 8)
            else:
                source = StoreRound(store=store, log_norm=log_norm, name=data.source.description,
                                    arrow_schema=data.source.schema.append(pa.field(BOOST_WEIGHT, pa.float64())))
            # the store's rows in memory take their room from the kept rows' quarter of the budget
            held = replace(params, held_bytes=store.memory_bytes) if store is not None else params
            tree, _ = grow_tree(source, boosted_schema, held, budget, batch_size, None, base.verbose, n_rows)
            self.n_passes_per_round_.append(source.n_passes + (store is not None and not self.estimators_))
            leaves = tree.is_leaf
            total = tree.weighted_n_node_samples[0]
            err = float((tree.value[leaves].sum() - tree.value[leaves].max(axis=1).sum()) / total)
            alpha = 1.0 if err <= 0 else self._alpha(err, k)
            if alpha is None:
                if not self.estimators_:
                    raise DataError(f"the first learner is no better than chance (error {err:.3f}); "
                                    f"boosting cannot start")
                break
            self.estimators_.append(tree)
            self._alphas.append(alpha)
            self.estimator_errors_.append(err)
            if err <= 0:
                break
            if store is not None:
                store.add_learner(tree, alpha)
            log_norm += math.log(total)

    # -- naive Bayes ---------------------------------------------------------------------------
    def _fit_bayes(self, base: NaiveBayesClassifier, data, kinds, memo: str | None):
        """The rounds of naive Bayes learners: each pass weighs every row from its raw values (the
        learners so far score it), so after the first pass the rounds read the rows that pass kept:
        a local copy of a local source's (storage.row_copy), or a cluster's partitions' batches kept
        where they were read (storage.partition_cache); the source is read once, as by one tree."""
        self._closing_passes = self._store_passes = 0
        if copy_pays(data.source):  # removed when the fit ends, fails or is interrupted (SIGTERM too)
            with termination_as_interrupt(only_default=True):
                rows = CopiedSource(base=data.source)
                try:
                    self._bayes_rounds(base, data, kinds, memo, rows)
                finally:
                    rows.remove()
            return
        if hasattr(data.source, "keep_batches"):
            data.source.keep_batches(memo, BAYES_BATCHES_BYTES)  # released with the memo, when the fit ends
        self._bayes_rounds(base, data, kinds, memo, data.source)

    def _bayes_rounds(self, base: NaiveBayesClassifier, data, kinds, memo: str | None, rows) -> None:
        columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
        label_values = None
        log_norm = 0.0
        for m in range(self.n_estimators + 1):
            label = Label(data.target, label_values or [])
            source = BoostedSource(base=rows, needed=columns,
                                   weigh=self._weigher(label, data.weight, log_norm, True, memo),
                                   added={BOOST_WEIGHT: pa.float64(), PREVIOUS_WRONG: pa.bool_()})
            if label_values is None:  # the first pass learns the classes itself: no learner to score yet
                source.weigh = lambda b, first_row: {
                    BOOST_WEIGHT: numeric_values(b.column(data.weight)) if data.weight else np.ones(b.num_rows),
                    PREVIOUS_WRONG: np.zeros(b.num_rows, bool)}
            task = SplitTask(BayesPass(kinds, data.target, BOOST_WEIGHT, data.source.description), PREVIOUS_WRONG)
            right, wrong = source.run_pass(task, list(kinds) + [data.target, BOOST_WEIGHT, PREVIOUS_WRONG],
                                           base.batch_size)
            counts = right
            if m > 0:
                w_right, w_wrong = sum(right.class_weight.values()), sum(wrong.class_weight.values())
                err = w_wrong / (w_right + w_wrong)
                alpha = 1.0 if err <= 0 else self._alpha(err, len(self.classes_))
                if alpha is None:
                    self.estimators_.pop()  # the last learner is no better than chance
                    if not self.estimators_:
                        raise DataError(f"the first learner is no better than chance (error {err:.3f})")
                    self._closing_passes = source.n_passes
                    break
                self._alphas.append(alpha)
                self.estimator_errors_.append(err)
                if err <= 0 or m == self.n_estimators:
                    self._closing_passes = source.n_passes
                    break
                counts = right.merge(_scaled(wrong, math.exp(alpha)))
                log_norm += math.log(w_right + w_wrong * math.exp(alpha)) - math.log(w_right + w_wrong)
            self.n_passes_per_round_.append(source.n_passes)
            learner = NaiveBayesClassifier.from_counts(counts, kinds, data.target, **base.get_params(deep=False))
            if label_values is None:
                label_values = list(learner.classes_)
                self.classes_ = learner.classes_
            self.estimators_.append(learner)

    # -- persistence -----------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the model as versioned JSON (no pickle), atomically; :func:`rainforest.load` reads it.

        Parameters
        ----------
        path : str or path-like
            The file; written to a temporary file in its folder, then renamed over it.
        """
        self._check_fitted()
        base = self.estimator
        params = dict(self.get_params(deep=False), estimator=None if base is None else
                      {"estimator": type(base).__name__, "params": jsonable_params(base.get_params(deep=False))})
        learners = [e.model_dict() if isinstance(e, NaiveBayesClassifier) else e.to_dict() for e in self.estimators_]
        boosting = {"format": BOOSTING_FORMAT, "version": BOOSTING_VERSION, "target": self.target_,
                    "features": [str(f) for f in self.feature_names_in_],
                    "classes": [plain_value(c) for c in self.classes_],
                    "learner": "naive_bayes" if isinstance(self.estimators_[0], NaiveBayesClassifier) else "tree",
                    "learners": learners, "weights": [float(a) for a in self.estimator_weights_],
                    "errors": [float(e) for e in self.estimator_errors_],
                    "n_passes_per_round": [int(n) for n in self.n_passes_per_round_]}
        write_model(path, self, self.n_passes_, params=params, boosting=boosting)

    @classmethod
    def from_document(cls, doc: dict, path: str = "<document>") -> AdaBoostClassifier:
        """The estimator saved in ``doc`` (a parsed model file whose estimator is this class).

        Raises
        ------
        ValueError
            If ``doc`` holds no valid boosted model (the message names ``path``).
        """
        check_document(doc, path, cls)
        with reading_model(doc, cls.__name__, path):
            params = dict(doc["params"])
            base = params.get("estimator")
            if base is not None:
                if base["estimator"] not in BASE_LEARNERS:
                    raise ValueError(f"unknown base estimator {base['estimator']!r}")
                base = BASE_LEARNERS[base["estimator"]](**params_from_json(base["params"]))
            est = cls(**dict(params, estimator=base))
            b = doc["boosting"]
            if b.get("format") != BOOSTING_FORMAT:
                raise ValueError(f"no boosted model in it (format {b.get('format')!r})")
            if b.get("version") != BOOSTING_VERSION:
                raise ValueError(f"boosting format version {b.get('version')!r}; this build reads {BOOSTING_VERSION}")
            if b["learner"] == "tree":
                est.estimators_ = [Tree.from_dict(d) for d in b["learners"]]
            elif b["learner"] == "naive_bayes":
                est.estimators_ = [NaiveBayesClassifier.from_model_dict(d, **base.get_params(deep=False))
                                   for d in b["learners"]]
            else:
                raise ValueError(f"unknown learner kind {b['learner']!r}")
            est.estimator_weights_ = np.asarray(b["weights"], np.float64)
            est._alphas = list(est.estimator_weights_)
            est.estimator_errors_ = np.asarray(b["errors"], np.float64)
            if not est.estimators_ or len(est.estimators_) != len(est.estimator_weights_):
                raise ValueError(f"{len(est.estimators_)} learners but {len(est.estimator_weights_)} weights")
            est._set_fitted_inputs(b["classes"], list(b["features"]), True)
            est.target_ = b["target"]
            est.n_passes_per_round_ = list(b["n_passes_per_round"])
            est.n_passes_ = doc.get("n_passes")
        return est

    # -- prediction --------------------------------------------------------------------------
    def decision_function(self, X) -> np.ndarray:
        """The weighted votes, as scikit-learn's SAMME ``decision_function``.

        For every row and class, ``sum_m alpha_m [h_m(x) = k] / sum_m alpha_m``, shape
        ``(n_rows, n_classes)``; with two classes, one column: the second class's votes minus the
        first's, shape ``(n_rows,)`` (positive favours ``classes_[1]``, as ``roc_auc`` scoring expects).
        """
        votes = self._votes(X)
        if len(self.classes_) == 2:
            return votes[:, 1] - votes[:, 0]
        return votes

    def _votes(self, X) -> np.ndarray:
        """The normalised weighted votes of every row for every class, shape ``(n_rows, n_classes)``."""
        self._check_fitted()
        parts = []
        tables = feature_tables(X, list(self.feature_names_in_), strict_names=False)
        for table in tables:
            score = np.zeros((table.num_rows, len(self.classes_)))
            cells = np.arange(table.num_rows) * len(self.classes_)  # each row's first cell in score, flat
            flat = score.reshape(-1)
            for pred, alpha in zip(self._class_indices(self.estimators_, table), self.estimator_weights_):
                flat[cells + pred] += alpha
            parts.append(score / self.estimator_weights_.sum())
        return np.concatenate(parts) if parts else np.empty((0, len(self.classes_)))

    def predict_proba(self, X) -> np.ndarray:
        """Softmax of the decision function over ``n_classes - 1`` (scikit-learn's SAMME probabilities)."""
        d = self._votes(X) / max(len(self.classes_) - 1, 1)
        e = np.exp(d - d.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """The class of the largest weighted vote."""
        return self.classes_[np.argmax(self._votes(X), axis=1)]


register_reader("AdaBoostClassifier", AdaBoostClassifier.from_document)
