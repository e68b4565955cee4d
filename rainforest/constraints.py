"""Every estimator's parameter constraints, declared once each (scikit-learn's ``_parameter_constraints``).

A light module (NumPy only): the estimators check their parameters against these tables
(:meth:`rainforest.params.ParamsMixin.validate_params`), and the command line derives from them,
without importing the learners, which options each ``--learner`` takes and how each is read.
"""
from __future__ import annotations

from .params import (Anything, Boolean, ByteSize, ClassWeights, Columns, Fraction, Integer, NJobs, NoneValue,
                     Options, Path, Real)

#: split criteria (rainforest.criteria.CRITERIA's names; a test holds them equal)
CRITERION_NAMES = ("gini", "entropy", "gain_ratio")
#: a regressor's (rainforest.criteria.REGRESSION_CRITERIA's names)
REGRESSION_CRITERION_NAMES = ("squared_error",)
#: how a decision tree meets its memory budget (see DecisionTreeClassifier's ``algorithm``)
TREE_ALGORITHMS = ("hybrid", "write", "vertical", "read")
#: the forest's
FOREST_ALGORITHMS = ("hybrid", "read")

TREE_PARAMS = {
    "criterion": Options(CRITERION_NAMES),
    "categorical_split": Options(("binary", "multiway")),
    "max_bins": (NoneValue(), Integer(2, 1 << 20)),
    "max_depth": (NoneValue(), Integer(1)),
    "min_samples_split": (Integer(2), Fraction()),
    "min_samples_leaf": (Integer(1), Fraction()),
    "min_weight_fraction_leaf": Real(0.0, 0.5),
    "min_impurity_decrease": Real(0.0),
    "class_weight": (NoneValue(), ClassWeights()),
    "ccp_alpha": Real(0.0),
    "categorical_features": Columns(),
    "memory_budget": ByteSize(),
    "algorithm": Options(TREE_ALGORITHMS),
    "spill_dir": (NoneValue(), Path()),
    "batch_size": (NoneValue(), Integer(1)),
    "sample_size": Integer(1000),
    "n_jobs": NJobs(),
    "random_state": (NoneValue(), Integer(0)),
    "verbose": (Integer(0), Boolean()),
}

#: the regression tree's: the tree's but for classes (no class weights) and its criterion; categorical
#: attributes split in two (the subset found from the categories ordered by mean target)
REGRESSION_TREE_PARAMS = {
    **{k: v for k, v in TREE_PARAMS.items() if k not in ("class_weight", "categorical_split")},
    "criterion": Options(REGRESSION_CRITERION_NAMES),
}

FOREST_PARAMS = {
    **{k: v for k, v in TREE_PARAMS.items() if k != "spill_dir"},
    "algorithm": Options(FOREST_ALGORITHMS),
    "n_estimators": Integer(1),
    "max_features": (NoneValue("all"), Options(("sqrt", "log2")), Integer(1), Fraction()),
    "bootstrap": Boolean(),
    "oob_score": Boolean(),
    "max_samples": (NoneValue(), Integer(1), Fraction()),
    "combination": (NoneValue(), Options(("linear",))),
    "n_combined": Integer(1),
    "n_combinations": (NoneValue(), Integer(1)),
    "warm_start": Boolean(),
}

#: the regression forest's: the forest's but for classes (no class weights) and its criterion
FOREST_REGRESSION_PARAMS = {
    **{k: v for k, v in FOREST_PARAMS.items() if k not in ("class_weight", "categorical_split")},
    "criterion": Options(REGRESSION_CRITERION_NAMES),
}

NAIVE_BAYES_PARAMS = {
    "alpha": Real(0.0),
    "numeric": Options(("gaussian", "binned")),
    "var_smoothing": Real(0.0),
    "max_bins": Integer(2, 1 << 20),
    "categorical_features": Columns(),
    "batch_size": Integer(1),
    "n_jobs": NJobs(),
}

ADABOOST_PARAMS = {
    "estimator": (NoneValue(), Anything()),  # its kind and its own parameters are checked in fit
    "n_estimators": Integer(1),
    "learning_rate": Real(0.0, closed=False),
}

BOAT_PARAMS = {
    **{k: TREE_PARAMS[k] for k in ("criterion", "max_depth", "min_samples_split", "min_samples_leaf",
                                   "categorical_features", "memory_budget", "spill_dir", "batch_size", "n_jobs",
                                   "random_state", "verbose")},
    "sample_size": Integer(10),
    "n_bootstrap": Integer(1),
    "n_buckets": Integer(8),
    "max_family_rows": (NoneValue(), Integer(0)),
}
