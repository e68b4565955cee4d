"""Model documents read from files are untrusted: each part is checked whole before it is used.

A model file is data anyone can edit, and the prediction kernels trust it: a child index past
the last node is a read out of bounds, a child that points back to its parent a loop that never
ends. So every part of a document is checked here, one function per part (tree, forest, naive
Bayes, boosting, the estimator's parameters): types, every index in range, children numbered
after their parents (no cycle can exist), array lengths that agree, counts that are finite and
not negative, known formats, kinds and versions. What is wrong raises one :class:`ModelError`
naming the file and the field, e.g. ``tree.nodes.first_child[3]``.

The readers (``Tree.from_dict`` and each learner's ``from_document``) call these first, so they
only ever build models from valid documents. A BOAT model is saved as the exact tree's document
(``DecisionTreeClassifier``), so the tree's checks are BOAT's.
"""
from __future__ import annotations

import inspect

import numpy as np

from .errors import ModelError
from .model_file import (BAYES_FORMAT, BAYES_VERSION, BOOSTING_BASES, BOOSTING_FORMAT, BOOSTING_VERSION, CLASSES,
                         FOREST_FORMAT, FOREST_VERSION, RENAMED_PARAMS)
from .schema import CATEGORICAL, NUMERIC
from .tree_check import check_tree, check_trees_agree
from .model_fields import (MAX_COUNT, At, check_int, check_labels, check_list, check_number, check_str, check_version,
                           float_array, int_array, is_int, is_label, kind_of, matrix)

# -- estimators and their parameters ---------------------------------------------------------------
def check_params(at: At, params, cls) -> dict:
    """The saved parameters: names ``cls`` takes, and valid values for those prediction reads."""
    if not isinstance(params, dict):
        at.fail(f"expected an object, got {kind_of(params)}")
    known = inspect.signature(cls).parameters
    for key, v in params.items():
        key = RENAMED_PARAMS.get(key, key)  # files written before a parameter was renamed
        if key not in known:
            (at / key).fail(f"{cls.__name__} has no parameter {key!r}")
        if key == "n_jobs" and v is not None:
            check_int(at / key, v)
            if v == 0:
                (at / key).fail("n_jobs must not be 0")
        elif key == "batch_size" and v is not None:
            check_int(at / key, v, least=1)
        elif key in ("alpha", "var_smoothing"):
            check_number(at / key, v, least=0, most=MAX_COUNT)
        elif key == "numeric" and v not in ("gaussian", "binned"):
            (at / key).fail(f"unknown value {v!r}; expected 'gaussian' or 'binned'")
        elif key == "class_weight" and v is not None and v != "balanced":
            pairs = check_list(at / key / "pairs", at.get(v, "pairs") if isinstance(v, dict) else
                               (at / key).fail(f"unknown value {v!r}"[:200]))
            for k, p in enumerate(pairs):
                check_list(at / key / "pairs" / k, p, 2)
        elif key == "ccp_alpha" and v != "inf":
            check_number(at / key, v, least=0)
    return params


def check_document(doc, path: str, cls) -> None:
    """Check a whole parsed model file whose estimator is ``cls`` (a learner's class).

    Raises
    ------
    ModelError
        Naming ``path`` and the field at fault.
    """
    estimator = cls.__name__
    if not isinstance(doc, dict) or doc.get("estimator") != estimator:
        raise ModelError(f"{path!r} holds no {estimator} model", path)
    at = At(path, estimator)
    check_params(at / "params", at.get(doc, "params"), cls)
    if doc.get("n_passes") is not None:
        check_int(at / "n_passes", doc["n_passes"], least=0)
    part = {"DecisionTreeClassifier": "tree", "DecisionTreeRegressor": "tree", "RandomForestClassifier": "forest",
            "RandomForestRegressor": "forest", "NaiveBayesClassifier": "naive_bayes",
            "AdaBoostClassifier": "boosting"}.get(estimator)
    if part is None:
        at.fail(f"no checks for the estimator {estimator!r}")
    body = at.get(doc, part)
    if part == "tree":
        check_tree(body, at / "tree")
        check_task(body, at / "tree", cls)
        check_list(at / "pruning", doc.get("pruning", []))
    elif part == "forest":
        check_forest(body, at / "forest")
        for t, tree in enumerate(body["trees"]):
            check_task(tree, at / "forest" / "trees" / t, cls)
    elif part == "naive_bayes":
        check_bayes(body, at / "naive_bayes", doc["params"])
    else:
        check_boosting(body, at / "boosting", doc["params"])


def check_task(tree: dict, at: At, cls) -> None:
    """A tree's task (``"task": "regression"``, or none: a classifier's) must be its estimator's."""
    if (tree.get("task") == "regression") != bool(getattr(cls, "_regression", False)):
        (at / "task").fail(f"a {cls.__name__} holds a {tree.get('task', 'classification')} tree")


# -- forest ---------------------------------------------------------------------------------------
def check_forest(d, at: At) -> None:
    """A forest's part: its trees, their seeds and their Forest-RC combinations."""
    check_version(at, d, FOREST_FORMAT, FOREST_VERSION, "forest")
    check_int(at / "seed", at.get(d, "seed"), least=0)
    check_number(at / "bootstrap_rate", at.get(d, "bootstrap_rate"), least=0)
    p = check_int(at / "n_features", at.get(d, "n_features"), least=1)
    trees = check_list(at / "trees", at.get(d, "trees"), least=1)
    int_array(at / "tree_seeds", at.get(d, "tree_seeds"), len(trees), least=0, most=2**63 - 1)
    combos = check_list(at / "combinations", at.get(d, "combinations"), len(trees))
    for t, tree in enumerate(trees):
        check_tree(tree, at / "trees" / t)
        n_extra = len(tree["features"]) - p
        c = combos[t]
        cat = at / "combinations" / t
        if c is None:
            if n_extra:
                (at / "trees" / t / "features").fail(f"{len(tree['features'])} features, expected {p}")
            continue
        features = check_list(cat / "features", cat.get(c, "features"), n_extra, least=1)
        width = len(check_list(cat / "features" / 0, features[0], least=1))
        int_array(cat / "features", [x for k, row in enumerate(features) for x in check_list(cat / "features" / k,
                                                                                            row, width)],
                  least=0, most=p - 1)
        coefficients = check_list(cat / "coefficients", cat.get(c, "coefficients"), n_extra)
        for k, row in enumerate(coefficients):
            float_array(cat / "coefficients" / k, row, width)
        if any(f["kind"] != "numeric" for f in tree["features"][p:]):
            (at / "trees" / t / "features").fail("a Forest-RC combination must be a numeric feature")
    if len(trees[0]["features"]) < p:
        (at / "n_features").fail(f"{p} features, but tree 0 has {len(trees[0]['features'])}")
    check_trees_agree(at / "trees", trees, trees[0]["classes"], p)


# -- naive Bayes ------------------------------------------------------------------------------------
def check_bayes(d, at: At, params: dict) -> None:
    """A naive Bayes part: Gaussian (``counts``) or binned (``attributes``), as ``params['numeric']`` says.

    Beyond types and shapes: class weights > 0 and each class's variance of each numeric
    attribute > 0 (a density never divides by zero).
    """
    check_version(at, d, BAYES_FORMAT, BAYES_VERSION, "naive Bayes")
    check_str(at / "target", at.get(d, "target"))
    kinds = {}
    for k, pair in enumerate(check_list(at / "features", at.get(d, "features"), least=1)):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and pair[1] in (NUMERIC, CATEGORICAL) and is_int(pair[1])):
            (at / "features" / k).fail(f"feature {pair[0] if isinstance(pair, list) and pair else pair!r} has an "
                                       f"unknown kind {pair[1] if isinstance(pair, list) and len(pair) > 1 else None!r}")
        if pair[0] in kinds:
            (at / "features" / k).fail(f"names the feature {pair[0]!r} twice")
        kinds[pair[0]] = pair[1]
    gaussian = params.get("numeric", "gaussian") == "gaussian"
    if gaussian != ("counts" in d):
        at.fail(f"the parameter numeric={params.get('numeric', 'gaussian')!r} does not match a "
                f"{'Gaussian' if 'counts' in d else 'binned'} model")
    if gaussian:
        _check_gaussian(at / "counts", at.get(d, "counts"), kinds, params.get("var_smoothing", 1e-9))
        return
    weights = _class_weights(at / "class_weight", at.get(d, "class_weight"))
    attributes = check_list(at / "attributes", at.get(d, "attributes"), len(kinds))
    for j, (a, name) in enumerate(zip(attributes, kinds)):
        aat = at / "attributes" / j
        if aat.get(a, "name") != name or aat.get(a, "kind") != kinds[name]:
            aat.fail(f"is not the feature {name!r} of kind {kinds[name]}")
        values = aat.get(a, "values")
        if kinds[name] == CATEGORICAL:
            n_slots = len(check_labels(aat / "values", values, least=0))
        else:
            cuts = float_array(aat / "values", values)
            if (np.diff(cuts) <= 0).any():
                (aat / "values").fail("bin edges must increase")
            n_slots = len(cuts) + 1
        matrix(aat / "counts", aat.get(a, "counts"), len(weights), n_slots)


def _class_weights(at: At, pairs) -> dict:
    check_list(at, pairs, least=2)
    for k, p in enumerate(pairs):
        check_list(at / k, p, 2)
        check_number(at / k / 1, p[1], positive=True, most=MAX_COUNT)
    check_labels(at, [p[0] for p in pairs], least=2)
    return {p[0]: p[1] for p in pairs}


def _check_gaussian(at: At, c, kinds: dict, var_smoothing: float) -> None:
    check_int(at / "n_rows", at.get(c, "n_rows"), least=0)
    classes = _class_weights(at / "class_weight", at.get(c, "class_weight"))
    numeric = [a for a, k in kinds.items() if k != CATEGORICAL]

    def per_attribute(key, kind_ok, length=2):
        out = {}
        for k, entry in enumerate(check_list(at / key, at.get(c, key))):
            if not (isinstance(entry, list) and len(entry) == length and isinstance(entry[0], str) and entry[0] in kinds
                    and kind_ok(kinds[entry[0]])):
                (at / key / k).fail("does not start with a feature of the model of the right kind")
            if entry[0] in out:
                (at / key / k).fail(f"names the feature {entry[0]!r} twice")
            out[entry[0]] = entry[1:]
        return out

    for a, (cells,) in per_attribute("categories", lambda k: k == CATEGORICAL).items():
        cat = at / "categories" / a
        check_list(cat, cells)
        for k, cell in enumerate(cells):
            check_list(cat / k, cell, 3)
            if not (is_label(cell[0]) and is_label(cell[1])) or cell[0] not in classes:
                (cat / k).fail(f"names the class {cell[0]!r}, which is not a class of the model"[:200])
            check_number(cat / k / 2, cell[2], least=0, most=MAX_COUNT)
        check_labels(cat, list({cell[1]: None for cell in cells}), least=0)
    moments = {a: m[0] for a, m in per_attribute("moments", lambda k: k != CATEGORICAL).items()}
    spread = per_attribute("spread", lambda k: k != CATEGORICAL, 4)
    variances = []
    for a, m in spread.items():
        w, _, m2 = _moments(at / "spread" / a, m)
        variances.append(m2 / w if w > 0 else 0.0)
    epsilon = var_smoothing * max(variances, default=0.0)
    for a in numeric:
        per_class = {}
        for k, entry in enumerate(check_list(at / "moments" / a, moments.get(a, []))):
            check_list(at / "moments" / a / k, entry, 4)
            if not is_label(entry[0]) or entry[0] not in classes or entry[0] in per_class:
                (at / "moments" / a / k).fail(f"names the class {entry[0]!r} not once"[:200])
            per_class[entry[0]] = _moments(at / "moments" / a / k, entry[1:])
        for cls in classes:
            w, _, m2 = per_class.get(cls, (0.0, 0.0, 0.0))
            if (m2 / w if w > 0 else 0.0) + epsilon <= 0:
                (at / "moments" / a).fail(f"the class {cls!r} has no variance and var_smoothing adds none: its "
                                          "density would divide by zero")


def _moments(at: At, m) -> tuple:
    check_list(at, m, 3)
    w, mean, m2 = (check_number(at / 0, m[0], least=0, most=MAX_COUNT), check_number(at / 1, m[1]),
                   check_number(at / 2, m[2], least=0))
    if w > 0 and not np.isfinite(m2 / w):
        at.fail(f"the variance {m2!r} / {w!r} is not a finite number")
    return w, mean, m2


# -- boosting --------------------------------------------------------------------------------------
def check_boosting(d, at: At, params: dict) -> None:
    """A boosted model: its rounds' learners (trees or naive Bayes), weights and errors."""
    base = params.get("estimator")
    pat = At(at.path, at.what, "params") / "estimator"
    if base is not None:
        name = pat.get(base, "estimator")
        if not isinstance(name, str) or name not in BOOSTING_BASES or name not in CLASSES:
            (pat / "estimator").fail(f"unknown base estimator {name!r}"[:200])
        check_params(pat / "params", pat.get(base, "params"), CLASSES[name])
    check_version(at, d, BOOSTING_FORMAT, BOOSTING_VERSION, "boosting")
    check_str(at / "target", at.get(d, "target"))
    features = check_list(at / "features", at.get(d, "features"), least=1)
    for k, f in enumerate(features):
        check_str(at / "features" / k, f)
    classes = check_labels(at / "classes", at.get(d, "classes"), least=2)
    learners = check_list(at / "learners", at.get(d, "learners"), least=1)
    weights = at.get(d, "weights")
    if not isinstance(weights, list) or len(weights) != len(learners):
        (at / "weights").fail(f"{len(learners)} learners but {len(weights) if isinstance(weights, list) else 'no'} "
                              "weights")
    if float_array(at / "weights", weights, least=0, most=MAX_COUNT).sum() <= 0:
        (at / "weights").fail("the weights sum to 0")
    float_array(at / "errors", at.get(d, "errors"), len(learners))
    int_array(at / "n_passes_per_round", at.get(d, "n_passes_per_round"), least=0)
    kind = at.get(d, "learner")
    if kind == "tree":
        for t, tree in enumerate(learners):
            check_tree(tree, at / "learners" / t)
        if not set(f["name"] for f in learners[0]["features"]) <= set(features):
            (at / "learners" / 0 / "features").fail("names a feature the model does not have")
        check_trees_agree(at / "learners", learners, classes, len(learners[0]["features"]))
    elif kind == "naive_bayes":
        if base is None or base["estimator"] != "NaiveBayesClassifier":
            (at / "learner").fail("naive Bayes learners need a naive Bayes base estimator")
        bayes_params = base["params"]
        for t, nb in enumerate(learners):
            check_bayes(nb, at / "learners" / t, bayes_params)
            names = [f[0] for f in nb["features"]]
            if not set(names) <= set(features):
                (at / "learners" / t / "features").fail("names a feature the model does not have")
            weights_of = nb["counts"]["class_weight"] if "counts" in nb else nb["class_weight"]
            if sorted(p[0] for p in weights_of) != sorted(classes):
                (at / "learners" / t).fail("has other classes than the model")
    else:
        (at / "learner").fail(f"unknown learner kind {kind!r}"[:200])
