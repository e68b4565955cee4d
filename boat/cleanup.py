"""BOAT's cleanup pass: every row streams down the coarse tree.

At each coarse node it passes, a row adds to the node's statistics: class counts per bucket of
every numeric attribute (with each bucket's smallest and largest value) and per category of
every categorical attribute, the node's class totals, and for the node's own numeric split the
counts left (below ``lo``) and right (above ``hi``) of the interval with the largest value below
and the smallest above.  A row stops where the coarse criterion cannot route it (a numeric
value inside the interval or missing, a category the sample did not show the node) or at a
frontier node, and is written to that node's Parquet file in the work folder.  Frontier files
hold the node's family; interval files are routed on once the exact split is known.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, fields
from functools import partial

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rainforest.counting import add_row
from rainforest.schema import CATEGORICAL, Schema, slot_of
from rainforest.write_behind import WRITE_AHEAD, WriteBehind

from .coarse import CoarseTree


def stats_layout(schema: Schema, n_buckets: int) -> np.ndarray:
    """Offset of each attribute's slots in a node's statistics: ``n_buckets`` buckets of a numeric
    attribute or its categories, then a missing slot (the AVC-group layout of :mod:`rainforest.criteria`)."""
    sizes = [len(a.categories) + 1 if a.kind == CATEGORICAL else n_buckets + 1 for a in schema.attributes]
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@dataclass
class NodeStats:
    """Counts of the rows that passed each coarse node (see the module doc)."""

    counts: np.ndarray  # (nodes, slots, classes)
    vmin: np.ndarray  # (nodes, slots): smallest value counted in a numeric bucket
    vmax: np.ndarray
    total: np.ndarray  # (nodes, classes)
    below: np.ndarray  # (nodes, classes): rows left of the interval of the node's numeric split
    above: np.ndarray
    below_max: np.ndarray  # (nodes,): the largest value below the interval (NaN: unknown after deletions)
    below_max_n: np.ndarray  # rows holding it
    above_min: np.ndarray
    above_min_n: np.ndarray

    @classmethod
    def zeros(cls, n_nodes: int, n_slots: int, n_classes: int) -> "NodeStats":
        return cls(np.zeros((n_nodes, n_slots, n_classes)), np.full((n_nodes, n_slots), np.inf),
                   np.full((n_nodes, n_slots), -np.inf), np.zeros((n_nodes, n_classes)),
                   np.zeros((n_nodes, n_classes)), np.zeros((n_nodes, n_classes)), np.full(n_nodes, -np.inf),
                   np.zeros(n_nodes, np.int64), np.full(n_nodes, np.inf), np.zeros(n_nodes, np.int64))

    def with_nodes(self, n_nodes: int) -> "NodeStats":
        """These statistics with empty ones for coarse nodes up to ``n_nodes``."""
        empty = NodeStats.zeros(n_nodes - len(self.total), self.counts.shape[1], self.counts.shape[2])
        return NodeStats(*(np.concatenate([getattr(self, f.name), getattr(empty, f.name)]) for f in fields(self)))

    def put(self, nodes, part: "NodeStats") -> None:
        """Node ``nodes[i]``'s statistics become ``part``'s node ``i``'s."""
        idx = np.asarray(nodes, np.int64)
        for f in fields(self):
            getattr(self, f.name)[idx] = getattr(part, f.name)

    def copy(self) -> "NodeStats":
        return NodeStats(*(getattr(self, f.name).copy() for f in fields(self)))


@numba.njit(cache=True, nogil=True)
def route_and_count(X, y, start, sign, feature, lo, hi, route_offset, route, first_child, edge_flat, edge_offsets,
                    grid_lo, grid_scale, grid_tables, grid_offsets, kinds, offsets,
                    counts, vmin, vmax, total, below, above, below_max, below_max_n, above_min, above_min_n,
                    out_node, out_held):
    """Move row ``i`` of the raw matrix ``X`` down the coarse tree from ``start[i]``, adding ``sign``
    (+1, or -1 for a deleted row) to the statistics of every node it passes, until it is held at a
    node or reaches a frontier node: ``out_node[i]``, ``out_held[i]``.  Serial, in row order."""
    n_attr = X.shape[1]
    n_cells, n_classes = counts.shape[1], counts.shape[2]
    cells = counts.reshape(-1)
    for i in range(X.shape[0]):
        k = start[i]
        c = y[i]
        while True:
            f = feature[k]
            if f < 0:
                out_node[i] = k
                out_held[i] = False
                break
            total[k, c] += sign
            xf = X[i, f]
            held = False
            branch = 0
            if kinds[f] == 0:
                if xf != xf or (lo[k] <= xf and xf <= hi[k]):
                    held = True
                else:
                    branch = 0 if xf < lo[k] else 1
            else:
                miss = offsets[f + 1] - offsets[f] - 1
                code = miss + 1 if xf != xf else int(xf)
                branch = route[route_offset[k] + code]
                held = branch < 0
            for a in range(n_attr):
                x = X[i, a]
                if kinds[a] == 0:
                    if a == f and held:
                        continue  # interval rows are counted exactly once the split is known
                    if x != x:
                        s = offsets[a + 1] - 1
                    else:
                        j = k * n_attr + a  # the node's edges of the attribute (CoarseTree.bucket_lookup)
                        s = offsets[a] + slot_of(x, edge_flat[edge_offsets[j]:edge_offsets[j + 1]],
                                                 grid_tables[grid_offsets[j]:grid_offsets[j + 1]], grid_lo[j],
                                                 grid_scale[j])
                        if sign > 0:
                            vmin[k, s] = min(vmin[k, s], x)
                            vmax[k, s] = max(vmax[k, s], x)
                else:
                    s = offsets[a + 1] - 1 if x != x else offsets[a] + int(x)
                add_row(cells, (k * n_cells + s) * n_classes, c, sign, False, 0)
            if held:
                out_node[i] = k
                out_held[i] = True
                break
            if kinds[f] == 0:
                if branch == 0:
                    below[k, c] += sign
                    below_max[k], below_max_n[k] = _extreme(below_max[k], below_max_n[k], xf, sign, 1.0)
                else:
                    above[k, c] += sign
                    above_min[k], above_min_n[k] = _extreme(above_min[k], above_min_n[k], xf, sign, -1.0)
            k = first_child[k] + branch


@numba.njit(cache=True, inline="always")
def _extreme(m, n, x, sign, direction):
    """The largest (``direction`` 1) or smallest (-1) value and its multiplicity after adding
    (``sign`` 1) or removing (-1) ``x``; NaN once the extreme itself is removed (then unknown)."""
    if sign > 0:
        if (x - m) * direction > 0:
            return x, 1
        if x == m:
            return m, n + 1
        return m, n
    if x == m:
        n -= 1
        if n == 0:
            return np.nan, 0
    return m, n


@numba.njit(cache=True, inline="always")
def _merge_extreme(m, n, m2, n2, direction):
    """The largest (``direction`` 1) or smallest (-1) value and its rows, of two pieces' ``(m, n)`` and
    ``(m2, n2)``, as :func:`_extreme` adding the second piece's values one by one would give: an unknown
    extreme (NaN, after a deletion) stays unknown."""
    if m != m or n2 == 0:
        return m, n
    if n == 0 or (m2 - m) * direction > 0:
        return m2, n2
    if m2 == m:
        return m, n + n2
    return m, n


@numba.njit(cache=True, parallel=True, nogil=True)
def route_and_count_added(X, y, start, pieces, feature, lo, hi, route_offset, route, first_child, edge_flat,
                          edge_offsets, grid_lo, grid_scale, grid_tables, grid_offsets, kinds, offsets, counts, vmin,
                          vmax, total, below, above, below_max, below_max_n, above_min, above_min_n, out_node,
                          out_held):
    """:func:`route_and_count` of added rows (``sign`` 1), ``pieces`` consecutive pieces of them on threads,
    each into statistics of its own, then merged in piece order.  Every merge is exact (counts of whole
    rows, smallest and largest values with their rows), so the statistics are the serial kernel's
    whatever the pieces; a row's routing never reads them."""
    n = X.shape[0]
    size = (n + pieces - 1) // pieces
    nn, ns, nc = counts.shape
    c_counts = np.zeros((pieces, nn, ns, nc))
    c_vmin = np.full((pieces, nn, ns), np.inf)
    c_vmax = np.full((pieces, nn, ns), -np.inf)
    c_total = np.zeros((pieces, nn, nc))
    c_below = np.zeros((pieces, nn, nc))
    c_above = np.zeros((pieces, nn, nc))
    c_below_max = np.full((pieces, nn), -np.inf)
    c_below_max_n = np.zeros((pieces, nn), np.int64)
    c_above_min = np.full((pieces, nn), np.inf)
    c_above_min_n = np.zeros((pieces, nn), np.int64)
    for p in numba.prange(pieces):
        a, b = min(n, p * size), min(n, (p + 1) * size)
        route_and_count(X[a:b], y[a:b], start[a:b], 1.0, feature, lo, hi, route_offset, route, first_child,
                        edge_flat, edge_offsets, grid_lo, grid_scale, grid_tables, grid_offsets, kinds, offsets,
                        c_counts[p], c_vmin[p], c_vmax[p], c_total[p], c_below[p], c_above[p], c_below_max[p],
                        c_below_max_n[p], c_above_min[p], c_above_min_n[p], out_node[a:b], out_held[a:b])
    for p in range(pieces):
        counts += c_counts[p]
        total += c_total[p]
        below += c_below[p]
        above += c_above[p]
        np.minimum(vmin, c_vmin[p], vmin)
        np.maximum(vmax, c_vmax[p], vmax)
        for k in range(nn):
            below_max[k], below_max_n[k] = _merge_extreme(below_max[k], below_max_n[k], c_below_max[p, k],
                                                          c_below_max_n[p, k], 1.0)
            above_min[k], above_min_n[k] = _merge_extreme(above_min[k], above_min_n[k], c_above_min[p, k],
                                                          c_above_min_n[p, k], -1.0)


PIECE_ROWS = 16384  # added rows a thread routes at least (below, one thread: the pieces' statistics cost more)


def route_rows(coarse: CoarseTree, schema: Schema, offsets: np.ndarray, stats: NodeStats, X: np.ndarray,
               y: np.ndarray, start: np.ndarray, sign: int = 1,
               pieces: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`route_and_count` over encoded rows; returns each row's stopping node and held flag.  Added
    rows are routed in ``pieces`` on threads (:func:`route_and_count_added`; default: one a thread, each of
    at least :data:`PIECE_ROWS` rows); deleted ones in order, by one."""
    out_node = np.empty(len(y), np.int64)
    out_held = np.empty(len(y), np.bool_)
    X, start, kinds = np.ascontiguousarray(X), start.astype(np.int64), schema.kinds.astype(np.int64)
    args = (coarse.feature, coarse.lo, coarse.hi, coarse.route_offset, coarse.route, coarse.first_child,
            *coarse.bucket_lookup, kinds, offsets, stats.counts, stats.vmin, stats.vmax, stats.total, stats.below,
            stats.above, stats.below_max, stats.below_max_n, stats.above_min, stats.above_min_n, out_node, out_held)
    if pieces is None:
        pieces = min(numba.get_num_threads(), len(y) // PIECE_ROWS)
    if sign > 0 and pieces > 1:
        route_and_count_added(X, y, start, pieces, *args)
    else:
        route_and_count(X, y, start, float(sign), *args)
    return out_node, out_held


class NodeFiles:
    """The rows stopped at each coarse node, as Parquet files under ``folder/node-<k>/``.

    Each write (the cleanup pass, each update) adds one file per node it reaches; deletions
    rewrite a node's files through a temporary file and a rename.  ``version[k]`` changes
    whenever node ``k``'s rows do.  Row groups are encoded and written by a thread of their own
    (:class:`rainforest.write_behind.WriteBehind`, at most ``write_ahead`` bytes handed over and not
    yet written), so the pass routes and counts the next batches meanwhile: at 100M rows the files
    outgrow the kernel's dirty pages, and every write would wait for the disk."""

    ROW_GROUP = 65536  # rows a node's row group gathers before it is written: the reads' batches
    # lz4 without dictionaries: the work folder is written once and read by every repair, subtree and
    # update; on 1M Agrawal rows Parquet's defaults (dictionaries, snappy) took 0.28 s to write and
    # 0.42 s to read, these 0.13 s and 0.03 s, the files no larger
    WRITE_OPTIONS = dict(compression="lz4", use_dictionary=False)
    PENDING = 8 * ROW_GROUP  # rows all nodes may gather in memory before every node's are written

    def __init__(self, folder: str, n_nodes: int, write_ahead: int = WRITE_AHEAD):
        self.folder = folder
        self.version = np.zeros(n_nodes, np.int64)
        self.n_rows = np.zeros(n_nodes, np.int64)
        self._mark_committed()
        self._behind = WriteBehind(write_ahead)
        self._writers: dict = {}
        self._pending: dict = {}  # node -> (tables not yet written, their rows): a row group a few thousand
        self._n_pending = 0  # rows long would make every later read of the node decode it in tiny batches
        self._generation = 0

    def add_nodes(self, n_nodes: int) -> None:
        """Room for coarse nodes up to ``n_nodes`` (the nodes a finished subtree adds: no rows yet)."""
        grow = n_nodes - len(self.version)
        if grow > 0:
            self.version, self.n_rows = (np.append(a, np.zeros(grow, np.int64)) for a in (self.version, self.n_rows))
            self._committed = tuple(np.append(a, np.zeros(grow, np.int64)) for a in self._committed)

    def empty(self, nodes) -> None:
        """Count the ``nodes`` empty before their rows are filed again (their files go once the new
        ones are committed, by :meth:`remove`; :meth:`abort` restores the counts)."""
        for k in nodes:
            self.n_rows[k] = 0
            self.version[k] += 1

    def remove(self, paths) -> None:
        """Delete the files ``paths`` (whose rows were filed again and committed)."""
        for p in paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)

    def node_dir(self, k: int) -> str:
        return os.path.join(self.folder, f"node-{k}")

    def files(self, k: int) -> list[str]:
        d = self.node_dir(k)
        if not os.path.isdir(d):
            return []
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet"))

    def write(self, table: pa.Table, node: np.ndarray) -> None:
        """Append the rows of ``table`` to the file of the node each stopped at (``node``)."""
        order = np.argsort(node, kind="stable")
        ks, starts = np.unique(node[order], return_index=True)
        ends = np.append(starts[1:], len(order))
        for k, s, e in zip(ks.tolist(), starts.tolist(), ends.tolist()):
            tables, n = self._pending.get(k, ([], 0))
            tables.append(table.take(pa.array(order[s:e])))
            self._pending[k] = (tables, n + e - s)
            self._n_pending += e - s
            self.n_rows[k] += e - s
            self.version[k] += 1
            if n + e - s >= self.ROW_GROUP:
                self._flush(k)
        if self._n_pending >= self.PENDING:
            for k in list(self._pending):
                self._flush(k)

    def _flush(self, k: int) -> None:
        tables, n = self._pending.pop(k, ([], 0))
        if not n:
            return
        part = pa.concat_tables(tables)
        self._n_pending -= n
        w = self._writers.get(k)
        if w is None:
            os.makedirs(self.node_dir(k), exist_ok=True)
            w = self._writers[k] = pq.ParquetWriter(self._path(k) + ".tmp", part.schema, **self.WRITE_OPTIONS)
        self._behind.run(partial(w.write_table, part, row_group_size=max(part.num_rows, 1)), part.nbytes,
                         self._path(k) + ".tmp")

    def _path(self, k: int) -> str:
        """Node ``k``'s file of the write under way."""
        return os.path.join(self.node_dir(k), f"part-{self._generation:06d}.parquet")

    def commit(self) -> None:
        """Write the rows still gathered, close this write's files and move them into place."""
        for k in list(self._pending):
            self._flush(k)
        self._behind.flush()
        for k, w in self._writers.items():
            w.close()
            os.replace(self._path(k) + ".tmp", self._path(k))
        self._writers = {}
        self._generation += 1
        self._mark_committed()

    def _mark_committed(self) -> None:
        """Remember ``version`` and ``n_rows`` as they are now, what :meth:`abort` goes back to."""
        self._committed = (self.version.copy(), self.n_rows.copy())

    def abort(self) -> None:
        """Drop the write under way (after an error or an interrupt): its rows not yet written, its
        files, and its changes to ``version`` and ``n_rows``; the committed files stay as they were."""
        self._pending, self._n_pending = {}, 0
        self._behind.close()
        for k, w in self._writers.items():
            try:
                w.close()
            except Exception:  # removed below
                pass
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(k) + ".tmp")
        self._writers = {}
        self.version, self.n_rows = (a.copy() for a in self._committed)

    def read(self, k: int, columns: list) -> pa.Table | None:
        paths = self.files(k)
        if not paths:
            return None
        return pa.concat_tables([pq.read_table(p, columns=columns) for p in paths])

    def rewrite(self, k: int, keep, columns: list, batch_size: int = 65536) -> tuple[str | None, int]:
        """Node ``k``'s rows where ``keep(batch)`` is true, streamed batch by batch into a temporary
        file beside its files (never the whole node in memory): ``(its path, its rows)``, the path None
        where the node has no file.  :meth:`commit_rewrites` moves it into place, :meth:`discard` drops it."""
        path = os.path.join(self.node_dir(k), f"part-{self._generation:06d}.parquet.tmp")
        writer, n = None, 0
        try:
            for p in self.files(k):
                for batch in pq.ParquetFile(p).iter_batches(batch_size, columns=columns):
                    part = pa.Table.from_batches([batch]).filter(pa.array(keep(batch)))
                    if writer is None:
                        writer = pq.ParquetWriter(path, part.schema, **self.WRITE_OPTIONS)
                    writer.write_table(part)
                    n += part.num_rows
        finally:
            if writer is not None:
                writer.close()
        return (path if writer is not None else None), n

    def commit_rewrites(self, rewritten: dict) -> None:
        """Each node's rewritten file (``{k: rewrite(k, ...)}``) replaces its files."""
        for k, (path, n) in rewritten.items():
            final = path[:-len(".tmp")] if path is not None else None
            old = self.files(k)
            if path is not None:
                os.replace(path, final)
            for p in old:
                if p != final:
                    os.unlink(p)
            self.n_rows[k] = n
            self.version[k] += 1
        self._generation += 1
        self._mark_committed()

    def discard(self, rewritten: dict) -> None:
        """Remove rewritten files not committed (a deletion that failed or was interrupted)."""
        for path, _ in rewritten.values():
            if path is not None and os.path.exists(path):
                os.unlink(path)


@dataclass
class CleanupTask:
    """The cleanup pass as a :class:`rainforest.storage.PassTask` (local sources: it writes the node files)."""

    coarse: CoarseTree
    schema: Schema
    offsets: np.ndarray
    files: NodeFiles
    columns: list
    file_schema: pa.Schema | None = None  # the work folder's column types (an update's rows are cast to them)

    def new_state(self) -> NodeStats:
        return NodeStats.zeros(self.coarse.n_nodes, int(self.offsets[-1]), len(self.schema.label.classes))

    def update(self, state: NodeStats, batch: pa.RecordBatch, first_row: int) -> NodeStats:
        X = self.schema.encode(batch)
        y = self.schema.label.codes(batch.column(self.schema.label.name))
        node, _ = route_rows(self.coarse, self.schema, self.offsets, state, X, y, np.zeros(len(y), np.int64))
        table = pa.Table.from_batches([batch.select(self.columns)])
        if self.file_schema is not None and not table.schema.equals(self.file_schema):
            table = table.cast(self.file_schema)
        self.files.write(table, node)
        return state

    def merge(self, a: NodeStats, b: NodeStats) -> NodeStats:  # pragma: no cover - local sources fold in order
        raise NotImplementedError("BOAT's cleanup pass runs on local sources only")
