"""Passes pushed down into a database: one aggregate query per pass, and its result as the pass's state.

A SQL source (:mod:`rainforest.storage.sql`) asks a pass's task for an :class:`AggregateQuery` over its
relation; the database answers with aggregates only (AVC-groups, value counts, a bounded
sample), which become exactly the state that folding the rows would have built:

* :func:`avc_query`: the AVC-groups of the frontier nodes, ``GROUPING SETS`` counting
  ``(node, class, slot)`` per attribute in one scan.  Within a fit, the scan reads the fit's
  node table (:mod:`rainforest.node_tables`): each row's slots and node, encoded once and moved
  down level by level.  Otherwise each row's node is a ``CASE`` expression compiled from the
  tree so far, and each attribute's slot a SQL expression from the same encoders (a bin's
  binary search, an exact value, a category).
* :func:`profile_query`: the profiling pass (row and class counts, categories, numeric
  distinct values, and in binned mode the values of the rows whose :mod:`rainforest.rowhash`
  is among the smallest, the sample the Parquet source draws too).

Unit weights give integer counts, so pushed-down and folded passes are equal bit for bit.
Weighted sums are added in the database's order, so with fractional weights they may differ
in the last bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa

from .errors import DataError
from .profile_data import ColumnProfile, Profile, midpoint
from .rowhash import row_hash_sql
from .schema import CATEGORICAL, check_numeric_target, check_weight_total
from .node_tables import encoded_columns, label_sql, node_table, routing_children, slot_items, split_conditions
from .sql import Dialect, dialect_of, numeric_sql, routing_case
from .target_parts import parts_sql


@dataclass
class AggregateQuery:
    """The SQL of one pass and how its result (an Arrow table) becomes the pass's state.
    ``row_id``: the query orders rows by their identity (see :class:`rainforest.storage.sql.SqlRelation`).
    ``instead``: set by ``finish`` when the result cannot give the state (``finish`` then returns
    None): the query to run in its place, a second scan of the table (:mod:`rainforest.bayes_sql`)."""

    sql: str
    finish: Callable[[pa.Table], object]
    row_id: bool = False
    rows: int = 0  # rows the pass covered, known once finished (for the progress log)
    instead: "AggregateQuery | None" = None
    reads_source: bool = True  # False: it reads a temporary table of the fit's (rainforest.node_tables)
    work_bytes: int = 0  # memory its sorts and hash tables need to run in memory, or 0 (the engine's own)


def sorted_row_bytes(columns: int) -> int:
    """Memory a database's sort takes per row of ``columns`` 8-byte values, with room to spare
    (PostgreSQL's top-N sort of the 200,000-row sample of 10 columns took 28-60 MB, measured)."""
    return 4 * 8 * columns + 128


GROUP_BYTES = 100  # a group's memory in a database's hash table (key, count, sums), with room to spare
GUESSED_VALUES = 256  # a planner's guess of a computed column's distinct values (PostgreSQL's: 200)


def grouping_bytes(nodes: int, labels: int, slots: list[int]) -> int:
    """Memory to hash a level's GROUPING SETS ``(node, y, slot)``, one set per attribute of ``slots`` values.
    The groups are at most nodes x labels x slots; a planner that cannot see into the routing ``CASE``
    guesses its distinct values, and sorts every row instead of hashing when the guess does not fit
    (PostgreSQL at its default 4 MB: level 1 of 10M rows took 11.7 s sorted, 5.6 s hashed)."""
    return GROUP_BYTES * max(nodes, GUESSED_VALUES) * labels * sum(slots)


def grouping_index(names: list[str], d: Dialect) -> str:
    """Which grouping set a result row belongs to: the index of the one grouped column in ``names``."""
    whens = " ".join(f"WHEN GROUPING({n}) = 0 THEN {i}" for i, n in enumerate(names))
    return f"CASE {whens} END"


def _slots(column: pa.Array, attribute, n_slots: int) -> np.ndarray:
    """The AVC slot of each returned key: a category's code, an exact value's rank, a bin (missing: last)."""
    if pa.types.is_null(column.type):
        return np.full(len(column), n_slots, np.int64)
    if attribute.kind == CATEGORICAL:
        codes = attribute.category_codes(column)
        return np.where(np.isnan(codes), n_slots, np.minimum(np.nan_to_num(codes, nan=n_slots), n_slots)).astype(np.int64)
    x = column.to_numpy(zero_copy_only=False).astype(np.float64)
    missing = np.isnan(x)
    if attribute.exact:
        slot = np.searchsorted(attribute.cuts, np.where(missing, 0.0, x), side="left")
    else:  # the database found the bin
        slot = np.where(missing, 0, x).astype(np.int64)
    return np.where(missing, n_slots, slot).astype(np.int64)


# -- AVC-groups of frontier nodes -----------------------------------------------------------

def avc_query(task, relation) -> AggregateQuery | None:
    """The aggregate query of an :class:`rainforest.avc.AvcPass`, or None when the pass must see
    the rows themselves (it keeps or spills them)."""
    if task.keep_into is not None or task.spill is not None:
        return None
    d = dialect_of(relation.dialect)
    schema = task.schema
    regression = schema.label.regression
    counted = [int(j) for j in task.attrs]
    weighted_column = schema.weight is not None
    # A regressor's target less its shift (as rows hold it: Label.codes), summed per cell, not grouped.
    # With unit weights in exact parts (rainforest/target_parts.py), computed here by the kernel's float
    # operations: their sums are exact in any order.  Otherwise in row order (sum(... ORDER BY rid)): the
    # floats the row store's kernels add, in their order.  Either way the tree is the Parquet source's bit
    # for bit, and the same at every run (a database's parallel aggregation adds in no fixed order).
    parts = len(task.grid) > 0
    ordered = regression and not parts
    if parts:
        y_parts = parts_sql("y", tuple(task.grid), d.double_literal)
    carried = f"y{', w' if weighted_column else ''}{', rid' if ordered else ''}"
    table = node_table(task, relation, d, ordered)
    wanted = task.node_pos >= 0
    if table is not None:  # the fit's node table: encoded rows, at their nodes or routed on from them
        name, held, reads_source, node = table
        counted_at = "" if node == "node" and wanted[held].all() else \
            f" WHERE node IN ({', '.join(map(str, np.flatnonzero(wanted)))})"
        rows = (f"SELECT * FROM (SELECT {node} AS node, {carried}, {', '.join(f'e{j} AS s{j}' for j in counted)} "
                f"FROM {name}{d.fence if node != 'node' else ''}) AS r0{counted_at}")  # the CASE once a row
    else:  # every row of the source, routed from the root and encoded here
        reads_source = True
        feature, first_child = task.routing[0], task.routing[1]
        split_on = {int(f) for f, c in zip(feature, first_child) if c >= 0}
        used = sorted(set(counted) | split_on)
        inner = encoded_columns(schema, used, relation.schema, d) + [f"{label_sql(schema, d)} AS y"] \
            + ([f"{relation.row_id} AS rid"] if ordered else [])
        if weighted_column:
            inner.append(f"CAST({d.ident(schema.weight)} AS {d.double}) AS w")
        node = routing_case(0, first_child, routing_children(task), lambda k: split_conditions(task, k, d),
                            lambda k: str(k) if wanted[k] else "NULL", wanted)
        rows = (f"SELECT * FROM (SELECT {node} AS node, {carried}, {', '.join(slot_items(schema, counted, d, 's'))} "
                f"FROM (SELECT {', '.join(inner)} FROM {relation.from_sql}) AS e) AS r0 "
                f"WHERE node IS NOT NULL{' AND w <> 0' if weighted_column else ''}")
    keys = [f"s{j}" for j in counted]
    w_y = "w * y" if weighted_column else "y"  # scikit-learn's order: w y, then (w y) y
    in_order = " ORDER BY rid" if ordered else ""
    if parts:
        sums = "".join(f", sum({p}) AS p{k}" for k, p in enumerate(y_parts))
    else:
        sums = (f", sum({w_y}{in_order}) AS wy, sum({w_y} * y{in_order}) AS wyy" if regression else "")
    by_y = "" if regression else "y, "
    sql = (f"SELECT node, {'NULL AS y' if regression else 'y'}, {grouping_index(keys, d)} AS g, {', '.join(keys)}, "
           f"count(*) AS n" + (f", sum(w{in_order}) AS w" if weighted_column else "") + sums
           + f" FROM ({rows}) AS r GROUP BY GROUPING SETS ("
           + ", ".join(f"(node, {by_y}{k})" for k in keys) + ")")
    work = grouping_bytes(int(wanted.sum()), 1 if regression else len(schema.label.classes),
                          [schema.attributes[j].n_slots + 1 for j in counted])
    query = AggregateQuery(sql, None, row_id=ordered, reads_source=reads_source, work_bytes=work)
    group_offsets = task.group_offsets()

    def finish(table: pa.Table):
        state = task.new_state()
        n_classes = task.n_channels - 1 if task.weighted else task.n_channels  # the row count comes last
        if table.num_rows == 0:
            return state
        g = table.column("g").to_numpy(zero_copy_only=False).astype(np.int64)
        pos = task.node_pos[table.column("node").to_numpy(zero_copy_only=False).astype(np.int64)]
        n = table.column("n").to_numpy(zero_copy_only=False).astype(np.float64)
        w = table.column("w").to_numpy(zero_copy_only=False).astype(np.float64) if weighted_column else n
        if parts:  # a cell's channels: the four parts' sums (target_parts.split_target's), then the rows
            cells = [(k, table.column(f"p{k}").to_numpy(zero_copy_only=False).astype(np.float64)) for k in range(4)]
        elif regression:  # a cell's channels: sum w, sum w y, sum w y y (counting.add_row's)
            cells = [(0, w)] + [(k, table.column(c).to_numpy(zero_copy_only=False).astype(np.float64))
                                for k, c in ((1, "wy"), (2, "wyy"))]
        else:
            y = schema.label.codes(table.column("y"))
            if task.class_weight is not None:
                w = w * task.class_weight[y]
        for i, j in enumerate(counted):
            rows = np.flatnonzero(g == i)
            a = schema.attributes[j]
            slot = group_offsets[i] + task.counted.of(j, _slots(table.column(f"s{j}").take(pa.array(rows)), a,
                                                                a.n_slots))
            if regression:
                for channel, values in cells:
                    np.add.at(state.counts, (pos[rows], slot, np.full(len(rows), channel)), values[rows])
            else:
                np.add.at(state.counts, (pos[rows], slot, y[rows]), w[rows] if task.weighted else n[rows])
            if task.weighted:
                np.add.at(state.counts, (pos[rows], slot, np.full(len(rows), n_classes)), n[rows])
            if i == 0:
                query.rows = int(n[rows].sum())
        return state

    query.finish = finish
    return query


# -- the profiling pass -----------------------------------------------------------------------

def profile_query(task, relation) -> AggregateQuery:
    """The aggregate query of a :class:`rainforest.profile.ProfileTask`."""
    d = dialect_of(relation.dialect)
    names = list(task.kinds)
    kinds = [task.kinds[c] for c in names]
    arrow = relation.schema
    numeric = [j for j, k in enumerate(kinds) if k != CATEGORICAL]
    sampled = [] if task.exact else numeric
    enc = [f"{d.ident(task.target)} AS y"]
    for j, (c, k) in enumerate(zip(names, kinds)):
        enc.append(f"{d.ident(c)} AS a{j}" if k == CATEGORICAL else f"{numeric_sql(c, arrow.field(c).type, d)} AS a{j}")
    counted = ""  # rows of weight 0 count as absent (schema.present_rows); bad weights stay, to be refused
    if task.weight is not None:
        w = f"CAST({d.ident(task.weight)} AS {d.double})"
        enc.append(f"{w} AS w")
        counted = f" WHERE {w} IS NULL OR {w} <> 0"
    keys = [f"a{j}" for j in range(len(names))]
    b = int(task.max_bins)
    ctes, source = [], f"(SELECT {', '.join(enc)} FROM {relation.from_sql}{counted}) AS e"
    work_bytes = 0  # the sample's sort, when there is one
    if sampled:
        steps = row_hash_sql("rid", task.seed, d.xor, ("h1", "h2"))
        hashed = f"(SELECT {', '.join(enc)}, {relation.row_id} AS rid FROM {relation.from_sql}{counted}{d.fence}) AS e"
        for name, expr in steps:
            hashed = f"(SELECT *, {expr} AS {name} FROM {hashed}{d.fence}) AS {name}_"
        # the sample keeps only what its counts below read: a narrower sort (PostgreSQL's top-N sort of the
        # sample must fit its memory, see AggregateQuery.work_bytes, else it sorts every row on disk)
        kept = [f"a{j}" for j in sampled]
        ctes.append(f"s AS (SELECT {', '.join(kept)} FROM {hashed} ORDER BY hash LIMIT {int(task.sample_rows)})")
        work_bytes = int(task.sample_rows) * sorted_row_bytes(len(kept) + 1)
        # per sampled column, its distinct values in the sample with their counts (as INTEGER, so that the
        # running sums below are PostgreSQL's bigint, not its numeric: 0.3-0.7 s of 6.5 s at 1M rows) ...
        value = "CASE g " + " ".join(f"WHEN {i} THEN a{j}" for i, j in enumerate(sampled)) + " END"
        count = "CAST(count(*) AS INTEGER)" if task.sample_rows < 2**31 else "count(*)"
        ctes.append(f"c AS (SELECT g, {value} AS u, n FROM (SELECT {grouping_index([f'a{j}' for j in sampled], d)} "
                    f"AS g, {', '.join(f'a{j}' for j in sampled)}, {count} AS n FROM s "
                    f"GROUP BY GROUPING SETS ({', '.join(f'(a{j})' for j in sampled)})) AS c0)")
        # lead() ignores the frame: written with the running sum's, both are one window pass in PostgreSQL
        ctes.append("r AS (SELECT g, u, lead(u) OVER (PARTITION BY g ORDER BY u ROWS UNBOUNDED PRECEDING) AS hi, n, "
                    "sum(n) OVER (PARTITION BY g ORDER BY u ROWS UNBOUNDED PRECEDING) AS cum, "
                    "sum(n) OVER (PARTITION BY g) AS total, count(*) OVER (PARTITION BY g) AS distinct_values "
                    "FROM c WHERE u IS NOT NULL)")
        # A column whose sample already holds more than max_bins values has more in all the rows:
        # its values are not grouped (only nulls and infinities keep their own key), so the query
        # never holds a group per distinct value of a continuous column.
        ctes.append("f AS (SELECT " + ", ".join(
            f"coalesce(max(CASE WHEN g = {i} THEN distinct_values END), 0) > {b} AS many{j}"
            for i, j in enumerate(sampled)) + " FROM r)")
        collapsed = [f"CASE WHEN many{j} AND a{j} IS NOT NULL AND NOT ({d.is_inf(f'a{j}')}) THEN 0.0 ELSE a{j} END "
                     f"AS a{j}" if j in sampled else f"a{j}" for j in range(len(names))]
        # fenced: PostgreSQL's planner then has no statistics for the collapsed columns (its guess: 200
        # values), so it groups every set by hashing in one pass; it saw a continuous column's millions of
        # distinct values and sorted all rows, on disk, once for each such column (10M rows: 3 sorts, 13 s)
        source = (f"(SELECT y, {'w, ' if task.weight is not None else ''}{', '.join(collapsed)} "
                  f"FROM {source} CROSS JOIN f{d.fence}) AS e")
    key_of_group = lambda test: "CASE g " + " ".join(f"WHEN {j} THEN {test(f'a{j}', j)}" for j in range(len(names))) + " END"
    is_null = key_of_group(lambda a, j: f"({a} IS NULL)")
    is_inf = key_of_group(lambda a, j: d.is_inf(a) if kinds[j] != CATEGORICAL else "FALSE")
    bad_w = (f"(w IS NULL OR {d.is_nan('w')} OR {d.is_inf('w')} OR w < 0)" if task.weight is not None else "FALSE")
    if task.regression:  # the target's range and its bad values (null, NaN, infinite), not a group per value
        check_numeric_target(arrow.field(task.target).type, task.target, task.where)
        y_as_double = f"CAST(y AS {d.double})"
        bad_y = f"(y IS NULL OR {d.is_nan(y_as_double)} OR {d.is_inf(y_as_double)})"
        # min and max over every value: NaN is the greatest in both databases, so y_hi shows it even
        # where a Parquet file's statistics make DuckDB fold isnan() to false
        g_and_y, y_set = f"{grouping_index(keys, d)} AS g, NULL AS y", ""
        y_stats = (f", min({y_as_double}) AS y_lo, max({y_as_double}) AS y_hi, "
                   f"sum(CASE WHEN {bad_y} THEN 1 ELSE 0 END) AS bad_y")
    else:  # a group per class
        g_and_y, y_set = f"CASE WHEN GROUPING(y) = 0 THEN -1 ELSE {grouping_index(keys, d)} END AS g, y", "(y), "
        y_stats = ", NULL AS y_lo, NULL AS y_hi, 0 AS bad_y"
    grouped = (f"SELECT {g_and_y}, "
               f"{', '.join(keys)}, count(*) AS n, sum(CASE WHEN {bad_w} THEN 1 ELSE 0 END) AS bad_w, "
               f"min(CASE WHEN {bad_w} THEN {'w' if task.weight else 'NULL'} END) AS bad_w_value{y_stats} "
               f"FROM {source} GROUP BY GROUPING SETS ({y_set}{', '.join(f'({k})' for k in keys)}, ())")
    windowed = (f"SELECT *, {is_null} AS key_null, count(*) OVER (PARTITION BY g) AS groups, "
                f"sum(CASE WHEN {is_inf} THEN n ELSE 0 END) OVER (PARTITION BY g) AS infs, "
                f"sum(CASE WHEN {is_null} THEN 0 ELSE n END) OVER (PARTITION BY g) AS nonmissing, "
                f"row_number() OVER (PARTITION BY g) AS nth FROM ({grouped}) AS t")
    # binned numeric columns with more distinct values than bins send one row (their counts), not their values
    # (g NULL: the empty grouping set, with the row count and the weight check)
    few = f"g IS NULL OR g NOT IN ({', '.join(str(j) for j in sampled)}) OR groups <= {b + 1} OR nth = 1" \
        if sampled else "TRUE"
    columns = "n, groups, infs, nonmissing, bad_w, bad_w_value, key_null, NULL AS lo, NULL AS hi, y_lo, y_hi, bad_y"
    sql = f"SELECT 0 AS part, g, y, {', '.join(keys)}, {columns} FROM ({windowed}) AS t WHERE {few}"
    row_id = bool(sampled)
    if sampled:
        # ... and only the pairs of neighbours that quantile_edges cuts between: value i is cut after
        # when some target total * k / max_bins (k = 1 .. max_bins - 1) lies in (cum[i-1], cum[i]],
        # decided in integers; all of them when the sample holds at most max_bins values.  n carries
        # the sample's distinct count, which tells finish whether the values were grouped.
        first_k = f"(FLOOR(CAST((cum - n) * {b} AS {d.double}) / total) + 1)"
        sql += (f" UNION ALL SELECT 1, g, NULL, {', '.join('NULL' for _ in keys)}, distinct_values, NULL, NULL, NULL,"
                f" 0, NULL, NULL, u, hi, NULL, NULL, 0 FROM r WHERE hi IS NOT NULL AND (distinct_values <= {b} OR "
                f"({first_k} <= {b - 1} AND total * {first_k} <= cum * {b}))")
        sql = "WITH " + ", ".join(ctes) + " " + sql
    if counted:  # every row read, of weight 0 too (a forest keeps and numbers them all); last, so that
        # the other parts' types decide those of lo and hi (PostgreSQL)
        sql += (f" UNION ALL SELECT 2, NULL, NULL, {', '.join('NULL' for _ in keys)}, count(*), NULL, NULL, NULL, 0, "
                f"NULL, NULL, NULL, NULL, NULL, NULL, 0 FROM {relation.from_sql}")
    query = AggregateQuery(sql, None, row_id=row_id, work_bytes=work_bytes)

    def finish(table: pa.Table):
        p = Profile(columns={c: ColumnProfile(task.kinds[c]) for c in names})
        part = table.column("part").to_numpy(zero_copy_only=False)
        gf = table.column("g").fill_null(-2).to_numpy(zero_copy_only=False).astype(np.int64)  # -2: the empty set
        n = table.column("n").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        main = part == 0
        total = main & (gf == -2)
        p.n_rows = int(n[total].sum())
        bad = table.column("bad_w").fill_null(0).to_numpy(zero_copy_only=False)[total]
        if task.weight is not None and bad.sum() > 0:
            value = table.column("bad_w_value").to_pylist()[int(np.flatnonzero(total)[0])]
            raise DataError(f"the weight column {task.weight!r} of {task.where} has {int(bad.sum())} bad value(s), "
                            f"such as {value!r} (weights must be finite and >= 0)")
        if counted:
            check_weight_total(float(p.n_rows), task.weight, task.where)  # some row counts
            p.n_rows = int(n[part == 2].sum())
        if task.regression:  # the target's range and bad values, on the empty grouping set's row
            at = int(np.flatnonzero(total)[0])
            bad_y = int(table.column("bad_y").fill_null(0).to_numpy(zero_copy_only=False)[at])
            lo, hi = table.column("y_lo")[at].as_py(), table.column("y_hi")[at].as_py()
            if bad_y or lo is None or not (math.isfinite(lo) and math.isfinite(hi)):
                raise DataError(f"the target column {task.target!r} of {task.where} has null, NaN or infinite "
                                f"values; a regressor needs finite numbers")
            task.update_label_range(p, pa.array([lo, hi], pa.float64()))
        else:
            label_rows = np.flatnonzero(main & (gf == -1))  # one row per class
            ys = task.check_label(table.column("y").take(pa.array(label_rows)))
            p.label_counts = {v: int(c) for v, c in zip(ys.to_pylist(), n[label_rows])}
        groups = table.column("groups").to_numpy(zero_copy_only=False)
        infs = table.column("infs").to_numpy(zero_copy_only=False)
        key_null = table.column("key_null").to_numpy(zero_copy_only=False)
        nonmissing = table.column("nonmissing").to_numpy(zero_copy_only=False)
        p.sample_edges = {}
        for j, c in enumerate(names):
            cp = p.columns[c]
            rows = np.flatnonzero(main & (gf == j))
            values = table.column(f"a{j}").take(pa.array(rows))
            present = ~key_null[rows].astype(bool)
            if kinds[j] == CATEGORICAL:
                for v, k in zip(values.filter(pa.array(present)).to_pylist(), n[rows][present]):
                    cp.counts[v] = int(k)
                    cp.nonmissing += int(k)
                continue
            if len(rows) and infs[rows[0]]:
                raise DataError(f"column {c!r} of {task.where} holds {int(infs[rows[0]])} infinite value(s); "
                                f"infinite values cannot be split on (use null or NaN for missing values)")
            cp.nonmissing = int(nonmissing[rows[0]]) if len(rows) else 0
            srows = np.flatnonzero((part == 1) & (gf == sampled.index(j))) if j in sampled else rows[:0]
            if j in sampled and len(rows) and (groups[rows[0]] > task.max_bins + 1 or
                                               (len(srows) and n[srows].max() > task.max_bins)):
                cp.distinct = None  # its values were not sent
            else:
                x = values.to_numpy(zero_copy_only=False).astype(np.float64)[present]
                cp.distinct = np.sort(x)
                if j in sampled and len(cp.distinct) > task.max_bins:
                    cp.distinct = None
            if j in sampled:
                lo, hi = (table.column(k).take(pa.array(srows)).to_numpy(zero_copy_only=False).astype(np.float64)
                          for k in ("lo", "hi"))
                order = np.argsort(lo, kind="stable")
                p.sample_edges[c] = midpoint(lo[order], hi[order])
        query.rows = p.n_rows
        return p

    query.finish = finish
    return query
