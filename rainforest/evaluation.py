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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rainforest.storage.selection import (FOLD, ROW_WEIGHT, BootstrapRule, ClassRateRule, FoldRule, RowSelection,
                               SplitRule, select_rows, weight_rows)

from .bootstrap import bootstrap_counts, tree_seeds
from .errors import DataError
from .inputs import training_data
from .metrics import (Evaluation, EvaluationTask, evaluation_task, model_features, positive_index,
                      predicted_index, roc_from_counts)

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
            w = task._weights(table, first_row)
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


@dataclass
class PairedTTest:
    """A paired t-test of two classifiers' scores over the same folds (Student's, ``k - 1`` degrees of freedom).

    ``statistic`` is positive when the first classifier scores higher; ``pvalue`` is two-sided.
    Identical scores on every fold give ``statistic = 0`` and ``pvalue = 1``.
    """

    statistic: float
    pvalue: float
    df: int
    scores_a: np.ndarray
    scores_b: np.ndarray

    @property
    def mean_difference(self) -> float:
        return float(np.mean(self.scores_a - self.scores_b))


@dataclass
class ThresholdChoice:
    """A decision threshold chosen on validation data: predict ``pos_label`` when its probability is ``>= threshold``.

    ``thresholds`` (descending, the distinct validation scores, then ``inf`` for "never") and
    ``values`` (the objective at each) describe the whole trade-off.
    """

    threshold: float
    value: float
    objective: str
    pos_label: object
    thresholds: np.ndarray
    values: np.ndarray


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


def paired_t_test(scores_a, scores_b) -> PairedTTest:
    """Student's paired t-test of two score arrays over the same folds (``scipy.stats.ttest_rel``)."""
    from scipy import stats

    a, b = np.asarray(scores_a, np.float64), np.asarray(scores_b, np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"a paired t-test needs two score arrays of the same length >= 2, got {a.shape} and {b.shape}")
    d = a - b
    if np.all(d == d[0]):  # no variance: scipy gives nan; equal scores are no evidence of a difference
        t = 0.0 if d[0] == 0 else float(np.sign(d[0]) * np.inf)
        return PairedTTest(t, 1.0 if d[0] == 0 else 0.0, len(a) - 1, a, b)
    res = stats.ttest_rel(a, b)
    return PairedTTest(float(res.statistic), float(res.pvalue), len(a) - 1, a, b)


def compare(estimator_a, estimator_b, X, y=None, *, target=None, n_folds: int = 10, seed: int = 0,
            scoring="accuracy", **kwargs) -> PairedTTest:
    """Cross-validate two classifiers on the same folds and test the difference of their scores
    (:func:`paired_t_test`); keyword arguments as :func:`cross_validate`."""
    a = cross_validate(estimator_a, X, y, target=target, n_folds=n_folds, seed=seed, scoring=scoring, **kwargs)
    b = cross_validate(estimator_b, X, y, target=target, n_folds=n_folds, seed=seed, scoring=scoring, **kwargs)
    return paired_t_test(a.scores, b.scores)


# -- decision thresholds ---------------------------------------------------------------------------------
OBJECTIVES = ("f1", "fbeta", "cost", "accuracy", "balanced_accuracy")


def choose_threshold(estimator, X, y=None, *, target=None, sample_weight=None, objective: str = "f1",
                     beta: float = 1.0, cost_fp: float = 1.0, cost_fn: float = 1.0, pos_label=None,
                     batch_size: int = 65536) -> ThresholdChoice:
    """Choose a two-class model's decision threshold on validation data, in one pass.

    Every distinct score of the positive class on the validation data is a candidate (a row is
    predicted positive when its score is ``>=`` the threshold); the one giving the best
    ``objective`` wins (ties: the highest threshold).

    Parameters
    ----------
    estimator : fitted two-class classifier
    X, y, target, sample_weight
        The validation data, as :func:`rainforest.metrics.evaluate` takes it.
    objective : {"f1", "fbeta", "cost", "accuracy", "balanced_accuracy"}, default="f1"
        ``"cost"`` minimizes ``cost_fp * FP + cost_fn * FN`` (a cost ratio); the others are maximized.
    beta : float, default=1.0
        For ``"fbeta"``.
    cost_fp, cost_fn : float, default=1.0
        Costs of a false positive and of a false negative. With calibrated probabilities the
        optimal threshold is ``cost_fp / (cost_fp + cost_fn)``; here it is measured on the data.
    pos_label : label, optional
        The positive class (default: the greater class).

    Returns
    -------
    ThresholdChoice
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if cost_fp < 0 or cost_fn < 0 or cost_fp + cost_fn == 0:
        raise ValueError(f"costs must be >= 0 and not both 0, got cost_fp={cost_fp!r}, cost_fn={cost_fn!r}")
    from .metrics import evaluate

    pos = positive_index(estimator.classes_, pos_label)
    label = estimator.classes_[pos]
    ev = evaluate(estimator, X, y, target=target, sample_weight=sample_weight, pos_label=label, batch_size=batch_size)
    c = ev.curves[label.item() if isinstance(label, np.generic) else label]
    fpr, tpr, thresholds = roc_from_counts(c.scores, c.positives, c.totals, drop_intermediate=False)
    p, n = c.positives.sum(), c.totals.sum() - c.positives.sum()
    tp, fp = np.nan_to_num(tpr) * p, np.nan_to_num(fpr) * n
    fn, tn = p - tp, n - fp
    # candidates: each distinct score (descending), then "never positive" (the ROC curve's first point)
    tp, fp, fn, tn, thresholds = (np.r_[v[1:], v[0]] for v in (tp, fp, fn, tn, thresholds))
    with np.errstate(divide="ignore", invalid="ignore"):
        if objective in ("f1", "fbeta"):
            b2 = 1.0 if objective == "f1" else beta * beta
            values = np.nan_to_num((1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp))
        elif objective == "cost":
            values = cost_fp * fp + cost_fn * fn
        elif objective == "accuracy":
            values = (tp + tn) / (p + n)
        else:
            values = np.nan_to_num(tp / p) / 2 + np.nan_to_num(tn / n) / 2
    best = int(np.argmin(values) if objective == "cost" else np.argmax(values))
    return ThresholdChoice(float(thresholds[best]), float(values[best]), objective, label, thresholds, values)


def predict_threshold(estimator, X, threshold: float, *, pos_label=None) -> np.ndarray:
    """Predictions of a two-class model with a decision threshold: ``pos_label`` (default the
    greater class) when its probability is ``>= threshold``, else the other class."""
    pos = positive_index(estimator.classes_, pos_label)
    return np.asarray(estimator.classes_)[predicted_index(np.asarray(estimator.predict_proba(X)), threshold, pos)]


# -- class imbalance: over/undersampling by hashed weights ----------------------------------------------------
@dataclass
class LabelCounts:
    """A PassTask counting the rows of each label."""

    target: str

    def new_state(self) -> dict:
        return {}

    def update(self, state: dict, batch: pa.RecordBatch, first_row: int) -> dict:
        col = batch.column(self.target)
        if col.null_count:
            raise DataError(f"the target column {self.target!r} has null values")
        vc = pc.value_counts(col.dictionary_decode() if pa.types.is_dictionary(col.type) else col)
        for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            state[v] = state.get(v, 0) + c
        return state

    def merge(self, a: dict, b: dict) -> dict:
        for v, c in b.items():
            a[v] = a.get(v, 0) + c
        return a


def sampling_rates(counts: dict, strategy: str = "undersample") -> dict:
    """Per class, the rate that balances the classes: ``"undersample"`` brings every class down to
    the smallest one (rate ``min / n_c``), ``"oversample"`` up to the largest (``max / n_c``)."""
    if strategy not in ("undersample", "oversample"):
        raise ValueError(f"strategy must be 'undersample' or 'oversample', got {strategy!r}")
    present = {c: n for c, n in counts.items() if n > 0}
    goal = min(present.values()) if strategy == "undersample" else max(present.values())
    return {c: goal / n for c, n in present.items()}


def resample(X, *, target: str, rates: dict | None = None, strategy: str = "undersample", seed: int = 0,
             sample_weight: str | None = None) -> RowSelection:
    """The data with each class resampled at a rate, by weights from the hash of each row's identity.

    A row of class ``c`` counts ``floor(r) + (u < frac(r))`` times (``r = rates[c]``, ``u`` uniform
    from the row's hash): deterministic for a seed, the same on every source and batch size, with
    mean exactly ``r``; nothing is copied.

    Parameters
    ----------
    X : path, Source or table
        The data, holding the label column ``target``.
    rates : dict, optional
        Class -> rate (0.25 keeps a quarter of the class, 3 counts each row three times); classes
        not named count once. Default: :func:`sampling_rates` of the class counts (one more pass).
    strategy : {"undersample", "oversample"}, default="undersample"
        How the default rates balance the classes.
    seed : int, default=0
    sample_weight : str, optional
        A weight column the resampling weights multiply.

    Returns
    -------
    rainforest.storage.selection.RowSelection
        A Source: rows of weight 0 are dropped, and when some rate exceeds 1 (or ``sample_weight``
        is given) the weights are the column ``result.column``; fit with
        ``sample_weight=result.column``.
    """
    data = training_data(X, None, target, sample_weight, None)
    if rates is None:
        rates = sampling_rates(data.source.run_pass(LabelCounts(data.target), [data.target]), strategy)
    rule = ClassRateRule(data.target, tuple(rates.items()), seed)
    if all(r <= 1 for r in rates.values()) and data.weight is None:
        return select_rows(data.source, rule)  # weights 0 or 1: a plain selection, unit weights
    return weight_rows(data.source, rule, base_weight=data.weight)


__all__ = ["cross_validate", "holdout", "random_subsampling", "bootstrap_632", "paired_t_test", "compare",
           "choose_threshold", "predict_threshold", "resample", "sampling_rates", "score", "SCORERS",
           "CrossValidation", "Holdout", "Bootstrap632", "PairedTTest", "ThresholdChoice", "clone"]
