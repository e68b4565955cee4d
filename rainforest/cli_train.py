"""``rainforest train``: the learner registry and fitting, pruning and saving the chosen estimator.

Each learner's options are its estimator's parameters, as rainforest/constraints.py declares them
(how an option's text is read comes from there too), plus the command-line options it takes that
are no parameter. An option given to a learner that has no use for it is an error, not a silent
no-op.
"""
from __future__ import annotations

import contextlib
import importlib
import time
from dataclasses import dataclass

from .meter import shows_bar
from .cli_io import format_seconds, model_summary, opened_data, print_lines
from .constraints import (ADABOOST_PARAMS, BOAT_PARAMS, FOREST_PARAMS, FOREST_REGRESSION_PARAMS,  # light
                          NAIVE_BAYES_PARAMS, REGRESSION_TREE_PARAMS, TREE_PARAMS)
from .outputs import check_outputs  # light: os, glob and tempfile only


@dataclass(frozen=True)
class Learner:
    """A ``--learner``: its estimator class (``"module:Class"``, imported when used) and options."""

    estimator: str
    params: dict  # the estimator's declared parameter constraints
    options: frozenset = frozenset()  # command-line options that are no parameter
    fixed: tuple = ()  # (parameter, value) set by the choice itself (a stump's depth)
    defaults: tuple = ()  # (parameter, value) defaults of the command line that differ from the estimator's

    def make(self, **params):
        module, name = self.estimator.split(":")
        return getattr(importlib.import_module(module), name)(**params)


LEARNERS = {
    "tree": Learner("rainforest:DecisionTreeClassifier", TREE_PARAMS,
                    frozenset({"weight", "exact", "prune", "confidence", "validation"})),
    "forest": Learner("rainforest:RandomForestClassifier", FOREST_PARAMS,
                      frozenset({"weight", "exact", "no_bootstrap"})),
    "bayes": Learner("rainforest:NaiveBayesClassifier", NAIVE_BAYES_PARAMS, frozenset({"weight"})),
    "adaboost": Learner("rainforest:AdaBoostClassifier", ADABOOST_PARAMS, frozenset({"weight", "base"})),
    "boat": Learner("rainforest.boat:BoatClassifier", BOAT_PARAMS),
}
#: the learners of ``--task regression`` (or of a floating-point target under ``--task auto``)
REGRESSORS = {
    "tree": Learner("rainforest:DecisionTreeRegressor", REGRESSION_TREE_PARAMS, frozenset({"weight", "exact"})),
    "forest": Learner("rainforest:RandomForestRegressor", FOREST_REGRESSION_PARAMS,
                      frozenset({"weight", "exact", "no_bootstrap"})),
}
#: ``--base`` of ``--learner adaboost``: the weak learner (it takes that learner's options too)
BASES = {
    "stump": Learner("rainforest:DecisionTreeClassifier", {k: v for k, v in TREE_PARAMS.items() if k != "max_depth"},
                     frozenset({"exact"}), fixed=(("max_depth", 1),)),
    "tree": Learner("rainforest:DecisionTreeClassifier", TREE_PARAMS, frozenset({"exact"}),
                    defaults=(("max_depth", 3),)),
    "bayes": Learner("rainforest:NaiveBayesClassifier", NAIVE_BAYES_PARAMS),
}
# what each command-line option that is no parameter means for the parameters
OPTION_PARAMS = {"exact": ("max_bins", None), "no_bootstrap": ("bootstrap", False)}


def is_regression(args, data) -> bool:
    """Whether ``rainforest train`` fits a regressor: ``--task regression``; under ``--task auto`` (the
    default), when the learner has a regressor and the target column is floating point (or decimal).
    An integer target is a class label unless ``--task regression`` says otherwise: class codes 0/1
    are integers far more often than integer quantities are regressed."""
    task = getattr(args, "task", "auto")
    if task == "regression" and args.learner not in REGRESSORS:
        raise ValueError(f"--task regression takes --learner {' or '.join(REGRESSORS)}, not {args.learner}")
    if task != "auto" or args.learner not in REGRESSORS:
        return task == "regression"
    import pyarrow as pa

    from .inputs import to_source

    schema = to_source(data).schema
    if args.target not in schema.names:
        return False  # the fit names the missing column
    typ = schema.field(args.target).type
    return pa.types.is_floating(typ) or pa.types.is_decimal(typ)


def estimator_from_args(args, regression: bool = False):
    """The estimator ``rainforest train`` fits, from ``--learner`` and its options (a regressor's when
    ``regression``: :func:`is_regression`)."""
    entry = (REGRESSORS if regression else LEARNERS)[args.learner]
    base = BASES[args.base or "stump"] if args.learner == "adaboost" else None
    given = {d: getattr(args, d) for d in args.param_options if hasattr(args, d)}
    given.update((o, True) for o in ("exact", "no_bootstrap", "weight", "prune", "confidence", "validation", "base")
                 if getattr(args, o) not in (None, False))
    takes = set(entry.params) | entry.options | (set(base.params) | base.options if base else set())
    foreign = [k for k in given if k not in takes]
    if foreign:
        where = (f"--learner {args.learner}" + (f" --base {args.base or 'stump'}" if base else "")
                 + (" (a regressor)" if regression else ""))
        option = "--categorical" if foreign[0] == "categorical_features" else f"--{foreign[0].replace('_', '-')}"
        raise ValueError(f"{option} does not apply to {where}")
    for option, (param, value) in OPTION_PARAMS.items():
        if given.pop(option, None):
            given[param] = value
    verbose = 0 if args.quiet else args.verbose + (1 if shows_bar(1) else 0)  # a bar where someone watches
    if verbose:
        given["verbose"] = verbose

    def params_of(learner: Learner) -> dict:
        out = dict(learner.defaults)
        out.update((k, v) for k, v in given.items() if k in learner.params)
        out.update(learner.fixed)
        return out

    if base is None:
        return entry.make(**params_of(entry))
    return entry.make(estimator=base.make(**params_of(base)),
                      **{k: v for k, v in params_of(entry).items() if k != "estimator"})


def cmd_train(args) -> int:
    check_outputs({"model": args.model}, [args.data, args.validation])
    if (args.prune == "reduced-error") != (args.validation is not None):
        raise ValueError("--prune reduced-error and --validation DATA go together")
    if args.confidence is not None and args.prune != "pessimistic":
        raise ValueError("--confidence applies to --prune pessimistic")
    t0 = time.perf_counter()
    with opened_data(args) as data, contextlib.ExitStack() as stack:
        clf = estimator_from_args(args, is_regression(args, data))
        if hasattr(clf, "close"):  # BOAT's work folder goes once the model is saved
            stack.callback(clf.close)
        weight = {"sample_weight": args.weight} if args.weight else {}  # BOAT takes no weights
        clf.fit(data, target=args.target, features=args.features, **weight)
        _prune_and_save(args, clf)
    fit_time = time.perf_counter() - t0
    where = f" on the Dask cluster at {args.scheduler}" if args.scheduler is not None else ""
    rows = getattr(clf, "n_rows_", None)
    target = "a numeric target" if getattr(clf, "_regression", False) else f"{len(clf.classes_)} classes"
    print_lines(f"trained a {type(clf).__name__} on {f'{rows:,} rows, ' if rows else ''}{clf.n_features_in_} features, "
         f"{target} from {args.data}{where}",
         *model_summary(clf),
         *(f"pruned: {p['method'].replace('_', '-')}, {p['nodes_before']} -> {p['nodes_after']} nodes"
           for p in getattr(clf, "pruning_", [])),
         f"passes: {clf.n_passes_}",
         f"time:   {format_seconds(fit_time)}",
         f"model:  {args.model}")
    return 0


def _prune_and_save(args, clf) -> None:
    if args.prune == "pessimistic":
        clf.prune_pessimistic(0.25 if args.confidence is None else args.confidence)
    elif args.prune == "reduced-error":
        clf.prune_reduced_error(args.validation, target=args.target)
    clf.save(args.model)
