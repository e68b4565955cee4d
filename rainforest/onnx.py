"""ONNX export: a tree or a forest as one ``ai.onnx.ml`` ``TreeEnsembleClassifier`` graph (a
regressor's: ``TreeEnsembleRegressor``, output ``variable`` [N,1] float, the mean of its trees' leaf means).

The graph (``inputs="columns"``, the default)::

    numeric column   double [N,1] ──────────────────────────────────┐
    string column    string [N,1] ─ LabelEncoder ─ Cast(double) ────┤
    integer column   int64  [N,1] ─ LabelEncoder ─ Cast(double) ────┼─ Concat ─ X [N,p] double
    boolean column   bool   [N,1] ─ Cast(int64) ─ LabelEncoder ─ … ─┘
    X ─ (Forest-RC: Gather · Mul · Add per combination term) ─ TreeEnsembleClassifier ─ label [N]
                                                                                     └ probabilities [N,C] float

``X`` is the matrix :meth:`rainforest.schema.Schema.encode` makes: numeric values, category
codes (index in the training categories, ``len(categories)`` for an unseen one) and NaN for
missing values. ``inputs="matrix"`` takes that matrix directly as the one input ``X``.

How a split becomes ensemble nodes (``route_rows`` is the reference):

* numeric ``x <= t``: one ``BRANCH_LEQ`` node, the threshold stored as a double
  (``nodes_values_as_tensor``; onnxruntime compares double inputs in double), missing values
  following ``missing_branch`` through ``nodes_missing_value_tracks_true``;
* categorical (binary subset or multiway): for each branch other than the one unseen
  categories take (the *default*), a run of ``BRANCH_EQ`` nodes on the code, one per category
  of the branch, whose true edges share the branch's subtree (each subtree is written once),
  then an ``x <= +inf`` separator; the last separator leads to the default branch. Missing
  values (NaN) take the true edge of their branch's run (``nodes_missing_value_tracks_true``),
  or the last separator's false edge. A split costs one node per category outside the default
  branch plus one per run. The layout keeps to what onnxruntime accepts: a shared node has at
  most one false parent, and EQ nodes of different branches are never linked by a false edge
  (onnxruntime fuses such chains into one set test).

Leaves carry the leaf's class distribution (``Tree.leaf_proba``) times ``1 / n_trees``, with
``post_transform="NONE"``, so ``probabilities`` is ``predict_proba``; a regression tree's leaves
carry their mean times ``1 / n_trees``, summed, so ``variable`` is ``predict`` (in float32, the
operator's output type).  The node lists are :mod:`rainforest.onnx_nodes`'.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from .errors import MissingDependency
from .atomic import write_atomic
from .errors import DataError, NotFittedError
from .schema import CATEGORICAL, NUMERIC, Attribute, Schema
from .onnx_nodes import EnsembleNodes, add_tree
from .tree import Tree, plain_value

OPSET = 17  # the default domain: Cast, Concat, Gather, Mul, Add
ML_OPSET = 3  # ai.onnx.ml: TreeEnsembleClassifier v3 (double thresholds and weights), LabelEncoder v2
MATRIX_INPUT = "X"
_PREFIX = "rainforest::"  # internal tensor names; a feature column may not start with it


def _onnx():
    try:
        import onnx
    except ImportError:
        raise MissingDependency("ONNX export needs the onnx package: pip install 'rainforest[onnx]'") from None
    return onnx


@dataclass
class Ensemble:
    """The trees of a model, as one ensemble: the base features and each tree's Forest-RC combinations."""

    trees: list
    combinations: list  # per tree: forest.Combinations or None
    n_features: int  # base feature columns, the first n_features of every tree
    names: list = field(init=False)
    kinds: list = field(init=False)
    categories: list = field(init=False)
    classes: list = field(init=False)
    regression: bool = field(init=False)

    def __post_init__(self):
        first = self.trees[0]
        p = self.n_features
        self.names, self.kinds = list(first.feature_names[:p]), list(first.feature_kinds[:p])
        self.categories, self.classes = list(first.categories[:p]), list(first.classes)
        self.regression = first.regression


def ensemble_of(model) -> Ensemble:
    """The trees of a ``Tree``, a fitted decision tree or random forest (a classifier or a regressor).

    Raises
    ------
    NotFittedError
        If the estimator is not fitted.
    TypeError
        For any other model (AdaBoost's probabilities are not a mean of its trees' distributions).
    """
    if isinstance(model, Tree):
        return Ensemble([model], [None], model.n_features)
    name = type(model).__name__
    if hasattr(model, "combinations_"):  # a fitted random forest
        return Ensemble(list(model.estimators_), list(model.combinations_), int(model.n_features_in_))
    if hasattr(model, "tree_"):
        return Ensemble([model.tree_], [None], model.tree_.n_features)
    if name in ("DecisionTreeClassifier", "RandomForestClassifier", "DecisionTreeRegressor", "RandomForestRegressor"):
        raise NotFittedError(f"this {name} is not fitted yet; call fit first")
    raise TypeError(f"ONNX export takes a Tree, a decision tree or a random forest (classifier or regressor), "
                    f"got {name}"
                    + (" (its probabilities are not a mean of its trees' class distributions)"
                       if name == "AdaBoostClassifier" else ""))


# -- the graph ---------------------------------------------------------------------------------
def _input_type(name: str, kind: str, categories) -> str:
    """``"double"``, ``"string"``, ``"int64"`` or ``"bool"``: the ONNX input type of a feature column."""
    if kind != "categorical":
        return "double"
    cats = categories or []
    if all(isinstance(c, str) for c in cats):
        return "string"
    if all(isinstance(c, (bool, np.bool_)) for c in cats):
        return "bool"
    if all(isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) for c in cats):
        return "int64"
    raise DataError(f"categorical column {name!r} has categories of type "
                    f"{sorted({type(c).__name__ for c in cats})}; the column inputs of the ONNX export take "
                    f"strings, integers or booleans: use inputs='matrix' (category codes) instead")


def _class_values(classes: list) -> tuple[int, np.ndarray]:
    """The ONNX element type and the values of the ``label`` output's classes."""
    import onnx

    TP = onnx.TensorProto
    if all(isinstance(c, str) for c in classes):
        return TP.STRING, np.array(classes, dtype=object)
    if all(isinstance(c, (bool, np.bool_)) for c in classes):
        return TP.BOOL, np.array(classes, dtype=np.bool_)
    if all(isinstance(c, (int, np.integer)) for c in classes):
        return TP.INT64, np.array(classes, dtype=np.int64)
    if all(isinstance(c, (int, float, np.integer, np.floating)) for c in classes):
        return TP.DOUBLE, np.array(classes, dtype=np.float64)
    raise DataError(f"the classes {classes!r} are not all strings, numbers or booleans; cannot write them to ONNX")


def _encode_column(onnx, j: int, name: str, typ: str, categories, missing_string, graph_nodes) -> str:
    """Nodes turning input column ``name`` into its float code column; the code tensor's name."""
    helper = onnx.helper
    cats = list(categories or [])
    codes = [float(k) for k in range(len(cats))]
    out = f"{_PREFIX}code:{j}"
    src = name
    if typ == "string":
        keys = [str(c) for c in cats]
        if missing_string is not None:
            if missing_string in keys:
                raise DataError(f"column {name!r} has the category {missing_string!r}, which is also the "
                                f"missing_string standing for missing values; pass another missing_string")
            keys, codes = keys + [missing_string], codes + [math.nan]
        attrs = {"keys_strings": keys}
    else:
        if typ == "bool":
            src = f"{_PREFIX}int:{j}"
            graph_nodes.append(helper.make_node("Cast", [name], [src], to=onnx.TensorProto.INT64))
        attrs = {"keys_int64s": [int(c) for c in cats]}
    if not (attrs.get("keys_strings") or attrs.get("keys_int64s")):
        # no training category and no missing key: every value is unseen (code 0 = len(categories))
        graph_nodes.append(helper.make_node("Shape", [src], [f"{_PREFIX}shape:{j}"]))
        graph_nodes.append(helper.make_node("ConstantOfShape", [f"{_PREFIX}shape:{j}"], [out],
                                            value=onnx.numpy_helper.from_array(np.zeros(1, np.float64))))
        return out
    graph_nodes.append(helper.make_node("LabelEncoder", [src], [f"{_PREFIX}code32:{j}"], domain="ai.onnx.ml",
                                        values_floats=codes, default_float=float(len(cats)), **attrs))
    graph_nodes.append(helper.make_node("Cast", [f"{_PREFIX}code32:{j}"], [out], to=onnx.TensorProto.DOUBLE))
    return out


def _combination_columns(onnx, x: str, combos, t: int, graph_nodes, initializers) -> str:
    """Tree ``t``'s Forest-RC columns, summed term by term as ``Combinations.values`` does."""
    helper, nh = onnx.helper, onnx.numpy_helper
    total = None
    for term in range(combos.features.shape[1]):
        idx, coef = f"{_PREFIX}rc{t}:idx{term}", f"{_PREFIX}rc{t}:coef{term}"
        initializers += [nh.from_array(np.ascontiguousarray(combos.features[:, term], np.int64), idx),
                         nh.from_array(np.ascontiguousarray(combos.coefficients[:, term], np.float64), coef)]
        picked, scaled = f"{_PREFIX}rc{t}:x{term}", f"{_PREFIX}rc{t}:term{term}"
        graph_nodes.append(helper.make_node("Gather", [x, idx], [picked], axis=1))
        graph_nodes.append(helper.make_node("Mul", [picked, coef], [scaled]))
        if total is None:
            total = scaled
        else:
            graph_nodes.append(helper.make_node("Add", [total, scaled], [f"{_PREFIX}rc{t}:sum{term}"]))
            total = f"{_PREFIX}rc{t}:sum{term}"
    return total


def _classifier_nodes(onnx, nodes: EnsembleNodes, x: str, classes: list, tree_nodes: dict, graph_nodes: list,
                      initializers: list) -> None:
    """The ``TreeEnsembleClassifier`` (its ``probabilities``) and the ``label`` it implies."""
    helper, nh = onnx.helper, onnx.numpy_helper
    for k in sorted(set(range(len(classes))) - set(nodes.class_ids)):  # every class declared once
        nodes.class_treeids.append(0)
        nodes.class_nodeids.append(nodes.class_nodeids[0])
        nodes.class_ids.append(k)
        nodes.class_weights.append(0.0)
    graph_nodes.append(helper.make_node(
        "TreeEnsembleClassifier", [x], [f"{_PREFIX}label", "probabilities"], class_treeids=nodes.class_treeids,
        class_nodeids=nodes.class_nodeids, class_ids=nodes.class_ids,
        class_weights_as_tensor=nh.from_array(np.array(nodes.class_weights, np.float64)),
        classlabels_int64s=list(range(len(classes))), **tree_nodes))
    # the label is the first most probable class, as predict; not the operator's own label output,
    # which for two classes is "class 1 if its score > 0" in onnxruntime
    initializers.append(nh.from_array(_class_values(classes)[1], f"{_PREFIX}classes"))
    graph_nodes.append(helper.make_node("ArgMax", ["probabilities"], [f"{_PREFIX}argmax"], axis=1, keepdims=0))
    graph_nodes.append(helper.make_node("Gather", [f"{_PREFIX}classes", f"{_PREFIX}argmax"], ["label"], axis=0))


def to_onnx(model, path=None, *, inputs: str = "columns", missing_string: str | None = "", name: str | None = None):
    """A fitted tree or forest as an ONNX model (``ai.onnx.ml`` ``TreeEnsembleClassifier``, or
    ``TreeEnsembleRegressor`` for a regressor).

    Parameters
    ----------
    model : DecisionTreeClassifier, RandomForestClassifier, DecisionTreeRegressor, RandomForestRegressor or Tree
        Fitted; binned or exact, binary or multiway categorical splits, Forest-RI or Forest-RC.
    path : str or path-like, optional
        Where to write the ``.onnx`` file (through a temporary file and a rename).
    inputs : {"columns", "matrix"}, default="columns"
        ``"columns"``: one input per feature column, named as the column, shape ``[N, 1]``:
        numeric → ``double`` (NaN = missing; dates and timestamps as their integer value),
        string categories → ``string``, integer categories → ``int64``, boolean ones → ``bool``.
        ``"matrix"``: one ``double`` input ``X`` of shape ``[N, n_features]``, the encoded matrix
        (numeric values, category codes as in the metadata's categories, NaN = missing).
    missing_string : str or None, default=""
        The string that stands for a missing value in string inputs (ONNX string tensors have no
        null). ``None``: none does, every string is a value (unseen ones take the unseen branch).
        It may not be one of a column's training categories.
    name : str, optional
        The graph's name (default: the model's class name).

    Returns
    -------
    onnx.ModelProto
        Outputs ``label`` (``[N]``: string or int64 classes; the class index for other class
        types) and ``probabilities`` (``[N, n_classes]`` float, classes in ``classes_`` order:
        ``predict_proba``); a regressor's: ``variable`` (``[N, 1]`` float: ``predict``). The
        metadata holds ``rainforest.classes`` (empty for a regressor), ``rainforest.features``
        (names, kinds, categories), ``rainforest.inputs`` and ``rainforest.missing_string``.

    Notes
    -----
    Thresholds and leaf weights are doubles and the comparison runs in double, so the
    probabilities equal ``predict_proba`` up to their rounding to float32.
    """
    onnx = _onnx()
    helper, nh, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
    ens = ensemble_of(model)
    if inputs not in ("columns", "matrix"):
        raise ValueError(f"inputs must be 'columns' or 'matrix', got {inputs!r}")
    p = ens.n_features
    for t, tree in enumerate(ens.trees):
        if list(tree.classes) != ens.classes or list(tree.feature_names[:p]) != ens.names:
            raise ValueError(f"tree {t} has other classes or features than tree 0; cannot export one ensemble")
        if tree.regression != ens.regression:
            raise ValueError(f"tree {t} is not of tree 0's task; cannot export one ensemble")
    clash = [n for n in ens.names if n.startswith(_PREFIX)]
    if inputs == "columns" and clash:
        raise DataError(f"feature column {clash[0]!r} clashes with the export's internal names ({_PREFIX}...)")

    graph_nodes, initializers, graph_inputs = [], [], []
    onnx_type = {"double": TP.DOUBLE, "string": TP.STRING, "int64": TP.INT64, "bool": TP.BOOL}
    if inputs == "matrix":
        graph_inputs.append(helper.make_tensor_value_info(MATRIX_INPUT, TP.DOUBLE, ["N", p]))
        x = MATRIX_INPUT
    else:
        columns = []
        for j, (n, k, c) in enumerate(zip(ens.names, ens.kinds, ens.categories)):
            typ = _input_type(n, k, c)
            graph_inputs.append(helper.make_tensor_value_info(n, onnx_type[typ], ["N", 1]))
            columns.append(n if typ == "double" else
                           _encode_column(onnx, j, n, typ, c, missing_string, graph_nodes))
        x = f"{_PREFIX}X"
        graph_nodes.append(helper.make_node("Concat", columns, [x], axis=1))

    # Forest-RC: each tree's combinations are columns after the base features
    blocks, offsets, width = [x], [], p
    for t, combos in enumerate(ens.combinations):
        offsets.append(width)
        if combos is not None:
            blocks.append(_combination_columns(onnx, x, combos, t, graph_nodes, initializers))
            width += combos.features.shape[0]
    if len(blocks) > 1:
        graph_nodes.append(helper.make_node("Concat", blocks, [f"{_PREFIX}Xrc"], axis=1))
        x = f"{_PREFIX}Xrc"

    nodes = EnsembleNodes()
    weight = 1.0 / len(ens.trees)
    for t, tree in enumerate(ens.trees):
        off = offsets[t]
        # with two classes onnxruntime reads a leaf without class 1's weight as a one-score leaf: give both
        add_tree(nodes, t, tree, lambda f, off=off: f if f < p else off + f - p, weight,
                 all_classes=len(ens.classes) == 2)
    tree_nodes = dict(domain="ai.onnx.ml", nodes_treeids=nodes.treeids, nodes_nodeids=nodes.nodeids,
                      nodes_featureids=nodes.featureids, nodes_modes=nodes.modes,
                      nodes_values_as_tensor=nh.from_array(np.array(nodes.values, np.float64)),
                      nodes_truenodeids=nodes.true, nodes_falsenodeids=nodes.false,
                      nodes_missing_value_tracks_true=nodes.missing_true, post_transform="NONE")
    if ens.regression:  # the mean of the trees' leaf means: each leaf weighs its mean / n_trees, summed
        graph_nodes.append(helper.make_node(
            "TreeEnsembleRegressor", [x], ["variable"], n_targets=1, aggregate_function="SUM",
            target_treeids=nodes.class_treeids, target_nodeids=nodes.class_nodeids, target_ids=nodes.class_ids,
            target_weights_as_tensor=nh.from_array(np.array(nodes.class_weights, np.float64)), **tree_nodes))
        outputs = [helper.make_tensor_value_info("variable", TP.FLOAT, ["N", 1])]
    else:
        _classifier_nodes(onnx, nodes, x, ens.classes, tree_nodes, graph_nodes, initializers)
        outputs = [helper.make_tensor_value_info("label", _class_values(ens.classes)[0], ["N"]),
                   helper.make_tensor_value_info("probabilities", TP.FLOAT, ["N", len(ens.classes)])]
    graph = helper.make_graph(graph_nodes, name or type(model).__name__, graph_inputs, outputs, initializers)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                         helper.make_opsetid("ai.onnx.ml", ML_OPSET)],
                                   producer_name="rainforest", producer_version=_version())
    onnx_model.doc_string = (f"rainforest {type(model).__name__}: {len(ens.trees)} tree(s), " + (
        "variable = predict" if ens.regression else f"classes {ens.classes}; probabilities = predict_proba"))
    helper.set_model_props(onnx_model, {
        "rainforest.classes": json.dumps([plain_value(c) for c in ens.classes]),
        "rainforest.features": json.dumps([{"name": n, "kind": k, "categories": None if c is None else
                                            [plain_value(v) for v in c]}
                                           for n, k, c in zip(ens.names, ens.kinds, ens.categories)]),
        "rainforest.inputs": inputs,
        "rainforest.missing_string": json.dumps(missing_string)})
    onnx.checker.check_model(onnx_model)
    if path is not None:
        write_atomic(path, onnx_model.SerializeToString())
    return onnx_model


# -- feeding the model -------------------------------------------------------------------------
def onnx_feed(onnx_model, X) -> dict:
    """The input dictionary of an exported model for ``onnxruntime.InferenceSession.run``.

    Parameters
    ----------
    onnx_model : onnx.ModelProto or path
        A model written by :func:`to_onnx`.
    X : pyarrow Table, pandas DataFrame, dict of columns or path
        Holds the model's feature columns (more are ignored).

    Returns
    -------
    dict
        Input name → numpy array, following the conventions of :func:`to_onnx`: nulls of string
        columns become ``missing_string``, nulls of numeric columns NaN.

    Raises
    ------
    DataError
        If a column is missing, or an integer or boolean categorical column holds nulls (an
        ``int64`` / ``bool`` input cannot say missing).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from .inputs import feature_tables
    from .schema import category_values, numeric_values

    onnx = _onnx()
    if not isinstance(onnx_model, onnx.ModelProto):
        onnx_model = onnx.load(onnx_model)
    meta = {p.key: p.value for p in onnx_model.metadata_props}
    if "rainforest.features" not in meta:
        raise ValueError("this ONNX model was not written by rainforest's to_onnx (no rainforest.features metadata)")
    features = json.loads(meta["rainforest.features"])
    names = [f["name"] for f in features]
    table = pa.concat_tables(list(feature_tables(X, names, strict_names=True)))
    if meta["rainforest.inputs"] == "matrix":
        schema = Schema([Attribute(f["name"], CATEGORICAL if f["kind"] == "categorical" else NUMERIC,
                                   categories=f["categories"] or []) for f in features])
        return {MATRIX_INPUT: np.ascontiguousarray(schema.encode(table))}
    missing_string = json.loads(meta["rainforest.missing_string"])
    feed = {}
    for f in features:
        col = table.column(f["name"])
        typ = _input_type(f["name"], f["kind"], f["categories"])
        if typ == "double":
            feed[f["name"]] = numeric_values(col).reshape(-1, 1)
            continue
        col = category_values(col)
        if typ == "string":
            if col.null_count and missing_string is None:
                raise DataError(f"column {f['name']!r} has {col.null_count} nulls, but the model was exported "
                                f"with missing_string=None")
            filled = pc.fill_null(col.cast(pa.string()), missing_string) if col.null_count else col.cast(pa.string())
            feed[f["name"]] = np.asarray(filled.to_pylist(), dtype=object).reshape(-1, 1)
            continue
        if col.null_count:
            raise DataError(f"column {f['name']!r} has {col.null_count} nulls; its {typ} ONNX input cannot hold "
                            f"a missing value (export with inputs='matrix', where NaN is missing)")
        dtype = np.int64 if typ == "int64" else np.bool_
        feed[f["name"]] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=dtype).reshape(-1, 1)
    return feed


def _version() -> str:
    from . import __version__
    return __version__


