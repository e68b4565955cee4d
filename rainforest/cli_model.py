"""``rainforest predict``, ``evaluate`` and ``inspect``: the commands that read a saved model."""
from __future__ import annotations

import os

from .errors import MissingDependency
from .cli_io import load_model, model_summary, opened_data, print_lines
from .outputs import check_outputs  # light: os, glob and tempfile only


# -- predict ---------------------------------------------------------------------------
def model_target(clf) -> str:
    """The label column the model was trained on."""
    if hasattr(clf, "tree_"):
        return clf.tree_.target
    if hasattr(clf, "tree_seeds_"):
        return clf.estimators_[0].target
    return clf.target_


def _scan(clf, data, extra: list[str]):
    """Batches of ``data`` holding the model's features and ``extra`` columns (one counted pass)."""
    import pyarrow as pa

    from .inputs import to_source
    from .metrics import model_features

    source = to_source(data)
    features = model_features(clf)
    columns = features + [c for c in extra if c not in features]
    source.check_columns(columns)
    for _, batch in source.scan(columns, 65536):
        yield pa.Table.from_batches([batch])


def cmd_predict(args) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .atomic import atomic_path

    check_outputs({"output file": args.out}, [args.model, args.data])
    clf = load_model(args.model)
    out = os.path.abspath(args.out)
    regression = getattr(clf, "_regression", False)
    if regression and args.proba:
        raise ValueError(f"--proba: {args.model!r} holds a {type(clf).__name__}, which predicts numbers, not "
                         f"class probabilities")
    classes = np.array([], np.float64) if regression else clf.classes_  # a regressor's predictions are float64
    names = ["prediction"] + ([f"proba_{c}" for c in classes] if args.proba else [])
    if len(set(names)) != len(names):
        raise ValueError(f"the classes {list(classes)!r} give clashing column names {names!r}")
    n_rows = 0
    with opened_data(args) as data, atomic_path(out, suffix=".parquet") as tmp:  # renamed into place when complete
        writer = None
        try:
            for table in _scan(clf, data, []):
                if regression:
                    cols = [pa.array(clf.predict(table), pa.float64())]
                else:
                    proba = clf.predict_proba(table)
                    cols = [pa.array(classes[np.argmax(proba, axis=1)])]
                if args.proba:
                    cols += [pa.array(proba[:, k]) for k in range(len(classes))]
                batch = pa.table(cols, names=names)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, batch.schema)
                writer.write_table(batch)
                n_rows += batch.num_rows
            if writer is None:  # no rows at all: still a valid, empty file
                pred_type = pa.array(classes[:0]).type
                schema = pa.schema([("prediction", pred_type)] + [(n, pa.float64()) for n in names[1:]])
                writer = pq.ParquetWriter(tmp, schema)
        finally:
            if writer is not None:
                writer.close()
    print_lines(f"wrote {n_rows:,} predictions to {args.out}")
    return 0


# -- evaluate -------------------------------------------------------------------------
def cmd_evaluate(args) -> int:
    import numpy as np

    from .metrics import evaluate

    clf = load_model(args.model)
    target = args.target or model_target(clf)
    check_outputs({"ROC plot": args.roc}, [args.model, args.data])
    if getattr(clf, "_regression", False):
        if args.threshold is not None or args.pos_label is not None or args.roc is not None:
            raise ValueError(f"--threshold, --pos-label and --roc are for classifiers; {args.model!r} holds a "
                             f"{type(clf).__name__}")
        with opened_data(args) as data:  # one pass, as a classifier's
            print_lines(evaluate(clf, data, target=target).report())
        return 0
    with opened_data(args) as data:  # one pass; on a Dask cluster the workers score their partitions
        pos_label = next((c for c in clf.classes_ if str(c) == args.pos_label), args.pos_label)  # "1" means 1
        ev = evaluate(clf, data, target=target, threshold=args.threshold, pos_label=pos_label)
    cm = ev.confusion_matrix
    total = int(round(cm.sum()))
    if total == 0:
        raise ValueError(f"{args.data!r} holds no row with a label in column {target!r}")
    correct = int(round(np.trace(cm)))
    skipped = ev.n_missing_labels
    print_lines(f"rows:       {total:,}" + (f" ({skipped:,} rows with a missing label skipped)" if skipped else ""),
         f"accuracy:   {ev.accuracy():.6f}  ({correct:,} of {total:,} correct)",
         f"error rate: {ev.error_rate():.6f}  ({total - correct:,} wrong)", "")
    names = [str(c) for c in ev.classes]
    width = max([len(n) for n in names] + [len(f"{int(cm.max()):,}")])
    print_lines("confusion matrix (rows: true class, columns: predicted class):",
         " " * (width + 2) + " ".join(f"{n:>{width}}" for n in names))
    for n, row in zip(names, cm):
        print_lines(f"{n:>{width}}  " + " ".join(f"{int(round(v)):>{width},}" for v in row))
    print_lines("", ev.report(digits=4))
    if args.roc is not None:  # the report above is out whatever happens here
        ev.plot_roc(args.roc, title=f"ROC curve of {os.path.basename(args.model)}")
        print_lines("", f"ROC curve written to {args.roc}")
    return 0


# -- inspect --------------------------------------------------------------------------
def cmd_inspect(args) -> int:
    import numpy as np

    from .metrics import model_features
    from .tree import Tree

    clf = load_model(args.model)
    if hasattr(clf, "tree_seeds_") and args.tree is None:
        trees = None  # a forest: its summary, and one of its trees with --tree
    elif hasattr(clf, "tree_seeds_"):
        if not 0 <= args.tree < len(clf.estimators_):
            raise ValueError(f"--tree {args.tree}: the forest has trees 0 to {len(clf.estimators_) - 1}")
        trees = [clf.estimators_[args.tree]]
    elif args.tree is not None:
        raise ValueError(f"--tree applies to forests; {args.model!r} holds a {type(clf).__name__}")
    elif hasattr(clf, "tree_"):
        trees = [clf.tree_]
    elif hasattr(clf, "estimator_weights_") and all(isinstance(e, Tree) for e in clf.estimators_):
        trees = list(clf.estimators_)  # boosted trees, round by round
    else:
        trees = []
    exported = _export(args, clf, trees)
    for k, tree in enumerate(trees or []):
        if len(trees) > 1:
            print_lines(f"round {k} (weight {clf.estimator_weights_[k]:.4f}):")
        print_lines((tree.export_rules() if args.rules else tree.export_text(max_depth=args.max_depth)).rstrip("\n"), "")
    print_lines(f"model:     {args.model} ({type(clf).__name__})", f"target:    {model_target(clf)}",
                "task:      regression" if getattr(clf, "_regression", False) else
                f"classes:   {', '.join(str(c) for c in clf.classes_)}")
    if hasattr(clf, "tree_"):
        tree = clf.tree_
        print_lines(f"criterion: {tree.criterion}", f"nodes:     {tree.node_count}", f"depth:     {tree.max_depth}",
             f"leaves:    {tree.n_leaves}")
    else:
        print_lines(*(f"{label + ':':<10} {rest.strip()}" for label, rest in (line.split(":", 1) for line in model_summary(clf))))
    if getattr(clf, "n_passes_", None) is not None:
        print_lines(f"passes:    {clf.n_passes_} (made by the fit that produced it)")
    for line in exported:
        print_lines(line)
    if hasattr(clf, "tree_"):
        importances = clf.tree_.feature_importances()
    elif hasattr(clf, "tree_seeds_"):
        importances = clf.feature_importances_
    else:
        importances = None
    features = model_features(clf)
    kinds = _feature_kinds(clf)
    width = max(len(str(n)) for n in features)
    if importances is None:
        print_lines("", f"features ({len(features)}):")
        for name, kind in zip(features, kinds):
            print_lines(f"  {str(name):<{width}}  {kind}")
        return 0
    print_lines("", f"features ({len(features)}), by importance:")
    for j in np.argsort(-importances, kind="stable"):
        print_lines(f"  {str(features[j]):<{width}}  {kinds[j]:<11}  {importances[j]:.4f}")
    return 0


def _export(args, clf, trees) -> list[str]:
    """Write the exports inspect was asked for; lines saying what was written."""
    wanted = [a for a in ("dot", "png", "sql", "onnx") if getattr(args, a) is not None]
    if not wanted:
        return []
    tree = trees[0] if trees and len(trees) == 1 else None
    if args.onnx is not None and tree is None and not hasattr(clf, "tree_seeds_"):
        raise ValueError(f"--onnx exports trees and forests; {args.model!r} holds a {type(clf).__name__}")
    if tree is None and wanted != ["onnx"]:
        raise ValueError(f"--{wanted[0]} exports one tree; {args.model!r} holds a {type(clf).__name__}"
                         + (" (choose one with --tree K)" if hasattr(clf, "tree_seeds_") else ""))
    check_outputs({f"{a.upper()} file": getattr(args, a) for a in ("dot", "png", "onnx")}, [args.model])
    lines, missing = [], []

    def write(label, path, export):
        """One export; one that needs a missing package or program is left out and said, the others
        are still written."""
        try:
            export()
        except MissingDependency as exc:
            missing.append(f"{label} not written: {exc}")
        else:
            lines.append(f"{label + ':':<11}{path}")

    if args.dot is not None:
        from .dot import export_dot
        write("DOT", args.dot, lambda: export_dot(tree, args.dot, filled=True, max_depth=args.max_depth))
    if args.png is not None:
        from .dot import render_png
        write("PNG", args.png, lambda: render_png(tree, args.png, filled=True, max_depth=args.max_depth))
    if args.onnx is not None:
        from .onnx import to_onnx
        write("ONNX", args.onnx, lambda: to_onnx(clf if args.tree is None else tree, args.onnx))
    if args.sql is not None:
        lines += ["", f"SQL ({args.sql}):", tree.to_sql(args.sql)]
    if missing:  # the other outputs are written: say them, then fail with what to install
        print_lines(*lines)
        raise MissingDependency("; ".join(missing))
    return lines


def _feature_kinds(clf) -> list[str]:
    from .metrics import model_features
    from .schema import CATEGORICAL
    from .tree import Tree

    if hasattr(clf, "tree_"):
        return list(clf.tree_.feature_kinds)
    if hasattr(clf, "tree_seeds_"):
        return list(clf.estimators_[0].feature_kinds)
    if hasattr(clf, "estimator_weights_") and isinstance(clf.estimators_[0], Tree):
        return list(clf.estimators_[0].feature_kinds)
    if hasattr(clf, "estimator_weights_"):
        return _feature_kinds(clf.estimators_[0])
    kinds = getattr(clf, "feature_kinds_", {})
    return ["categorical" if kinds.get(c) == CATEGORICAL else "numeric" for c in model_features(clf)]
