"""What the command line's subcommands share: printing, timing, opening DATA and model files,
and a fitted model's summary in a few lines.

Heavy modules are imported inside the functions, so ``rainforest --help`` stays quick.
"""
from __future__ import annotations

import contextlib
import os
import sys


def print_lines(*lines) -> None:
    for line in lines:
        print(line)


def peak_rss_mb() -> float | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1e6 if sys.platform == "darwin" else rss * 1024 / 1e6  # bytes on macOS, KiB on Linux


def format_seconds(t: float) -> str:
    return f"{t:.2f} s" if t < 120 else f"{t / 60:.1f} min"


def load_model(path: str):
    from . import load

    if os.path.isdir(path):
        raise IsADirectoryError(f"the model {path!r} is a folder, not a model file")
    return load(path)


def tree_summary(tree) -> list[str]:
    return [f"nodes:  {tree.node_count}", f"depth:  {tree.max_depth}", f"leaves: {tree.n_leaves}"]


def model_summary(clf) -> list[str]:
    """What a fitted (or loaded) model is, in a few lines."""
    import numpy as np

    if hasattr(clf, "tree_"):
        return tree_summary(clf.tree_)
    if hasattr(clf, "estimators_") and hasattr(clf, "tree_seeds_"):  # a forest
        depths = [t.max_depth for t in clf.estimators_]
        lines = [f"trees:  {len(clf.estimators_)} (depth {min(depths)} to {max(depths)}, "
                 f"{int(np.mean([t.n_leaves for t in clf.estimators_]))} leaves on average)"]
        if getattr(clf, "oob_score_", None) is not None:
            lines.append(f"out-of-bag {'R²' if getattr(clf, '_regression', False) else 'accuracy'}: "
                         f"{clf.oob_score_:.4f}")
        return lines
    if hasattr(clf, "estimator_weights_"):  # boosting
        return [f"rounds: {len(clf.estimator_weights_)} (weights {', '.join(f'{w:.3f}' for w in clf.estimator_weights_[:5])}"
                f"{', ...' if len(clf.estimator_weights_) > 5 else ''})"]
    return [f"model:  naive Bayes over {len(clf.feature_names_in_)} features"]


@contextlib.contextmanager
def opened_data(args):
    """DATA as :func:`open_data` gives it, or, with --scheduler, a Dask source over the cluster
    (connecting fails at once, naming the address), closed afterwards."""
    if getattr(args, "scheduler", None) is None:
        yield open_data(args)
        return
    if args.table is not None or args.query is not None:
        raise ValueError("--scheduler reads Parquet DATA; --table and --query are for DuckDB files and PostgreSQL")
    from rainforest.storage import DaskSource

    source = DaskSource(args.data, scheduler=args.scheduler)
    try:
        yield source
    finally:
        source.close()


def open_data(args):
    """DATA as what fit / predict accept: a PostgreSQL URL or a DuckDB database file (with --table
    or --query) becomes a SQL source, whose rows stream out or whose passes run in the database as
    --transfer says; anything else is Parquet."""
    data, table, query = args.data, args.table, args.query
    transfer = getattr(args, "transfer", "auto")
    is_pg = data.startswith(("postgresql://", "postgres://"))
    is_duckdb = data.lower().endswith((".duckdb", ".ddb"))
    if not (is_pg or is_duckdb):
        if table is not None or query is not None or transfer != "auto":
            raise ValueError("--table, --query and --transfer need DATA to be a DuckDB file (.duckdb) or a "
                             "postgresql:// URL")
        return data
    if (table is None) == (query is None):
        raise ValueError(f"give exactly one of --table and --query with {'the URL' if is_pg else 'the DuckDB file'} "
                         f"{data!r}")
    from rainforest.storage import DuckDBSource, PostgresSource

    if is_pg:
        return PostgresSource(data, table=table, query=query, transfer=transfer)
    return DuckDBSource(table=table, query=query, database=data, transfer=transfer)
