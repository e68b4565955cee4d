"""Pushdown's node tables: each row's encoded slots and tree node, kept in the database from level to level.

A level's query over a SQL source (``transfer="aggregates"``, :mod:`rainforest.pushdown`) that
routed every row from the root would compile the whole tree so far into a ``CASE`` and search
each binned value's bin again, for every row of the source, at every level.  Instead, in the
manner of JoinBoost's partitions, the rows are encoded once and kept in a temporary table of
the fit (:mod:`rainforest.storage.temp_tables`):

* the root's pass makes it from the source: per row, each attribute's slot ``e{j}`` (a bin's
  number, as ``SMALLINT``; an exact value or a category as it is), the class or target ``y``,
  the weight ``w`` (rows of weight 0 left out), the row identity ``rid`` where sums follow the
  row order (a regressor's), and ``node`` = 0;
* a later level's ``GROUP BY`` reads the narrow table, never the source: its rows are routed on
  from the node they stand at by the splits made since (a binary search over the node numbers,
  then one small ``CASE`` per node that split), and the source's pass count (``n_passes_``)
  counts only the root's;
* once the frontier lies more than :data:`REROUTE_LEVELS` below the table's nodes, the rows are
  first moved into a new table, routed so, leaving out those that reached a node counted no more
  (a leaf), so the tables shrink as the tree grows; the last table is dropped.

The rows, slots and classes are those the from-root query computes, so the counts, and the
tree, are the same, JSON for JSON.  Where the database refuses temporary tables, or a pass
comes from outside a fit, the level's query routes from the root as before.
"""
from __future__ import annotations

import numpy as np

from .schema import CATEGORICAL, Schema
from .sql import Dialect, category_branches, numeric_sql, routing_cases, search_case, slot_sql

# A level's query routes the table's rows from their nodes (a CASE over the splits made since) while those
# lie at most this many levels above the frontier; deeper, the rows are moved down into a new table first.
# Writing a table costs about what routing saves (Agrawal F7, 1M rows, depth 10, levels 1-9: 9.0 s moving
# them every level, 6.6 s never, 6.5 s every 4 levels on PostgreSQL; 2.9 s never against 4.0 s every level
# on DuckDB); a new table drops the rows of nodes done, so it pays where many rows reach leaves early.
REROUTE_LEVELS = 4


def encoded_columns(schema: Schema, used, arrow_schema, d: Dialect) -> list[str]:
    """Select-list items naming attribute ``j``'s value ``a{j}``: numeric as float64 (NULL when
    missing), categorical as stored."""
    items = []
    for j in used:
        a = schema.attributes[j]
        if a.kind == CATEGORICAL:
            items.append(f"{d.ident(a.name)} AS a{j}")
        else:
            items.append(f"{numeric_sql(a.name, arrow_schema.field(a.name).type, d)} AS a{j}")
    return items


def slot_items(schema: Schema, used, d: Dialect, prefix: str) -> list[str]:
    """Select-list items naming attribute ``j``'s AVC key ``{prefix}{j}`` from its value ``a{j}``: a bin's
    number (NULL when missing), or the exact value or category itself (:func:`rainforest.pushdown` finds
    its slot in the result)."""
    items = []
    for j in used:
        a = schema.attributes[j]
        if a.kind == CATEGORICAL or a.exact:
            items.append(f"a{j} AS {prefix}{j}")
        else:
            typ = "SMALLINT" if len(a.cuts) < 32767 else "INTEGER"
            items.append(f"CAST(CASE WHEN a{j} IS NULL THEN NULL ELSE {slot_sql(f'a{j}', a.cuts, d)} END AS {typ}) "
                         f"AS {prefix}{j}")
    return items


def split_conditions(task, k: int, d: Dialect, encoded: bool = False):
    """Node ``k``'s split in the growing tree's slot routing, as ``(conditions, default)``, over the
    values ``a{f}`` or (``encoded``) a node table's keys ``e{f}``."""
    feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots = task.routing
    f = int(feature[k])
    a = task.schema.attributes[f]
    x = f"e{f}" if encoded else f"a{f}"
    if branch_offset[k] >= 0:
        off, m = int(branch_offset[k]), int(n_slots[f])
        return category_branches(x, a.categories, slot_branch[off:off + m], int(slot_branch[off + m]), d)
    conditions = [(f"{x} IS NULL", int(missing_branch[k]))]
    if slot_cut[k] < len(a.cuts):  # slots up to slot_cut: values up to that cut (exact value or bin edge)
        cut = str(int(slot_cut[k])) if encoded and not a.exact else d.double_literal(float(a.cuts[slot_cut[k]]))
        conditions.append((f"{x} <= {cut}", 0))
        return conditions, 1
    return conditions, 0  # every present value goes to the first child


def routing_children(task) -> np.ndarray:
    """The number of children of each node of the task's routing (0: not split)."""
    feature, first_child, slot_branch, branch_offset, _, _, n_slots = task.routing
    out = np.where(first_child >= 0, 2, 0).astype(np.int64)
    for k in np.flatnonzero(branch_offset >= 0):
        m = int(n_slots[feature[k]])
        out[k] = int(np.max(slot_branch[branch_offset[k]:branch_offset[k] + m + 1])) + 1
    return out


def extends(old: tuple | None, new: tuple) -> bool:
    """Whether the slot routing ``new`` is ``old`` grown further: every node split in ``old`` is split the
    same way in ``new`` (nodes keep their numbers as a tree grows), so rows routed by ``old`` stand
    where ``new`` would have put them, at ``old``'s nodes.  ``old`` None: the tree that is only its
    root, which every routing extends."""
    if old is None:
        return True
    (of, ofc, osb, obo, osc, omb, ons), (nf, nfc, nsb, nbo, nsc, nmb, nns) = old, new
    n = len(of)
    if len(nf) < n or not np.array_equal(ons, nns) or len(nsb) < len(osb) \
            or not np.array_equal(nsb[:len(osb)], osb):
        return False
    split = ofc >= 0
    return all(np.array_equal(b[:n][split], a[split]) for a, b in ((of, nf), (ofc, nfc), (obo, nbo), (osc, nsc),
                                                                    (omb, nmb)))


def source_rows_sql(task, relation, d: Dialect, rid: bool) -> str:
    """The root's node table: every counted row of the source, encoded, at node 0."""
    schema = task.schema
    everything = range(len(schema.attributes))
    inner = encoded_columns(schema, everything, relation.schema, d) + [f"{label_sql(schema, d)} AS y"]
    extra = ""
    if schema.weight is not None:
        inner.append(f"CAST({d.ident(schema.weight)} AS {d.double}) AS w")
        extra += ", w"
    if rid:
        inner.append(f"{relation.row_id} AS rid")
        extra += ", rid"
    return (f"SELECT {', '.join(slot_items(schema, everything, d, 'e'))}, y{extra}, CAST(0 AS INTEGER) AS node "
            f"FROM (SELECT {', '.join(inner)} FROM {relation.from_sql}) AS e"
            + (" WHERE w <> 0" if schema.weight is not None else ""))


def label_sql(schema: Schema, d: Dialect) -> str:
    """The class as stored, or a regressor's target less its shift (as rows hold it: Label.codes)."""
    if schema.label.regression:
        return f"CAST({d.ident(schema.label.name)} AS {d.double}) - {d.double_literal(schema.label.shift)}"
    return d.ident(schema.label.name)


def node_table(task, relation, d: Dialect, rid: bool) -> tuple[str, np.ndarray, bool, str] | None:
    """The fit's node table for this pass of ``task`` (an :class:`rainforest.avc.AvcPass`), made or
    moved on as needed: ``(quoted name, the nodes its rows stand at, whether it was made from the
    source now, the SQL of a row's node at this pass)``; None where there is none to be had (no fit's
    tables, refused, or a pass that does not say which nodes still grow)."""
    temp = relation.temp
    routing = task.routing
    if temp is None or temp.refused is not None or (task.alive is None and len(routing[0]) > 1):
        return None
    memo = temp.memo
    key = source_rows_sql(task, relation, d, rid)
    made = memo.get("key") != key or not extends(memo["routing"], routing)
    if made:  # the first pass of a tree (or of other rows): the source's rows, encoded, at the root
        if "table" in memo:
            temp.drop(memo["table"])
        memo.clear()
        name = temp.create(key, serial=rid)
        if name is None:
            return None
        memo.update(key=key, table=name, routing=None, held=np.zeros(1, np.int64))  # every row at the root
    alive = task.alive if task.alive is not None else task.node_pos >= 0
    held = memo["held"]
    n_children = routing_children(task)
    reach = routing_cases(held, routing[1], n_children, lambda k: split_conditions(task, k, d, True),
                          lambda k: str(k) if alive[k] else "NULL", alive)
    moved = {int(k): sql for k, sql in zip(held, reach) if sql != str(k)}
    node = "node"
    if moved:  # rows of nodes split since the table was made go down; those of nodes done are left out
        stay = np.array([k for k, sql in zip(held, reach) if sql != "NULL"], np.int64)
        # every row stands at one of the held nodes: a search over all of them (a row of a node done: NULL)
        # (typed: a search whose every branch is NULL would be text to PostgreSQL)
        node = search_case("node", held, lambda k: "CAST(NULL AS INTEGER)" if moved.get(k) == "NULL"
                           else moved.get(k, "node"))
        if _descent(routing[1], n_children, held, alive) > REROUTE_LEVELS:  # into a new table, then counted
            columns = ", ".join([f"e{j}" for j in range(len(task.schema.attributes))] + ["y"]
                                + (["w"] if task.schema.weight is not None else []) + (["rid"] if rid else []))
            keep = " WHERE FALSE" if not len(stay) else "" if len(stay) == len(held) else \
                f" WHERE node IN ({', '.join(map(str, stay))})"  # (searched over the held nodes all the same)
            name = temp.create(f"SELECT {columns}, node FROM (SELECT {columns}, {node} AS node FROM {memo['table']}"
                               f"{keep}{d.fence}) AS t WHERE node IS NOT NULL", serial=rid)
            if name is None:
                return None
            temp.drop(memo["table"])
            memo.update(table=name, routing=tuple(np.array(a, copy=True) for a in routing),
                        held=np.flatnonzero(alive & (routing[1] < 0)).astype(np.int64))
            node = "node"
    if not made:
        temp.reads += 1
    return memo["table"], memo["held"], made, node


def _descent(first_child, n_children, held, alive) -> int:
    """How many levels below the shallowest of the ``held`` nodes the deepest ``alive`` node lies."""
    depth = np.zeros(len(first_child), np.int64)
    for k in np.flatnonzero(first_child >= 0):  # children follow their parents
        depth[first_child[k]:first_child[k] + n_children[k]] = depth[k] + 1
    return int(depth[alive].max() - depth[held].min()) if alive.any() else 0
