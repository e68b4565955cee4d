"""The encoded row store on disk (RF-Write's spill folder): rows encoded once, read at page-cache speed.

When the encoded rows (:mod:`rainforest.rows`) do not fit the memory budget's share, the first
data pass of growth writes every row still growing, as slots, class code and weight, to this
folder, partitioned by the group of frontier nodes that counts them; every later read of those
rows, at this level and below, comes from here and never from the source.  A level that needs
several reads writes a new *generation* partitioned by its own groups of nodes (rows of finished
nodes left out), so later reads take only the partitions holding their nodes.

Format (chosen for speed; measured against lz4 Parquet, which spent most of a read decoding):
raw little-endian arrays, one ``part-P.rows`` file per partition holding *records* (a block of
rows as it streamed by: each attribute's slots, then a tree's keyed attributes' bins, then the
class codes, then the weights when not all one), and beside it ``part-P.node``, each row's tree
node (two bytes while the tree fits them, :func:`node_type`).  Reads fill preallocated
column-major blocks straight from the file (``readinto``: no decoding, no copy) and write every
row's new node back once the reader has routed it, so the next level routes each row one step,
not from the root.  Records are written by a thread of their own (:mod:`rainforest.write_behind`)
while the pass goes on: past the kernel's dirty-page limit every write waits for the disk.  A read
that counts rows reads the keyed columns' bins in place of their keys
(two bytes a row where the key is eight; :mod:`rainforest.bin_routing`) and the keys of the few rows
it needs where they lie.  Record sizes are kept in memory: the folder is this process's alone.

The folder is a fresh temporary directory, removed when growth ends, fails or is interrupted
(Ctrl-C, and SIGTERM or SIGHUP, which raise an interrupt while the folder lives, see
:mod:`rainforest.signals`).  Its name carries its owner's process id and machine, so a folder
left by a process killed outright is removed by the next spill made beside it.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from rainforest.storage.base import runs_up_to
from rainforest.storage.scratch import scratch_folder, swap_in
from .count_bins import CountedSlots, counted_column
from .meter import log
from .rows import RowBlock, column_dtypes, label_dtype
from .schema import NUMERIC, Schema
from .signals import raise_pending, termination_as_interrupt
from .write_behind import WRITE_AHEAD, WriteBehind

def node_type(n_tree_nodes: int) -> np.dtype:
    """How a node file holds each row's node: two bytes while the tree's nodes number fewer than
    65,536 (a depth-15 binary tree), else four.  A node is a sixth of an Agrawal row as binned mode
    spills it, and every read writes them all back."""
    return np.dtype("<u2") if n_tree_nodes <= 65535 else np.dtype("<i4")


def spilled_bytes(n_rows: int, schema: Schema, weighted: bool, n_tree_nodes: int | None = None) -> int:
    """Bytes that ``n_rows`` encoded rows take in the spill folder: slots, class code, weight when not
    all one, node (``n_tree_nodes``: the nodes rows may stand at, :func:`node_type`; unknown: four bytes)."""
    return n_rows * spilled_row_bytes(column_dtypes(schema), label_dtype(schema.label), weighted, n_tree_nodes)


def spilled_row_bytes(column_types: list, label_type: np.dtype, weighted: bool, n_tree_nodes: int | None = None) -> int:
    """Bytes one encoded row takes in the spill folder (:meth:`Spill.writer`): each slot column in the
    type it is stored in, the class code (or target) in ``label_type``, the weight when not all one
    (8), the node (:func:`node_type` of ``n_tree_nodes``; four bytes, the most, where not known)."""
    node = node_type(n_tree_nodes).itemsize if n_tree_nodes is not None else 4
    return sum(np.dtype(t).itemsize for t in column_types) + np.dtype(label_type).itemsize + (8 if weighted else 0) \
        + node


def spill_footprint(n_rows: int, schema: Schema, weighted: bool) -> int:
    """Disk bytes a tree's spill of ``n_rows`` encoded rows may hold at once: the rows
    (:func:`spilled_bytes`), each keyed attribute's bins beside its keys (2 bytes a row, ``key_bins``
    of :class:`Spill`) and, while a read writes each row's routed node back in a type the node file
    does not hold, the partition's next node file beside its current one until it is swapped in (4
    bytes a row; a partition may hold every row; nodes of the file's type go back in place).  Checked against the rows alone, a disk with room for them but not for the second node file
    failed with ENOSPC in the middle of a fit (1B rows: 42 GB of rows checked, 46 GB needed)."""
    n_keyed = sum(a.kind == NUMERIC and a.keys is not None for a in schema.attributes)
    return spilled_bytes(n_rows, schema, weighted) + (2 * n_keyed + 4) * n_rows


def page_cache_holds(n_bytes: int) -> bool:
    """Whether this machine's memory can keep a spill of ``n_bytes`` in its page cache (half of the
    memory: the rest is the processes').  Reading keyed columns as bins (:class:`Spill`'s
    ``key_bins``) pays only then: the keys a read needs are fetched where they lie, a few rows at a
    time, at memory speed from the cache but as random disk reads from a spill larger than memory
    (1B Agrawal F7 rows, a 48 GB spill on a 24 GB machine: 1,268.7 s with bins against 1,077.3 s with
    keys alone)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not known here: as if it held it
        return True
    return n_bytes <= memory // 2


def disk_shortfall(parent: str | None, n_bytes: int) -> str | None:
    """Why ``n_bytes`` do not fit the disk of ``parent`` (tempfile's default when None), or None."""
    folder = tempfile.gettempdir() if parent is None else parent
    free = shutil.disk_usage(folder).free
    if free >= n_bytes:
        return None
    return (f"the spill folder's disk ({folder}) has {free:,} bytes free and the encoded rows need "
            f"{n_bytes:,}")


def room_for(parent: str | None, n_bytes: int) -> bool:
    """Whether the spill folder's disk holds ``n_bytes``; if not, a warning names the folder and the
    bytes, and growth reads the source at every level instead (the same model, at RF-Read's cost)."""
    short = disk_shortfall(parent, n_bytes)
    if short:
        warnings.warn(f"{short}: growth reads the source at every level instead; give spill_dir a larger disk "
                      f"to read it twice", RuntimeWarning, stacklevel=3)
    return not short


class Spill:
    """A temporary folder of partitions ``gen-G/part-P.rows`` and ``.node`` (latest generation ``G``).

    Parameters
    ----------
    parent : str or None
        Where the folder is made (``tempfile``'s default when None).
    n_attributes : int
        Slot columns per row.
    column_types : list of numpy dtypes, optional
        How each slot column is stored (:func:`rainforest.rows.column_dtypes`: its own narrowest type,
        where rows in memory hold all columns in the widest); the rows' own type when None.
    key_bins : CountedSlots, optional
        The growth's counted slots: each keyed attribute's bin (``uint16``) is stored beside its keys,
        so that :meth:`read` with ``keyed_as="bins"`` reads two bytes a row for the column where it
        would read eight (:mod:`rainforest.bin_routing`).
    write_ahead : int
        Bytes of records handed to the write-behind thread and not yet written, at most
        (:func:`rainforest.write_behind.write_ahead` of the budget).
    """

    def __init__(self, parent: str | None, n_attributes: int, column_types: list | None = None,
                 key_bins: CountedSlots | None = None, write_ahead: int = WRITE_AHEAD):
        self.n_attributes = n_attributes
        self.column_types = column_types
        self.key_bins = key_bins if key_bins is not None and key_bins.keyed.any() else None
        # the attributes whose counted bins are stored beside their keys
        self.bin_columns = np.flatnonzero(key_bins.keyed) if self.key_bins is not None else np.zeros(0, np.int64)
        self.generation = -1
        self.parts: set[int] = set()  # partitions of the current generation
        self._records: dict[int, list[int]] = {}  # partition -> rows of each record, in file order
        self._writing: dict[int, tuple] = {}  # the next generation's open files, and record sizes
        self._layout = None  # (slot dtype, class dtype, weighted), from the first rows written
        self._node_types: dict[int, np.dtype] = {}  # partition -> how its node file holds the nodes
        self._next_node_type = np.dtype("<i4")  # the next generation's (writer)
        self.bytes_written = 0
        self.bytes_read = 0
        self.reads = 0
        self._behind = WriteBehind(write_ahead)  # the files' writes, in a thread of their own
        self._signals = contextlib.ExitStack()  # closed by remove(): the handlers live as long as the folder
        self._signals.enter_context(termination_as_interrupt(only_default=True))
        try:  # the folder made last (an interrupt while it is made removes it there)
            self.root = scratch_folder(parent)
        except BaseException:
            self._signals.close()
            raise
        log.info("rows spilled to %s", self.root)

    def _file(self, generation: int, part: int, kind: str) -> str:
        return os.path.join(self.root, f"gen-{generation}", f"part-{part}.{kind}")

    def writer(self, part_of_node: np.ndarray):
        """A callable writing each row of a block to partition ``part_of_node[node]`` (rows whose
        node maps to -1 are dropped) of a new generation; :meth:`commit` makes it current."""
        os.makedirs(os.path.join(self.root, f"gen-{self.generation + 1}"))
        self._next_node_type = node_type(len(part_of_node))  # every node a row can stand at has a partition

        def write(rows: RowBlock) -> None:
            if self._layout is None:
                self._layout = (rows.S.dtype, rows.y.dtype, len(rows.w) > 0)
            part = part_of_node[rows.node]
            held = np.bincount(part + 1)  # rows per partition, dropped rows first (a count: np.unique sorts)
            for p in np.flatnonzero(held[1:]):
                whole = held[p + 1] == len(part)  # one partition: no copy
                self._append(int(p), rows if whole else rows.take(part == p))
        return write

    def _append(self, p: int, rows: RowBlock) -> None:
        raise_pending()  # a stop request a finaliser swallowed ends the fit here
        files = self._writing.get(p)
        if files is None:
            g = self.generation + 1
            files = self._writing[p] = (open(self._file(g, p, "rows"), "wb"), open(self._file(g, p, "node"), "wb"), [])
        data, node, sizes = files
        # the record's columns copied here (the block's arrays may change once the pass moves on) and
        # written by the write-behind thread while the pass goes on
        columns = [np.array(rows.S[:, j], t) for j, t in enumerate(self._column_types())]
        columns += [counted_column(rows.S, int(a), *self.key_bins.kernel_args()) for a in self.bin_columns]
        columns.append(np.array(rows.y))
        if len(rows.w):
            columns.append(np.array(rows.w, "<f8"))
        nodes = np.array(rows.node, self._next_node_type)
        self._behind.write(data, columns)
        self._behind.write(node, [nodes])
        sizes.append(len(rows))
        self.bytes_written += sum(c.nbytes for c in columns) + nodes.nbytes

    def _column_types(self) -> list[np.dtype]:
        """How each slot column is stored: its own type, or the rows' when none was given."""
        return [self._layout[0]] * self.n_attributes if self.column_types is None else self.column_types

    def commit(self) -> None:
        """Close the new generation's files, make it current and delete the previous one."""
        self._behind.flush()
        for data, node, _ in self._writing.values():
            data.close()
            node.close()
        old = os.path.join(self.root, f"gen-{self.generation}")
        self.generation += 1
        self._records = {p: sizes for p, (_, _, sizes) in self._writing.items()}
        self._node_types = {p: self._next_node_type for p in self._records}
        self.parts = set(self._records)
        self._writing = {}
        if os.path.isdir(old):
            shutil.rmtree(old)

    def read(self, parts, batch_size: int, update_nodes: bool = True, columns_for=None,
             n_tree_nodes: int | None = None, keyed_as: str = "keys") -> Iterator[RowBlock]:
        """The rows of the given partitions of the current generation, in row order per partition,
        in blocks of whole records (about ``batch_size`` rows, or one larger record).

        With ``update_nodes``, each block's ``node`` as the reader left it (routed, in place) is
        written back over the node file when the next block is asked for: the next read starts where
        this one's routing ended.  ``columns_for(node)``, given a block's
        nodes (read first), names the slot columns the reader needs of it (None: all); the others are
        skipped on disk and hold no rows' values in the block (a gathering read needs only its
        candidate attributes' columns).  ``n_tree_nodes``: the tree's nodes, which bounds the nodes written
        back (:func:`node_type`; unknown: four bytes a node).

        In a folder with ``key_bins``, ``keyed_as`` says how the block holds keyed columns: ``"keys"``;
        ``"bins"``, read in place of the keys (``S`` in the narrowest type holding every column so, and
        the block's ``keys``, a :class:`SpilledKeys`, reads the keys of the rows that need them); or
        ``"both"``, the keys in ``S`` and the bins in the block's ``bins``."""
        if keyed_as not in ("keys", "bins", "both"):
            raise ValueError(f"keyed_as must be 'keys', 'bins' or 'both', not {keyed_as!r}")
        self.reads += 1
        back = node_type(n_tree_nodes) if n_tree_nodes is not None else np.dtype("<i4")
        for p in sorted(parts):
            if p in self.parts:  # else no growing row reached this partition's nodes
                yield from self._read_part(p, batch_size, update_nodes, columns_for, back,
                                           keyed_as if self.key_bins is not None else "keys")

    def _stored_columns(self) -> list[tuple[int, np.dtype, bool]]:
        """A record's slot columns in file order: ``(attribute, type, is its bins)``."""
        return [(j, t, False) for j, t in enumerate(self._column_types())] + \
            [(int(a), np.dtype("<u2"), True) for a in self.bin_columns]

    def _column_plan(self, keyed_as: str) -> tuple[list, np.dtype]:
        """Where each stored column goes when read (``"S"``, the block's ``"bins"``, or None: skipped), and
        the slot type of the block's ``S``, for :meth:`read`'s ``keyed_as``."""
        slot_type = self._layout[0]
        stored = self._stored_columns()
        keyed = set(int(a) for a in self.bin_columns)
        if keyed_as == "keys":
            goes = ["S" if not is_bin else None for _, _, is_bin in stored]
        elif keyed_as == "bins":
            goes = ["S" if is_bin or j not in keyed else None for j, _, is_bin in stored]
            slot_type = max([t for (_, t, _), g in zip(stored, goes) if g], key=lambda t: t.itemsize)
        else:
            goes = ["bins" if is_bin else "S" for _, _, is_bin in stored]
        return goes, slot_type

    def _new_block(self, n: int, slot_type: np.dtype, both: bool) -> RowBlock:
        _, class_type, weighted = self._layout
        block = RowBlock(np.empty((n, self.n_attributes), slot_type, order="F"), np.empty(n, class_type),
                         np.empty(n if weighted else 0, "<f8"), np.empty(n, "<i4"))
        if both:
            block.bins = np.empty((n, self.n_attributes), np.uint16, order="F")
        return block

    def _read_records(self, data, sizes: list, goes: list, wanted, block: RowBlock, key_at, narrow: dict) -> int:
        """Fill ``block`` from the consecutive records of ``sizes`` rows at ``data``'s position (each column
        that ``goes`` somewhere and is ``wanted``, then the classes and weights), noting in ``key_at`` where
        each record's keyed columns lie; the bytes skipped."""
        weighted = self._layout[2]
        keyed = set(int(a) for a in self.bin_columns)
        stored = self._stored_columns()
        at, skipped, position = 0, 0, data.tell()
        for m_index, m in enumerate(sizes):
            for (j, t, is_bin), to in zip(stored, goes):
                if key_at is not None and not is_bin and j in keyed:
                    key_at[m_index, j] = position
                position += m * t.itemsize
                if to is None or (wanted is not None and j not in wanted):
                    data.seek(m * t.itemsize, os.SEEK_CUR)
                    skipped += m * t.itemsize
                    continue
                out = (block.S if to == "S" else block.bins)[at:at + m, j]
                if t == out.dtype:
                    _fill(data, out)
                else:  # stored narrower than the block holds it: read, then widened
                    buf = narrow.get(t)
                    if buf is None or len(buf) < m:
                        buf = narrow[t] = np.empty(max(m, 1 << 16), t)
                    _fill(data, buf[:m])
                    out[:] = buf[:m]
            _fill(data, block.y[at:at + m])
            position += m * block.y.itemsize
            if weighted:
                _fill(data, block.w[at:at + m])
                position += m * 8
            at += m
        return skipped

    def _read_part(self, p: int, batch_size: int, update_nodes: bool, columns_for=None,
                   back: np.dtype = np.dtype("<i4"), keyed_as: str = "keys") -> Iterator[RowBlock]:
        held = self._node_types.get(p, np.dtype("<i4"))  # how this partition's node file holds the nodes
        goes, slot_type = self._column_plan(keyed_as)
        record_row = sum(t.itemsize for _, t, _ in self._stored_columns()) + self._layout[1].itemsize + \
            (8 if self._layout[2] else 0)
        node_file = self._file(self.generation, p, "node")
        sizes = self._records[p]
        # Routed nodes of the type the file holds go back where they were read (a page-cache copy; a
        # new file costs fresh pages: 0.15 s against 0.03 s for 100M two-byte nodes).  A read stopped
        # half-way leaves each row at its old node or its routed one, both on its path: routing from
        # either reaches the same node.  A change of type writes a new file, swapped in at the end.
        in_place = update_nodes and back == held
        with contextlib.ExitStack() as files:
            data = files.enter_context(open(self._file(self.generation, p, "rows"), "rb", buffering=0))
            nodes = files.enter_context(open(node_file, "r+b" if in_place else "rb", buffering=0))
            routed = files.enter_context(open(node_file + ".next", "wb")) \
                if update_nodes and not in_place else None
            node_at = 0  # byte of the next block's nodes in the node file
            narrow = {}  # buffers of columns stored narrower than the blocks hold them
            try:
                for r, k in runs_up_to(sizes, batch_size):
                    n = sum(sizes[r:k])
                    block = self._new_block(n, slot_type, keyed_as == "both")
                    if held == block.node.dtype:
                        _fill(nodes, block.node)
                    else:  # narrower on disk: read, then widened
                        narrow_nodes = np.empty(n, held)
                        _fill(nodes, narrow_nodes)
                        block.node[:] = narrow_nodes
                    wanted = None if columns_for is None else columns_for(block.node)
                    key_at = np.full((k - r, self.n_attributes), -1, np.int64) if keyed_as == "bins" else None
                    skipped = self._read_records(data, sizes[r:k], goes, wanted, block, key_at, narrow)
                    if key_at is not None:
                        block.keys = SpilledKeys(data.fileno(), np.cumsum([0] + sizes[r:k - 1]), key_at)
                    self.bytes_read += n * (record_row + held.itemsize) - skipped
                    raise_pending()  # a stop request a finaliser swallowed ends the fit here
                    yield block
                    if in_place:
                        _write_at(nodes, block.node if held == block.node.dtype else block.node.astype(held), node_at)
                    elif routed is not None:
                        routed.write(block.node.data if back == block.node.dtype else block.node.astype(back).data)
                    node_at += n * held.itemsize
            except BaseException:
                if routed is not None:
                    routed.close()
                    os.remove(node_file + ".next")
                raise
        if routed is not None:
            swap_in(node_file + ".next", node_file)
        if update_nodes:
            self._node_types[p] = back

    def in_row_order(self, batch_size: int) -> Iterator[tuple[int, RowBlock]]:
        """``(first_row, rows)`` of a folder written in row order to partition 0 (a forest's, a boosting
        store's), read without writing the nodes back."""
        first = 0
        for rows in self.read([0], batch_size, update_nodes=False):
            yield first, rows
            first += len(rows)

    def report(self, stats) -> None:
        """Copy this folder's reads and bytes into growth's statistics (``spill_reads``, ``spill_bytes``,
        ``spill_bytes_read``)."""
        stats.spill_reads, stats.spill_bytes, stats.spill_bytes_read = self.reads, self.bytes_written, self.bytes_read

    def rows_in(self, parts) -> int:
        return sum(sum(self._records[p]) for p in parts if p in self.parts)

    def remove(self) -> None:
        self._behind.close()
        for files in self._writing.values():
            for f in files[:2]:
                f.close()
        self._writing = {}
        shutil.rmtree(self.root, ignore_errors=True)
        self._signals.close()


@dataclass(frozen=True)
class SpilledKeys:
    """Where the keys of a block read as bins (:meth:`Spill.read` with ``keyed_as="bins"``) are in its
    rows file (open as ``fileno`` while the block is read): record ``m`` of the block starts at block
    row ``first_row[m]``, and its column of attribute ``a``'s keys (int64) at byte ``key_at[m, a]``
    of the file (-1: not keyed)."""

    fileno: int
    first_row: np.ndarray
    key_at: np.ndarray

    def fetch(self, rows: np.ndarray, attributes: np.ndarray) -> np.ndarray:
        """The keys of the block's ``rows`` (ascending), each of its own attribute (``attributes``):
        read where they lie, a few rows at a time (a split's open bin), never the whole column.  The
        file's span holding them is mapped for this call only: pages a mapping keeps count in the
        process's resident memory (a 100M-row fit's peak went from 0.9 to 2.3 GB with one mapping
        kept for a partition's read)."""
        if not len(rows):
            return np.zeros(0, np.int64)
        m = np.searchsorted(self.first_row, rows, side="right") - 1
        column = self.key_at[m, attributes]
        if column.min() < 0:
            raise AssertionError("keys asked of a column that holds none")
        at = column + (rows - self.first_row[m]) * 8
        first = int(at.min()) // mmap.ALLOCATIONGRANULARITY * mmap.ALLOCATIONGRANULARITY
        span = mmap.mmap(self.fileno, int(at.max()) + 8 - first, offset=first, access=mmap.ACCESS_READ)
        try:
            data = np.frombuffer(span, np.uint8)
            keys = data[(at - first)[:, None] + np.arange(8)]  # a copy: nothing keeps the mapping
            del data
        finally:
            span.close()
        return keys.view("<i8").reshape(-1)


def _write_at(f, values: np.ndarray, at: int) -> None:
    """Write ``values`` (contiguous) over the bytes of ``f`` from ``at``, leaving its read position."""
    view = memoryview(values).cast("B")
    done = 0
    while done < len(view):
        done += os.pwrite(f.fileno(), view[done:], at + done)


def _fill(f, out: np.ndarray) -> None:
    """Read exactly ``out.nbytes`` bytes of ``f`` into ``out`` (contiguous)."""
    view = memoryview(out).cast("B")
    done = 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            raise OSError(f"spill file {f.name!r} ended early")
        done += got
