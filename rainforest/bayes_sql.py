"""Naive Bayes's one pass as SQL (``transfer="aggregates"``): class counts, category counts per
class, and per class each numeric attribute's moments, in one ``GROUPING SETS`` query that the
database runs where the rows are.

The moments come from each attribute's count, sum and sum of squares, the cheapest aggregates a
database has: over 10M Agrawal rows DuckDB runs the query in about the time of its own
``SELECT class, count(*), sum(x), sum(x * x) ... GROUP BY class``, where ``avg`` and ``var_pop``
took twice that (``benchmarks/results/bayes_sql_10m.md``).  Sums from zero cancel where a class's
values sit far from zero against their spread, or do not vary;
:func:`rainforest.bayes_state.moments_from_sums` tells where, by the rule the batches' kernel
keeps.  For those attributes a second query sums each value's difference from its class's mean
(the first query's) and that difference's square: the corrected two-pass algorithm (Chan, Golub
and LeVeque), whose rounding the mean's does not reach.  It is a second scan of the table,
counted as a pass, and it also counts infinite values, to refuse them by name.  An attribute's
spread over all rows is its classes' moments merged, as the batches' kernel merges them.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .bayes_state import BayesCounts, Moments, moments_from_sums
from .errors import DataError
from .pushdown import AggregateQuery, grouping_index
from .schema import CATEGORICAL
from .sql import Dialect, dialect_of, numeric_sql


def bayes_query(task, relation) -> AggregateQuery | None:
    """The aggregate query of a :class:`rainforest.bayes_counts.BayesPass` with unit weights, None for a
    weighted pass (it streams its rows); its result may ask for a second query
    (:attr:`rainforest.pushdown.AggregateQuery.instead`)."""
    if task.weight is not None:
        return None
    d = dialect_of(relation.dialect)
    names = list(task.kinds)
    cats = [j for j, c in enumerate(names) if task.kinds[c] == CATEGORICAL]
    nums = [j for j, c in enumerate(names) if task.kinds[c] != CATEGORICAL]
    moments = "".join(f", count(a{j}) AS n{j}, sum(a{j}) AS s{j}, sum(a{j} * a{j}) AS q{j}" for j in nums)
    keys = [f"a{j}" for j in cats]
    group = (f"CASE WHEN {' AND '.join(f'GROUPING(a{j}) = 1' for j in cats)} THEN -1 "
             f"ELSE {grouping_index(keys, d)} END") if cats else "-1"
    sets = ["(y)"] + [f"(y, a{j})" for j in cats]
    sql = (f"SELECT {group} AS g, y{''.join(f', a{j}' for j in cats)}, count(*) AS n{moments} "
           f"FROM {_encoded(task, relation, d, names, cats)} GROUP BY GROUPING SETS ({', '.join(sets)})")
    query = AggregateQuery(sql, None)

    def finish(table: pa.Table):
        state = BayesCounts()
        sums = {j: {} for j in nums}  # attribute -> {class: (count, sum, sum of squares)}
        g = table.column("g").to_numpy(zero_copy_only=False).astype(np.int64)
        for r, gi in zip(table.to_pylist(), g):
            if gi == -1:
                if r["y"] is None or (isinstance(r["y"], float) and np.isnan(r["y"])):
                    raise DataError(f"the target column {task.target!r} of {task.where} has null or NaN values")
                state.class_weight[r["y"]] = float(r["n"])
                state.n_rows += int(r["n"])
                for j in nums:
                    sums[j][r["y"]] = (float(r[f"n{j}"] or 0), float(r[f"s{j}"] or 0), float(r[f"q{j}"] or 0))
            else:
                value = r[f"a{cats[gi]}"]
                if value is not None:
                    state.categories.setdefault(names[cats[gi]], {})[(r["y"], value)] = float(r["n"])
        query.rows = state.n_rows
        shifts = {}  # attribute -> {class: its mean}, for the attributes whose sums cancel
        for j in nums:
            per_class = {c: moments_from_sums(*nsq, 0.0) if nsq[0] else (0.0, 0.0, True)
                         for c, nsq in sums[j].items()}
            if all(ok for _, _, ok in per_class.values()):
                _set_moments(state, names[j], {c: (sums[j][c][0], mean, m2) for c, (mean, m2, _) in per_class.items()})
            else:
                shifts[j] = {c: float(mean) if np.isfinite(mean) else 0.0 for c, (mean, _, _) in per_class.items()}
        if shifts:
            query.instead = _shifted_query(task, relation, d, names, cats, state, shifts)
            return None
        return state

    query.finish = finish
    return query


def _encoded(task, relation, d: Dialect, names: list, cats: list) -> str:
    """The relation as ``y`` and ``a{j}``: categories as stored, numbers as float64 (NULL for NaN)."""
    arrow = relation.schema
    enc = [f"{d.ident(task.target)} AS y"] + [
        f"{d.ident(c)} AS a{j}" if j in cats else f"{numeric_sql(c, arrow.field(c).type, d)} AS a{j}"
        for j, c in enumerate(names)]
    return f"(SELECT {', '.join(enc)} FROM {relation.from_sql}) AS e"


def _shifted_query(task, relation, d: Dialect, names: list, cats: list, state: BayesCounts,
                   shifts: dict) -> AggregateQuery:
    """The second query: per class, the count of attribute ``j``'s values, the sum of their differences
    from the class's mean ``shifts[j][class]`` and of those differences' squares, and the count of
    infinite values; its result completes ``state``."""
    def shifted(j: int) -> str:
        whens = " ".join(f"WHEN {d.literal(c)} THEN {d.double_literal(m)}" for c, m in shifts[j].items())
        return f"a{j} - CASE y {whens} ELSE 0 END"

    cols = list(shifts)
    inner = ", ".join(f"a{j}, {shifted(j)} AS d{j}" for j in cols)
    aggs = ", ".join(f"count(d{j}) AS n{j}, sum(d{j}) AS s{j}, sum(d{j} * d{j}) AS q{j}, "
                     f"sum(CASE WHEN {d.is_inf(f'a{j}')} THEN 1 ELSE 0 END) AS inf{j}" for j in cols)
    sql = (f"SELECT y, {aggs} FROM (SELECT y, {inner} FROM {_encoded(task, relation, d, names, cats)}) AS f "
           f"GROUP BY y")
    query = AggregateQuery(sql, None, rows=state.n_rows)

    def finish(table: pa.Table):
        per_column = {j: {} for j in cols}
        for r in table.to_pylist():
            for j in cols:
                if r[f"inf{j}"]:
                    raise DataError(f"column {names[j]!r} of {task.where} holds infinite values; "
                                    f"infinite values are not allowed")
                n = float(r[f"n{j}"] or 0)
                mean, m2 = (moments_from_sums(n, float(r[f"s{j}"]), float(r[f"q{j}"]), shifts[j][r["y"]])[:2]
                            if n else (0.0, 0.0))
                if not (np.isfinite(mean) and np.isfinite(m2)):
                    raise DataError(f"column {names[j]!r} of {task.where} holds values whose variance exceeds the "
                                    f"largest float64 in SQL; scale the column down (divide it by 1e100, say)")
                per_column[j][r["y"]] = (n, mean, m2)
        for j in cols:
            _set_moments(state, names[j], per_column[j])
        return state

    query.finish = finish
    return query


def _set_moments(state: BayesCounts, name: str, per_class: dict) -> None:
    """An attribute's moments per class, ``{class: (count, mean, M2)}``, and its spread: them merged."""
    spread = Moments()
    state.moments[name] = {}
    for c, (n, mean, m2) in per_class.items():
        state.moments[name][c] = Moments(n, float(mean), float(m2)) if n else Moments()
        spread.merge(n, float(mean), float(m2))
    if spread.w:
        state.spread[name] = spread
