"""ONNX export: a tree or a forest as one ``ai.onnx.ml`` ``TreeEnsembleClassifier`` graph.

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
``post_transform="NONE"``, so ``probabilities`` is ``predict_proba``.
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

    def __post_init__(self):
        first = self.trees[0]
        p = self.n_features
        self.names, self.kinds = list(first.feature_names[:p]), list(first.feature_kinds[:p])
        self.categories, self.classes = list(first.categories[:p]), list(first.classes)


def ensemble_of(model) -> Ensemble:
    """The trees of a ``Tree``, a fitted ``DecisionTreeClassifier`` or ``RandomForestClassifier``.

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
    if hasattr(model, "combinations_"):  # a fitted RandomForestClassifier
        return Ensemble(list(model.estimators_), list(model.combinations_), int(model.n_features_in_))
    if hasattr(model, "tree_"):
        return Ensemble([model.tree_], [None], model.tree_.n_features)
    if name in ("DecisionTreeClassifier", "RandomForestClassifier"):
        raise NotFittedError(f"this {name} is not fitted yet; call fit first")
    raise TypeError(f"ONNX export takes a Tree, a DecisionTreeClassifier or a RandomForestClassifier, got {name}"
                    + (" (its probabilities are not a mean of its trees' class distributions)"
                       if name == "AdaBoostClassifier" else ""))


# -- the tree ensemble's node lists -----------------------------------------------------------
@dataclass
class _Nodes:
    """The attribute lists of a ``TreeEnsembleClassifier``, filled tree by tree."""

    treeids: list = field(default_factory=list)
    nodeids: list = field(default_factory=list)
    featureids: list = field(default_factory=list)
    modes: list = field(default_factory=list)
    values: list = field(default_factory=list)
    true: list = field(default_factory=list)
    false: list = field(default_factory=list)
    missing_true: list = field(default_factory=list)
    class_treeids: list = field(default_factory=list)
    class_nodeids: list = field(default_factory=list)
    class_ids: list = field(default_factory=list)
    class_weights: list = field(default_factory=list)

    def add(self, t, node, feature, mode, value, true, false, missing_true):
        self.treeids.append(t)
        self.nodeids.append(node)
        self.featureids.append(feature)
        self.modes.append(mode)
        self.values.append(value)
        self.true.append(true)
        self.false.append(false)
        self.missing_true.append(int(missing_true))


def _category_runs(tree: Tree, i: int) -> tuple[list, int]:
    """Categorical split ``i`` as runs ``[(branch, codes)]``, one per branch other than the branch of
    unseen categories (the *default*, where codes in no run go), and the default branch."""
    cats = tree.categories[tree.feature[i]]
    off = int(tree.cat_offset[i])
    branch = tree.cat_branch[off:off + len(cats) + 1]
    default = int(branch[len(cats)])
    runs = [(b, [c for c in range(len(cats)) if branch[c] == b]) for b in range(int(tree.n_children[i]))]
    return [(b, codes) for b, codes in runs if b != default and codes], default


def _node_sizes(tree: Tree) -> np.ndarray:
    """Ensemble nodes per tree node: 1 for leaves and numeric splits; for a categorical split, one per
    code in its runs and one separator after each run (at least one)."""
    sizes = np.ones(tree.node_count, np.int64)
    for i in np.flatnonzero((tree.first_child >= 0) & (tree.cat_offset >= 0)):
        runs, _ = _category_runs(tree, int(i))
        sizes[i] = sum(len(codes) + 1 for _, codes in runs) or 1  # runs, separators, the end node
    return sizes


def _add_tree(nodes: _Nodes, t: int, tree: Tree, column_of, weight: float, all_classes: bool) -> None:
    """Tree ``t``'s nodes and leaf weights; ``column_of(f)``: the ensemble column of the tree's feature ``f``."""
    start = np.concatenate([[0], np.cumsum(_node_sizes(tree))])
    proba = tree.leaf_proba()
    for i in range(tree.node_count):
        at = int(start[i])
        first = int(tree.first_child[i])
        if first < 0:
            nodes.add(t, at, 0, "LEAF", 0.0, 0, 0, False)
            for k in range(tree.n_classes):
                if all_classes or proba[i, k] > 0:  # absent classes score 0
                    nodes.class_treeids.append(t)
                    nodes.class_nodeids.append(at)
                    nodes.class_ids.append(k)
                    nodes.class_weights.append(float(proba[i, k]) * weight)
            continue
        f = column_of(int(tree.feature[i]))
        child = lambda b: int(start[first + b])  # noqa: E731
        if tree.cat_offset[i] < 0:
            nodes.add(t, at, f, "BRANCH_LEQ", float(tree.threshold[i]), child(0), child(1),
                      tree.missing_branch[i] == 0)
            continue
        # Each run is BRANCH_EQ nodes on the code whose true edges share the branch's subtree (the
        # nodes of the missing values' branch also take NaN); an "x <= +inf" node follows each run,
        # both edges to what comes next: the next run, or after the last one the default branch
        # (and, when the missing values' branch has no run, false, i.e. NaN, to it). onnxruntime
        # lays out a node's false child right after it, so a subtree may have one false parent and
        # is shared through true edges only; and it fuses EQ nodes linked by false edges into one
        # set test, so runs of different branches are never adjacent.
        runs, default = _category_runs(tree, i)
        missing = int(tree.missing_branch[i])
        pos = at
        for r, (b, codes) in enumerate(runs):
            for c in codes:
                nodes.add(t, pos, f, "BRANCH_EQ", float(c), child(b), pos + 1, b == missing)
                pos += 1
            if r + 1 < len(runs):
                nodes.add(t, pos, f, "BRANCH_LEQ", math.inf, pos + 1, pos + 1, False)
                pos += 1
        nan_to = default if missing == default or any(b == missing for b, _ in runs) else missing
        nodes.add(t, pos, f, "BRANCH_LEQ", math.inf, child(default), child(nan_to), False)


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


def to_onnx(model, path=None, *, inputs: str = "columns", missing_string: str | None = "", name: str | None = None):
    """A fitted tree or forest as an ONNX model (``ai.onnx.ml`` ``TreeEnsembleClassifier``).

    Parameters
    ----------
    model : DecisionTreeClassifier, RandomForestClassifier or Tree
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
        ``predict_proba``). The metadata holds ``rainforest.classes``, ``rainforest.features``
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

    nodes = _Nodes()
    weight = 1.0 / len(ens.trees)
    for t, tree in enumerate(ens.trees):
        off = offsets[t]
        # with two classes onnxruntime reads a leaf without class 1's weight as a one-score leaf: give both
        _add_tree(nodes, t, tree, lambda f, off=off: f if f < p else off + f - p, weight,
                  all_classes=len(ens.classes) == 2)
    for k in sorted(set(range(len(ens.classes))) - set(nodes.class_ids)):  # every class declared once
        nodes.class_treeids.append(0)
        nodes.class_nodeids.append(nodes.class_nodeids[0])
        nodes.class_ids.append(k)
        nodes.class_weights.append(0.0)
    graph_nodes.append(helper.make_node(
        "TreeEnsembleClassifier", [x], [f"{_PREFIX}label", "probabilities"], domain="ai.onnx.ml",
        nodes_treeids=nodes.treeids, nodes_nodeids=nodes.nodeids, nodes_featureids=nodes.featureids,
        nodes_modes=nodes.modes, nodes_values_as_tensor=nh.from_array(np.array(nodes.values, np.float64)),
        nodes_truenodeids=nodes.true, nodes_falsenodeids=nodes.false,
        nodes_missing_value_tracks_true=nodes.missing_true, class_treeids=nodes.class_treeids,
        class_nodeids=nodes.class_nodeids, class_ids=nodes.class_ids,
        class_weights_as_tensor=nh.from_array(np.array(nodes.class_weights, np.float64)),
        post_transform="NONE", classlabels_int64s=list(range(len(ens.classes)))))
    # the label is the first most probable class, as predict; not the operator's own label output,
    # which for two classes is "class 1 if its score > 0" in onnxruntime
    label_type, class_values = _class_values(ens.classes)
    initializers.append(nh.from_array(class_values, f"{_PREFIX}classes"))
    graph_nodes.append(helper.make_node("ArgMax", ["probabilities"], [f"{_PREFIX}argmax"], axis=1, keepdims=0))
    graph_nodes.append(helper.make_node("Gather", [f"{_PREFIX}classes", f"{_PREFIX}argmax"], ["label"], axis=0))
    outputs = [helper.make_tensor_value_info("label", label_type, ["N"]),
               helper.make_tensor_value_info("probabilities", TP.FLOAT, ["N", len(ens.classes)])]
    graph = helper.make_graph(graph_nodes, name or type(model).__name__, graph_inputs, outputs, initializers)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                         helper.make_opsetid("ai.onnx.ml", ML_OPSET)],
                                   producer_name="rainforest", producer_version=_version())
    onnx_model.doc_string = (f"rainforest {type(model).__name__}: {len(ens.trees)} tree(s), classes {ens.classes}; "
                             f"probabilities = predict_proba")
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


