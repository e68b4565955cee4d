"""Write an Agrawal data set as Parquet for training: ``DIR/train`` and ``DIR/test``.

Used by the ``data`` service of ``docker-compose.yml`` to fill the shared volume, and
handy anywhere a cluster needs data::

    python scripts/agrawal_data.py /data/agrawal --rows 1000000 --files 8

The test rows continue the training rows' stream (rows ``rows`` onwards). A folder that
already holds the same data set (its ``_meta.json`` matches) is left as it is, so the
command can run on every ``docker compose up``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="where to write train/ and test/")
    p.add_argument("--rows", type=int, default=1_000_000, help="training rows (default 1000000)")
    p.add_argument("--files", type=int, default=8, help="training files, i.e. Dask partitions (default 8)")
    p.add_argument("--test-rows", type=int, default=None, help="held-out rows (default: a quarter of --rows)")
    p.add_argument("--function", type=int, default=1, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal's labelling function (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the stream (default 0)")
    args = p.parse_args(argv)
    from rainforest.datasets import write_agrawal_parquet

    test_rows = args.test_rows if args.test_rows is not None else max(1, args.rows // 4)
    meta = {"rows": args.rows, "files": args.files, "test_rows": test_rows, "function": args.function,
            "seed": args.seed, "label": "class"}
    meta_path = os.path.join(args.folder, "_meta.json")
    try:
        with open(meta_path) as f:
            if json.load(f) == meta:
                print(f"{args.folder} already holds this data set; left as it is")
                return 0
    except (OSError, ValueError):
        pass
    for sub in ("train", "test"):
        shutil.rmtree(os.path.join(args.folder, sub), ignore_errors=True)
    try:
        write_agrawal_parquet(os.path.join(args.folder, "train"), args.rows, function=args.function,
                              n_files=args.files, seed=args.seed)
        write_agrawal_parquet(os.path.join(args.folder, "test"), test_rows, function=args.function,
                              n_files=1, seed=args.seed, start=args.rows)
    except (ValueError, FileExistsError) as exc:
        sys.exit(f"error: {exc}")
    with open(meta_path, "w") as f:  # last: a partial data set is never taken as complete
        json.dump(meta, f)
    print(f"wrote {args.rows:,} training rows in {args.files} files and {test_rows:,} test rows to {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
