"""Where the rows of a level's frontier nodes come from: memory (RF-Hybrid), the spill folder
(RF-Write) once written, else the data source."""
from __future__ import annotations

from dataclasses import dataclass, field

from .avc import AvcPass
from .meter import PassMeter
from .rows import KeptRows, descend, label_dtype, slot_dtype
from .schema import Schema
from .spill import Spill


@dataclass
class RowSupply:
    """Where the rows of frontier nodes come from: memory (RF-Hybrid), the spill folder (RF-Write)
    once written, else the data source; every read goes through :meth:`count`."""

    source: object
    columns: list
    batch_size: int
    verbose: int
    n_rows: int
    kept: KeptRows | None = None
    spill: Spill | None = None
    part_of: dict = field(default_factory=dict)  # tree node -> spill partition holding its rows
    store: object = None  # the source's partition store (a Dask cluster's workers), if it keeps one

    def count(self, task: AvcPass, label: str, from_memory: bool, nodes: list, level: int) -> tuple:
        """Run ``task`` over the rows of ``nodes``; returns its state and whether the data was read."""
        if from_memory:
            meter = PassMeter(f"level {level}, rows kept in memory, {label}", self.verbose, self.kept.size)
            state = task.count_kept(task.new_state(), self.kept)
            meter(self.kept.size)
            meter.done()
            return state, False
        if self.spill is not None and self.spill.generation >= 0:
            parts = {self.part_of[n] for n in nodes} if task.spill is None else self.spill.parts
            meter = PassMeter(f"level {level}, spill partitions {sorted(parts)}, {label}", self.verbose,
                              self.spill.rows_in(parts))
            state = task.new_state()
            # a read that writes a new generation leaves the current one's nodes as they were; one that
            # routes no row further than the level's count did (a gathering) has nothing to write back
            update = task.spill is None and getattr(task, "routes_rows", True)
            routing = getattr(task, "routing", None)  # the tree's nodes bound those written back
            # keyed columns as the task reads them (where the folder has bins): a count that routes rows
            # as their bins, a gathering with their bins beside the keys
            keyed_as = getattr(task, "spilled_keys", "keys")
            for rows in self.spill.read(parts, self.batch_size, update_nodes=update,
                                        columns_for=getattr(task, "columns_for", None),
                                        n_tree_nodes=None if routing is None else len(routing[1]), keyed_as=keyed_as):
                state = task.count(state, rows)
                meter(len(rows))
            meter.done()
            return state, False
        where = "the local copy of the rows" if self.source.copied(self.columns) else \
            f"pass {self.source.n_passes + 1} over the data"
        meter = PassMeter(f"level {level}, {where}, {label}", self.verbose, self.n_rows)
        before = self.source.n_passes
        state = self.source.run_pass(task, self.columns, self.batch_size, meter)
        read = self.source.n_passes > before  # a pass over what the source keeps is not one (workers, node table)
        if not read and not self.source.copied(self.columns):
            meter.label = f"level {level}, {self.source.kept_rows_name}, {label}"
        meter.done()
        return state, read

    def spilled(self, nodes: list) -> bool:
        """Whether the rows of every node in ``nodes`` are in the spill folder (and only there); with no
        nodes, whether there is a spill folder to read."""
        return self.spill is not None and self.spill.generation >= 0 and all(n in self.part_of for n in nodes)

    def load(self, nodes: list, rows_of: list, routing: tuple, n_tree_nodes: int, schema: Schema, weighted: bool,
             level: int) -> KeptRows:
        """The rows of ``nodes`` read from their spill partitions into memory, grouped by node in row
        order, as RF-Hybrid keeps rows: one read of the partitions counts every attribute of every
        node (compact AVC-groups) where dense ones would take a read per node and attribute group."""
        kept = KeptRows(nodes, rows_of, n_tree_nodes, len(schema.attributes), slot_dtype(schema),
                        label_dtype(schema.label), weighted)
        parts = {self.part_of[n] for n in nodes}
        meter = PassMeter(f"level {level}, spill partitions {sorted(parts)}, {len(nodes)} node(s) loaded and "
                          f"counted in memory", self.verbose, int(sum(rows_of)))
        for rows in self.spill.read(parts, self.batch_size, n_tree_nodes=n_tree_nodes):
            descend(rows.S, rows.node, *routing)
            kept.add(rows)
            meter(len(rows))
        meter.done()
        return kept
