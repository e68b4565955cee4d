"""The forest's part of a model file: ``"rainforest.forest"``, its trees, seeds, bootstrap and
Forest-RC combinations, written and read (the estimator's parameters are the model file's)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model_file import FOREST_FORMAT, FOREST_VERSION
from .combinations import Combinations
from .tree import Tree



@dataclass
class ForestParts:
    """What a forest document holds, read back."""

    trees: list
    tree_seeds: np.ndarray
    seed: int
    bootstrap_rate: float | None
    n_features: int
    combinations: list  # each tree's Combinations, or None


def forest_document(parts: ForestParts) -> dict:
    """``parts`` as a ``"rainforest.forest"`` document."""
    combos = [None if c is None else {"features": c.features.tolist(), "coefficients": c.coefficients.tolist()}
              for c in parts.combinations]
    return {"format": FOREST_FORMAT, "version": FOREST_VERSION, "seed": int(parts.seed),
            "tree_seeds": [int(s) for s in parts.tree_seeds], "bootstrap_rate": parts.bootstrap_rate,
            "n_features": int(parts.n_features), "combinations": combos,
            "trees": [t.to_dict() for t in parts.trees]}


def check_forest_format(forest, path: str) -> None:
    """Refuse what is no forest document of this build's version, naming ``path``."""
    if not isinstance(forest, dict) or forest.get("format") != FOREST_FORMAT:
        raise ValueError(f"{path!r} holds no rainforest forest")
    if forest.get("version") != FOREST_VERSION:
        raise ValueError(f"{path!r} has forest format version {forest.get('version')!r}; this build reads "
                         f"{FOREST_VERSION}")


def read_forest(forest: dict, path: str) -> ForestParts:
    """The parts of a forest document that :func:`check_forest_format` accepted."""
    trees = [Tree.from_dict(d) for d in forest["trees"]]
    tree_seeds = np.asarray(forest["tree_seeds"], np.int64)
    seed = int(forest["seed"])
    bootstrap_rate = forest["bootstrap_rate"]
    n_features = int(forest["n_features"])
    combinations = []
    for t, c in enumerate(forest["combinations"]):
        if c is None:
            combinations.append(None)
            continue
        if len(trees[t].feature_names) != n_features + len(c["features"]):
            raise ValueError(f"{path!r}: tree {t} does not have the features of its combinations")
        cuts = [np.empty(0)] * len(c["features"])  # bins only matter when counting; trees route by threshold
        combinations.append(Combinations(np.asarray(c["features"], np.int64),
                                         np.asarray(c["coefficients"], np.float64), cuts))
    return ForestParts(trees, tree_seeds, seed, bootstrap_rate, n_features, combinations)
