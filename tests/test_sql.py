"""SQL-backed training: DuckDB and PostgreSQL sources, their rows streamed out (transfer="rows") or their
passes pushed down (transfer="aggregates"), and scoring in the database."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import dataset_path, load_script, sql_statements

import duckdb
from rainforest import DecisionTreeClassifier
from rainforest.datasets import agrawal_table
from rainforest.storage import DuckDBSource, PostgresSource, SourceError


# the equality tests run in both ways rows cross; neither may change the tree
BOTH = pytest.mark.parametrize("transfer", ["rows", "aggregates"])


def fit(data, **kw):
    params = dict(max_depth=6, algorithm="read")
    params.update(kw)
    clf = DecisionTreeClassifier(**params).fit(data, target="class")
    clf.copied_ = isinstance(data, PostgresSource) and data.transfer_mode() == "rows"
    clf.pushed_ = isinstance(data, (DuckDBSource, PostgresSource)) and data.transfer_mode() == "aggregates"
    return clf


@pytest.fixture(scope="module")
def agrawal_dir(tmp_path_factory):
    """300,000 Agrawal F7 rows (more than the profile's 200,000-row sample) in two files, with NaN and null."""
    d = tmp_path_factory.mktemp("agrawal")
    t = agrawal_table(300_000, function=7, seed=3)
    salary = t.column("salary").to_numpy().copy()
    salary[::97] = np.nan
    t = t.set_column(t.schema.get_field_index("salary"), "salary", pa.array(salary))
    age = pa.array(t.column("age").to_numpy(), mask=np.arange(t.num_rows) % 89 == 0)
    t = t.set_column(t.schema.get_field_index("age"), "age", age)
    pq.write_table(t.slice(0, 150_000), d / "part-0.parquet", row_group_size=50_000)
    pq.write_table(t.slice(150_000), d / "part-1.parquet", row_group_size=50_000)
    return d


def same(a, b):
    """``b`` (from a SQL source) is ``a``'s tree, in as many passes over the source, or in one: a
    PostgreSQL source streaming rows copies them locally and reads the copy after its first pass; pushed
    down, the source is read twice (the profile, the root's pass), later levels read the fit's node table."""
    assert a.tree_.to_json() == b.tree_.to_json()
    if getattr(b, "pushed_", False):
        assert b.n_passes_ == min(a.n_passes_, 2)
    else:
        assert b.n_passes_ == a.n_passes_ or (b.n_passes_ == 1 and b.copied_)


# -- DuckDB ---------------------------------------------------------------------------------

@BOTH
@pytest.mark.parametrize("max_bins", [255, 16])
def test_duckdb_sources_equal_parquet_binned_past_the_sample(agrawal_dir, max_bins, transfer):
    """Binned mode over 300,000 rows: the pushed-down profile hashes the same row identities as the
    Parquet source, so the sample, the bins and the tree are the same, pass for pass."""
    ref = fit(str(agrawal_dir), max_bins=max_bins, max_depth=8)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{agrawal_dir}/*.parquet')")
    for source in (DuckDBSource(parquet=str(agrawal_dir), transfer=transfer),
                   DuckDBSource(table="t", connection=con, transfer=transfer)):
        same(ref, fit(source, max_bins=max_bins, max_depth=8))
    assert ref.n_passes_ == 9  # the profile, then one pass per level


@BOTH
def test_duckdb_sources_equal_parquet_exact_with_categories_and_nulls(transfer):
    path = dataset_path("adult_train")
    ref = fit(path, max_bins=None)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE adult AS SELECT * FROM read_parquet('{path}')")
    sources = [DuckDBSource(parquet=path, transfer=transfer), DuckDBSource(table="adult", connection=con,
                                                                          transfer=transfer),
               DuckDBSource(query="SELECT * FROM adult", connection=con, transfer=transfer),
               DuckDBSource(con.sql("SELECT * FROM adult"), transfer=transfer)]
    for source in sources:
        same(ref, fit(source, max_bins=None))
    multiway = fit(path, max_bins=None, categorical_split="multiway", max_depth=4)
    same(multiway, fit(sources[1], max_bins=None, categorical_split="multiway", max_depth=4))


def test_pushed_down_profile_memory_does_not_grow_with_distinct_values(tmp_path):
    """A binned fit must not group every distinct value of a continuous column in the database:
    4M distinct values per column do not fit DuckDB's 60 MB limit, the bounded profile does
    (an unbounded GROUP BY fails here with an out-of-memory error)."""
    n = 4_000_000
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"x": rng.random(n), "z": rng.random(n), "class": (rng.random(n) < 0.5).astype(np.int64)}),
                   tmp_path / "wide.parquet")
    con = duckdb.connect()
    con.execute("SET memory_limit = '60MB'")
    con.execute("SET threads = 1")
    clf = DecisionTreeClassifier(max_depth=2, max_bins=64, algorithm="read").fit(
        DuckDBSource(parquet=str(tmp_path / "wide.parquet"), connection=con, transfer="aggregates"), target="class")
    clf.pushed_ = True
    ref = DecisionTreeClassifier(max_depth=2, max_bins=64, algorithm="read").fit(str(tmp_path / "wide.parquet"),
                                                                                target="class")
    same(ref, clf)
    assert clf.tree_.node_count == 7  # binned splits were found


@BOTH
def test_duckdb_database_file_and_hive_partitions(tmp_path, transfer):
    t = pq.read_table(dataset_path("magic"))
    for i, part in enumerate(("a", "b")):
        (tmp_path / "data" / f"batch={part}").mkdir(parents=True)
        pq.write_table(t.slice(i * 10_000, 10_000), tmp_path / "data" / f"batch={part}" / "x.parquet")
    ref = fit(str(tmp_path / "data"), max_bins=None)
    assert "batch" in ref.feature_names_in_
    same(ref, fit(DuckDBSource(parquet=str(tmp_path / "data"), transfer=transfer), max_bins=None))
    db = tmp_path / "magic.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE TABLE magic AS SELECT * FROM read_parquet('{tmp_path}/data/**/*.parquet', "
                    "hive_partitioning = true)")
    same(ref, fit(DuckDBSource(table="magic", database=str(db), transfer=transfer), max_bins=None))


@BOTH
def test_duckdb_weights_and_class_weight(transfer):
    path = dataset_path("magic")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE m AS SELECT *, (row_number() OVER () % 3) + 1 AS w FROM read_parquet('{path}')")
    table = con.sql("SELECT * FROM m").to_arrow_table()
    src = DuckDBSource(table="m", connection=con, transfer=transfer)
    a = DecisionTreeClassifier(max_depth=5, max_bins=None, algorithm="read").fit(
        table, target="class", sample_weight="w")
    b = DecisionTreeClassifier(max_depth=5, max_bins=None, algorithm="read").fit(
        src, target="class", sample_weight="w")
    b.pushed_ = transfer == "aggregates"
    same(a, b)  # integer weights: exact sums in any order
    a = DecisionTreeClassifier(max_depth=5, class_weight={0: 1.0, 1: 3.0}, algorithm="read").fit(
        table, target="class")
    b = DecisionTreeClassifier(max_depth=5, class_weight={0: 1.0, 1: 3.0}, algorithm="read").fit(
        DuckDBSource(table="m", connection=con, transfer=transfer), target="class")
    b.pushed_ = transfer == "aggregates"
    same(a, b)


def test_pushdown_keeps_no_rows_and_only_aggregates_come_back(agrawal_dir):
    """With transfer="aggregates", RF-Hybrid keeps no rows of a SQL source (they stay in the database);
    every pass's result is AVC-sized: at most (counted nodes x value slots x classes) rows, far fewer
    than the data's."""
    source = DuckDBSource(parquet=str(agrawal_dir), transfer="aggregates")
    returned = []
    run = source.query_table
    source.query_table = lambda sql, ordered=False, **kw: returned.append(run(sql, ordered, **kw)) or returned[-1]
    clf = DecisionTreeClassifier(max_depth=8, max_bins=64).fit(source, target="class")
    assert clf.grow_stats_.kept_rows == 0
    assert len(returned) == 9 and clf.n_passes_ == 2  # a query a pass; later levels read the fit's node table
    slots = 9 * 66  # 9 attributes, at most 64 bins + 1 + the missing slot each
    for level, table in enumerate(returned[1:]):
        assert table.num_rows <= (2 ** level) * slots * 2
    profile_rows = returned[0].num_rows  # bounded by the sample (and distinct values), not the data
    assert profile_rows <= 64 * 9 + 100
    assert max(t.num_rows for t in returned[1:]) < 300_000 / 10


# -- scoring in the database ----------------------------------------------------------------

def test_to_sql_and_predict_in_duckdb_match_python(tmp_path):
    path = dataset_path("adult_train")
    clf = fit(path, max_depth=7, max_bins=64)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE adult AS SELECT row_number() OVER () AS id, * FROM read_parquet('{path}')")
    expected = clf.predict(path)
    for transfer in ("aggregates", "rows"):  # leaves computed in DuckDB, or rows streamed and scored here
        src = DuckDBSource(table="adult", connection=con, transfer=transfer)
        scored = []
        values = src.column_values
        src.column_values = lambda sql, *a: scored.append(sql) or values(sql, *a)
        np.testing.assert_array_equal(clf.predict(src), expected)
        np.testing.assert_allclose(clf.predict_proba(src), clf.predict_proba(path))
        assert len(scored) == (2 if transfer == "aggregates" else 0)
    rel = clf.predict_in_database(src, columns=["id"], proba=True)
    got = rel.order("id").to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.order("id").arrow()
    np.testing.assert_array_equal(np.array(got.column("prediction").to_pylist()), expected)
    for k, c in enumerate(clf.classes_):
        np.testing.assert_allclose(got.column(f"proba_{c}").to_numpy(), clf.predict_proba(path)[:, k])
    assert clf.predict_in_database(src, into="scores", columns=["id"]) == "scores"
    assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == len(expected)
    with pytest.raises(SourceError, match="scores"):
        clf.predict_in_database(src, into="scores")  # exists already: an error, the table untouched
    # unseen categories and missing values take the branches predict takes
    odd = pa.table({c: pa.array([None, None], pa.table(pq.read_table(path)).schema.field(c).type)
                    for c in clf.feature_names_in_})
    odd = odd.set_column(odd.schema.get_field_index("workclass"), "workclass", pa.array(["never-seen", None]))
    con.register("odd", odd)
    np.testing.assert_array_equal(clf.predict(DuckDBSource(query="SELECT * FROM odd", connection=con)),
                                  clf.predict(odd))


# -- hostile names and values ---------------------------------------------------------------

HOSTILE = {"age": "select", "workclass": 'a"b', "education": "naïve col", "hours_per_week": "hours per week"}


def hostile_table():
    t = pq.read_table(dataset_path("adult_train")).slice(0, 8000)
    t = t.rename_columns([HOSTILE.get(c, c) for c in t.column_names])
    occupation = t.column("occupation").to_pylist()
    for i in range(0, len(occupation), 7):
        occupation[i] = "'); DROP TABLE t; --"
    return t.set_column(t.schema.get_field_index("occupation"), "occupation", pa.array(occupation))


@BOTH
def test_hostile_names_and_values_in_duckdb(transfer):
    t = hostile_table()
    ref = fit(t, max_bins=None)
    assert "'); DROP TABLE t; --" in ref.tree_.categories[ref.feature_names_in_.tolist().index("occupation")]
    con = duckdb.connect()
    con.register("source rows", t)
    con.execute('CREATE TABLE "weird ""table"" name" AS SELECT * FROM "source rows"')
    con.execute("CREATE TABLE t AS SELECT 1 AS canary")
    src = DuckDBSource(table='weird "table" name', connection=con, transfer=transfer)
    same(ref, fit(src, max_bins=None))
    np.testing.assert_array_equal(fit(src, max_bins=None).predict(src), ref.predict(t))
    assert con.execute("SELECT canary FROM t").fetchone()[0] == 1


# -- bad input ----------------------------------------------------------------------------------

def test_bad_sql_input_names_the_culprit():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 1 AS x, 'a' AS class UNION ALL SELECT 2, 'b'")
    with pytest.raises(SourceError, match="SELEC"):
        DuckDBSource(query="SELEC x FROM t", connection=con)
    with pytest.raises(SourceError, match="missing_table"):
        DuckDBSource(table="missing_table", connection=con)
    with pytest.raises(SourceError, match="no_such"):
        DecisionTreeClassifier().fit(DuckDBSource(table="t", connection=con), target="no_such")
    with pytest.raises(SourceError, match="nowhere.duckdb"):
        DuckDBSource(table="t", database="/nonexistent/nowhere.duckdb")
    with pytest.raises(SourceError, match="exactly one"):
        DuckDBSource(table="t", query="SELECT 1", connection=con)
    port = load_script("postgres_server")._free_port()  # nothing listens there
    with pytest.raises(SourceError, match=f"127.0.0.1:{port}"):
        PostgresSource(f"postgresql://nobody@127.0.0.1:{port}/db", table="t", connect_timeout=3)


# -- PostgreSQL (a real server, started by the fixture) -------------------------------------

@pytest.fixture(scope="module")
def pg(postgres_url, agrawal_dir):
    server = load_script("postgres_server")
    adult = pq.read_table(dataset_path("adult_train"))
    server.load_table(postgres_url, "adult", adult, replace=True)
    server.load_table(postgres_url, 'weird "table" name', hostile_table(), replace=True)
    agrawal = pq.read_table(str(agrawal_dir))
    server.load_table(postgres_url, "agrawal", agrawal, replace=True)
    return postgres_url


@BOTH
def test_postgres_equals_parquet_exact_and_binned(pg, agrawal_dir, transfer):
    path = dataset_path("adult_train")
    for max_bins in (None, 32):
        same(fit(path, max_bins=max_bins), fit(PostgresSource(pg, table="adult", transfer=transfer),
                                               max_bins=max_bins))
    # binned past the sample: the row hash computed by PostgreSQL (or the position of a streamed row)
    # picks the Parquet source's rows
    same(fit(str(agrawal_dir), max_bins=255, max_depth=5),
         fit(PostgresSource(pg, table="agrawal", transfer=transfer), max_bins=255, max_depth=5))


def test_postgres_scoring_with_to_sql_matches_predict_row_for_row(pg):
    path = dataset_path("adult_train")
    clf = fit(path, max_depth=8, max_bins=None)
    src = PostgresSource(pg, table="adult")
    expected = clf.predict(path)
    import psycopg
    with psycopg.connect(pg) as conn:
        got = [r[0] for r in conn.execute(f"SELECT {clf.tree_.to_sql('postgres')} FROM adult").fetchall()]
        proba = [r[0] for r in conn.execute(f"SELECT {clf.tree_.to_sql('postgres', 'probability')} FROM adult")]
    np.testing.assert_array_equal(np.array(got), expected)
    np.testing.assert_allclose(proba, clf.predict_proba(path).max(axis=1))
    for transfer in ("aggregates", "rows"):
        np.testing.assert_array_equal(clf.predict(PostgresSource(pg, table="adult", transfer=transfer)), expected)
    assert clf.predict_in_database(src, into="adult_scores", proba=True) == "adult_scores"
    with psycopg.connect(pg) as conn:
        assert conn.execute("SELECT count(*) FROM adult_scores").fetchone()[0] == len(expected)
        conn.execute("DROP TABLE adult_scores")


@BOTH
def test_postgres_hostile_names_and_values(pg, transfer):
    t = hostile_table()
    ref = fit(t, max_bins=None)
    src = PostgresSource(pg, table='weird "table" name', transfer=transfer)
    got = fit(src, max_bins=None)
    same(ref, got)
    np.testing.assert_array_equal(got.predict(src), ref.predict(t))


def test_postgres_bad_input(pg):
    with pytest.raises(SourceError, match="SELEC"):
        PostgresSource(pg, query="SELEC 1")
    with pytest.raises(SourceError, match="missing_table"):
        PostgresSource(pg, table="missing_table")
    with pytest.raises(SourceError, match="not_a_column"):
        DecisionTreeClassifier().fit(PostgresSource(pg, table="adult"), target="not_a_column")


# -- naive Bayes: one GROUP BY query, or one stream ---------------------------------------------

def _bayes_on(source, path):
    from rainforest import NaiveBayesClassifier
    queries = sql_statements(source)
    nb = NaiveBayesClassifier().fit(source, target="class")
    ref = NaiveBayesClassifier().fit(path, target="class")
    assert nb.n_passes_ == ref.n_passes_ == 1
    pushed = [q for q in queries if "GROUPING SETS" in q]  # pushed down, not streamed
    assert len(pushed) == (source.transfer == "aggregates")
    assert len(queries) == 1
    np.testing.assert_allclose(nb.predict_proba(path), ref.predict_proba(path), rtol=0, atol=1e-9)


@BOTH
@pytest.mark.parametrize("name", ["adult_train", "magic"])
def test_naive_bayes_in_one_duckdb_query(name, transfer):
    path = dataset_path(name)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{path}')")
    _bayes_on(DuckDBSource(table="t", connection=con, transfer=transfer), path)


@BOTH
def test_naive_bayes_in_one_postgres_query(pg, transfer):
    _bayes_on(PostgresSource(pg, table="adult", transfer=transfer), dataset_path("adult_train"))


def _hard_moments_table(n=3000):
    """Columns whose moments sums from zero cannot give: far from zero against their spread, constant
    within a class, and one with NaN (a missing value); and a plain one."""
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, n)
    far = 1e9 + rng.normal(size=n)
    nan = rng.normal(size=n)
    nan[::7] = np.nan
    return pa.table({"far": far, "constant": np.where(y == 1, 5.0, rng.normal(size=n)), "nan": nan,
                     "plain": rng.normal(size=n) + y, "class": y})


@pytest.mark.parametrize("drop", [[], ["constant", "nan"], ["far", "nan"], ["far", "constant"]])
def test_naive_bayes_sums_query_hands_over_to_sums_about_the_class_means(tmp_path, drop):
    """Moments are asked as sums first (the cheap aggregates); where those cannot give them (far from
    zero, or no spread), the result asks for sums of the differences from each class's mean, a second
    scan counted as a second pass, and the model is the Parquet fit's.  (NaN is a missing value.)"""
    from rainforest import NaiveBayesClassifier
    table = _hard_moments_table().drop_columns(drop)
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{path}')")
    source = DuckDBSource(table="t", connection=con, transfer="aggregates")
    queries = sql_statements(source)
    nb = NaiveBayesClassifier().fit(source, target="class")
    ref = NaiveBayesClassifier().fit(path, target="class")
    second = not {"far", "constant"} <= set(drop)
    assert len(queries) == nb.n_passes_ == 1 + second
    assert all("var_pop" not in q for q in queries) and ("CASE y WHEN" in queries[-1]) == second
    # the model's numbers, not its probabilities: at 1e9 one ulp of a mean moves them by 1e-7
    np.testing.assert_allclose(nb.theta_, ref.theta_, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(nb.var_, ref.var_, rtol=1e-12)
    np.testing.assert_array_equal(nb.class_count_, ref.class_count_)
    plain = NaiveBayesClassifier().fit(DuckDBSource(table="t", connection=con, transfer="aggregates"),
                                       target="class", features=["plain"])
    assert plain.n_passes_ == 1  # the plain column alone: the sums query suffices


def test_naive_bayes_infinite_value_is_refused_by_the_second_query():
    from rainforest import DataError, NaiveBayesClassifier
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT CASE WHEN i = 5 THEN 'inf'::DOUBLE ELSE i END AS x, i % 2 AS class "
                "FROM range(100) r(i)")
    with pytest.raises(DataError, match="'x'.*infinite"):
        NaiveBayesClassifier().fit(DuckDBSource(table="t", connection=con, transfer="aggregates"), target="class")


def test_naive_bayes_postgres_sums_query_hands_over_to_sums_about_the_means(pg, tmp_path):
    from rainforest import NaiveBayesClassifier
    table = _hard_moments_table()
    load_script("postgres_server").load_table(pg, "hard_moments", table, replace=True)
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path)
    nb = NaiveBayesClassifier().fit(PostgresSource(pg, table="hard_moments", transfer="aggregates"), target="class")
    ref = NaiveBayesClassifier().fit(path, target="class")
    assert nb.n_passes_ == 2
    np.testing.assert_allclose(nb.theta_, ref.theta_, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(nb.var_, ref.var_, rtol=1e-12)


# -- literals whatever standard_conforming_strings says ----------------------------------------

def _backslash_table(n=400):
    rng = np.random.default_rng(3)
    cats = np.array(["back\\", "it\\'s", "plain", "quote'", "\\\\two"])
    c = cats[rng.integers(0, len(cats), n)]
    x = rng.normal(size=n)
    y = np.where(np.isin(c, cats[:2]) ^ (x > 1.0), "yes", "no")
    return pa.table({"c": pa.array(c), "x": x, "class": pa.array(y)})


def _without_standard_strings(url: str) -> str:
    return url + ("&" if "?" in url else "?") + "options=-c%20standard_conforming_strings%3Doff"


@BOTH
def test_postgres_literals_do_not_depend_on_standard_conforming_strings(pg, transfer):
    import psycopg
    table = _backslash_table()
    load_script("postgres_server").load_table(pg, "backslashes", table, replace=True)
    off = _without_standard_strings(pg)
    with psycopg.connect(off) as conn:
        assert conn.execute("SHOW standard_conforming_strings").fetchone()[0] == "off"
    ref = fit(table, max_bins=None)
    # our own sessions set standard strings: the pushed-down passes give the Parquet/in-memory tree
    src = PostgresSource(off, table="backslashes", transfer=transfer)
    same(ref, fit(src, max_bins=None))
    np.testing.assert_array_equal(ref.predict(src), ref.predict(table))
    # to_sql text is right in a session of the user's with standard strings off, and on
    expected = ref.predict(table)
    for url in (off, pg):
        with psycopg.connect(url) as conn:
            got = [r[0] for r in conn.execute(f"SELECT {ref.tree_.to_sql('postgres')} FROM backslashes").fetchall()]
        np.testing.assert_array_equal(np.array(got), expected)
    assert "E'back\\\\'" in ref.tree_.to_sql("postgres")  # the tree splits on the category with a backslash


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_bin_in_sql_is_the_kernels_bin(engine, request):
    """A value's bin written as SQL (nested CASE on DuckDB, width_bucket over the negated cuts on
    PostgreSQL) is ``searchsorted(cuts, x, 'left')``, as the Numba encoders take it: values equal to a cut,
    between, beyond both ends, signed zeros, tiny and huge magnitudes."""
    from rainforest.sql import dialect_of, slot_sql

    cuts = np.array([-1e300, -2.5, -1e-300, 0.0, 5e-324, 0.5, 3.0, 1e300])
    x = np.concatenate([cuts, np.nextafter(cuts, np.inf), np.nextafter(cuts, -np.inf),
                        [-np.inf, np.inf, -0.0, 2.0, -7.0, 1e308, -1e308]])
    want = np.searchsorted(cuts, x, "left")
    for n in (len(cuts), 1):  # and a single cut
        sql = "SELECT i, " + slot_sql("x", cuts[:n], dialect_of(engine)) + " AS slot FROM t ORDER BY i"
        if engine == "duckdb":
            con = duckdb.connect()
            con.register("t", pa.table({"i": np.arange(len(x)), "x": x}))
            got = con.sql(sql).fetchnumpy()["slot"]
        else:
            import psycopg
            with psycopg.connect(request.getfixturevalue("postgres_url")) as conn:
                conn.execute("CREATE TEMPORARY TABLE t (i integer, x double precision)")
                with conn.cursor().copy("COPY t (i, x) FROM STDIN") as copy:
                    for i, v in enumerate(x):
                        copy.write_row((i, float(v)))
                got = np.array([r[1] for r in conn.execute(sql).fetchall()])
        np.testing.assert_array_equal(got, np.searchsorted(cuts[:n], x, "left") if n == 1 else want)
