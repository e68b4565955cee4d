"""Random forests grown together: one pass per level for the whole forest.

Every tree of the forest grows level by level, and one pass over the data builds the
AVC-groups of the frontier nodes of *all* trees at once, so a forest of 100 trees of depth
10 costs about the passes of one tree (one profiling pass, one per level, one more for the
out-of-bag score), not 100 times as many.

* **Bootstrap without samples.** Row ``r`` appears ``m`` times in tree ``t``'s bootstrap,
  ``m`` a Poisson draw from the hash of ``r``'s stable identity and the tree's seed
  (:mod:`rainforest.bootstrap`): the counting kernel recomputes it as the rows stream by, so
  every pass, batch size, backend and machine sees the same bootstrap and no sample is ever
  stored.  Counts are weighted by ``m``; a last channel counts the in-bag rows themselves,
  so ``min_samples_*`` and ``n_node_samples`` mean distinct rows, as in scikit-learn.
* **Forest-RI.** Each node searches ``max_features`` attributes drawn from its tree's seed and
  its node id, and only their AVC-sets are built.  **Forest-RC** (``combination="linear"``):
  each tree gets numeric features that are random linear combinations of ``n_combined``
  numeric attributes (coefficients uniform in [-1, 1]), binned from the profiling pass's
  sample and computed per batch; nodes draw their ``max_features`` candidates among them.
* **Shared passes.** A pass's jobs are (tree, node) pairs; their AVC-groups are packed into
  passes of at most half the memory budget (one pass per level while they fit).  The
  counting kernel gives each thread whole trees, so every count is summed in row order by one
  thread: the forest is the same for any ``n_jobs``, batch size or source.
* **RF-Hybrid, forest-wide.** When the encoded rows of the whole data fit a quarter of the
  budget (local sources), the first growth pass keeps them, once for all trees, and counts
  nothing; later levels cost no pass.  Trees then grow a chunk at a time
  (:mod:`rainforest.in_bag`): each tree's in-bag rows are copied once (multiplicities drawn
  from the hash) and kept grouped by node, so a level reads each node's own rows in sequence
  instead of routing every row from the root.  The chunk's copies fit the room the kept rows
  leave in the first half of the budget; without room for one tree, every level is counted
  over the kept rows from the roots.

The trees are the project's :class:`rainforest.tree.Tree`; the forest saves to the
versioned JSON (``"rainforest.forest"`` inside a ``"rainforest.model"`` file).
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from .bootstrap import multiplicity, node_features, poisson_thresholds, seed_keys, tree_seeds
from .criteria import CRITERIA, ENTROPY, GAIN_RATIO, impurity, search_node
from .dask_predict import lazy_on_dask
from .errors import BudgetError, DataError
from .base import Classifier
from .budget import parse_bytes
from .constraints import FOREST_PARAMS
from .grow import EPSILON, GrowParams, PassMeter, _Nodes, _pre_leaf, _split, branch_totals
from .in_bag import InBagCopies, count_spans, gather_in_bag, in_bag_fraction, partition_spans
from .inputs import feature_tables
from .model_file import params_from_json, register_reader, write_model
from .params import is_int
from .model_check import check_document
from .profile import quantile_edges
from .pruning import cost_complexity_prune
from .rowhash import M32, hash_row, row_hash
from .rows import encode_rows, slot_dtype, step, to_slots
from .schema import CATEGORICAL, NUMERIC, Attribute, Label, Schema
from .threads import numba_threads
from .tree import Tree
from .tree_setup import batch_size_for, class_weights, grow_params, profile_pass

FOREST_FORMAT = "rainforest.forest"
FOREST_VERSION = 1
_COMBO_SALT = 0x165667B1
ALGORITHMS = ("hybrid", "read")


# -- kernels -------------------------------------------------------------------------------------
ROW_BLOCK = 4096  # rows a thread routes together through one tree (independent steps overlap)
TREES_PER_THREAD = 2  # trees grown at once from copies of their in-bag rows, per Numba thread


@numba.njit(cache=True, parallel=True, nogil=True)
def count_forest(S, y, w, first_row, depth, trees, keys1, keys2, thresholds, roots, feature, first_child,
                 slot_branch, branch_offset, slot_cut, missing_branch, n_slots, job_of_node, attr_start, attrs,
                 slot_off, job_base, n_channels, counts):
    """Count a block of encoded rows into the AVC-groups of a pass's jobs, for every tree in ``trees``.

    Row ``i`` (identity ``first_row + i``) has multiplicity ``m`` in tree ``t`` (the Poisson draw
    of :mod:`rainforest.bootstrap`).  In-bag rows go down from the tree's root (``roots[t]``, in
    the forest's concatenated routing arrays) by ``depth`` routing steps (the pass's jobs are
    nodes of that depth; a row that meets a leaf first stays there), and when the node reached is
    a job ``j`` of the pass, ``m * w[i]`` is added to class ``y[i]``, and one to the row-count
    channel, at the slot of each of the job's attributes ``attrs[attr_start[j]:attr_start[j + 1]]``
    (its AVC-group starts at ``counts[job_base[j]]``, attribute ``q`` at slot ``slot_off[q]``).

    Each thread owns whole trees (a job belongs to one tree) and routes a block of rows one level
    at a time, so the independent steps of different rows overlap.  Every count is summed in row
    order by one thread: the result is the serial one, bit for bit.  ``w`` is empty for unit weights.
    """
    n_classes = n_channels - 1
    unit = w.shape[0] == 0
    n = S.shape[0]
    block = min(n, ROW_BLOCK)
    for ti in numba.prange(trees.shape[0]):
        t = trees[ti]
        s1 = keys1[t]
        s2 = keys2[t]
        h = np.empty(block, np.int64)
        rows = np.empty(block, np.int64)
        mult = np.empty(block, np.int64)
        node = np.empty(block, np.int64)
        for c0 in range(0, n, block):
            c1 = min(n, c0 + block)
            for i in range(c0, c1):
                h[i - c0] = hash_row(first_row + i, s1, s2)
            m_in = 0
            for r in range(c1 - c0):  # the in-bag rows, without a branch per row
                m = multiplicity(h[r], thresholds)
                rows[m_in] = c0 + r
                mult[m_in] = m
                m_in += m > 0
            node[:m_in] = roots[t]
            for _ in range(depth):
                for u in range(m_in):
                    k = node[u]
                    if first_child[k] >= 0:
                        node[u] = step(S, rows[u], k, feature, first_child, slot_branch, branch_offset, slot_cut,
                                       missing_branch, n_slots)
            for u in range(m_in):
                j = job_of_node[node[u]]
                if j < 0:
                    continue
                i = rows[u]
                c = y[i]
                wt = float(mult[u]) if unit else mult[u] * w[i]
                base = job_base[j]
                for q in range(attr_start[j], attr_start[j + 1]):
                    cell = base + (slot_off[q] + S[i, attrs[q]]) * n_channels
                    counts[cell + c] += wt
                    counts[cell + n_classes] += 1.0


@numba.njit(cache=True, parallel=True, nogil=True)
def search_jobs(counts, job_base, attr_start, offsets, kinds, n_channels, criterion, multiway, min_leaf, min_weight,
                max_exhaustive, branch_start, branches, attr, score, left_slot, right_slot, inf_thr, n_branches):
    """:func:`rainforest.criteria.search_node` for every job of a pass, in parallel (jobs are
    independent).  Job ``j``'s AVC-group is ``counts[job_base[j]:]`` over its own attributes, whose
    slot offsets are ``offsets[attr_start[j] + j : attr_start[j + 1] + j + 1]``; the last channel
    counts rows.  ``attr[j]`` is the winning attribute's position among the job's, or -1."""
    n_classes = n_channels - 1
    for j in numba.prange(job_base.shape[0]):
        lo = attr_start[j]
        hi = attr_start[j + 1]
        offs = offsets[lo + j:hi + j + 1]
        size = offs[hi - lo]
        block = counts[job_base[j]:job_base[j] + size * n_channels].reshape((size, n_channels))
        a, sc, ls, rs, inf, nb = search_node(block, offs, kinds[lo:hi], n_classes, True, criterion, multiway,
                                             min_leaf, min_weight[j], max_exhaustive,
                                             branches[branch_start[j]:branch_start[j + 1]], 0)
        attr[j] = a
        score[j] = sc
        left_slot[j] = ls
        right_slot[j] = rs
        inf_thr[j] = inf
        n_branches[j] = nb


@numba.njit(cache=True, parallel=True, nogil=True)
def split_children(counts, winner_base, winner_slots, branches, branch_start, n_branches, n_channels, parent_imp,
                   node_crit, child, child_imp, decrease, weight):
    """For every job with a split (``n_branches[j] > 0``): each branch's counts (``branch_totals`` of the
    winning attribute's AVC-set, at ``counts[winner_base[j]:]``), their impurities, the node's impurity
    decrease as :mod:`rainforest.grow` computes it (scikit-learn's ``impurity_improvement`` before
    its weight factor) and the node's weight."""
    n_classes = n_channels - 1
    for j in numba.prange(n_branches.shape[0]):
        nb = n_branches[j]
        if nb <= 0:
            decrease[j] = -np.inf
            weight[j] = 0.0
            continue
        m1 = winner_slots[j]
        block = counts[winner_base[j]:winner_base[j] + m1 * n_channels].reshape((m1, n_channels))
        totals = branch_totals(block, branches[branch_start[j]:branch_start[j] + m1], nb)
        wn = 0.0
        ws = np.empty(nb)
        for b in range(nb):
            child[j, b, :] = totals[b]
            wb = 0.0
            for c in range(n_classes):
                wb += totals[b, c]
            ws[b] = wb
            child_imp[j, b] = impurity(totals[b, :n_classes], wb, node_crit)
            wn += wb
        if nb == 2:  # scikit-learn's impurity_improvement, operation for operation
            dec = parent_imp[j] - (ws[1] / wn * child_imp[j, 1]) - (ws[0] / wn * child_imp[j, 0])
        else:
            dec = parent_imp[j]
            for b in range(nb):
                dec -= ws[b] / wn * child_imp[j, b]
        decrease[j] = dec
        weight[j] = wn


@numba.njit(cache=True, parallel=True, nogil=True)
def bootstrap_block(first_row, s1, s2, thresholds, out):
    """``out[i]``: the multiplicity of row ``first_row + i`` in the bootstrap keyed ``(s1, s2)``."""
    for i in numba.prange(out.shape[0]):
        out[i] = multiplicity(hash_row(first_row + i, s1, s2), thresholds)


# -- Forest-RC -----------------------------------------------------------------------------------
@dataclass
class Combinations:
    """Forest-RC's features: ``values[:, q] = sum_l coefficients[q, l] * X[:, features[q, l]]`` over
    raw numeric attribute values (missing if any term is missing), with bin edges ``cuts``."""

    features: np.ndarray  # (Q, L) base attribute indices
    coefficients: np.ndarray  # (Q, L)
    cuts: list = field(default_factory=list)  # per combination, its bin edges

    def values(self, X: np.ndarray) -> np.ndarray:
        """The combinations' values for the raw matrix ``X`` (one row per row), in a fixed order of operations."""
        out = X[:, self.features[:, 0]] * self.coefficients[:, 0]
        for j in range(1, self.features.shape[1]):
            out = out + X[:, self.features[:, j]] * self.coefficients[:, j]
        return out

    def attributes(self, names: list[str]) -> list[Attribute]:
        return [Attribute(combination_name(f, c, names), NUMERIC, exact=False, cuts=np.asarray(k, np.float64))
                for f, c, k in zip(self.features, self.coefficients, self.cuts)]

    def take(self, rows) -> "Combinations":
        return Combinations(self.features[rows], self.coefficients[rows], [self.cuts[r] for r in rows])


def combination_name(features, coefficients, names) -> str:
    return "(" + " ".join(f"{c:+.4g}*{names[f]}" for f, c in zip(features, coefficients)) + ")"


def draw_combinations(seed: int, numeric: np.ndarray, count: int, n_combined: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` combinations of ``n_combined`` distinct attributes of ``numeric`` with coefficients
    uniform in [-1, 1], drawn from the tree's seed with :func:`rainforest.rowhash.row_hash` (so the
    same on every machine)."""
    s = (int(seed) ^ _COMBO_SALT) & M32
    picks = node_features(s, np.arange(count), len(numeric), n_combined)
    u = row_hash(np.arange(count * n_combined, dtype=np.int64), (s + 1) & M32).astype(np.float64) / float(1 << 63)
    return numeric[picks], (2.0 * u - 1.0).reshape(count, n_combined)


# -- encoding ------------------------------------------------------------------------------------
@dataclass
class Columns:
    """The columns a forest's passes count: the schema's attributes, then Forest-RC's combinations."""

    schema: Schema
    combos: Combinations | None
    class_weight: np.ndarray | None
    weighted: bool

    def __post_init__(self):
        self.attributes = list(self.schema.attributes)
        if self.combos is not None:
            self.attributes += self.combos.attributes(self.schema.names)
            self.combo_schema = Schema(self.combos.attributes(self.schema.names))
        self.n_slots = np.array([a.n_slots for a in self.attributes], np.int64)
        self.kinds = np.array([a.kind for a in self.attributes], np.int8)
        self.dtype = slot_dtype(Schema(self.attributes))

    @property
    def width(self) -> int:
        return len(self.attributes)

    def encode(self, batch: pa.RecordBatch) -> tuple:
        """The slots (rows x columns, column-major), class codes and weights (empty if all one) of a batch."""
        rows = encode_rows(self.schema, batch, self.class_weight, self.weighted)
        if self.combos is None:
            return rows.S, rows.y, rows.w
        V = self.combos.values(self.schema.encode(batch))
        S = np.empty((len(rows.y), self.width), self.dtype, order="F")
        p = len(self.schema.attributes)
        S[:, :p] = rows.S
        SC = np.empty(V.shape, self.dtype, order="F")
        cs = self.combo_schema
        to_slots(np.asfortranarray(V), cs.kinds, self.n_slots[p:], *cs.slot_tables(), SC)
        S[:, p:] = SC
        return S, rows.y, rows.w

    def row_bytes(self) -> int:
        """Bytes of one row kept in memory (slots, class code, weight)."""
        return self.width * self.dtype.itemsize + 4 + (8 if self.weighted else 0)


class KeptRows:
    """Every row of the data, encoded, kept once for all trees (the forest's RF-Hybrid); filled in
    row order into arrays sized from the profile's row count."""

    def __init__(self, n: int, columns: Columns):
        self.S = np.empty((n, columns.width), columns.dtype, order="F")
        self.y = np.empty(n, np.int32)
        self.w = np.empty(n if columns.weighted else 0)
        self.size = 0

    def add(self, S, y, w, first_row: int) -> None:
        n = len(y)
        if first_row != self.size or self.size + n > len(self.y):  # the profile counted every row
            raise RuntimeError("rows kept out of order or beyond the profile's count")
        self.S[self.size:self.size + n] = S
        self.y[self.size:self.size + n] = y
        if len(w):
            self.w[self.size:self.size + n] = w
        self.size += n

    @property
    def complete(self) -> bool:
        return self.size == len(self.y)


# -- passes --------------------------------------------------------------------------------------
@dataclass
class ForestCounts:
    """What a growth pass returns: the AVC-groups of its jobs, one flat array."""

    counts: np.ndarray


@dataclass
class ForestPass:
    """A :class:`rainforest.storage.PassTask` counting the AVC-groups of the jobs (tree, node) of one pass.

    ``routing`` holds the forest's concatenated :func:`rainforest.rows.step` arrays; ``depth`` is the
    level of the pass's jobs."""

    columns: Columns
    depth: int
    trees: np.ndarray
    keys1: np.ndarray
    keys2: np.ndarray
    thresholds: np.ndarray
    roots: np.ndarray
    routing: tuple
    job_of_node: np.ndarray
    attr_start: np.ndarray
    attrs: np.ndarray
    slot_off: np.ndarray
    job_base: np.ndarray
    n_channels: int
    size: int

    def new_state(self) -> ForestCounts:
        return ForestCounts(np.zeros(self.size))

    def update(self, state: ForestCounts, batch: pa.RecordBatch, first_row: int) -> ForestCounts:
        return self.count(state, *self.columns.encode(batch), first_row)

    def count(self, state: ForestCounts, S, y, w, first_row: int) -> ForestCounts:
        count_forest(S, y, w, np.int64(first_row), self.depth, self.trees, self.keys1, self.keys2, self.thresholds,
                     self.roots, *self.routing, self.job_of_node, self.attr_start, self.attrs, self.slot_off,
                     self.job_base, self.n_channels, state.counts)
        return state

    def merge(self, a: ForestCounts, b: ForestCounts) -> ForestCounts:
        a.counts += b.counts
        return a


@dataclass
class KeepPass:
    """A :class:`rainforest.storage.PassTask` that keeps every encoded row (the forest's RF-Hybrid) and counts
    nothing: the trees then grow from memory (:mod:`rainforest.in_bag`)."""

    columns: Columns
    kept: KeptRows

    def new_state(self) -> int:
        return 0

    def update(self, state: int, batch: pa.RecordBatch, first_row: int) -> int:
        S, y, w = self.columns.encode(batch)
        self.kept.add(S, y, w, first_row)
        return state + len(y)

    def merge(self, a: int, b: int) -> int:
        return a + b


@dataclass
class OobPass:
    """A :class:`rainforest.storage.PassTask` summing, for every row, the class distributions of the leaves it
    reaches in the trees whose bootstrap left it out (multiplicity 0), in tree order; the state is
    the list of ``(first_row, votes, n_trees, labels)`` blocks."""

    forest: object  # a fitted RandomForestClassifier (its trees, their seeds and combinations)
    label: Label

    def new_state(self) -> list:
        return []

    def update(self, state: list, batch: pa.RecordBatch, first_row: int) -> list:
        f = self.forest
        X = np.ascontiguousarray(f._encoder().encode(batch))
        y = self.label.codes(batch.column(self.label.name))
        n = len(y)
        votes = np.zeros((n, len(f.classes_)))
        n_oob = np.zeros(n, np.int64)
        m = np.empty(n, np.uint8)
        thresholds = f._thresholds()
        for t, tree in enumerate(f.estimators_):
            s1, s2 = seed_keys(int(f.tree_seeds_[t]))
            bootstrap_block(np.int64(first_row), s1, s2, thresholds, m)
            out = np.flatnonzero(m == 0)
            if len(out):
                leaves = tree.apply(f._tree_input(t, X[out]))
                votes[out] += f._leaf_proba(t)[leaves]
                n_oob[out] += 1
        state.append((first_row, votes, n_oob, y))
        return state

    def merge(self, a: list, b: list) -> list:
        return a + b


# -- growth --------------------------------------------------------------------------------------
@dataclass
class ForestStats:
    passes_per_level: list = field(default_factory=list)  # passes over the data per level
    jobs_per_level: list = field(default_factory=list)  # (tree, node) AVC-groups counted per level
    kept_rows: int = 0  # rows kept in memory (RF-Hybrid), 0 if none
    trees_grown_together: int = 0  # RF-Hybrid: trees grown at once from copies of their in-bag rows; 0: none
    peak_avc_bytes: int = 0  # the largest AVC-groups of one pass

    @property
    def n_passes(self) -> int:
        return sum(self.passes_per_level)


@dataclass
class ForestSpec:
    """What makes the trees differ: their seeds, the bootstrap, the attributes each node draws."""

    seeds: np.ndarray  # one 32-bit seed per tree
    rate: float | None  # the Poisson rate of the bootstrap; None: no bootstrap
    max_features: int  # attributes (candidates) each node searches
    candidates: list  # per tree, the column indices its nodes draw from


def _routing(trees: list[_Nodes], n_slots: np.ndarray) -> tuple[tuple, np.ndarray]:
    """The forest's :func:`rainforest.rows.step` arrays (every tree's, concatenated, child and table
    indices shifted) and each tree's first node in them."""
    parts = [t.slot_routing(n_slots)[:6] for t in trees]
    base = np.zeros(len(trees) + 1, np.int64)
    base[1:] = np.cumsum([len(p[0]) for p in parts])
    table_base = np.concatenate([[0], np.cumsum([len(p[2]) for p in parts])]).astype(np.int64)
    feature = np.concatenate([p[0] for p in parts]).astype(np.int32)
    first_child = np.concatenate([np.where(p[1] >= 0, p[1] + base[t], -1)
                                  for t, p in enumerate(parts)]).astype(np.int32)
    slot_branch = np.concatenate([p[2] for p in parts]).astype(np.int32)
    branch_offset = np.concatenate([np.where(p[3] >= 0, p[3] + table_base[t], -1)
                                    for t, p in enumerate(parts)]).astype(np.int32)
    slot_cut = np.concatenate([p[4] for p in parts]).astype(np.int64)
    missing_branch = np.concatenate([p[5] for p in parts]).astype(np.int32)
    return (feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots), base


@dataclass
class _Jobs:
    """The jobs (tree, node) of one pass and their AVC layout."""

    tree: np.ndarray
    node: np.ndarray
    attr_start: np.ndarray
    attrs: np.ndarray
    slot_off: np.ndarray
    offsets: np.ndarray  # per job: its attributes' slot offsets and its total (for search_jobs)
    job_slots: np.ndarray
    job_base: np.ndarray
    branch_start: np.ndarray
    size: int

    @property
    def job_of_attr(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.tree)), np.diff(self.attr_start))

    @classmethod
    def layout(cls, tree, node, cols: list, n_slots: np.ndarray, n_channels: int) -> "_Jobs":
        n_jobs = len(tree)
        lens = np.array([len(c) for c in cols], np.int64)
        attr_start = np.zeros(n_jobs + 1, np.int64)
        attr_start[1:] = np.cumsum(lens)
        attrs = np.concatenate(cols).astype(np.int64)
        sizes = n_slots[attrs] + 1
        job_of_attr = np.repeat(np.arange(n_jobs), lens)
        excl = np.cumsum(sizes) - sizes
        slot_off = excl - excl[attr_start[:-1]][job_of_attr]
        job_slots = np.add.reduceat(sizes, attr_start[:-1])
        offsets = np.empty(len(attrs) + n_jobs, np.int64)
        offsets[np.arange(len(attrs)) + job_of_attr] = slot_off
        offsets[attr_start[1:] + np.arange(n_jobs)] = job_slots
        job_base = np.zeros(n_jobs, np.int64)
        job_base[1:] = np.cumsum(job_slots * n_channels)[:-1]
        widest = np.maximum.reduceat(sizes, attr_start[:-1])
        branch_start = np.zeros(n_jobs + 1, np.int64)
        branch_start[1:] = np.cumsum(widest)
        return cls(np.asarray(tree, np.int64), np.asarray(node, np.int64), attr_start, attrs, slot_off, offsets,
                   job_slots, job_base, branch_start, int((job_slots * n_channels).sum()))


class _Grower:
    """Grows the trees of a :class:`ForestSpec` together, level by level."""

    def __init__(self, source, columns: Columns, spec: ForestSpec, params: GrowParams, budget: int, batch_size: int,
                 verbose: int, n_rows: int, data_columns: list):
        self.source, self.columns, self.spec, self.params = source, columns, spec, params
        self.budget, self.batch_size, self.verbose, self.n_rows = budget, batch_size, verbose, n_rows
        self.data_columns = data_columns
        self.n_classes = len(columns.schema.label.classes)
        self.n_channels = self.n_classes + 1  # the last channel counts in-bag rows
        self.crit = CRITERIA[params.criterion]
        self.node_crit = ENTROPY if self.crit == GAIN_RATIO else self.crit
        self.max_depth = np.inf if params.max_depth is None else params.max_depth
        n_trees = len(spec.seeds)
        keys = [seed_keys(int(s)) for s in spec.seeds]
        self.keys1 = np.array([k[0] for k in keys], np.int64)
        self.keys2 = np.array([k[1] for k in keys], np.int64)
        self.feature_seeds = [int(s) for s in spec.seeds]
        self.thresholds = poisson_thresholds(spec.rate) if spec.rate is not None else np.empty(0, np.int64)
        self.trees = [_Nodes() for _ in range(n_trees)]
        for nodes in self.trees:
            nodes.add_leaf(np.zeros(self.n_classes), 0, 0.0, 0)
        self.total_weight = np.zeros(n_trees)
        self.min_weight_leaf = np.zeros(n_trees)
        self.stats = ForestStats()
        local = not getattr(source, "distributed", False)
        room = budget // 4
        self.keep = (params.hybrid and local and n_rows > 0 and n_rows * columns.row_bytes() <= room)
        self.kept: KeptRows | None = None

    # -- the level loop ------------------------------------------------------------------
    def grow(self) -> list[_Nodes]:
        frontier = np.zeros((len(self.trees), 2), np.int64)  # (tree, node) of every node to split
        frontier[:, 0] = np.arange(len(self.trees))
        if self.keep:
            self._keep_rows()
        together, scratch_rows = self._trees_in_memory() if self.kept is not None else (0, 0)
        if together > 0:
            self._finish_in_memory(frontier, together, scratch_rows)
        else:
            level = 0
            while len(frontier):
                frontier = self._level(frontier, level, _PassCounter(self))
                level += 1
        if self.kept is not None:
            self.stats.kept_rows = self.kept.size
            self.kept = None
        return self.trees

    def _plan(self, frontier: np.ndarray) -> tuple[np.ndarray, list]:
        """The frontier's attributes (one row per job) and its packs: consecutive jobs whose
        AVC-groups fit half the budget together."""
        avc_budget = self.budget // 2
        cols = self._draw(frontier)
        sizes = self.columns.n_slots[cols] + 1
        job_bytes = sizes.sum(axis=1) * self.n_channels * 8 + sizes.max(axis=1) * 8  # + the search's scratch
        if job_bytes.max() > avc_budget:
            raise BudgetError(
                f"memory budget too small: one node's AVC-group over {cols.shape[1]} attributes needs "
                f"{int(job_bytes.max()):,} bytes and the AVC half of the budget is {avc_budget:,}; raise "
                f"memory_budget or lower max_bins")
        return cols, list(_pack(job_bytes, avc_budget))

    def _layout(self, frontier: np.ndarray, cols: np.ndarray) -> _Jobs:
        jobs = _Jobs.layout(frontier[:, 0], frontier[:, 1], cols, self.columns.n_slots, self.n_channels)
        self.stats.peak_avc_bytes = max(self.stats.peak_avc_bytes, jobs.size * 8)
        return jobs

    def _level(self, frontier: np.ndarray, level: int, counter) -> np.ndarray:
        """Count, search and split the frontier's jobs, a pack at a time (``counter``: passes over the
        data, or a chunk's groups of rows in memory); returns the next level's frontier (tree order,
        then node order)."""
        cols, packs = self._plan(frontier)
        next_frontier: list = []
        passes = 0
        for lo, hi in packs:
            jobs = self._layout(frontier[lo:hi], cols[lo:hi])
            counts, from_data = counter.count(jobs, level)
            passes += from_data
            grown = self._split_jobs(jobs, counts, next_frontier)
            del counts
            counter.split(jobs, grown)
        self._note(level, passes, len(frontier))
        return np.array(next_frontier, np.int64).reshape(-1, 2)

    def _note(self, level: int, passes: int, jobs: int) -> None:
        while len(self.stats.passes_per_level) <= level:  # chunks of trees grown in memory share levels
            self.stats.passes_per_level.append(0)
            self.stats.jobs_per_level.append(0)
        self.stats.passes_per_level[level] += passes
        self.stats.jobs_per_level[level] += jobs

    def _keep_rows(self) -> None:
        """RF-Hybrid: the first growth pass keeps every encoded row and counts nothing (it is the
        first level's pass); if the source did not fold every row in order, the level-by-level
        passes follow."""
        kept = KeptRows(self.n_rows, self.columns)
        meter = PassMeter(f"level 0, pass {self.source.n_passes + 1} over the data, keeping the rows in memory",
                          self.verbose, self.n_rows)
        self.source.run_pass(KeepPass(self.columns, kept), self.data_columns, self.batch_size, meter)
        meter.done()
        self._note(0, 1, 0)
        self.kept = kept if kept.complete else None

    def _trees_in_memory(self) -> tuple[int, int]:
        """How many trees grow at once from copies of their in-bag rows, and the rows of the
        partition's scratch (:class:`rainforest.in_bag.InBagCopies`; a multiple of a tree's).

        Two trees per Numba thread (every thread busy at the deep levels, where each thread takes
        whole groups; more would only make the copies and a level's AVC-groups larger, and fresh
        large arrays cost a page fault per page), fewer where their copies and the partition's
        scratch for one tree's rows (:meth:`rainforest.in_bag.InBagCopies.scratch_bytes`) do not
        fit the room the kept rows leave in the first half of the budget (the second is the
        AVC-groups').  What room is left widens the scratch up to the chunk's rows, so a level's
        groups move in fewer, better balanced calls.  0 trees: not even one, and the kept rows
        are counted from the roots at every level."""
        kept = self.kept
        threads = numba.get_num_threads()
        record = InBagCopies.record_bytes(kept.S.shape[1], kept.S.dtype, self.n_classes, len(kept.w) > 0)
        expected = kept.size * in_bag_fraction(self.spec.rate)
        in_bag = math.ceil(expected + 4 * math.sqrt(expected)) + 1  # 4 standard deviations' slack at least
        per_tree = in_bag * record
        room = self.budget // 2 - (kept.S.nbytes + kept.y.nbytes + kept.w.nbytes)
        trees = int(max(0, min(TREES_PER_THREAD * threads,
                               (room - InBagCopies.scratch_bytes(in_bag, record, threads)) // per_tree)))
        scratch_trees = 1
        while (scratch_trees < trees and InBagCopies.scratch_bytes((scratch_trees + 1) * in_bag, record, threads)
               <= room - trees * per_tree):
            scratch_trees += 1
        return trees, scratch_trees * in_bag

    def _finish_in_memory(self, roots: np.ndarray, together: int, scratch_rows: int) -> None:
        """Grow the trees from the kept rows, ``together`` trees at a time (:meth:`_trees_in_memory`),
        each tree's in-bag rows copied once and grouped by node (:mod:`rainforest.in_bag`): no pass,
        and no row routed from the root again.  One buffer of copies serves every chunk."""
        kept = self.kept
        size = min(len(roots), together)
        meter = PassMeter(f"rows kept in memory, {len(roots)} tree(s) grown {size} at a time, each over its rows",
                          self.verbose, kept.size * len(roots))
        copies = InBagCopies.allocate(size, kept.size, scratch_rows, kept.S.shape[1], kept.S.dtype, self.n_classes,
                                      len(kept.w) > 0)
        for c0 in range(0, len(roots), size):
            self._grow_chunk(roots[c0:c0 + size], copies)
            meter(kept.size * len(roots[c0:c0 + size]))
        meter.done()
        self.stats.trees_grown_together = size

    def _grow_chunk(self, frontier: np.ndarray, copies: InBagCopies) -> None:
        """Grow the trees of ``frontier`` (their roots) to the end from copies of their in-bag rows
        (in ``copies``, reused from chunk to chunk)."""
        groups = _InBagGroups(self, frontier[:, 0], copies)
        level = 0
        while len(frontier):
            frontier = self._level(frontier, level, groups)
            level += 1

    def _draw(self, frontier: np.ndarray) -> np.ndarray:
        """Each job's attributes (Forest-RI), one row per job: drawn from its tree's seed and its node id."""
        k = self.spec.max_features
        out = np.empty((len(frontier), k), np.int64)
        trees, first = np.unique(frontier[:, 0], return_index=True)  # the frontier is sorted by tree
        for t, lo, hi in zip(trees, first, np.append(first[1:], len(frontier))):
            cand = self.spec.candidates[t]
            out[lo:hi] = cand[node_features(self.feature_seeds[t], frontier[lo:hi, 1], len(cand), k)]
        return out

    def _count(self, jobs: _Jobs, routing: tuple, base: np.ndarray, level: int) -> tuple[np.ndarray, bool]:
        job_of_node = np.full(int(base[-1]), -1, np.int32)
        job_of_node[base[jobs.tree] + jobs.node] = np.arange(len(jobs.tree), dtype=np.int32)
        task = ForestPass(self.columns, level, np.unique(jobs.tree), self.keys1, self.keys2, self.thresholds,
                          base[:-1].copy(), routing, job_of_node, jobs.attr_start, jobs.attrs, jobs.slot_off,
                          jobs.job_base, self.n_channels, jobs.size)
        label = f"{len(jobs.tree):,} node(s) of {len(task.trees)} tree(s)"
        if self.kept is not None:
            meter = PassMeter(f"level {level}, rows kept in memory, {label}", self.verbose, self.kept.size)
            state = task.count(task.new_state(), self.kept.S, self.kept.y, self.kept.w, 0)
            meter(self.kept.size)
            meter.done()
            return state.counts, False
        meter = PassMeter(f"level {level}, pass {self.source.n_passes + 1} over the data, {label}", self.verbose,
                          self.n_rows)
        state = self.source.run_pass(task, self.data_columns, self.batch_size, meter)
        meter.done()
        return state.counts, True

    # -- splits ------------------------------------------------------------------------------
    def _split_jobs(self, jobs: _Jobs, counts: np.ndarray, next_frontier: list) -> list:
        """Search every job's split, then split the nodes whose split is worth it (scikit-learn's rules, as
        :mod:`rainforest.grow`), appending their children that go on growing to ``next_frontier``.
        Returns ``(job, branches, the branches that go on growing)`` of the split jobs with such a child."""
        nc, ch = self.n_classes, self.n_channels
        p = self.params
        n_jobs = len(jobs.tree)
        skip = np.zeros(n_jobs, bool)
        for j in np.flatnonzero(jobs.node == 0):  # roots: their class totals, from their first attribute's slots
            t = int(jobs.tree[j])
            size = int(self.columns.n_slots[jobs.attrs[jobs.attr_start[j]]]) + 1
            totals = counts[jobs.job_base[j]:jobs.job_base[j] + size * ch].reshape(size, ch).sum(axis=0)
            nodes = self.trees[t]
            w = totals[:nc].sum()
            nodes.value[0] = totals[:nc]
            nodes.n_node_samples[0] = int(round(totals[nc]))
            nodes.impurity[0] = impurity(totals[:nc], w, self.node_crit)
            self.total_weight[t] = w
            self.min_weight_leaf[t] = p.min_weight_fraction_leaf * w
            skip[j] = _pre_leaf(nodes, 0, p, self.max_depth, self.min_weight_leaf[t])
        attr = np.empty(n_jobs, np.int64)
        score = np.empty(n_jobs)
        left_slot = np.empty(n_jobs, np.int64)
        right_slot = np.empty(n_jobs, np.int64)
        inf_thr = np.empty(n_jobs, np.bool_)
        n_branches = np.empty(n_jobs, np.int64)
        branches = np.empty(int(jobs.branch_start[-1]), np.int32)
        search_jobs(counts, jobs.job_base, jobs.attr_start, jobs.offsets, self.columns.kinds[jobs.attrs], ch,
                    self.crit, p.multiway, float(p.min_samples_leaf), self.min_weight_leaf[jobs.tree],
                    p.max_exhaustive, jobs.branch_start, branches, attr, score, left_slot, right_slot, inf_thr,
                    n_branches)
        n_branches[skip | (attr < 0)] = 0
        q = jobs.attr_start[:-1] + np.maximum(attr, 0)
        col = jobs.attrs[q]
        parent_imp = np.array([self.trees[t].impurity[n] for t, n in zip(jobs.tree, jobs.node)])
        widest = int(n_branches.max()) if n_jobs else 0
        child = np.zeros((n_jobs, max(widest, 1), ch))
        child_imp = np.zeros((n_jobs, max(widest, 1)))
        decrease = np.empty(n_jobs)
        weight = np.empty(n_jobs)
        split_children(counts, jobs.job_base + jobs.slot_off[q] * ch, self.columns.n_slots[col] + 1, branches,
                       jobs.branch_start, n_branches, ch, parent_imp, self.node_crit, child, child_imp, decrease,
                       weight)
        with np.errstate(invalid="ignore", divide="ignore"):
            improvement = weight / self.total_weight[jobs.tree] * decrease
        chosen = np.flatnonzero((n_branches > 0) & (improvement + EPSILON >= p.min_impurity_decrease))
        # children that are leaves at once: scikit-learn's rules before a search (grow._pre_leaf), for all at once
        child_n = np.rint(child[:, :, nc]).astype(np.int64)
        child_w = child[:, :, :nc].sum(axis=2)
        depth = np.array([self.trees[t].depth[n] for t, n in zip(jobs.tree, jobs.node)]) + 1
        leafy = ((depth[:, None] >= self.max_depth) | (child_n < p.min_samples_split)
                 | (child_n < 2 * p.min_samples_leaf) | (child_w < 2 * self.min_weight_leaf[jobs.tree][:, None])
                 | (child_imp <= EPSILON))
        majority = np.argmax(child[:, :, nc], axis=1)  # the branch with most rows (unused branches hold none)
        grown = []
        # plain lists: the loop below runs once per split node, numpy scalars would dominate it
        tree_l, node_l, col_l, nb_l = jobs.tree.tolist(), jobs.node.tolist(), col.tolist(), n_branches.tolist()
        left_l, right_l, inf_l = left_slot.tolist(), right_slot.tolist(), inf_thr.tolist()
        child_n_l, child_imp_l, leafy_l = child_n.tolist(), child_imp.tolist(), leafy.tolist()
        depth_l, majority_l, start_l = depth.tolist(), majority.tolist(), jobs.branch_start.tolist()
        values = child[:, :, :nc]
        for j in chosen.tolist():
            t, node, c, nb = tree_l[j], node_l[j], col_l[j], nb_l[j]
            nodes = self.trees[t]
            m1 = int(self.columns.n_slots[c]) + 1
            br = branches[start_l[j]:start_l[j] + m1]
            _split(nodes, node, self.columns.attributes[c], c, br, nb, left_l[j], right_l[j], inf_l[j], majority_l[j])
            first = len(nodes.feature)
            nodes.first_child[node] = first
            going_on = []
            for b in range(nb):
                nodes.add_leaf(values[j, b].copy(), child_n_l[j][b], child_imp_l[j][b], depth_l[j])
                if not leafy_l[j][b]:
                    next_frontier.append((t, first + b))
                    going_on.append(b)
            if going_on:
                grown.append((j, nb, going_on))
        return grown


class _PassCounter:
    """Counts a level's jobs in passes over the data (or over every kept row, from the roots)."""

    def __init__(self, grower: _Grower):
        self.grower = grower
        self.routing, self.base = _routing(grower.trees, grower.columns.n_slots)

    def count(self, jobs: _Jobs, level: int) -> tuple[np.ndarray, bool]:
        return self.grower._count(jobs, self.routing, self.base, level)

    def split(self, jobs: _Jobs, grown: list) -> None:
        pass  # the next level's pass routes the rows again


class _InBagGroups:
    """A chunk of trees' copies of their in-bag rows, grouped by node (:mod:`rainforest.in_bag`):
    counts jobs from them, and moves split jobs' rows into their children's groups."""

    def __init__(self, grower: _Grower, chunk: np.ndarray, copies: InBagCopies):
        self.grower = grower
        self.chunk = chunk
        self.local = np.full(len(grower.trees), -1, np.int64)  # tree -> its place in the copies
        self.local[chunk] = np.arange(len(chunk))
        kept = grower.kept
        self.copies = copies
        n_in_bag = np.zeros(len(chunk), np.int64)
        gather_in_bag(kept.S, kept.y, kept.w, grower.keys1[chunk], grower.keys2[chunk], grower.thresholds,
                      self.copies.items, self.copies.weights, n_in_bag, self.copies.task_rows)
        self.span = {(int(t), 0): (0, int(n)) for t, n in zip(chunk, n_in_bag)}  # the roots' groups

    def _spans(self, jobs: _Jobs) -> None:
        """Take the jobs' groups (their first and past-the-last rows) for this level."""
        lo_hi = np.array([self.span.pop((int(t), int(k))) for t, k in zip(jobs.tree, jobs.node)], np.int64)
        self.starts, self.ends = lo_hi[:, 0].copy(), lo_hi[:, 1].copy()

    def count(self, jobs: _Jobs, level: int) -> tuple[np.ndarray, bool]:
        """The AVC-groups of ``jobs`` from their groups of rows (no pass)."""
        self._spans(jobs)
        counts = np.zeros(jobs.size)
        c = self.copies
        count_spans(c.items, c.weights, c.width, not c.weighted, self.local[jobs.tree], self.starts, self.ends,
                    jobs.job_of_attr, jobs.attrs, jobs.slot_off, jobs.job_base, self.grower.n_channels, counts)
        return counts, False

    def split(self, jobs: _Jobs, grown: list) -> None:
        """Move the rows of the split jobs ``grown`` (as :meth:`_Grower._split_jobs` returns them) into
        their children's groups; rows of children that are leaves are dropped."""
        if not grown:
            return
        g = self.grower
        routing, base = _routing([g.trees[t] for t in self.chunk], g.columns.n_slots)
        j = np.array([x[0] for x in grown], np.int64)
        nb = np.array([x[1] for x in grown], np.int64)
        going_on = np.zeros((len(j), int(nb.max())), np.bool_)
        for r, (_, _, branches) in enumerate(grown):
            going_on[r, branches] = True
        tree = self.local[jobs.tree[j]]
        node = base[tree] + jobs.node[j]
        starts, ends = self.starts[j], self.ends[j]
        child_start = np.empty((len(j), int(nb.max()) + 1), np.int64)
        c = self.copies
        for lo, hi in _pack(ends - starts, c.scratch_rows):  # groups moved together within the scratch
            partition_spans(c.words, c.items, tree[lo:hi], node[lo:hi], nb[lo:hi], starts[lo:hi], ends[lo:hi],
                            *routing, going_on[lo:hi], c.moved, c.branch, child_start[lo:hi], c.task_rows,
                            numba.get_num_threads())
        for r, (x, _, branches) in enumerate(grown):
            t = int(jobs.tree[x])
            first = g.trees[t].first_child[int(jobs.node[x])]
            for b in branches:
                self.span[(t, first + b)] = (int(child_start[r, b]), int(child_start[r, b + 1]))


def _pack(job_bytes: np.ndarray, cap: int):
    """Consecutive ranges of jobs whose AVC-groups together fit ``cap`` bytes."""
    lo, used = 0, 0
    for j, b in enumerate(job_bytes):
        if j > lo and used + b > cap:
            yield lo, j
            lo, used = j, 0
        used += int(b)
    if lo < len(job_bytes):
        yield lo, len(job_bytes)


# -- the estimator -------------------------------------------------------------------------------
@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class RandomForestClassifier(Classifier):
    """A random forest whose trees grow together: one pass over the data per level for all of them.

    Parameters
    ----------
    n_estimators : int, default=100
        Number of trees.
    criterion : {"gini", "entropy", "gain_ratio"}, default="gini"
        Split quality, as :class:`DecisionTreeClassifier`'s.
    max_depth : int or None, default=None
        Maximum depth of each tree; ``None`` grows until leaves are pure or the other rules stop them.
    min_samples_split, min_samples_leaf, min_weight_fraction_leaf, min_impurity_decrease
        scikit-learn's stopping rules, per tree; sample counts are distinct in-bag rows.
    max_features : {"sqrt", "log2"}, int, float or None, default="sqrt"
        Attributes each node searches, drawn at random per node (Forest-RI): ``"sqrt"`` and
        ``"log2"`` of the number of candidates, an integer, a fraction of them, or ``None`` (all).
    bootstrap : bool, default=True
        Each tree sees a Poisson bootstrap of the rows (see Notes); ``False``: every row once.
    oob_score : bool, default=False
        Compute ``oob_score_`` and ``oob_decision_function_`` in one extra pass after growth.
    max_samples : int, float or None, default=None
        With ``bootstrap``: the expected bootstrap size, as a row count or a fraction of the
        rows (the Poisson rate); ``None`` is the number of rows.
    class_weight : dict, "balanced" or None, default=None
        Class weights, multiplied into every row's weight.
    ccp_alpha : float, default=0.0
        Each grown tree is pruned by minimal cost-complexity pruning with this parameter (on its
        bootstrap-weighted counts, as scikit-learn's forests); ``0.0`` does not prune.
    combination : {None, "linear"}, default=None
        ``"linear"`` is Forest-RC: each tree's candidates are ``n_combinations`` random linear
        combinations of ``n_combined`` numeric attributes (coefficients uniform in [-1, 1]),
        plus the categorical attributes. Needs binned mode.
    n_combined : int, default=2
        Attributes per linear combination (the textbook's ``L``).
    n_combinations : int or None, default=None
        Linear combinations per tree; ``None``: as many as there are numeric attributes.
    categorical_split, max_bins, categorical_features, memory_budget, batch_size, sample_size
        As :class:`DecisionTreeClassifier`'s. Half of ``memory_budget`` holds the AVC-groups
        of one pass; a level whose AVC-groups over all trees exceed it takes several passes.
    algorithm : {"hybrid", "read"}, default="hybrid"
        ``"hybrid"``: when the encoded rows of the whole data fit a quarter of ``memory_budget``
        (and the source is local), the first growth pass keeps them in memory, once for all
        trees, and later levels cost no pass. ``"read"``: every level is read from the source.
        Both grow the identical forest.
    n_jobs : int or None, default=-1
        Numba threads (trees are counted in parallel); the forest does not depend on it.
    random_state : int or None, default=0
        Seed of the trees' seeds (and of the profiling sample). rainforest is deterministic by
        default, as every learner; ``None`` draws a seed (kept as ``seed_``).
    warm_start : bool, default=False
        A later ``fit`` with more ``n_estimators`` grows only the new trees.
    verbose : int, default=0
        Print one line per pass when positive.

    Attributes
    ----------
    estimators_ : list of Tree
        The trees, in the project's flat format.
    tree_seeds_ : ndarray
        Each tree's 32-bit seed (bootstrap and attribute draws).
    seed_ : int
        The forest's seed (``random_state``, or the one drawn).
    classes_, n_classes_, n_features_in_, feature_names_in_
        As scikit-learn's.
    oob_score_ : float
        Accuracy of the out-of-bag predictions (``oob_score=True``).
    oob_decision_function_ : ndarray of shape (n_rows, n_classes)
        Average class distribution over the trees that did not draw each row.
    feature_importances_ : ndarray
        Mean over the trees of their normalized impurity decreases.
    n_passes_ : int
        Passes over the data made by the last ``fit`` (profiling and out-of-bag passes included).
    n_passes_per_level_ : list of int
        Growth passes over the data per level.
    grow_stats_ : ForestStats
        Jobs per level, rows kept in memory (``kept_rows``), trees grown at once from copies of
        their in-bag rows (``trees_grown_together``, 0 if none), the largest AVC-groups of one pass.

    Notes
    -----
    The bootstrap is never materialized: tree ``t`` counts row ``r`` with multiplicity
    ``Poisson(rate)`` drawn by inverse CDF from ``row_hash(r, seed_t) / 2**63``, where ``r`` is
    the row's stable identity (the global row index of every source: the sorted file order and
    row order of Parquet, the row index in memory, the partition order on Dask, the scan
    order of a SQL source). So the forest is the same for any source, batch size or ``n_jobs``.
    """

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 min_weight_fraction_leaf=0.0, max_features="sqrt", min_impurity_decrease=0.0, bootstrap=True,
                 oob_score=False, max_samples=None, class_weight=None, ccp_alpha=0.0, combination=None, n_combined=2,
                 n_combinations=None, categorical_split="binary", max_bins=255, categorical_features="auto",
                 memory_budget="1GB", algorithm="hybrid", batch_size=None, sample_size=200_000, n_jobs=-1,
                 random_state=0, warm_start=False, verbose=0):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.max_samples = max_samples
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.combination = combination
        self.n_combined = n_combined
        self.n_combinations = n_combinations
        self.categorical_split = categorical_split
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.memory_budget = memory_budget
        self.algorithm = algorithm
        self.batch_size = batch_size
        self.sample_size = sample_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    # -- parameters ----------------------------------------------------------------------------
    _parameter_constraints = FOREST_PARAMS
    _fitted_attribute = "estimators_"

    def _check_combined_params(self) -> None:
        """The rules that tie parameters together (each one alone is checked by its constraint)."""
        if self.oob_score and not self.bootstrap:
            raise ValueError("oob_score=True needs bootstrap=True: without a bootstrap no row is out of bag")
        if self.max_samples is not None and not self.bootstrap:
            raise ValueError("max_samples needs bootstrap=True")
        if self.combination == "linear" and self.max_bins is None:
            raise ValueError("combination='linear' needs binned mode: set max_bins (the combinations are binned "
                             "from the profiling sample)")

    def _resolve_max_features(self, n: int) -> int:
        mf = self.max_features
        if mf is None:
            return n
        if mf == "sqrt":
            return max(1, int(math.sqrt(n)))
        if mf == "log2":
            return max(1, int(math.log2(n)))
        if is_int(mf):
            return min(int(mf), n)
        return max(1, int(mf * n))

    def _rate(self, n_rows: int) -> float | None:
        if not self.bootstrap:
            return None
        ms = self.max_samples
        if ms is None:
            return 1.0
        if is_int(ms):
            if ms > n_rows:
                raise ValueError(f"max_samples must be at most the number of rows ({n_rows:,}), got {ms!r}")
            return ms / n_rows
        return float(ms)

    # -- fitting -------------------------------------------------------------------------------
    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Grow the forest (with ``warm_start``, only the trees beyond those already grown).

        Parameters
        ----------
        X : path, list of paths, Source, pyarrow Table, DataFrame, Dask DataFrame or array-like
            As :meth:`DecisionTreeClassifier.fit`.
        y : array-like, optional
            Labels, when ``X`` holds only features.
        target : str, optional
            The label column, when ``X`` holds it.
        sample_weight : array-like or str, optional
            Row weights (multiplied with the bootstrap multiplicities), or a weight column's name.
        features : list of str, optional
            Feature columns; default all but the target and the weight.

        Returns
        -------
        self
        """
        self.validate_params()
        self._check_combined_params()
        warm = self.warm_start and hasattr(self, "estimators_")
        start = len(self.estimators_) if warm else 0
        if warm and self.n_estimators < start:
            raise ValueError(f"n_estimators={self.n_estimators} must be at least the {start} trees already grown "
                             f"when warm_start=True")
        if warm and self.n_estimators == start:
            warnings.warn("warm_start fit without more n_estimators grows no new tree", UserWarning, stacklevel=2)
            return self
        if warm:
            seed = self.seed_
        elif self.random_state is None:
            seed = int(np.random.SeedSequence().entropy) & M32
        else:
            seed = int(self.random_state)
        budget = parse_bytes(self.memory_budget)
        n_new = self.n_estimators - start
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features) as run:
            data, source = run.data, run.source
            if warm and list(data.features) != list(self.estimators_[0].feature_names[:len(data.features)]):
                raise DataError("warm_start: the data's feature columns differ from those the forest was grown on")
            batch_size = batch_size_for(self, budget, len(data.features))
            schema, profile = profile_pass(self, data, run.kinds, batch_size, seed)
            class_weight = class_weights(self.class_weight, schema.label.classes, profile.label_counts,
                                         profile.n_rows)
            params = grow_params(self, profile.n_rows, algorithm="hybrid" if self.algorithm == "hybrid" else "read")
            seeds = tree_seeds(seed, start, self.n_estimators)
            combos, per_tree = self._combinations(schema, profile, seeds)
            weighted = schema.weight is not None or class_weight is not None
            columns = Columns(schema, combos, class_weight, weighted)
            if combos is not None:  # the slots of every tree's combinations travel with each batch
                batch_size = self.batch_size or int(min(batch_size, max(1024, budget // 8 // (columns.width * 9))))
            p = len(schema.attributes)
            categorical = [j for j, a in enumerate(schema.attributes) if a.kind == CATEGORICAL]
            if combos is None:
                candidates = [np.arange(p)] * n_new
            else:
                candidates = [np.concatenate([p + t * per_tree + np.arange(per_tree), categorical]).astype(np.int64)
                              for t in range(n_new)]
            spec = ForestSpec(seeds, self._rate(profile.n_rows), self._resolve_max_features(len(candidates[0])),
                              candidates)
            data_columns = schema.names + [schema.label.name] + ([schema.weight] if schema.weight else [])
            grower = _Grower(source, columns, spec, params, budget, batch_size, self.verbose, profile.n_rows,
                             data_columns)
            grown = grower.grow()
            trees = [self._to_tree(nodes, schema, combos, per_tree, t) for t, nodes in enumerate(grown)]
            if self.ccp_alpha > 0:
                trees = [cost_complexity_prune(t, self.ccp_alpha) for t in trees]
            if warm:
                self.estimators_ = self.estimators_ + trees
                self.tree_seeds_ = np.concatenate([self.tree_seeds_, seeds])
                self.combinations_ = self.combinations_ + self._tree_combinations(combos, per_tree, n_new)
            else:
                self.estimators_ = trees
                self.tree_seeds_ = seeds
                self.combinations_ = self._tree_combinations(combos, per_tree, n_new)
            self.seed_ = seed
            self.bootstrap_rate_ = spec.rate
            self._set_fitted_inputs(schema.label.classes, data.features, data.has_names)
            self._cache = {}
            self.n_rows_ = profile.n_rows
            self.n_passes_per_level_ = grower.stats.passes_per_level
            self.grow_stats_ = grower.stats
            if self.oob_score:
                self._set_oob(source, schema.label, batch_size)
            else:
                for name in ("oob_score_", "oob_decision_function_"):
                    if hasattr(self, name):
                        delattr(self, name)
        return self

    def _combinations(self, schema: Schema, profile, seeds) -> tuple:
        """Forest-RC's combinations of every new tree (``per_tree`` each, concatenated), binned from the
        profiling pass's sample; ``(None, 0)`` for Forest-RI."""
        if self.combination is None:
            return None, 0
        numeric = np.array([j for j, a in enumerate(schema.attributes) if a.kind == NUMERIC], np.int64)
        if self.n_combined > len(numeric):
            raise ValueError(f"n_combined={self.n_combined} exceeds the {len(numeric)} numeric attributes")
        per_tree = self.n_combinations or 3 * len(numeric)
        feats, coefs = zip(*(draw_combinations(int(s), numeric, per_tree, self.n_combined) for s in seeds))
        # the sample's columns are the numeric attributes, in schema order
        sample = np.full((profile.n_sample, len(schema.attributes)), np.nan)
        sample[:, numeric] = profile.held_sample()
        # coefficients apply to attributes in units of their spread in the sample, so no attribute
        # dominates a combination by its scale alone
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            spread = np.nanstd(sample, axis=0)
        spread = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)
        feats = np.concatenate(feats)
        combos = Combinations(feats, np.concatenate(coefs) / spread[feats])
        values = combos.values(sample)
        max_bins = int(self.max_bins)
        combos.cuts = [quantile_edges(v[~np.isnan(v)], max_bins) for v in values.T]
        return combos, per_tree

    @staticmethod
    def _tree_combinations(combos, per_tree: int, n_new: int) -> list:
        if combos is None:
            return [None] * n_new
        return [combos.take(np.arange(t * per_tree, (t + 1) * per_tree)) for t in range(n_new)]

    def _to_tree(self, nodes: _Nodes, schema: Schema, combos, per_tree: int, t: int) -> Tree:
        if combos is None:
            return nodes.to_tree(schema, self.criterion, len(schema.label.classes))
        p = len(schema.attributes)
        lo = p + t * per_tree
        nodes.feature = [f if f < p else f - lo + p for f in nodes.feature]  # the tree's own feature numbering
        mine = combos.take(np.arange(t * per_tree, (t + 1) * per_tree))
        own = Schema(list(schema.attributes) + mine.attributes(schema.names), schema.label, schema.weight)
        return nodes.to_tree(own, self.criterion, len(schema.label.classes))

    # -- out of bag --------------------------------------------------------------------------------
    def _thresholds(self) -> np.ndarray:
        return poisson_thresholds(self.bootstrap_rate_) if self.bootstrap_rate_ is not None else np.empty(0, np.int64)

    def _set_oob(self, source, label: Label, batch_size: int) -> None:
        columns = list(self._base_names()) + [label.name]
        blocks = source.run_pass(OobPass(self, label), columns, batch_size)
        blocks.sort(key=lambda b: b[0])
        k = self.n_classes_
        votes = np.concatenate([b[1] for b in blocks]) if blocks else np.empty((0, k))
        n_oob = np.concatenate([b[2] for b in blocks]) if blocks else np.empty(0, np.int64)
        y = np.concatenate([b[3] for b in blocks]) if blocks else np.empty(0, np.int32)
        if (n_oob == 0).any():
            warnings.warn("some rows are in the bootstrap of every tree, so they have no out-of-bag estimate; "
                          "grow more trees for a reliable oob_score_", UserWarning, stacklevel=3)
        self.oob_decision_function_ = votes / np.maximum(n_oob, 1)[:, None]
        self.oob_score_ = float(np.mean(np.argmax(self.oob_decision_function_, axis=1) == y)) if len(y) else np.nan

    # -- prediction ----------------------------------------------------------------------------
    def _base_names(self) -> list:
        return list(self.estimators_[0].feature_names[:self.n_features_in_])

    def _encoder(self) -> Schema:
        """Encodes raw batches of the model's feature columns (the trees' shared attributes)."""
        if "encoder" not in self._cache:
            tree = self.estimators_[0]
            p = self.n_features_in_
            self._cache["encoder"] = Schema([
                Attribute(n, CATEGORICAL if k == "categorical" else NUMERIC, categories=c or [])
                for n, k, c in zip(tree.feature_names[:p], tree.feature_kinds[:p], tree.categories[:p])])
        return self._cache["encoder"]

    def _leaf_proba(self, t: int) -> np.ndarray:
        key = ("proba", t)
        if key not in self._cache:
            self._cache[key] = self.estimators_[t].leaf_proba()
        return self._cache[key]

    def _tree_input(self, t: int, X: np.ndarray) -> np.ndarray:
        """``X`` (raw, C-ordered) with tree ``t``'s Forest-RC combinations appended."""
        combos = self.combinations_[t]
        if combos is None:
            return X
        return np.ascontiguousarray(np.hstack([X, combos.values(X)]))

    def _tables(self, X):
        self._check_fitted()
        return feature_tables(X, self._base_names(), strict_names=hasattr(self, "feature_names_in_"),
                              batch_size=self.batch_size or 65536)

    def apply(self, X) -> np.ndarray:
        """The leaf each row reaches in each tree, shape ``(n_rows, n_estimators)``."""
        parts = []
        with numba_threads(self.n_jobs):
            for table in self._tables(X):
                Xe = np.ascontiguousarray(self._encoder().encode(table))
                parts.append(np.column_stack([tree.apply(self._tree_input(t, Xe))
                                              for t, tree in enumerate(self.estimators_)]))
        return np.concatenate(parts) if parts else np.empty((0, len(self.estimators_)), np.int64)

    def predict_proba(self, X) -> np.ndarray:
        """The mean over the trees of the class distribution of each row's leaf (as scikit-learn)."""
        parts = []
        with numba_threads(self.n_jobs):
            for table in self._tables(X):
                Xe = np.ascontiguousarray(self._encoder().encode(table))
                proba = np.zeros((len(Xe), self.n_classes_))
                for t, tree in enumerate(self.estimators_):
                    proba += self._leaf_proba(t)[tree.apply(self._tree_input(t, Xe))]
                parts.append(proba / len(self.estimators_))
        return np.concatenate(parts) if parts else np.empty((0, self.n_classes_))

    @property
    def feature_importances_(self) -> np.ndarray:
        """Mean over the trees (those with a split) of their normalized impurity decreases; a Forest-RC
        combination's share goes to its attributes in proportion to their coefficients' magnitudes."""
        self._check_fitted()
        p = self.n_features_in_
        per_tree = []
        for tree, combos in zip(self.estimators_, self.combinations_):
            if tree.node_count <= 1:
                continue
            imp = tree.feature_importances()
            base = imp[:p].copy()
            if combos is not None:
                for q in range(len(combos.features)):
                    share = np.abs(combos.coefficients[q])
                    share = share / share.sum() if share.sum() > 0 else np.full(len(share), 1.0 / len(share))
                    np.add.at(base, combos.features[q], imp[p + q] * share)
            per_tree.append(base)
        if not per_tree:
            return np.zeros(p)
        mean = np.mean(per_tree, axis=0)
        total = mean.sum()
        return mean / total if total > 0 else mean

    # -- persistence -----------------------------------------------------------------------------
    def forest_dict(self) -> dict:
        """The forest as a ``"rainforest.forest"`` document: trees, seeds, bootstrap, combinations."""
        self._check_fitted()
        combos = [None if c is None else {"features": c.features.tolist(), "coefficients": c.coefficients.tolist()}
                  for c in self.combinations_]
        return {"format": FOREST_FORMAT, "version": FOREST_VERSION, "seed": int(self.seed_),
                "tree_seeds": [int(s) for s in self.tree_seeds_], "bootstrap_rate": self.bootstrap_rate_,
                "n_features": int(self.n_features_in_), "combinations": combos,
                "trees": [t.to_dict() for t in self.estimators_]}

    def to_json(self) -> str:
        """:meth:`forest_dict` as canonical JSON (equal forests give equal text)."""
        return json.dumps(self.forest_dict(), sort_keys=True, allow_nan=False)

    def save(self, path) -> None:
        """Write the model as versioned JSON (no pickle), atomically; :func:`rainforest.load` reads it."""
        self._check_fitted()
        oob = {"oob_score": self.oob_score_} if hasattr(self, "oob_score_") else {}
        write_model(path, self, self.n_passes_, has_feature_names=hasattr(self, "feature_names_in_"),
                    forest=self.forest_dict(), **oob)

    @classmethod
    def from_document(cls, doc: dict, path: str = "<document>") -> "RandomForestClassifier":
        """The estimator saved in ``doc`` (a parsed model file whose estimator is this class)."""
        check_document(doc, path, cls)
        forest = doc.get("forest")
        if not isinstance(forest, dict) or forest.get("format") != FOREST_FORMAT:
            raise ValueError(f"{path!r} holds no rainforest forest")
        if forest.get("version") != FOREST_VERSION:
            raise ValueError(f"{path!r} has forest format version {forest.get('version')!r}; this build reads "
                             f"{FOREST_VERSION}")
        est = cls(**params_from_json(doc["params"]))
        est.estimators_ = [Tree.from_dict(d) for d in forest["trees"]]
        est.tree_seeds_ = np.asarray(forest["tree_seeds"], np.int64)
        est.seed_ = int(forest["seed"])
        est.bootstrap_rate_ = forest["bootstrap_rate"]
        est.n_features_in_ = int(forest["n_features"])
        est.combinations_ = []
        for t, c in enumerate(forest["combinations"]):
            if c is None:
                est.combinations_.append(None)
                continue
            if len(est.estimators_[t].feature_names) != est.n_features_in_ + len(c["features"]):
                raise ValueError(f"{path!r}: tree {t} does not have the features of its combinations")
            cuts = [np.empty(0)] * len(c["features"])  # bins only matter when counting; trees route by threshold
            est.combinations_.append(Combinations(np.asarray(c["features"], np.int64),
                                                  np.asarray(c["coefficients"], np.float64), cuts))
        tree = est.estimators_[0]
        est._set_fitted_inputs(tree.classes, list(tree.feature_names[:est.n_features_in_]),
                               bool(doc.get("has_feature_names")))
        est.n_passes_ = doc.get("n_passes")
        if "oob_score" in doc:
            est.oob_score_ = doc["oob_score"]
        est._cache = {}
        return est


register_reader("RandomForestClassifier", RandomForestClassifier.from_document)
