"""Graphviz exports of a tree: DOT text in the manner of ``sklearn.tree.export_graphviz``, and PNG.

Node ``i`` of the tree is DOT node ``i``. An internal node's label is its split test (``age <=
37.5``; ``workclass in {Private, <other>}`` for a binary categorical split, the left subset;
the attribute name for a multiway split), then its impurity, samples, value and class. Edges
carry the branch: ``True`` / ``False`` for two-way splits, the category set for multiway ones,
and ``missing`` on the branch that missing values take. ``<other>`` is the categories unseen in
training.
"""
from __future__ import annotations

import colorsys
import os
import shutil
import subprocess

import numpy as np

from .errors import MissingDependency
from .errors import NotFittedError
from .atomic import atomic_path, write_atomic
from .tree import Tree


def tree_of(model, tree_index: int = 0) -> Tree:
    """The ``Tree`` of a tree model, or tree ``tree_index`` of an ensemble (forest, AdaBoost).

    Raises
    ------
    NotFittedError
        If the estimator is not fitted.
    TypeError
        If the model (or the chosen learner of an ensemble) is not a tree.
    """
    if isinstance(model, Tree):
        return model
    name = type(model).__name__
    if hasattr(model, "tree_"):
        return model.tree_
    if hasattr(model, "estimators_"):
        learners = model.estimators_
        if not -len(learners) <= tree_index < len(learners):
            raise IndexError(f"tree_index={tree_index} is out of range: this {name} has {len(learners)} trees")
        return tree_of(learners[tree_index])
    if type(model).__name__ in ("DecisionTreeClassifier", "RandomForestClassifier", "AdaBoostClassifier"):
        raise NotFittedError(f"this {name} is not fitted yet; call fit first")
    raise TypeError(f"a Graphviz export takes a Tree, a DecisionTreeClassifier or a tree ensemble, got {name}")


def class_colors(n: int) -> list[tuple[int, int, int]]:
    """``n`` evenly spaced hues (as scikit-learn's ``export_graphviz``): one RGB colour per class."""
    return [tuple(int(round(255 * v)) for v in colorsys.hsv_to_rgb((25 + 360 * k / max(n, 1)) / 360 % 1, 0.75, 0.9)) for k in range(n)]


def _fill(proba: np.ndarray, colors) -> str:
    """The class colour, faded towards white as the node's leading class leads less."""
    order = np.sort(proba)[::-1]
    second = order[1] if len(order) > 1 else 0.0
    alpha = 1.0 if second >= 1.0 else (order[0] - second) / (1.0 - second)
    rgb = colors[int(np.argmax(proba))]
    return "#" + "".join(f"{int(round(alpha * c + (1 - alpha) * 255)):02x}" for c in rgb)


def _quote(text: str) -> str:
    """A DOT double-quoted string; lines are joined by DOT's ``\\n``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _number(x: float, precision: int) -> str:
    x = round(float(x), precision)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def branch_members(tree: Tree, i: int, b: int) -> list[str]:
    """The categories (as text) that categorical split ``i`` sends to branch ``b``; ``<other>`` stands
    for the categories unseen in training."""
    cats = tree.categories[tree.feature[i]]
    off = int(tree.cat_offset[i])
    members = [str(c) for c, br in zip(cats, tree.cat_branch[off:off + len(cats)]) if br == b]
    if tree.cat_branch[off + len(cats)] == b:
        members.append("<other>")
    return members


def _split_text(tree: Tree, i: int, names, precision: int) -> str:
    name = names[tree.feature[i]]
    if tree.cat_offset[i] < 0:
        t = tree.threshold[i]
        return f"{name} is present" if np.isinf(t) else f"{name} <= {_number(t, precision)}"
    if tree.n_children[i] > 2:
        return name
    return f"{name} in {{{', '.join(branch_members(tree, i, 0))}}}"


def _edge_text(tree: Tree, i: int, b: int) -> str:
    if tree.cat_offset[i] >= 0 and tree.n_children[i] > 2:
        members = branch_members(tree, i, b)
        text = f"= {members[0]}" if len(members) == 1 else f"in {{{', '.join(members)}}}"
    else:
        text = "True" if b == 0 else "False"
    return text + ("\nmissing" if tree.missing_branch[i] == b else "")


def export_dot(model, path=None, *, tree_index: int = 0, max_depth: int | None = None, feature_names=None,
               class_names=None, filled: bool = False, impurity: bool = True, node_ids: bool = False,
               proportion: bool = False, rounded: bool = False, precision: int = 3,
               fontname: str = "helvetica") -> str:
    """The tree as Graphviz DOT text, like ``sklearn.tree.export_graphviz``.

    Parameters
    ----------
    model : DecisionTreeClassifier, RandomForestClassifier, AdaBoostClassifier or Tree
        A fitted tree, or an ensemble whose tree ``tree_index`` is drawn.
    path : str or path-like, optional
        Also write the text there (through a temporary file and a rename).
    tree_index : int, default=0
        Which tree of an ensemble.
    max_depth : int, optional
        Draw nodes down to this depth; their children appear as ``(...)``.
    feature_names, class_names : list of str, optional
        Names to show instead of the model's own feature names and classes.
    filled : bool, default=False
        Fill nodes with the colour of their majority class, paler as it leads less.
    impurity : bool, default=True
        Show each node's impurity (``gini``; ``entropy`` for entropy and gain ratio trees).
    node_ids : bool, default=False
        Show each node's index (``node #i``, the index of ``tree.feature`` etc.).
    proportion : bool, default=False
        Show samples as a percentage of the root's and values as class proportions.
    rounded : bool, default=False
        Rounded node boxes.
    precision : int, default=3
        Decimals of thresholds, impurities and values.
    fontname : str, default="helvetica"

    Returns
    -------
    str
        The DOT text (also when written to ``path``).
    """
    tree = tree_of(model, tree_index)
    names = list(feature_names) if feature_names is not None else list(tree.feature_names)
    if len(names) != tree.n_features:
        raise ValueError(f"feature_names has {len(names)} names, the tree has {tree.n_features} features")
    classes = [str(c) for c in (class_names if class_names is not None else tree.classes)]
    if len(classes) != tree.n_classes:
        raise ValueError(f"class_names has {len(classes)} names, the tree has {tree.n_classes} classes")
    if max_depth is not None and not (isinstance(max_depth, (int, np.integer)) and max_depth >= 0):
        raise ValueError(f"max_depth must be None or an integer >= 0, got {max_depth!r}")
    colors = class_colors(tree.n_classes)
    proba = tree.leaf_proba()
    crit = "entropy" if tree.criterion == "gain_ratio" else tree.criterion
    total = tree.n_node_samples[0] if tree.node_count else 1
    style = ", ".join(s for s, on in (("filled", filled), ("rounded", rounded)) if on)
    lines = ["digraph Tree {",
             f"node [shape=box{f', style={_quote(style)}' if style else ''}, color=\"black\", "
             f"fontname={_quote(fontname)}] ;",
             f"edge [fontname={_quote(fontname)}] ;"]

    def node_label(i: int) -> str:
        parts = [f"node #{i}"] if node_ids else []
        if tree.first_child[i] >= 0:
            parts.append(_split_text(tree, i, names, precision))
        if impurity:
            parts.append(f"{crit} = {_number(tree.impurity[i], precision)}")
        if proportion:
            parts.append(f"samples = {_number(100.0 * tree.n_node_samples[i] / total, 1)}%")
            values = proba[i]
        else:
            parts.append(f"samples = {int(tree.n_node_samples[i])}")
            values = tree.value[i]
        parts.append(f"value = [{', '.join(_number(v, precision) for v in values)}]")
        parts.append(f"class = {classes[int(np.argmax(tree.value[i]))]}")
        return "\n".join(parts)

    stack = [0] if tree.node_count else []
    while stack:  # depth first from the root, children in branch order (as export_graphviz)
        i = stack.pop()
        if max_depth is not None and tree.depth[i] > max_depth:
            grey = ', fillcolor="#C0C0C0"' if filled else ""
            lines.append(f'{i} [label="(...)"{grey}] ;')
            continue
        fill = f", fillcolor=\"{_fill(proba[i], colors)}\"" if filled else ""
        lines.append(f"{i} [label={_quote(node_label(i))}{fill}] ;")
        first = int(tree.first_child[i])
        if first < 0:
            continue
        for b in range(int(tree.n_children[i])):
            lines.append(f"{i} -> {first + b} [label={_quote(_edge_text(tree, i, b))}] ;")
        stack.extend(range(first + int(tree.n_children[i]) - 1, first - 1, -1))
    lines.append("}")
    text = "\n".join(lines) + "\n"
    if path is not None:
        write_atomic(path, text)
    return text


def render_png(model, path, *, format: str = "png", **kwargs) -> str:
    """Draw the tree with Graphviz's ``dot`` program into an image file.

    Parameters
    ----------
    model : DecisionTreeClassifier, RandomForestClassifier, AdaBoostClassifier or Tree
    path : str or path-like
        The image file, written through a temporary file and a rename.
    format : str, default="png"
        Any output format of ``dot -T`` (``"png"``, ``"svg"``, ``"pdf"``).
    **kwargs
        Options of :func:`export_dot` (``max_depth``, ``filled``, ``tree_index``, ...).

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    MissingDependency
        If Graphviz's ``dot`` is not on ``PATH`` (an ImportError).
    RuntimeError
        If ``dot`` fails (its message included).
    """
    dot = shutil.which("dot")
    if dot is None:
        raise MissingDependency("drawing a tree needs Graphviz, whose `dot` program is not on PATH: install "
                                "graphviz (e.g. `apt install graphviz` or `conda install graphviz`), or write "
                                "DOT text with export_dot and render it elsewhere")
    text = export_dot(model, **kwargs)
    path = os.fspath(path)
    with atomic_path(path, suffix=f".{format}") as tmp:
        done = subprocess.run([dot, f"-T{format}", "-o", tmp], input=text.encode("utf-8"), capture_output=True)
        if done.returncode != 0:
            raise RuntimeError(f"Graphviz's dot failed writing {path!r} (exit {done.returncode}): "
                               f"{done.stderr.decode('utf-8', 'replace').strip()}")
    return path
