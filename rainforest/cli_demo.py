"""``rainforest demo``: write an Agrawal dataset to Parquet, train a tree on it out of core, report."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

from .cli_io import format_seconds, peak_rss_mb, print_lines


def cmd_demo(args) -> int:
    from . import DecisionTreeClassifier, warm_up
    from .datasets import write_agrawal_parquet

    n_train = int(round(args.rows * 0.8))
    n_test = args.rows - n_train
    temp = None
    if args.keep is not None:
        root = args.keep
        if os.path.exists(root) and not os.path.isdir(root):
            raise FileExistsError(f"--keep {root!r} exists and is not a folder")
    else:
        temp = root = tempfile.mkdtemp(prefix="rainforest-demo-")
    compiling = warm_up.start(categorical=False)  # the demo's attributes are numeric
    try:
        train_dir, test_dir = os.path.join(root, "train"), os.path.join(root, "test")
        t0 = time.perf_counter()
        train_files = write_agrawal_parquet(train_dir, n_train, function=args.function,
                                            n_files=min(8, n_train), seed=args.seed)
        test_files = write_agrawal_parquet(test_dir, n_test, function=args.function,
                                           n_files=min(2, n_test), seed=args.seed, start=n_train)
        gen_time = time.perf_counter() - t0
        where = root if temp is None else f"{root} (temporary, removed at the end)"
        print_lines(f"dataset: Agrawal function {args.function}, seed {args.seed}, {args.rows:,} rows in "
             f"{len(train_files) + len(test_files)} Parquet files, written in {format_seconds(gen_time)}",
             f"  train: {n_train:,} rows in {len(train_files)} files  {train_dir}",
             f"  test:  {n_test:,} rows in {len(test_files)} files  {test_dir}",
             f"  where: {where}", "")
        clf = DecisionTreeClassifier(max_depth=args.max_depth, max_bins=args.max_bins,
                                     memory_budget=args.memory_budget)
        # Numba compiles the kernels on their first use and caches them: pay that apart from the fit,
        # on one training file, and say what it cost (the first run after an install only).  The
        # routing kernels first: the fit then reaches its search once the child has compiled it.
        t0 = time.perf_counter()
        if args.max_bins is not None and args.max_bins <= 255:  # one-byte slots, as compile_routing's
            warm_up.compile_routing(n_attributes=9, n_classes=2)  # Agrawal's 9 attributes, 2 classes
        DecisionTreeClassifier(**clf.get_params()).fit(train_files[0], target="class")
        warm = time.perf_counter() - t0
        warm_up.stop(compiling)
        print_lines(f"compiling kernels (first run only, cached afterwards): {format_seconds(warm)}"
                    if warm > 2.0 else f"kernels loaded from Numba's cache: {format_seconds(warm)}")
        print_lines(f"training {clf!r} out of core ...")
        sys.stdout.flush()
        t0 = time.perf_counter()
        clf.fit(train_dir, target="class")
        fit_time = time.perf_counter() - t0
        accuracy = clf.score(test_dir, target="class")
        tree = clf.tree_
        print_lines("", "top of the tree (3 levels):", clf.export_text(max_depth=3).rstrip("\n"), "",
             f"nodes:         {tree.node_count} ({tree.n_leaves} leaves, depth {tree.max_depth})",
             f"test accuracy: {accuracy:.4f} on {n_test:,} held-out rows",
             f"passes:        {clf.n_passes_} over the training data ({len(clf.n_passes_per_level_)} tree "
             f"levels)",
             f"fit time:      {format_seconds(fit_time)}")
        peak = peak_rss_mb()
        if peak is not None:
            print_lines(f"peak memory:   {peak:.0f} MB (peak resident set size of this process)")
        if temp is None:
            print_lines(f"data kept in:  {root}")
    finally:
        warm_up.stop(compiling)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return 0
