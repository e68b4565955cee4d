"""What a level of growth counts in each read: the attribute groups (RF-Vertical), the families of
frontier nodes packed into passes (sibling subtraction), the spilled nodes loaded into memory and
the nodes whose rows RF-Hybrid pulls into memory.  Pure planning: nothing here reads rows."""
from __future__ import annotations

import numpy as np

from .count_bins import CountedSlots, counted_slots
from .errors import BudgetError
from .nodes import Nodes
from .schema import Schema
from .supply import RowSupply


def group_bytes(offsets: np.ndarray, attrs: np.ndarray, n_channels: int) -> int:
    """Bytes of one node's AVC-group over ``attrs``, with the split search's scratch."""
    sizes = offsets[attrs + 1] - offsets[attrs]
    return int(sizes.sum()) * n_channels * 8 + int(sizes.max()) * 8


def attribute_groups(schema: Schema, offsets: np.ndarray, n_channels: int, avc_budget: int,
                     vertical: bool) -> list[np.ndarray]:
    """The attributes counted together in one pass, in index order: all of them while one node's
    AVC-group fits the AVC budget; else (RF-Vertical) groups that each fit, every one holding the
    attribute with the fewest slots (the *lead*, :func:`lead_of`), whose slots give the node's
    class totals the same way in every group.  ``offsets``: each attribute's counted slots in an
    AVC-group (:meth:`rainforest.count_bins.CountedSlots.offsets`)."""
    everything = np.arange(len(schema.attributes))
    need = group_bytes(offsets, everything, n_channels)
    if need <= avc_budget:
        return [everything]
    if not vertical:
        raise BudgetError(
            f"memory budget too small: one node's AVC-group needs {need:,} bytes ({int(offsets[-1]):,} value slots "
            f"x {n_channels} channels) and the AVC half of the budget is {avc_budget:,}; raise memory_budget, "
            f"use binned mode (max_bins) or algorithm='hybrid' (RF-Vertical)")
    lead = int(np.argmin(np.diff(offsets)))
    groups, current = [], []
    for a in everything:
        if a == lead:
            continue
        if current and group_bytes(offsets, np.array(sorted(current + [a, lead])), n_channels) > avc_budget:
            groups.append(np.array(sorted(current + [lead])))
            current = []
        current.append(a)
    groups.append(np.array(sorted(current + [lead])))
    for g in groups:
        if group_bytes(offsets, g, n_channels) > avc_budget:
            big = max(g, key=lambda a: offsets[a + 1] - offsets[a])
            raise BudgetError(
                f"memory budget too small even for RF-Vertical: attribute {schema.attributes[big].name!r} alone "
                f"has {int(offsets[big + 1] - offsets[big]):,} value slots, which need "
                f"{group_bytes(offsets, g, n_channels):,} bytes per node (the AVC half of the budget "
                f"is {avc_budget:,}); raise memory_budget or use binned mode (max_bins)")
    return groups


def lead_of(attrs: np.ndarray, offsets: np.ndarray) -> int:
    """Index in ``attrs`` of the attribute whose slots give the class totals: the one with the
    fewest slots (the first such), the same attribute in every RF-Vertical group."""
    return int(np.argmin(offsets[attrs + 1] - offsets[attrs]))


def families(frontier: list[int], derived: dict) -> list[list[int]]:
    """Frontier nodes grouped so that a derived child comes last, after the siblings it needs."""
    group_of = {}
    for child, (_, siblings) in derived.items():
        group = siblings + [child]
        for n in group:
            group_of[n] = group
    groups, seen = [], set()
    for n in frontier:
        if n not in seen:
            group = group_of.get(n, [n])
            groups.append(group)
            seen.update(group)
    return groups


def pack_families(groups: list[list[int]], per_pass: int):
    """Chunks of whole families holding at most ``per_pass`` nodes (no family is larger)."""
    chunk, size = [], 0
    for g in groups:
        if chunk and size + len(g) > per_pass:
            yield chunk
            chunk, size = [], 0
        chunk.append(g)
        size += len(g)
    if chunk:
        yield chunk


def spilled_loads(chunks: list, in_memory: set, supply: RowSupply, rows_of: list, room: int) -> tuple[list, list]:
    """Take the spilled frontier nodes counted on their own (no family) whose rows fit ``room`` out of
    ``chunks``; returns the chunks left and the loads: those nodes in spill-partition order, packed
    so that a load holds at most ``room`` rows and reads each partition once."""
    loadable = [g[0] for c in chunks for g in c if len(g) == 1 and g[0] not in in_memory and supply.spilled(g)
                and rows_of[g[0]] <= room]
    if not loadable:
        return chunks, []
    chosen = set(loadable)
    rest = [c for c in ([g for g in c if not (len(g) == 1 and g[0] in chosen)] for c in chunks) if c]
    loads, load, size = [], [], 0
    for n in sorted(loadable, key=lambda n: (supply.part_of[n], n)):
        if load and size + rows_of[n] > room:
            loads.append(load)
            load, size = [], 0
        load.append(n)
        size += rows_of[n]
    return rest, loads + [load]


def families_to_pull(nodes: Nodes, frontier: list[int], in_memory: set, room_rows: int, max_depth) -> list[int]:
    """The frontier nodes not yet in memory whose subtrees go on growing, if all their rows fit the
    room left: then every later level is counted in memory.  Keeping only some would add work (the
    others still need a pass per level) without saving a pass."""
    pull = [n for n in frontier if n not in in_memory and nodes.depth[n] + 1 < max_depth]
    return pull if pull and sum(nodes.n_node_samples[n] for n in pull) <= room_rows else []


SMALL_EXACT_ROWS = 1 << 19  # up to here, rows kept in memory are counted faster one slot per value


def bins_allowed(schema: Schema, class_weight: np.ndarray | None, source) -> bool:
    """Whether exact mode may count wide attributes in bins and gather candidate values
    (:func:`counted_slots_for`, the forest's :func:`rainforest.forest_exact.forest_counted_slots`): not with
    fractional sample or class weights, nor for a regressor (bins would change the order of their sums),
    nor over rows that must stay in a database."""
    fractional = (schema.weight is not None and schema.fractional_weights is not False) or (
        class_weight is not None and bool(np.any(class_weight != np.floor(class_weight)))) or schema.label.regression
    return not (fractional or (getattr(source, "transfer_mode", None) is not None
                               and getattr(source, "distributed", False)))


def counted_slots_for(supply: RowSupply, schema: Schema, params, class_weight: np.ndarray | None, n_channels: int,
                      avc_budget: int, kept_rows: int = 0) -> CountedSlots:
    """What the AVC-groups count (:mod:`rainforest.count_bins`): exact mode's wide numeric attributes in
    bins of ranks, whose candidate bins' values a second read of each level's rows gathers, where
    that read is cheap: rows kept in memory, spilled (RF-Write) or kept by the workers.  Where every
    read is a pass over the source (``algorithm="read"`` or ``"vertical"``), only when one node's
    AVC-group over one slot per value does not fit the budget (two passes a level, where RF-Vertical
    takes one per attribute group and RF-Read refuses).  Rows that must stay in a database (SQL,
    ``transfer="aggregates"``) are counted one slot per value: gathering would stream them out.

    Bins change the order in which a node's weights are added (a bin's sum, then the bins'), which
    leaves sums of whole numbers as they are but not others: with fractional sample or class weights,
    and for a regressor (sums of its target), exact mode counts one slot per value, so that its trees
    keep their floats, bit for bit.

    Small data (at most :data:`SMALL_EXACT_ROWS` rows, all of which fit ``kept_rows``, the rows
    RF-Hybrid keeps in memory) is counted one slot per value too, where its AVC-group fits the
    budget: nodes counted from kept rows then get compact AVC-groups over their own values
    (:mod:`rainforest.compact`), faster than two reads a level below about half a million rows
    (Agrawal F7, depth 10: 200k rows 0.44 s against 0.78 s; 500k 1.05 s against 1.15 s; 1M 2.28 s
    against 1.94 s)."""
    source = supply.source
    if not bins_allowed(schema, class_weight, source):
        return counted_slots(schema, None)
    binned = counted_slots(schema, params.exact_bins)
    if not binned.binned.any():
        return binned
    small = params.compact and supply.n_rows <= min(SMALL_EXACT_ROWS, kept_rows)
    rereads = params.write or (params.hybrid and getattr(source, "keeps_partitions", False))
    if small or not rereads:
        dense = counted_slots(schema, None)
        if group_bytes(dense.offsets(), np.arange(len(schema.attributes)), n_channels) <= avc_budget:
            return dense
    return binned


def pack_jobs(job_bytes: np.ndarray, cap: int):
    """Consecutive ranges of jobs whose AVC-groups together fit ``cap`` bytes."""
    lo, used = 0, 0
    for j, b in enumerate(job_bytes):
        if j > lo and used + b > cap:
            yield lo, j
            lo, used = j, 0
        used += int(b)
    if lo < len(job_bytes):
        yield lo, len(job_bytes)
