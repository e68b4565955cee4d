"""Pushdown (``transfer="aggregates"``) over the fit's node tables (rainforest/node_tables.py).

The root's pass encodes the table's rows into a temporary table (slots, class, node); every later
level's GROUP BY reads that table, routing its rows on from their nodes or moving them into a new
table first, so a tree of any depth reads the source twice (profile, root) and is the Parquet
source's tree, node for node. Every temporary table is dropped after the fit, a failed fit and an
interrupt; the source table is never changed. A role that may not create temporary tables gets a
warning and the same tree from the old routing of every row from the root.
"""
import pyarrow.parquet as pq
import pytest
from conftest import agrawal_files_and_table, load_script, sql_statements

from rainforest import DecisionTreeClassifier, node_tables
from rainforest.storage import DuckDBSource, PostgresSource


N_ROWS = 40_000  # a depth-10 tree still, and nodes done before the last level


@pytest.fixture(scope="module")
def agrawal(tmp_path_factory):
    """40,000 Agrawal F7 rows in two Parquet files, and the same rows as a DuckDB table."""
    return agrawal_files_and_table(tmp_path_factory.mktemp("pushdown"), N_ROWS, 2, seed=11)


@pytest.fixture(scope="module")
def pg(postgres_url, agrawal):
    load_script("postgres_server").load_table(postgres_url, "pushdown_agrawal", agrawal[1], replace=True)
    return postgres_url


def tree(data, **kw):
    return DecisionTreeClassifier(max_depth=10, max_bins=64, algorithm="read", **kw).fit(data, target="class")


def duckdb_state(con):
    """The temporary tables left, and the source table's row count and checksum."""
    temp = con.sql("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()[0][0]
    return temp, con.sql("SELECT count(*), sum(hash(salary)), sum(hash(car)) FROM agrawal").fetchall()[0]


def pg_state(url):
    import psycopg
    with psycopg.connect(url) as conn:
        temp = conn.execute(r"SELECT count(*) FROM pg_class WHERE relname LIKE '\_\_rainforest\_%'").fetchone()[0]
        return temp, conn.execute("SELECT count(*), sum(salary::numeric), sum(hashtext(car::text)) "
                                  "FROM pushdown_agrawal").fetchone()


def made_tables(source) -> list:
    """Record the rows of every temporary table ``source`` makes, as it makes it."""
    made = []
    create = source.create_temp_table

    def recorded(name, sql, serial=False):
        refused = create(name, sql, serial)
        count = type(source).query_table(source, f"SELECT count(*) AS n FROM {name}")  # not a recorded statement
        made.append(count.column(0)[0].as_py())
        return refused
    source.create_temp_table = recorded
    return made


ENGINES = pytest.mark.parametrize("engine", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])


@pytest.fixture
def target(request, agrawal, engine):
    """A pushed-down source of the Agrawal rows in ``engine``, and a function giving what must not change."""
    con = agrawal[2]
    if engine == "duckdb":
        yield DuckDBSource(table="agrawal", connection=con, transfer="aggregates"), lambda: duckdb_state(con)
        return
    url = request.getfixturevalue("pg")
    source = PostgresSource(url, table="pushdown_agrawal", transfer="aggregates")
    yield source, lambda: pg_state(url)
    source.close()


@ENGINES
def test_a_deep_tree_reads_the_table_twice_and_leaves_nothing(agrawal, target, monkeypatch):
    source, state = target
    ref = tree(str(agrawal[0]))
    before = state()
    for reroute in (0, node_tables.REROUTE_LEVELS, 100):
        monkeypatch.setattr(node_tables, "REROUTE_LEVELS", reroute)
        sent, made = sql_statements(source), made_tables(source)
        clf = tree(source)
        assert clf.tree_.to_json() == ref.tree_.to_json() and clf.get_depth() == 10
        # the source twice: the profile, the root's pass (which makes the first node table) ...
        assert clf.n_passes_ == 2 and ref.n_passes_ == 11
        # ... then one GROUP BY a level, over the node table
        assert len(sent) == 11 and all("__rainforest_" in q for q in sent[1:])
        assert sum('"agrawal"' in q or '"pushdown_agrawal"' in q for q in sent) == 1
        if reroute == 0:  # moved into a new table every level: the rows of nodes done drop out
            assert len(made) == 10 and made[0] == N_ROWS and made[-1] < made[0] * 0.95
        elif reroute == 100:  # routed on from the root's table every level
            assert made == [N_ROWS]
        else:
            assert 1 < len(made) < 10
        for name in ("query_table", "_stream", "create_temp_table"):  # the recorders off
            vars(source).pop(name)
        assert state() == before  # no temporary table left; the table unchanged


@ENGINES
@pytest.mark.parametrize("error", [RuntimeError("lost"), KeyboardInterrupt()], ids=["error", "interrupt"])
def test_a_failed_or_interrupted_fit_drops_its_node_tables(agrawal, target, error):
    source, state = target
    before = state()
    for fail_at in (1, 4):  # the root's query (its table just made), a later level's
        run, calls = source.query_table, []

        def failing(sql, ordered=False, run=run, calls=calls, fail_at=fail_at, **kw):
            calls.append(sql)
            if len(calls) > fail_at:
                raise error
            return run(sql, ordered, **kw)
        source.query_table = failing
        with pytest.raises(type(error)):
            tree(source)
        del source.query_table
        assert state() == before
    assert tree(source).tree_.to_json() == tree(str(agrawal[0])).tree_.to_json()  # the source still works
    assert state() == before


@pytest.mark.parametrize("reroute", [0, 2, 4, 100])
def test_sums_in_row_order_through_every_way_of_moving_rows(tmp_path, monkeypatch, reroute):
    """A weighted exact regressor sums its target in row order (the table carries each row's identity):
    the Parquet tree whether rows move into a new table every level, every 2 or 4 levels (then routed on from
    their nodes in between, rows of nodes done among them) or never."""
    import numpy as np
    import pyarrow as pa
    from conftest import dataset_path

    from rainforest import DecisionTreeRegressor

    t = pq.read_table(dataset_path("magic")).drop(["class"])
    w = np.random.default_rng(1).integers(0, 3, t.num_rows).astype(float)
    pq.write_table(t.append_column("w", pa.array(w)), tmp_path / "w.parquet")
    monkeypatch.setattr(node_tables, "REROUTE_LEVELS", reroute)
    fit = lambda data: DecisionTreeRegressor(max_depth=7, max_bins=None).fit(  # noqa: E731
        data, target="FLength", sample_weight="w")
    source = DuckDBSource(parquet=str(tmp_path / "w.parquet"), transfer="aggregates")
    made = made_tables(source)
    assert fit(source).tree_.to_json() == fit(str(tmp_path / "w.parquet")).tree_.to_json()
    assert len(made) == {0: 7, 2: 3, 4: 2, 100: 1}[reroute]


def _plan_nodes(plan: dict, kind: str) -> list:
    """The nodes of type ``kind`` in an EXPLAIN (FORMAT JSON) plan, depth first."""
    found = [plan] if plan.get("Node Type") == kind else []
    for child in plan.get("Plans") or []:
        found += _plan_nodes(child, kind)
    return found


@pytest.mark.postgres
def test_sorts_and_groupings_get_the_memory_they_need(pg):
    """The profile's sample (the rows of smallest hash) is one sort of every row, and a level's GROUPING
    SETS are hashed or sorted as the planner guesses their groups. At PostgreSQL's default 4 MB of
    work_mem the sample of 10M rows went to disk (1 GB, 8.6 s) and levels sorted every row. Each query
    asks for the memory it needs, and the server gives it for that query only. Here the session has
    64 kB (PostgreSQL's least), so that this small table's sample spills without what it asks."""
    import json

    session = lambda work_mem: PostgresSource(  # noqa: E731  (libpq's options: the session's default)
        f"{pg}{'&' if '?' in pg else '?'}options=-c%20work_mem%3D{work_mem}", table="pushdown_agrawal",
        transfer="aggregates")
    source = session("64kB")
    asked, level_plans = [], []
    run = source.query_table

    def plan(sql, need, analyze=False):
        explained = run(f"EXPLAIN ({'ANALYZE, ' if analyze else ''}FORMAT JSON) {sql}", True, need)
        tree = explained.column(0)[0].as_py()
        return (json.loads(tree) if isinstance(tree, str) else tree)[0]["Plan"]

    def recorded(sql, ordered=False, work_bytes=0):
        asked.append((sql, work_bytes))
        if "WHERE node IN" in sql:  # a level below the root, while its node table exists
            level_plans.append((work_bytes, [a["Strategy"] for a in _plan_nodes(plan(sql, work_bytes), "Aggregate")]))
        return run(sql, ordered, work_bytes)
    source.query_table = recorded
    DecisionTreeClassifier(max_depth=4, max_bins=64).fit(source, target="class")
    del source.query_table
    profile_sql, work_bytes = asked[0]
    assert "ORDER BY hash LIMIT" in profile_sql and work_bytes >= 200_000 * 8 * 10
    sample_sort = lambda need: [s["Sort Space Type"] for s in _plan_nodes(plan(profile_sql, need, True), "Sort")  # noqa
                                if "hash" in " ".join(s["Sort Key"])]
    assert sample_sort(work_bytes) == ["Memory"]
    assert sample_sort(0) == ["Disk"]  # what the query asks for is what keeps it in memory
    # a level's groups, hashed: room for the planner's guess of the routing CASE's values (PostgreSQL sorted
    # every row of a 10M-row level at its default 4 MB, which this small table cannot show)
    assert len(level_plans) == 3 and all(need > 4 << 20 and how == ["Hashed"] for need, how in level_plans)
    setting = lambda need: source.query_table("SELECT current_setting('work_mem') AS w", False, need)  # noqa: E731
    assert setting(0).column(0)[0].as_py() == "64kB"
    assert setting(100 << 20).column(0)[0].as_py() == "100MB"
    assert setting(64 << 30).column(0)[0].as_py() == "256MB"  # capped
    assert setting(0).column(0)[0].as_py() == "64kB"  # for one query only
    source = session("512MB")
    assert setting(1 << 20).column(0)[0].as_py() == "512MB"  # never lowered
