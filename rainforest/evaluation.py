"""Model selection out of core: holdout, random subsampling, k-fold cross-validation, the .632
bootstrap, a paired t-test, decision thresholds and class resampling.

No split is ever materialized.  A training set is the source seen through a row rule
(:mod:`rainforest.storage.selection`): a fold, a holdout part or a bootstrap sample is a function of each
row's stable identity (and, for stratified splits, of its class and rank in its class), so each
fit streams the base data and keeps the rows of its split, renumbered as if the split had been
written out; the fit equals the fit on the materialized subset.  Scoring all the folds' (or all
the bootstrap samples') models takes one more pass: each row is scored by the model that did
not see it.

Pass counts: ``cross_validate`` makes ``k`` fits plus one scoring pass; ``holdout`` one fit plus
one pass; ``bootstrap_632`` ``n`` fits plus one pass; ``random_subsampling`` ``n`` holdouts.

The paired t-test lives in :mod:`rainforest.model_comparison`, decision thresholds in
:mod:`rainforest.decision_threshold` and class resampling in :mod:`rainforest.class_resampling`;
all are re-exported here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rainforest.storage.selection import FOLD, ROW_WEIGHT, BootstrapRule, FoldRule, SplitRule, select_rows, weight_rows

from .bootstrap import bootstrap_counts, tree_seeds
from .class_resampling import LabelCounts, resample, sampling_rates  # noqa: F401 (re-exported)
from .decision_threshold import (OBJECTIVES, ThresholdChoice, choose_threshold,  # noqa: F401 (re-exported)
                                 predict_threshold)
from .inputs import training_data
from .metrics import Evaluation, EvaluationTask, evaluation_task, model_features, positive_index
from .schema import checked_weights
from .model_comparison import PairedTTest, paired_t_test

_BOOTSTRAP_SALT = 0x632
_SUBSAMPLING_SALT = 0x5B5


def clone(estimator):
    """An unfitted copy of ``estimator`` with the same parameters."""
    return type(estimator)(**estimator.get_params(deep=False))


# -- scoring names ------------------------------------------------------------------------------
def _scorers() -> dict:
    s = {"accuracy": Evaluation.accuracy, "error_rate": Evaluation.error_rate,
         "balanced_accuracy": Evaluation.balanced_accuracy,
         "roc_auc": lambda e: e.roc_auc(), "roc_auc_ovr": lambda e: e.roc_auc(average="macro"),
         "roc_auc_ovr_weighted": lambda e: e.roc_auc(average="weighted")}
    for name in ("precision", "recall", "sensitivity", "specificity", "f1"):
        method = getattr(Evaluation, name)
        s[name] = lambda e, m=method: m(e, "binary")
        for avg in ("macro", "weighted", "micro"):
            s[f"{name}_{avg}"] = lambda e, m=method, a=avg: m(e, a)
    return s


SCORERS = _scorers()


def score(evaluation: Evaluation, scoring) -> float:
    """``scoring`` of an :class:`Evaluation`: a name of :data:`SCORERS` (scikit-learn's names:
    ``"accuracy"``, ``"f1_macro"``, ``"roc_auc"``, ...) or a function of the Evaluation."""
    if callable(scoring):
        return float(scoring(evaluation))
    if scoring not in SCORERS:
        raise ValueError(f"unknown scoring {scoring!r}; choose one of {', '.join(sorted(SCORERS))} or give a function")
    return float(SCORERS[scoring](evaluation))


# -- one pass scoring several models on their own rows ----------------------------------------------
@dataclass
class GroupedTask:
    """Scores row ``i`` with the task of group ``column[i]`` (a fold's model scores its fold's rows)."""

    tasks: list
    column: str

    def new_state(self):
        return [t.new_state() for t in self.tasks]

    def update(self, state, batch: pa.RecordBatch, first_row: int):
        group = batch.column(self.column).to_numpy(zero_copy_only=False)
        for g, task in enumerate(self.tasks):
            rows = group == g
            if rows.any():
                state[g] = task.update(state[g], batch.filter(pa.array(rows)), first_row)
        return state

    def merge(self, a, b):
        return [t.merge(x, y) for t, x, y in zip(self.tasks, a, b)]


@dataclass
class BootstrapTask:
    """Scores each bootstrap model on its out-of-bag rows and, weighted by multiplicity, on its sample."""

    tasks: list  # per model: the EvaluationTask (out-of-bag rows, with ROC)
    seeds: list

    def new_state(self):
        return [(t.new_state(), t.new_state()) for t in self.tasks]

    def update(self, state, batch: pa.RecordBatch, first_row: int):
        table = pa.Table.from_batches([batch])
        rows = np.arange(first_row, first_row + batch.num_rows, dtype=np.int64)
        for b, (task, seed) in enumerate(zip(self.tasks, self.seeds)):
            m = bootstrap_counts(rows, seed).astype(np.float64)
            proba = np.asarray(task.estimator.predict_proba(table.select(task.features)), np.float64)
            w = checked_weights(table, task.weight, task.where, first_row)
            labels = table.column(task.target).combine_chunks()
            oob, drawn = m == 0, m > 0
            task.add(state[b][0], proba[oob], labels.filter(pa.array(oob)), w[oob])
            task.add(state[b][1], proba[drawn], labels.filter(pa.array(drawn)), (w * m)[drawn])
        return state

    def merge(self, a, b):
        return [(t.merge(x[0], y[0]), t.merge(x[1], y[1])) for t, x, y in zip(self.tasks, a, b)]


# -- results ------------------------------------------------------------------------------------------
@dataclass
class CrossValidation:
    """What :func:`cross_validate` found.

    Attributes
    ----------
    scoring : str or callable
    scores : ndarray
        The score of each fold's model on its fold.
    evaluations : list of Evaluation
        Each fold's full evaluation (confusion matrix, ROC counts).
    pooled : Evaluation
        All the folds' predictions together (as ``cross_val_predict`` then the metric); ROC
        counts only when every fold's model has the same classes.
    estimators : list
        The fitted model of each fold (fold ``f``'s model never saw fold ``f``).
    n_passes : int
        Passes over the data: the folds' fits and the scoring pass.
    """

    scoring: object
    scores: np.ndarray
    evaluations: list
    pooled: Evaluation
    estimators: list
    n_passes: int

    def mean(self) -> float:
        return float(np.mean(self.scores))

    def std(self) -> float:
        return float(np.std(self.scores))


@dataclass
class Holdout:
    """A model fitted on the training part of a split and its :class:`Evaluation` on the test part."""

    estimator: object
    evaluation: Evaluation
    score: float
    n_passes: int


@dataclass
class Bootstrap632:
    """The .632 bootstrap: per sample ``0.632 * out-of-bag accuracy + 0.368 * accuracy on the sample``.

    Attributes
    ----------
    scores : ndarray
        The .632 accuracy of each bootstrap sample's model; their mean is the estimate.
    oob_accuracy, sample_accuracy : ndarray
        The two parts (the sample's rows weighted by how often they were drawn).
    evaluations : list of Evaluation
        Each model's evaluation on its out-of-bag rows.
    estimators : list
    n_passes : int
    """

    scores: np.ndarray
    oob_accuracy: np.ndarray
    sample_accuracy: np.ndarray
    evaluations: list
    estimators: list
    n_passes: int

    def mean(self) -> float:
        return float(np.mean(self.scores))


# -- resampling splits ------------------------------------------------------------------------------
def _fit(estimator, source, data, weight=None):
    return clone(estimator).fit(source, target=data.target, sample_weight=weight if weight else data.weight,
                                features=data.features)


def cross_validate(estimator, X, y=None, *, target=None, sample_weight=None, features=None, n_folds: int = 10,
                   stratify: bool = True, balanced: bool = True, seed: int = 0, scoring="accuracy", threshold=None,
                   pos_label=None, roc: bool = True, batch_size: int = 65536) -> CrossValidation:
    """k-fold cross-validation over data of any size, the folds never materialized.

    Parameters
    ----------
    estimator : unfitted classifier
        Cloned for each fold (the tree, the forest, naive Bayes, AdaBoost).
    X, y, target, sample_weight, features
        The data, as ``fit`` takes it. Weights are used for fitting and for the scores.
    n_folds : int, default=10
    stratify : bool, default=True
        Balance every class over the folds.
    balanced : bool, default=True
        Deal rows to folds in blocks (per class with ``stratify``): fold sizes differ by at most one
        row. False: a row's fold is the hash of its identity alone (balanced in expectation).
        See :class:`rainforest.storage.selection.FoldRule`.
    seed : int, default=0
        Which assignment of rows to folds.
    scoring : str or callable, default="accuracy"
        See :func:`score`.
    threshold, pos_label
        A decision threshold for two-class models (see :func:`rainforest.metrics.evaluate`).
    roc : bool, default=True
        Count scores for ROC curves (needed by the ``roc_auc`` scorings).
    batch_size : int, default=65536
        Rows per batch of the scoring pass.

    Returns
    -------
    CrossValidation
    """
    data = training_data(X, y, target, sample_weight, features)
    rule = FoldRule(n_folds, seed, data.target if stratify else None, balanced)
    before = data.source.n_passes
    models = [_fit(estimator, select_rows(data.source, rule.select([g for g in range(n_folds) if g != f])), data)
              for f in range(n_folds)]
    tasks = [_task(m, data, threshold, pos_label, roc) for m in models]
    folds = weight_rows(data.source, rule, column=FOLD, drop_zero=False)
    columns = _columns(tasks[0].features, data) + [FOLD]
    states = folds.run_pass(GroupedTask(tasks, FOLD), columns, batch_size)
    evaluations = [t.finish(s) for t, s in zip(tasks, states)]
    return CrossValidation(scoring, np.array([score(e, scoring) for e in evaluations]), evaluations,
                           _pooled(tasks, states), models, data.source.n_passes - before)


def _task(model, data, threshold, pos_label, roc) -> EvaluationTask:
    pos = positive_index(model.classes_, pos_label) if (threshold is not None or pos_label is not None) else 1
    return evaluation_task(model, model_features(model), data, threshold=threshold, pos_index=pos, roc=roc)


def _columns(features, data) -> list:
    return list(dict.fromkeys(list(features) + [data.target] + ([data.weight] if data.weight else [])))


def _pooled(tasks, states) -> Evaluation:
    """The folds' tallies summed (their ROC counts only when every model has the same classes)."""
    same = all(list(t.estimator.classes_) == list(tasks[0].estimator.classes_) for t in tasks)
    first = tasks[0]
    pooled = EvaluationTask(first.estimator, first.features, first.target, first.where, first.weight,
                            first.threshold, first.pos_index, first.roc and same)
    total = pooled.new_state()
    for s in states:
        if not same:
            s.scores = []
        total = pooled.merge(total, s)
    return pooled.finish(total)


def holdout(estimator, X, y=None, *, target=None, sample_weight=None, features=None, test_size: float = 1 / 3,
            stratify: bool = True, balanced: bool = True, seed: int = 0, scoring="accuracy", threshold=None,
            pos_label=None, roc: bool = True, batch_size: int = 65536) -> Holdout:
    """Fit on a random training part of the data and evaluate on the rest (the test part).

    ``test_size`` is the expected share of test rows; with ``balanced`` and ``stratify``, each
    class is split in that proportion to within a row per block of ``B`` rows, where
    ``test_size = m / B`` (see :class:`rainforest.storage.selection.SplitRule`). Other parameters as
    :func:`cross_validate`. Two passes besides the fit's.
    """
    data = training_data(X, y, target, sample_weight, features)
    before = data.source.n_passes
    strat = data.target if stratify else None
    model = _fit(estimator, select_rows(data.source, SplitRule(test_size, seed, strat, balanced, "train")), data)
    task = _task(model, data, threshold, pos_label, roc)
    test = select_rows(data.source, SplitRule(test_size, seed, strat, balanced, "test"))
    evaluation = task.finish(test.run_pass(task, _columns(task.features, data), batch_size))
    return Holdout(model, evaluation, score(evaluation, scoring), data.source.n_passes - before)


def random_subsampling(estimator, X, y=None, *, target=None, n_repeats: int = 10, seed: int = 0, **kwargs) -> \
        CrossValidation:
    """The holdout repeated ``n_repeats`` times with independent random splits; keyword arguments as
    :func:`holdout`. Returns a :class:`CrossValidation` with one score per repeat."""
    if not (isinstance(n_repeats, int) and n_repeats >= 1):
        raise ValueError(f"n_repeats must be an integer >= 1, got {n_repeats!r}")
    seeds = tree_seeds(seed ^ _SUBSAMPLING_SALT, 0, n_repeats)
    runs = [holdout(estimator, X, y, target=target, seed=int(s), **kwargs) for s in seeds]
    evaluations = [r.evaluation for r in runs]
    scoring = kwargs.get("scoring", "accuracy")
    return CrossValidation(scoring, np.array([r.score for r in runs]), evaluations, None,
                           [r.estimator for r in runs], sum(r.n_passes for r in runs))


def bootstrap_632(estimator, X, y=None, *, target=None, sample_weight=None, features=None, n_bootstraps: int = 10,
                  seed: int = 0, batch_size: int = 65536) -> Bootstrap632:
    """The .632 bootstrap estimate of accuracy (Efron; as in Han & Kamber).

    Each of ``n_bootstraps`` models is fitted on a Poisson(1) bootstrap sample (a row drawn ``m``
    times counts with weight ``m``; the forest's own hashed draw, never materialized) and scored in
    one shared pass on its out-of-bag rows and on its sample:
    ``acc = 0.632 * acc_out_of_bag + 0.368 * acc_sample``.
    """
    if not (isinstance(n_bootstraps, int) and n_bootstraps >= 1):
        raise ValueError(f"n_bootstraps must be an integer >= 1, got {n_bootstraps!r}")
    data = training_data(X, y, target, sample_weight, features)
    before = data.source.n_passes
    seeds = [int(s) for s in tree_seeds(seed ^ _BOOTSTRAP_SALT, 0, n_bootstraps)]
    models = [_fit(estimator, weight_rows(data.source, BootstrapRule(s), base_weight=data.weight), data, ROW_WEIGHT)
              for s in seeds]
    tasks = [_task(m, data, None, None, True) for m in models]
    states = data.source.run_pass(BootstrapTask(tasks, seeds), _columns(tasks[0].features, data), batch_size)
    oob = [t.finish(s[0]) for t, s in zip(tasks, states)]
    sample = np.array([t.finish(s[1]).accuracy() for t, s in zip(tasks, states)])
    oob_acc = np.array([e.accuracy() for e in oob])
    return Bootstrap632(0.632 * oob_acc + 0.368 * sample, oob_acc, sample, oob, models,
                        data.source.n_passes - before)


def compare(estimator_a, estimator_b, X, y=None, *, target=None, n_folds: int = 10, seed: int = 0,
            scoring="accuracy", **kwargs) -> PairedTTest:
    """Cross-validate two classifiers on the same folds and test the difference of their scores
    (:func:`paired_t_test`); keyword arguments as :func:`cross_validate`."""
    a = cross_validate(estimator_a, X, y, target=target, n_folds=n_folds, seed=seed, scoring=scoring, **kwargs)
    b = cross_validate(estimator_b, X, y, target=target, n_folds=n_folds, seed=seed, scoring=scoring, **kwargs)
    return paired_t_test(a.scores, b.scores)


__all__ = ["cross_validate", "holdout", "random_subsampling", "bootstrap_632", "paired_t_test", "compare",
           "choose_threshold", "predict_threshold", "resample", "sampling_rates", "score", "SCORERS",
           "CrossValidation", "Holdout", "Bootstrap632", "PairedTTest", "ThresholdChoice", "clone"]
