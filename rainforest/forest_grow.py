"""Growing a forest's trees together, level by level: a level's jobs (tree, node) planned into
passes that fit half the budget, counted (over the data, or over rows kept in memory, or from
the per-tree copies of in-bag rows of :mod:`rainforest.in_bag`), searched and split by the
tree's rules (:mod:`rainforest.rules`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numba
import numpy as np

from .bootstrap import node_features, poisson_thresholds, seed_keys
from .criteria import CRITERION_CODES
from .errors import BudgetError
from .forest_exact import exact_jobs, forest_counted_slots
from .forest_kernels import search_jobs, split_children
from .forest_passes import ForestGather, ForestPass, KeepPass
from .forest_rows import Columns, data_rows
from .forest_levels import ForestLevels, InBagGroups, PassCounter
from .grow import GrowParams, run_levels
from .in_bag import InBagCopies, in_bag_fraction
from .meter import PassMeter
from .nodes import Nodes
from .plan import lead_of, pack_jobs
from .rows import KeptRows, column_dtypes, label_dtype
from .rules import depth_limit, keeps_split, node_criterion, node_totals, pre_leaf, value_weights
from .spill import Spill, room_for, spilled_row_bytes
from .target_parts import NO_GRID, PARTS_CHANNELS, widened
from .write_behind import write_ahead

TREES_PER_THREAD = 2  # trees grown at once from copies of their in-bag rows, per Numba thread


@dataclass
class ForestStats:
    passes_per_level: list = field(default_factory=list)  # passes over the data per level
    jobs_per_level: list = field(default_factory=list)  # (tree, node) AVC-groups counted per level
    kept_rows: int = 0  # rows kept in memory (RF-Hybrid), 0 if none
    trees_grown_together: int = 0  # RF-Hybrid: trees grown at once from copies of their in-bag rows; 0: none
    peak_avc_bytes: int = 0  # the largest AVC-groups of one pass
    spill_reads: int = 0  # reads of the spill folder (every encoded row, written by the first growth pass)
    spill_bytes: int = 0  # bytes written to it
    spill_bytes_read: int = 0  # bytes read from it
    candidate_reads: int = 0  # exact mode: reads gathering the rows of candidate bins (forest_exact.py)
    candidate_rows: int = 0  # the (row, attribute) entries they gathered, over all levels
    candidate_runs: int = 0  # reads of one attribute of one node whose candidate rows exceeded the room alone

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


@dataclass
class Jobs:
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
    def layout(cls, tree, node, cols: list, slot_sizes: np.ndarray, n_channels: int) -> "Jobs":
        """The jobs' AVC layout, attribute ``a`` taking ``slot_sizes[a]`` slots (its missing slot included)."""
        n_jobs = len(tree)
        lens = np.array([len(c) for c in cols], np.int64)
        attr_start = np.zeros(n_jobs + 1, np.int64)
        attr_start[1:] = np.cumsum(lens)
        attrs = np.concatenate(cols).astype(np.int64)
        sizes = slot_sizes[attrs]
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


class ForestGrower:
    """Grows the trees of a :class:`ForestSpec` together, level by level."""

    def __init__(self, source, columns: Columns, spec: ForestSpec, params: GrowParams, budget: int, batch_size: int,
                 verbose: int, n_rows: int, data_columns: list):
        self.source, self.columns, self.spec, self.params = source, columns, spec, params
        self.budget, self.batch_size, self.verbose, self.n_rows = budget, batch_size, verbose, n_rows
        self.data_columns = data_columns
        label = columns.schema.label
        self.regression = label.regression
        self.label_channels = label.n_channels  # the label's channels: one per class, or a regressor's three sums
        self.n_channels = self.label_channels + 1  # the last channel counts in-bag rows
        self.crit = CRITERION_CODES[params.criterion]
        self.node_crit = node_criterion(self.crit)
        self.max_depth = depth_limit(params.max_depth)
        n_trees = len(spec.seeds)
        keys = [seed_keys(int(s)) for s in spec.seeds]
        self.keys1 = np.array([k[0] for k in keys], np.int64)
        self.keys2 = np.array([k[1] for k in keys], np.int64)
        self.feature_seeds = [int(s) for s in spec.seeds]
        self.thresholds = poisson_thresholds(spec.rate) if spec.rate is not None else np.empty(0, np.int64)
        # A regressor without sample weights counts its targets in exact parts (target_parts.py), on the
        # tree's grids widened for the largest bootstrap multiplicity (the thresholds' count): raw cells
        # of count_channels (the parts, the multiplicities' sum, rows), turned into the search's after
        # counting.  Without a bootstrap the grids are the tree's, and so is each tree.
        self.grid = NO_GRID
        if label.grid is not None and not columns.weighted:
            self.grid = np.asarray(widened(label.grid, len(self.thresholds).bit_length()))
        self.count_channels = PARTS_CHANNELS + 2 if len(self.grid) else self.n_channels
        self.trees = [Nodes(regression=self.regression) for _ in range(n_trees)]
        for nodes in self.trees:
            nodes.add_leaf(np.zeros(self.label_channels), 0, 0.0, 0)
        self.total_weight = np.zeros(n_trees)
        self.min_weight_leaf = np.zeros(n_trees)
        self.stats = ForestStats()
        # what the AVC-groups count: exact mode's wide attributes in bins (forest_exact.py); set here, where
        # the budget and the way the rows are read again are known
        columns.counted = forest_counted_slots(columns, source, params, budget // 2, spec.max_features)
        self.exact = bool(columns.counted.binned.any())
        self.local = local = not getattr(source, "distributed", False)
        room = budget // 4
        self.keep = (params.hybrid and local and n_rows > 0 and n_rows * columns.row_bytes() <= room)
        self.kept: KeptRows | None = None  # every row, one group (forest_rows.data_rows)
        self.rows_in_memory: KeptRows | None = None  # the same, after growth: the out-of-bag pass may read them
        self.rows_on_disk: Spill | None = None  # the spill folder, after growth, until release()
        # The row store on disk: rows that do not fit memory are written once, in row order, by the first
        # growth pass, and every later pass reads them there (the multiplicities come from the positions).
        self.write = params.write and local and not self.keep and n_rows > 0 and self.max_depth > 1
        if self.write:  # as the spill stores them: each column in its own narrowest type, class code, weight, node
            self.write = room_for(params.spill_dir, n_rows * spilled_row_bytes(  # its spill holds every row at node 0
                column_dtypes(columns.column_schema), label_dtype(columns.schema.label), columns.weighted, 1))
        self.spill: Spill | None = None
        # A source that keeps partitions where they are read (a Dask cluster's workers): the first growth
        # pass encodes each partition there and every later level counts what the workers keep (up to a
        # quarter of the budget each in memory, the rest on their local disks), as a tree's growth does.
        self.store = None
        self.keeps_partitions = params.hybrid and not local and getattr(source, "keeps_partitions", False)

    # -- the level loop ------------------------------------------------------------------
    def grow(self) -> list[Nodes]:
        frontier = np.zeros((len(self.trees), 2), np.int64)  # (tree, node) of every node to split
        frontier[:, 0] = np.arange(len(self.trees))
        if self.keep:
            self._keep_rows()
        together, scratch_rows = self._trees_in_memory() if self.kept is not None else (0, 0)
        if together > 0:
            self._finish_in_memory(frontier, together, scratch_rows)
        else:
            if self.keeps_partitions:
                self.store = self.source.open_store(self.budget // 4, self.columns.row_bytes())
            try:
                run_levels(ForestLevels(self, frontier, lambda: PassCounter(self)))
            except BaseException:
                self.release()
                raise
            finally:
                self._close_store()
            if self.spill is not None:  # kept for the out-of-bag estimates: release() removes it
                self.spill.report(self.stats)
                self.rows_on_disk, self.spill = self.spill, None
        if self.kept is not None:
            self.stats.kept_rows = self.kept.size
            self.rows_in_memory, self.kept = self.kept, None
        return self.trees

    def _close_store(self) -> None:
        """Release the rows the workers keep (growth has ended, or failed)."""
        if self.store is not None:
            store, self.store = self.store, None
            self.source.close_store(store)

    def release(self) -> None:
        """Remove the spill folder (kept after growth for the out-of-bag estimates) and drop the kept rows."""
        for spill in (self.spill, self.rows_on_disk):
            if spill is not None:
                spill.remove()
        self.spill = self.rows_on_disk = self.rows_in_memory = None

    def plan(self, frontier: np.ndarray) -> tuple[np.ndarray, list]:
        """The frontier's attributes (one row per job) and its packs: consecutive jobs whose
        AVC-groups fit half the budget together."""
        avc_budget = self.budget // 2
        cols = self._draw(frontier)
        sizes = self.columns.counted_sizes[cols]
        cell_channels = self.n_channels + (self.count_channels if len(self.grid) else 0)  # raw and searched cells
        job_bytes = sizes.sum(axis=1) * cell_channels * 8 + sizes.max(axis=1) * 8  # + the search's scratch
        if job_bytes.max() > avc_budget:
            raise BudgetError(
                f"memory budget too small: one node's AVC-group over {cols.shape[1]} attributes needs "
                f"{int(job_bytes.max()):,} bytes and the AVC half of the budget is {avc_budget:,}; raise "
                f"memory_budget or lower max_bins")
        return cols, list(pack_jobs(job_bytes, avc_budget))

    def layout(self, frontier: np.ndarray, cols: np.ndarray) -> Jobs:
        jobs = Jobs.layout(frontier[:, 0], frontier[:, 1], cols, self.columns.counted_sizes, self.n_channels)
        self.stats.peak_avc_bytes = max(self.stats.peak_avc_bytes, jobs.size * 8)
        return jobs

    def counted_layout(self, jobs: Jobs) -> Jobs:
        """``jobs`` laid out for counting: the search's layout, or raw cells' for exact parts."""
        if not len(self.grid):
            return jobs
        return replace(jobs, job_base=jobs.job_base // self.n_channels * self.count_channels,
                       size=jobs.size // self.n_channels * self.count_channels)

    def note(self, level: int, passes: int, jobs: int) -> None:
        while len(self.stats.passes_per_level) <= level:  # chunks of trees grown in memory share levels
            self.stats.passes_per_level.append(0)
            self.stats.jobs_per_level.append(0)
        self.stats.passes_per_level[level] += passes
        self.stats.jobs_per_level[level] += jobs

    def _keep_rows(self) -> None:
        """RF-Hybrid: the first growth pass keeps every encoded row and counts nothing (it is the
        first level's pass); if the source did not fold every row in order, the level-by-level
        passes follow."""
        kept = data_rows(self.n_rows, self.columns)
        meter = PassMeter(f"level 0, pass {self.source.n_passes + 1} over the data, keeping the rows in memory",
                          self.verbose, self.n_rows)
        self.source.run_pass(KeepPass(self.columns, kept), self.data_columns, self.batch_size, meter)
        meter.done()
        self.note(0, 1, 0)
        self.kept = kept if kept.size == self.n_rows else None

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
        record = InBagCopies.record_bytes(kept.S.shape[1], kept.S.dtype, self.label_channels, len(kept.w) > 0,
                                          self.regression)
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
        copies = InBagCopies.allocate(size, kept.size, scratch_rows, kept.S.shape[1], kept.S.dtype,
                                      self.label_channels, len(kept.w) > 0, self.regression)
        for c0 in range(0, len(roots), size):
            self._grow_chunk(roots[c0:c0 + size], copies)
            meter(kept.size * len(roots[c0:c0 + size]))
        meter.done()
        self.stats.trees_grown_together = size

    def _grow_chunk(self, frontier: np.ndarray, copies: InBagCopies) -> None:
        """Grow the trees of ``frontier`` (their roots) to the end from copies of their in-bag rows
        (in ``copies``, reused from chunk to chunk)."""
        groups = InBagGroups(self, frontier[:, 0], copies)
        run_levels(ForestLevels(self, frontier, lambda: groups))

    def _draw(self, frontier: np.ndarray) -> np.ndarray:
        """Each job's attributes (Forest-RI), one row per job: drawn from its tree's seed and its node id."""
        k = self.spec.max_features
        out = np.empty((len(frontier), k), np.int64)
        trees, first = np.unique(frontier[:, 0], return_index=True)  # the frontier is sorted by tree
        for t, lo, hi in zip(trees, first, np.append(first[1:], len(frontier))):
            cand = self.spec.candidates[t]
            out[lo:hi] = cand[node_features(self.feature_seeds[t], frontier[lo:hi, 1], len(cand), k)]
        return out

    def count_jobs(self, jobs: Jobs, routing: tuple, base: np.ndarray, level: int) -> tuple[np.ndarray, bool]:
        task = self._pass(jobs, routing, base, level)
        state, from_data = self._read(task, f"{len(jobs.tree):,} node(s) of {len(task.trees)} tree(s)", level,
                                      write=True)
        return state.counts, from_data

    def gather_jobs(self, jobs: Jobs, candidate: np.ndarray, entries: np.ndarray, routing: tuple, base: np.ndarray,
                    level: int) -> tuple[tuple, bool]:
        """The entries of the candidate cells' rows (:class:`rainforest.forest_passes.ForestGather`; ``entries``:
        how many each job has), read where the level's counts were read."""
        counting = self._pass(jobs, routing, base, level)
        counting.trees = np.unique(jobs.tree[entries > 0])  # only the trees with rows to gather are routed
        totals = None
        if self.local:  # one state folds the whole read: each tree's entries written at once
            at = np.searchsorted(counting.trees, jobs.tree[entries > 0])
            totals = np.bincount(at, entries[entries > 0], len(counting.trees)).astype(np.int64)
        task = ForestGather(counting, jobs.job_base // self.n_channels, candidate, totals)
        state, from_data = self._read(task, f"rows of {int((candidate >= 0).sum()):,} candidate bin(s)", level)
        found = state.joined()
        if totals is not None and not np.array_equal(state.tree_at, np.cumsum(totals)):
            raise AssertionError("gathered rows differ from the counts of their candidate bins")
        return found, from_data

    def _pass(self, jobs: Jobs, routing: tuple, base: np.ndarray, level: int) -> ForestPass:
        job_of_node = np.full(int(base[-1]), -1, np.int32)
        job_of_node[base[jobs.tree] + jobs.node] = np.arange(len(jobs.tree), dtype=np.int32)
        return ForestPass(self.columns, level, np.unique(jobs.tree), self.keys1, self.keys2, self.thresholds,
                          base[:-1].copy(), routing, job_of_node, jobs.attr_start, jobs.attrs, jobs.slot_off,
                          jobs.job_base, self.count_channels, jobs.size, grid=self.grid)

    def _read(self, task, label: str, level: int, write: bool = False) -> tuple:
        """Run ``task`` over the rows kept in memory, the spill folder, the workers' store or the data
        (the first counting pass, ``write``, fills the spill folder): its state, and whether it read the data."""
        if self.kept is not None:
            meter = PassMeter(f"level {level}, rows kept in memory, {label}", self.verbose, self.kept.size)
            state = task.count(task.new_state(), self.kept.S, self.kept.y, self.kept.w, 0)
            meter(self.kept.size)
            meter.done()
            return state, False
        if self.spill is not None and self.spill.generation >= 0:
            meter = PassMeter(f"level {level}, the spilled rows, {label}", self.verbose, self.n_rows)
            state = task.new_state()
            for first, rows in self.spill.in_row_order(self.batch_size):
                state = task.count(state, rows.S, rows.y, rows.w, first)
                meter(len(rows))
            meter.done()
            return state, False
        counting = task.counting if isinstance(task, ForestGather) else task  # the pass the store and spill serve
        if write and self.write and self.spill is None:
            self.spill = Spill(self.params.spill_dir, self.columns.width,
                               column_dtypes(self.columns.column_schema), write_ahead=write_ahead(self.budget))
            counting.spill = self.spill.writer(np.zeros(1, np.int64))  # every row to partition 0
        before = self.source.n_passes
        where = "the rows kept on the workers" if self.store is not None and level > 0 else \
            f"pass {before + 1} over the data"
        meter = PassMeter(f"level {level}, {where}, {label}", self.verbose, self.n_rows)
        counting.store = self.store
        state = self.source.run_pass(task, self.data_columns, self.batch_size, meter)
        meter.done()
        if counting.spill is not None:
            self.spill.commit()
        return state, self.source.n_passes > before  # a store's pass reads the source only for lost pieces

    # -- splits ------------------------------------------------------------------------------
    def split_jobs(self, jobs: Jobs, counts: np.ndarray, next_frontier: list, counter, level: int) -> tuple[list, int]:
        """Search every job's split (exact ones over bins plus the candidate bins' rows, which ``counter``
        gathers: :mod:`rainforest.forest_exact`), then split the nodes whose split is worth it
        (scikit-learn's rules, :mod:`rainforest.rules`), appending their children that go on growing to
        ``next_frontier``.  Returns ``(job, branches, the branches that go on growing)`` of the split
        jobs with such a child, and the passes over the data the gathering made."""
        nc, ch = self.label_channels, self.n_channels
        p = self.params
        n_jobs = len(jobs.tree)
        skip = np.zeros(n_jobs, bool)
        sizes = self.columns.counted_sizes
        slot_offsets = np.concatenate([[0], np.cumsum(sizes)])
        for j in np.flatnonzero(jobs.node == 0):  # roots: their totals, from the slots of the tree's lead attribute
            t = int(jobs.tree[j])
            q = jobs.attr_start[j] + lead_of(jobs.attrs[jobs.attr_start[j]:jobs.attr_start[j + 1]], slot_offsets)
            size = int(sizes[jobs.attrs[q]])
            at = jobs.job_base[j] + jobs.slot_off[q] * ch
            nodes = self.trees[t]
            nodes.value[0], nodes.n_node_samples[0], w, nodes.impurity[0] = node_totals(
                counts[at:at + size * ch].reshape(size, ch), nc, self.node_crit)
            self.total_weight[t] = w
            self.min_weight_leaf[t] = p.min_weight_fraction_leaf * w
            skip[j] = nodes.pre_leaf(0, p, self.max_depth, self.min_weight_leaf[t])
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
        if self.exact:  # the jobs that search binned attributes: their bins' best splits are only targets
            exact, passes = exact_jobs(self, jobs, counts, np.where(attr >= 0, score, -np.inf), counter, level)
        else:
            exact, passes = {}, 0
        blocks = []  # exact splits' children's totals, a slot per branch (rules.branch_summary)
        for j, found in exact.items():
            if found is None:
                attr[j] = -1
                continue
            score[j], attr[j], left_slot[j], right_slot[j], inf_thr[j], n_branches[j], br, block = found
            branches[jobs.branch_start[j]:jobs.branch_start[j] + len(br)] = br
            blocks.append((j, block))
        n_branches[skip | (attr < 0)] = 0
        q = jobs.attr_start[:-1] + np.maximum(attr, 0)
        col = jobs.attrs[q]
        winner_base, winner_slots = jobs.job_base + jobs.slot_off[q] * ch, sizes[col]
        parent_imp = np.array([self.trees[t].impurity[n] for t, n in zip(jobs.tree, jobs.node)])
        widest = int(n_branches.max()) if n_jobs else 0
        child = np.zeros((n_jobs, max(widest, 1), ch))
        child_imp = np.zeros((n_jobs, max(widest, 1)))
        decrease = np.empty(n_jobs)
        weight = np.empty(n_jobs)
        refined = np.zeros(n_jobs, np.bool_)
        refined[[j for j, _ in blocks]] = True
        split_children(counts, winner_base, winner_slots, branches, jobs.branch_start,
                       np.where(refined, 0, n_branches), ch, parent_imp, self.node_crit, child, child_imp, decrease,
                       weight)
        if blocks:  # the exact splits' children, from their summaries (each branch's totals, added once to zero)
            js = np.array([j for j, _ in blocks], np.int64)
            winner_slots = winner_slots.copy()
            winner_slots[js] = [len(b) for _, b in blocks]
            at = np.zeros(n_jobs, np.int64)
            at[js] = np.concatenate([[0], np.cumsum(winner_slots[js])[:-1]]) * ch
            exact_decrease, exact_weight = np.empty(n_jobs), np.empty(n_jobs)
            split_children(np.concatenate([b.ravel() for _, b in blocks]), at, winner_slots, branches,
                           jobs.branch_start, np.where(refined, n_branches, 0), ch, parent_imp, self.node_crit, child,
                           child_imp, exact_decrease, exact_weight)
            decrease[js], weight[js] = exact_decrease[js], exact_weight[js]
        with np.errstate(invalid="ignore", divide="ignore"):
            keep = keeps_split(decrease, weight, self.total_weight[jobs.tree], p.min_impurity_decrease)
        chosen = np.flatnonzero((n_branches > 0) & keep)
        # children that are leaves at once: scikit-learn's rules before a search, for all at once
        child_n = np.rint(child[:, :, nc]).astype(np.int64)
        child_w = value_weights(child[:, :, :nc].reshape(-1, nc), self.node_crit).reshape(child.shape[:2])
        depth = np.array([self.trees[t].depth[n] for t, n in zip(jobs.tree, jobs.node)]) + 1
        leafy = pre_leaf(depth[:, None], child_n, child_w, child_imp, p, self.max_depth,
                         self.min_weight_leaf[jobs.tree][:, None])
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
            br = branches[start_l[j]:start_l[j] + int(winner_slots[j])]
            first = nodes.split(node, self.columns.attributes[c], c, br, nb, left_l[j], right_l[j], inf_l[j],
                                majority_l[j])
            going_on = []
            for b in range(nb):
                nodes.add_leaf(values[j, b].copy(), child_n_l[j][b], child_imp_l[j][b], depth_l[j])
                if not leafy_l[j][b]:
                    next_frontier.append((t, first + b))
                    going_on.append(b)
            if going_on:
                grown.append((j, nb, going_on))
        return grown, passes
