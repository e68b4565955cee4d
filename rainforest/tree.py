"""The one model format: a tree as flat node arrays, its predict kernel and its exports.

Node ``i`` is a leaf when ``first_child[i] == -1``.  Otherwise it has
``n_children[i]`` children numbered ``first_child[i]`` onwards (two for
numeric and binary categorical splits), and a row goes to branch ``b``:

* numeric attribute: ``b = 0`` if ``x <= threshold[i]`` else ``1``;
* categorical attribute: ``b = cat_branch[cat_offset[i] + code]``, where the
  code of a category unseen in training is ``len(categories)``;
* missing value (null, NaN): ``b = missing_branch[i]``.

Nodes are numbered level by level (breadth first), as they are grown.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from .errors import ModelError
from .schema import CATEGORICAL, NUMERIC, Attribute, Schema
from .tree_check import FORMAT, KIND_NAMES, NODE_ARRAYS, VERSION, check_tree, node_depths  # noqa: F401 (public here too)
from .model_fields import At

@numba.njit(cache=True, parallel=True, nogil=True)
def route_rows(X, feature, threshold, first_child, missing_branch, cat_offset, cat_branch, n_categories, max_depth):
    """Index of the leaf (or frontier node) that each row of ``X`` reaches.

    A second guard behind the checks of loaded trees (:mod:`rainforest.tree_check`): a row
    that needs more than ``max_depth`` steps, or meets an index out of range, gets -1 (so a
    corrupt tree can neither loop for ever nor read out of bounds).
    """
    n = X.shape[0]
    n_nodes = first_child.shape[0]
    out = np.empty(n, np.int64)
    for i in numba.prange(n):
        node = 0
        steps = 0
        while first_child[node] >= 0:
            f = feature[node]
            if steps == max_depth or f < 0 or f >= X.shape[1]:
                node = -1
                break
            x = X[i, f]
            if x != x:
                b = missing_branch[node]
            elif cat_offset[node] >= 0:
                code = int(x)
                if code > n_categories[f] or code < 0:
                    code = n_categories[f]
                k = cat_offset[node] + code
                if k >= cat_branch.shape[0]:
                    node = -1
                    break
                b = cat_branch[k]
            else:
                b = 0 if x <= threshold[node] else 1
            node = first_child[node] + b
            steps += 1
            if node < 0 or node >= n_nodes:
                node = -1
                break
        out[i] = node
    return out


@dataclass
class Tree:
    """A fitted tree; flat arrays in the manner of scikit-learn's ``Tree``.

    Attributes
    ----------
    feature : ndarray of int32
        Attribute index of each node's split, ``-2`` at leaves.
    threshold : ndarray of float64
        Numeric split threshold (``x <= threshold`` goes to the first child),
        ``-2`` at leaves and NaN at categorical splits.
    value : ndarray of shape (node_count, n_classes)
        Weighted class counts of the training rows reaching each node; a regression tree's
        (``classes`` empty): shape (node_count, 1), their weighted mean target.
    """

    feature_names: list
    feature_kinds: list  # "numeric" / "categorical"
    categories: list  # per feature: list of training categories, or None
    classes: list
    criterion: str
    target: str
    feature: np.ndarray
    threshold: np.ndarray
    first_child: np.ndarray
    n_children: np.ndarray
    missing_branch: np.ndarray
    cat_offset: np.ndarray
    cat_branch: np.ndarray
    value: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    impurity: np.ndarray
    _depth: np.ndarray = field(default=None, repr=False)

    # -- shape ---------------------------------------------------------
    @property
    def node_count(self) -> int:
        return len(self.feature)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def regression(self) -> bool:
        """Whether this is a regression tree (no classes; a node's value is its mean target)."""
        return not self.classes

    @property
    def children_left(self) -> np.ndarray:
        """First child of each node, -1 at leaves (scikit-learn's name)."""
        return self.first_child.copy()

    @property
    def children_right(self) -> np.ndarray:
        """Second child of each node, -1 at leaves; multiway nodes have more (see ``n_children``)."""
        return np.where(self.first_child >= 0, self.first_child + 1, -1).astype(np.int32)

    @property
    def is_leaf(self) -> np.ndarray:
        return self.first_child < 0

    @property
    def n_leaves(self) -> int:
        return int(self.is_leaf.sum())

    @property
    def depth(self) -> np.ndarray:
        if self._depth is None:
            self._depth = node_depths(self.first_child, self.n_children)
        return self._depth

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if self.node_count else 0

    def feature_importances(self) -> np.ndarray:
        """Total weighted impurity decrease per attribute, normalised to sum to one (as scikit-learn)."""
        imp = np.zeros(self.n_features)
        w, im = self.weighted_n_node_samples, self.impurity
        for i in np.flatnonzero(~self.is_leaf):
            kids = range(self.first_child[i], self.first_child[i] + self.n_children[i])
            imp[self.feature[i]] += w[i] * im[i] - sum(w[k] * im[k] for k in kids)
        imp /= w[0]
        total = imp.sum()
        return imp / total if total > 0 else imp

    # -- prediction ------------------------------------------------------
    def encoder(self) -> Schema:
        """The schema that encodes raw batches for :meth:`apply` (no slots needed)."""
        return Schema([Attribute(n, CATEGORICAL if k == "categorical" else NUMERIC, categories=c or [])
                       for n, k, c in zip(self.feature_names, self.feature_kinds, self.categories)])

    def routing_arrays(self, threshold=None) -> tuple:
        n_cat = np.array([len(c) if c else 0 for c in self.categories], np.int64)
        return (self.feature, self.threshold if threshold is None else threshold, self.first_child,
                self.missing_branch, self.cat_offset, self.cat_branch, n_cat, self.max_depth)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index of each row of an encoded (raw) matrix.

        Raises
        ------
        ModelError
            If the tree is corrupt (a walk longer than its depth, an index out of range).
        """
        leaves = route_rows(np.ascontiguousarray(X, dtype=np.float64), *self.routing_arrays())
        if len(leaves) and leaves.min() < 0:
            raise ModelError("the tree is corrupt: a row's walk from the root leaves its nodes or outlasts its depth",
                             "<tree>")
        return leaves

    def leaf_proba(self) -> np.ndarray:
        tot = self.value.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(tot > 0, self.value / np.where(tot > 0, tot, 1), 1.0 / self.n_classes)
        return p

    # -- exports -------------------------------------------------------
    def _branch_label(self, i: int, b: int, names) -> str:
        f = self.feature[i]
        name = names[f]
        miss = ""  # where missing values go is in missing_branch; the text stays scikit-learn-like
        if self.cat_offset[i] < 0:
            t = self.threshold[i]
            if np.isinf(t):
                return f"{name} is present" if b == 0 else f"{name} is missing"
            return f"{name} <= {t:.6g}{miss}" if b == 0 else f"{name} >  {t:.6g}{miss}"
        cats = self.categories[f]
        codes = self.cat_branch[self.cat_offset[i]:self.cat_offset[i] + len(cats)]
        members = [str(c) for c, br in zip(cats, codes) if br == b]
        if self.cat_branch[self.cat_offset[i] + len(cats)] == b:
            members.append("<other>")
        if len(members) == 1 and self.n_children[i] > 2:
            return f"{name} = {members[0]}{miss}"
        return f"{name} in {{{', '.join(members)}}}{miss}"

    def export_text(self, max_depth: int | None = None, decimals: int = 2, show_weights: bool = False) -> str:
        """The tree as indented text, like ``sklearn.tree.export_text``."""
        lines: list[str] = []

        def leaf_text(i):
            if self.regression:  # as scikit-learn's export_text writes a regressor's leaves
                return f"value: [{np.round(self.value[i, 0], decimals)}]"
            k = int(np.argmax(self.value[i]))
            extra = f" (weights: {np.round(self.value[i], decimals).tolist()})" if show_weights else ""
            return f"class: {self.classes[k]}{extra}"

        def walk(i, depth):
            pad = "|   " * depth
            if self.first_child[i] < 0:
                lines.append(f"{pad}|--- {leaf_text(i)}")
                return
            if max_depth is not None and depth >= max_depth:
                lines.append(f"{pad}|--- truncated branch of depth {self._subtree_depth(i)}")
                return
            for b in range(self.n_children[i]):
                lines.append(f"{pad}|--- {self._branch_label(i, b, self.feature_names)}")
                walk(self.first_child[i] + b, depth + 1)

        walk(0, 0)
        return "\n".join(lines) + "\n"

    def _subtree_depth(self, i: int) -> int:
        return int(self.depth[self._subtree(i)].max() - self.depth[i])

    def _subtree(self, i: int) -> list[int]:
        out, stack = [], [i]
        while stack:
            j = stack.pop()
            out.append(j)
            if self.first_child[j] >= 0:
                stack.extend(range(self.first_child[j], self.first_child[j] + self.n_children[j]))
        return out

    def rules(self) -> list[dict]:
        """IF-THEN rules, one per leaf, with coverage (covered / |D|) and accuracy (correct / covered).

        Coverage and accuracy are measured on the training rows (weighted counts).
        """
        out = []
        total = self.weighted_n_node_samples[0]

        def walk(i, conds):
            if self.first_child[i] < 0:
                covered = self.weighted_n_node_samples[i]
                if self.regression:
                    out.append({"conditions": conds, "value": float(self.value[i, 0]),
                                "coverage": float(covered / total) if total > 0 else 0.0,
                                "n_samples": int(self.n_node_samples[i])})
                    return
                k = int(np.argmax(self.value[i]))
                out.append({"conditions": conds, "class": self.classes[k],
                            "coverage": float(covered / total) if total > 0 else 0.0,
                            "accuracy": float(self.value[i, k] / covered) if covered > 0 else 0.0,
                            "n_samples": int(self.n_node_samples[i])})
                return
            for b in range(self.n_children[i]):
                walk(self.first_child[i] + b, conds + [self._branch_label(i, b, self.feature_names)])

        walk(0, [])
        return out

    def export_rules(self) -> str:
        """The rules as text: ``IF a AND b THEN class = c  [coverage 12.5%, accuracy 98.0%]``."""
        if self.regression:
            return "\n".join(f"IF {' AND '.join(r['conditions']) or 'TRUE'} THEN {self.target} = {r['value']:.6g}"
                             f"  [coverage {100 * r['coverage']:.2f}%]" for r in self.rules()) + "\n"
        return "\n".join(
            f"IF {' AND '.join(r['conditions']) or 'TRUE'} THEN {self.target} = {r['class']}"
            f"  [coverage {100 * r['coverage']:.2f}%, accuracy {100 * r['accuracy']:.2f}%]"
            for r in self.rules()) + "\n"

    def to_sql(self, dialect: str = "duckdb", output: str | None = None, *, proba_of=None, types=None) -> str:
        """The tree as one SQL ``CASE`` expression over the feature columns, for scoring in a database.

        Parameters
        ----------
        dialect : {"duckdb", "postgres"}, default="duckdb"
        output : {"class", "probability", "proba", "value", "leaf"}, optional
            Default ``"class"``, a regression tree's ``"value"``.
            ``"class"``: the predicted class (as :meth:`predict`); ``"probability"``: its
            probability; ``"proba"``: the probability of the class ``proba_of``; ``"leaf"``: the
            leaf's node index (as ``apply``); a regression tree's: ``"value"`` (its prediction, the
            leaf's mean target) or ``"leaf"``.
        proba_of : class label, optional
            The class whose probability ``output="proba"`` gives.
        types : pyarrow.Schema, optional
            The columns' types, needed only for date and timestamp features (numbers otherwise).

        Notes
        -----
        Column names are double-quoted and values written as escaped literals; missing values
        (NULL, NaN) and categories unseen in training take the branches :meth:`apply` takes.
        """
        from .sql import category_branches, dialect_of, numeric_sql, routing_case

        d = dialect_of(dialect)
        output = output or ("value" if self.regression else "class")
        if self.regression:
            proba = best = None
            if output not in ("value", "leaf"):
                raise ValueError(f"output={output!r}; a regression tree's SQL gives 'value' (the prediction) "
                                 f"or 'leaf'")
        else:
            proba = self.leaf_proba()
            best = np.argmax(proba, axis=1)
        if output == "value" and self.regression:
            leaf = lambda k: d.double_literal(float(self.value[k, 0]))
        elif output == "class":
            leaf = lambda k: d.literal(self.classes[best[k]])
        elif output == "probability":
            leaf = lambda k: d.double_literal(float(proba[k, best[k]]))
        elif output == "proba":
            if proba_of not in self.classes:
                raise ValueError(f"proba_of={proba_of!r} is not a class of this tree; classes: {self.classes}")
            c = self.classes.index(proba_of)
            leaf = lambda k: d.double_literal(float(proba[k, c]))
        elif output == "leaf":
            leaf = str
        else:
            raise ValueError(f"output={output!r}; choose 'class', 'probability', 'proba' or 'leaf'")

        def column(f: int) -> str:
            name = self.feature_names[f]
            if self.feature_kinds[f] == "categorical":
                return d.ident(name)
            typ = types.field(name).type if types is not None and name in types.names else pa.float64()
            return f"({numeric_sql(name, typ, d)})"

        def branches(k: int):
            f = int(self.feature[k])
            x = column(f)
            if self.cat_offset[k] >= 0:
                cats = self.categories[f]
                off = int(self.cat_offset[k])
                return category_branches(x, cats, self.cat_branch[off:off + len(cats)], int(self.missing_branch[k]),
                                         d, unseen=int(self.cat_branch[off + len(cats)]))
            conditions = [(f"{x} IS NULL", int(self.missing_branch[k]))]
            if np.isinf(self.threshold[k]):
                return conditions, 0
            return conditions + [(f"{x} <= {d.double_literal(float(self.threshold[k]))}", 0)], 1

        return routing_case(0, self.first_child, self.n_children, branches, lambda k: leaf(int(k)))

    # -- serialization ---------------------------------------------------
    def to_dict(self) -> dict:
        def num(x):
            x = float(x)
            if np.isnan(x):
                return None
            if np.isinf(x):
                return "inf" if x > 0 else "-inf"
            return x

        nodes = {k: getattr(self, k).tolist() for k in NODE_ARRAYS if k != "threshold"}
        nodes["threshold"] = [num(t) for t in self.threshold]
        nodes["value"] = self.value.tolist()
        nodes["cat_branch"] = self.cat_branch.tolist()
        doc = {"format": FORMAT, "version": VERSION, "criterion": self.criterion, "target": self.target,
               "classes": [plain_value(c) for c in self.classes],
               "features": [{"name": n, "kind": k, "categories": None if c is None else [plain_value(v) for v in c]}
                            for n, k, c in zip(self.feature_names, self.feature_kinds, self.categories)],
               "nodes": nodes}
        if self.regression:  # (a classifier's document is as it was: no "task" key)
            doc["task"] = "regression"
        return doc

    @classmethod
    def from_dict(cls, d: dict, path: str = "<tree>") -> "Tree":
        """The tree of a document written by :meth:`to_dict`, checked whole first.

        Raises
        ------
        ModelError
            If anything in ``d`` is malformed (the message names ``path`` and the field).
        """

        arrays = check_tree(d, At(path, "tree"))
        nodes = {k: arrays[k].astype(t) for k, t in NODE_ARRAYS.items()}
        return cls(feature_names=[f["name"] for f in d["features"]],
                   feature_kinds=[f["kind"] for f in d["features"]],
                   categories=[f["categories"] for f in d["features"]],
                   classes=list(d["classes"]), criterion=d["criterion"], target=d["target"],
                   cat_branch=arrays["cat_branch"].astype(np.int32), value=arrays["value"],
                   _depth=arrays["depth"], **nodes)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)


def plain_value(v):
    """JSON-able Python value of a class or category (numpy scalars become Python ones)."""
    return v.item() if isinstance(v, np.generic) else v
