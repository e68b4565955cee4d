"""Extract mode (``transfer="rows"``): a SQL source's rows streamed out once into the row store.

A tree costs 2 queries over a DuckDB table (profile, extract) at any depth, and 1 over a
PostgreSQL table (its later passes read a local copy of the first one's rows), and is the
Parquet source's tree, node for node, in memory and through the spill folder; forests,
AdaBoost and BOAT run on it as on a local source. No temporary object is made in the
database and the table is never modified.
"""
import logging
import os
import re
import sys

import numpy as np
import pytest
from conftest import agrawal_files_and_table, load_script, sql_statements

from rainforest import AdaBoostClassifier, DecisionTreeClassifier, RandomForestClassifier
from rainforest.boat import BoatClassifier
from rainforest.storage import DuckDBSource, ParquetSource, PostgresSource, SourceError


@pytest.fixture(scope="module")
def agrawal(tmp_path_factory):
    """120,000 Agrawal F7 rows in three Parquet files, and the same rows as a DuckDB table."""
    return agrawal_files_and_table(tmp_path_factory.mktemp("extract"), 120_000, 3, seed=5)


def tree(data, **kw):
    return DecisionTreeClassifier(max_depth=10, max_bins=64, **kw).fit(data, target="class")


def duckdb_tables(con):
    return con.execute("SELECT count(*) FROM duckdb_tables()").fetchall()[0][0]


def test_a_deep_tree_takes_two_duckdb_queries_and_is_the_parquet_tree(agrawal):
    d, _, con = agrawal
    ref = tree(ParquetSource(str(d)))
    before = duckdb_tables(con)
    for source in (DuckDBSource(table="agrawal", connection=con), DuckDBSource(parquet=str(d))):
        sent = sql_statements(source)
        clf = tree(source)
        assert source.transfer_mode() == "rows"  # auto, for DuckDB
        assert clf.tree_.to_json() == ref.tree_.to_json() and clf.get_depth() == 10
        assert clf.n_passes_ == ref.n_passes_ == 2 and len(sent) == 2  # profile, extract
        assert all("GROUP BY" not in q for q in sent)
    assert duckdb_tables(con) == before  # no temporary table left


def test_rows_past_the_budget_spill_and_later_levels_read_the_folder(agrawal, tmp_path):
    d, _, con = agrawal
    params = dict(memory_budget="2MB", spill_dir=str(tmp_path))
    ref = tree(ParquetSource(str(d)), **params)
    source = DuckDBSource(table="agrawal", connection=con)
    clf = tree(source, **params)
    assert clf.grow_stats_.spill_bytes > 0 and clf.grow_stats_.spill_reads > 0
    assert clf.tree_.to_json() == ref.tree_.to_json() and clf.n_passes_ == source.n_passes == 2
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore:some rows are in the bootstrap of every tree")
def test_forest_adaboost_and_boat_on_extracted_rows_equal_parquet(agrawal):
    d, t, con = agrawal
    source = lambda: DuckDBSource(table="agrawal", connection=con)  # noqa: E731
    forest = dict(n_estimators=12, max_depth=6, random_state=1, oob_score=True)
    ref, got = RandomForestClassifier(**forest).fit(str(d), target="class"), \
        RandomForestClassifier(**forest).fit(source(), target="class")
    assert got.to_json() == ref.to_json() and got.oob_score_ == ref.oob_score_ and got.n_passes_ == ref.n_passes_
    boost = lambda: AdaBoostClassifier(DecisionTreeClassifier(max_depth=3), n_estimators=3)  # noqa: E731
    ref, got = boost().fit(str(d), target="class"), boost().fit(source(), target="class")
    np.testing.assert_array_equal(got.estimator_weights_, ref.estimator_weights_)
    np.testing.assert_array_equal(got.predict_proba(t), ref.predict_proba(t))
    with BoatClassifier(max_depth=5) as a, BoatClassifier(max_depth=5) as b:
        a.fit(str(d), target="class")
        b.fit(source(), target="class")
        assert a.tree_.to_json() == b.tree_.to_json()
    from rainforest.errors import DataError
    with pytest.raises(DataError, match="stay where they are .*give it transfer='rows'"), BoatClassifier() as c:
        c.fit(DuckDBSource(table="agrawal", connection=con, transfer="aggregates"), target="class")


def test_row_id_orders_the_stream(agrawal):
    """With ``row_id``, the rows stream ordered by it: a table stored in another order gives the
    forest (whose bootstraps follow row identities) of the rows in row_id order."""
    d, t, con = agrawal
    con.execute("CREATE TABLE shuffled AS SELECT * FROM (SELECT row_number() OVER () AS id, * FROM agrawal) "
                "ORDER BY hash(id)")
    forest = lambda: RandomForestClassifier(n_estimators=3, max_depth=4, random_state=0)  # noqa: E731
    ref = forest().fit(t, target="class")
    features = t.column_names[:-1]
    got = forest().fit(DuckDBSource(table="shuffled", connection=con, row_id="id"), target="class", features=features)
    assert got.to_json() == ref.to_json()
    stored_order = forest().fit(DuckDBSource(table="shuffled", connection=con), target="class", features=features)
    assert stored_order.to_json() != ref.to_json()  # the order matters, so the test above can fail
    tree = DecisionTreeClassifier(max_depth=6).fit(t, target="class")
    for transfer in ("rows", "aggregates"):  # predictions come in row_id order too, scored here or in DuckDB
        source = DuckDBSource(table="shuffled", connection=con, row_id="id", transfer=transfer)
        np.testing.assert_array_equal(tree.predict(source), tree.predict(t))
    con.execute("DROP TABLE shuffled")


def test_transfer_is_checked_and_the_choice_logged(agrawal, caplog, monkeypatch):
    _, _, con = agrawal
    with pytest.raises(SourceError, match="transfer must be one of 'auto', 'rows', 'aggregates', not 'rowz'"):
        DuckDBSource(table="agrawal", connection=con, transfer="rowz")
    source = DuckDBSource(table="agrawal", connection=con)
    with caplog.at_level(logging.INFO, logger="rainforest"):
        assert source.distributed is False
    assert "transfer=rows (DuckDB runs in this process" in caplog.text
    pushed = DuckDBSource(table="agrawal", connection=con, transfer="aggregates")
    assert pushed.distributed is True and pushed.transfer_mode() == "aggregates"


# -- PostgreSQL ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pg(postgres_url, agrawal):
    _, t, _ = agrawal
    load_script("postgres_server").load_table(postgres_url, "extract_agrawal", t, replace=True)
    return postgres_url


def pg_state(url):
    """Temporary relations anywhere, and the table's row count and checksum."""
    import psycopg
    with psycopg.connect(url) as conn:
        temp = conn.execute("SELECT count(*) FROM pg_class WHERE relpersistence = 't'").fetchone()[0]
        table = conn.execute("SELECT count(*), sum(hashtext(t::text)) FROM extract_agrawal AS t").fetchone()
    return temp, table


def test_postgres_extract_is_one_query_and_leaves_nothing(pg, agrawal, tmp_path, monkeypatch):
    """A PostgreSQL fit streams its rows once (the profile's pass) into a local copy that its later
    passes read; the copy lives in a scratch folder during the fit only, also through the spill,
    an error or an interrupt in either pass; nothing is made in the database."""
    import tempfile

    from rainforest.storage import row_copy

    d = agrawal[0]
    scratch, spill = tmp_path / "scratch", tmp_path / "spill"
    scratch.mkdir(), spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    seen = []
    read = row_copy.RowCopy.read
    monkeypatch.setattr(row_copy.RowCopy, "read", lambda self, columns: seen.append(os.listdir(self.root)) or
                        read(self, columns))
    before = pg_state(pg)
    ref = tree(ParquetSource(str(d)))
    source = PostgresSource(pg, table="extract_agrawal", transfer="rows")
    sent = sql_statements(source)
    clf = tree(source)
    assert clf.tree_.to_json() == ref.tree_.to_json()
    assert clf.n_passes_ == 1 and len(sent) == 1 and seen == [["rows.arrow"]]  # the extract read the copy
    assert os.listdir(scratch) == []
    spilled = tree(PostgresSource(pg, table="extract_agrawal"), memory_budget="2MB", spill_dir=str(spill))
    assert spilled.tree_.to_json() == tree(ParquetSource(str(d)), memory_budget="2MB").tree_.to_json()
    assert spilled.n_passes_ == 1 and spilled.grow_stats_.spill_bytes > 0
    for error in (RuntimeError("lost"), KeyboardInterrupt()):
        # midway through the one query (the copy is not finished: never read) ...
        failing = PostgresSource(pg, table="extract_agrawal", transfer="rows")
        stream = failing._stream

        def broken(sql, batch_size, stream=stream, error=error):
            for batch in stream(sql, batch_size):
                yield batch
                raise error
        failing._stream = broken
        with pytest.raises(type(error)):
            tree(failing, memory_budget="2MB", spill_dir=str(spill))
        failing.close()
        # ... and midway through reading the copy back, while the spill is written
        def broken_read(self, columns, error=error):
            for batch in read(self, columns):
                yield batch
                raise error
        with monkeypatch.context() as m:
            m.setattr(row_copy.RowCopy, "read", broken_read)
            with pytest.raises(type(error)):
                tree(PostgresSource(pg, table="extract_agrawal", transfer="rows"), memory_budget="2MB",
                     spill_dir=str(spill))
        assert os.listdir(scratch) == [] and os.listdir(spill) == []
    assert pg_state(pg) == before


def test_postgres_auto_pushes_down_when_the_disk_is_too_small(pg, caplog, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 1000, 1000))
    source = PostgresSource(pg, table="extract_agrawal")
    with caplog.at_level(logging.INFO, logger="rainforest"):
        assert source.transfer_mode() == "aggregates"
    # the planner's estimate (EXPLAIN: no scan) of the 120,000 rows, at 8 bytes for each of 10 columns
    need = int(re.search(r"the rows could take ([\d,]+) bytes", caplog.text).group(1).replace(",", ""))
    assert 0.8 * 120_000 * 80 <= need <= 1.25 * 120_000 * 80
    monkeypatch.undo()
    assert PostgresSource(pg, table="extract_agrawal").transfer_mode() == "rows"


def test_a_read_only_role_extracts_and_pushes_down_without_node_tables(pg, agrawal):
    import psycopg
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("GRANT SELECT ON extract_agrawal TO reader")
        conn.execute("ALTER ROLE reader SET default_transaction_read_only = on")
    url = pg.replace("//rainforest@", "//reader@")
    ref = DecisionTreeClassifier(max_depth=3, max_bins=64).fit(str(agrawal[0]), target="class")
    got = DecisionTreeClassifier(max_depth=3, max_bins=64).fit(
        PostgresSource(url, table="extract_agrawal", transfer="rows"), target="class")
    assert got.tree_.to_json() == ref.tree_.to_json()
    # pushdown: no temporary node table in a read-only transaction; every level routes from the root instead
    source = PostgresSource(url, table="extract_agrawal", transfer="aggregates")
    sent = sql_statements(source)
    with pytest.warns(RuntimeWarning, match="refused a temporary table .*read-only transaction.*from the root"):
        got = DecisionTreeClassifier(max_depth=3, max_bins=64).fit(source, target="class")
    assert got.tree_.to_json() == ref.tree_.to_json()
    assert got.n_passes_ == len(sent) == 4 and not any("__rainforest_" in q for q in sent)


def test_without_the_adbc_driver_rows_are_fetched_through_psycopg(pg, agrawal, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "adbc_driver_postgresql.dbapi", None)  # import fails
    source = PostgresSource(pg, table="extract_agrawal", transfer="rows")
    with caplog.at_level(logging.INFO, logger="rainforest"):
        got = DecisionTreeClassifier(max_depth=5, max_bins=64).fit(source, target="class")
    assert "adbc-driver-postgresql is not installed" in caplog.text
    ref = DecisionTreeClassifier(max_depth=5, max_bins=64).fit(str(agrawal[0]), target="class")
    assert got.tree_.to_json() == ref.tree_.to_json() and got.n_passes_ == 1


def test_postgres_connections_in_every_form(pg, agrawal):
    """A URL, a key=value DSN, a SQLAlchemy URL (string or Engine) and a psycopg connection reach the
    same server; the user's own connection's session is not changed."""
    import psycopg
    sqlalchemy = pytest.importorskip("sqlalchemy", reason="SQLAlchemy is in the test extra")
    ref = DecisionTreeClassifier(max_depth=4, max_bins=64).fit(str(agrawal[0]), target="class")
    with psycopg.connect(pg) as mine:
        dsn = mine.info.dsn
        engine = sqlalchemy.create_engine(pg.replace("postgresql://", "postgresql+psycopg://"))
        forms = [pg, dsn, pg.replace("postgresql://", "postgresql+psycopg://"), engine, engine.url, mine]
        for form in forms:
            source = PostgresSource(form, table="extract_agrawal")
            got = DecisionTreeClassifier(max_depth=4, max_bins=64).fit(source, target="class")
            assert got.tree_.to_json() == ref.tree_.to_json(), form
            assert got.n_passes_ == 1
            source.close()
        assert mine.execute("SHOW synchronize_seqscans").fetchone()[0] == "on"  # ours set it off, not yours
        engine.dispose()
    with pytest.raises(SourceError, match="not int"):
        PostgresSource(42, table="extract_agrawal")


def test_postgres_errors_name_the_culprit(pg):
    import psycopg
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS stranger")
        conn.execute("CREATE ROLE stranger LOGIN")
    stranger = pg.replace("//rainforest@", "//stranger@")
    with pytest.raises(SourceError, match=r'extract_agrawal.*permission denied'):
        PostgresSource(stranger, table="extract_agrawal")
    source = PostgresSource(pg, query="SELECT *, 1 / (age - age) AS boom FROM extract_agrawal", transfer="rows")
    with pytest.raises(SourceError, match="division by zero"):
        DecisionTreeClassifier(max_depth=2).fit(source, target="class")
    source.close()
    from rainforest.storage.postgres import conninfo
    assert "secret" not in str(pytest.raises(SourceError, PostgresSource,
                                             "host=127.0.0.1 port=1 user=x password=secret dbname=d",
                                             table="t", connect_timeout=2).value)
    assert conninfo("postgresql+psycopg2://u@h/d") == "postgresql://u@h/d"


def test_a_full_disk_drops_the_copy_and_the_fit_queries_again(pg, agrawal, monkeypatch):
    import errno

    import pyarrow as pa

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(pa.ipc, "new_file", full)
    boost = lambda: AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=2)  # noqa: E731
    with pytest.warns(RuntimeWarning, match="local copy of the rows .* failed .*No space left"):
        got = boost().fit(PostgresSource(pg, table="extract_agrawal", transfer="rows"), target="class")
    ref = boost().fit(str(agrawal[0]), target="class")
    np.testing.assert_array_equal(got.estimator_weights_, ref.estimator_weights_)
    assert got.n_passes_ == ref.n_passes_ > 1  # every pass queried the server again
    monkeypatch.undo()
    copied = boost().fit(PostgresSource(pg, table="extract_agrawal", transfer="rows"), target="class")
    np.testing.assert_array_equal(copied.estimator_weights_, ref.estimator_weights_)
    assert copied.n_passes_ < ref.n_passes_


def test_postgres_growth_queries_run_without_jit(pg):
    """Long queries (a growth pass's CASE expressions) run with JIT off, in their own transaction only;
    short ones (the profile's row hashes, which JIT speeds up) keep the server's setting."""
    from rainforest.storage.postgres import JIT_TEXT_LIMIT

    source = PostgresSource(pg, table="extract_agrawal", transfer="aggregates")
    padding = "/*" + "x" * JIT_TEXT_LIMIT + "*/"
    setting = lambda sql: source.query_table(sql).column(0)[0].as_py()  # noqa: E731
    default = setting("SELECT current_setting('jit') AS j")
    assert setting(f"SELECT current_setting('jit') AS j {padding}") == "off"
    assert setting("SELECT current_setting('jit') AS j") == default == "on"
    source.close()
