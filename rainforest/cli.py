"""The ``rainforest`` command line: demo, train, predict, evaluate, inspect.

Every subcommand streams its data out of core (Parquet files, folders or
globs), so the data may be larger than memory. Bad input ends in one line
``rainforest: error: <message>`` on stderr and exit status 2 (the same status
argparse uses for usage errors); Ctrl-C ends with status 130, SIGTERM and SIGHUP
with 128 + the signal's number, after the same cleanup. Output files (models,
predictions, plots, exports) are checked before any work (writable, not a folder,
not an input however spelled) and written atomically: a failed command leaves none
behind, half-written or otherwise.

Heavy modules (Numba kernels, pyarrow) are imported by the subcommands, not
at import time, so ``rainforest --help`` answers at once.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shutil
import sys
import tempfile
import time

from dataclasses import dataclass

from .constraints import ADABOOST_PARAMS, BOAT_PARAMS, FOREST_PARAMS, NAIVE_BAYES_PARAMS, TREE_PARAMS  # light
from .params import Options, parse_option
from .outputs import check_outputs  # light: os, glob and tempfile only
from .signals import Terminated, termination_as_interrupt

PROG = "rainforest"
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


# -- argument types --------------------------------------------------------------
def _int_at_least(least: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be an integer >= {least}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {least}"
    return parse


def _size(text: str) -> str:
    from .budget import parse_bytes

    try:
        parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# -- parser ------------------------------------------------------------------------
class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keep the description's and the epilog's lines as written."""


def _subparser(sub, name: str, summary: str, description: str, epilog: str):
    return sub.add_parser(name, help=summary, description=f"{summary}\n\n{description}",
                          epilog=epilog, formatter_class=_Formatter)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Out-of-core decision trees: train on Parquet data of any size, "
                    "predict, evaluate and inspect models.",
        epilog="examples:\n"
               "  rainforest demo --rows 200000\n"
               "  rainforest train data/train/ --target label --model model.json\n"
               "  rainforest predict model.json data/new/ --out predictions.parquet\n"
               "  rainforest evaluate model.json data/test/\n"
               "  rainforest inspect model.json --max-depth 3\n\n"
               "Run 'rainforest COMMAND --help' for the options of a command.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import __version__
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    sub.required = True

    # demo
    p = _subparser(
        sub, "demo", "Generate a synthetic data set, train a tree on it out of core and test it.",
        "Writes Agrawal 'loan applicant' data (9 attributes, label column 'class') as Parquet\n"
        "files: 80% of the rows for training (8 files) and 20% held out for testing (2 files).\n"
        "A decision tree is trained by streaming over the training files, then scored on the\n"
        "held-out files. The data goes to a temporary folder that is removed afterwards,\n"
        "unless --keep names a folder to keep it in.",
        "example:\n  rainforest demo --rows 200000 --max-depth 8 --keep /tmp/agrawal")
    p.add_argument("--rows", type=_int_at_least(10), default=1_000_000, metavar="N",
                   help="rows to generate in all (default: 1000000)")
    p.add_argument("--function", type=int, choices=range(1, 11), default=1, metavar="{1..10}",
                   help="which of Agrawal's ten classification functions labels the rows (default: 1)")
    p.add_argument("--max-depth", type=_int_at_least(1), default=10, metavar="N",
                   help="maximum depth of the tree (default: 10)")
    p.add_argument("--max-bins", type=_int_at_least(2), default=255, metavar="N",
                   help="numeric attributes are cut into at most this many bins (default: 255)")
    p.add_argument("--memory-budget", type=_size, default="1GB", metavar="SIZE",
                   help="bound on the memory the training passes use, e.g. 512MB, 2GiB (default: 1GB)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, metavar="N",
                   help="seed of the generated data (default: 0)")
    p.add_argument("--keep", metavar="DIR", default=None,
                   help="write the data to DIR/train and DIR/test and keep it (default: a temporary folder)")
    p.set_defaults(func=cmd_demo)

    # train
    p = _subparser(
        sub, "train", "Train a model (a decision tree, a random forest, naive Bayes or AdaBoost) and save it as JSON.",
        "DATA is a Parquet file, a folder of Parquet files (read recursively) or a glob such as\n"
        "'data/*.parquet'. Rows are streamed in batches, so DATA may be larger than memory; each\n"
        "level of the tree costs about one pass over it. All columns except the target (and the\n"
        "weight) are features unless --features names them. String and boolean columns are\n"
        "categorical; name integer columns with --categorical to make them categorical too.\n"
        "--learner picks the model (default: a decision tree; boat: the exact tree in two passes);\n"
        "options that belong to another\n"
        "learner are refused.",
        "examples:\n"
        "  rainforest train data/train/ --target label --model model.json\n"
        "  rainforest train 'data/*.parquet' --target y --model m.json --max-depth 8 --exact \\\n"
        "      --categorical zipcode car --memory-budget 512MB\n"
        "  rainforest train data/train/ --target label --model forest.json --learner forest \\\n"
        "      --n-estimators 100 --max-depth 10 --oob-score\n"
        "  rainforest train data/train/ --target label --model nb.json --learner bayes\n"
        "  rainforest train /data/train --target class --model /data/model.json --scheduler tcp://scheduler:8786")
    p.add_argument("data", metavar="DATA", help="Parquet file, folder or glob with the training rows; or a DuckDB "
                   "database file or a postgresql:// URL, with --table or --query")
    _add_sql_options(p)
    p.add_argument("--target", required=True, metavar="COL", help="the label column")
    p.add_argument("--model", required=True, metavar="PATH", help="where to write the model (JSON)")
    p.add_argument("--learner", choices=list(LEARNERS), default="tree",
                   help="tree: one decision tree; forest: a random forest whose trees grow together, one pass "
                        "per level; bayes: naive Bayes in one pass; adaboost: SAMME boosting, one pass per "
                        "round; boat: BOAT, the exact tree (as --exact) in two passes (default: tree)")
    opt = _ParamOptions(p)
    opt.add("--criterion", help="split quality: Gini index (CART), information gain (ID3) or gain ratio (C4.5) "
                                "(default: gini)")
    opt.add("--categorical-split", help="categorical attributes split in two subsets, or one branch per category "
                                        "(default: binary)")
    opt.add("--max-depth", metavar="N", help="maximum depth of the tree (default: grow until the leaves are pure)")
    bins = p.add_mutually_exclusive_group()
    opt.add("--max-bins", metavar="N", group=bins,
            help="numeric attributes are cut into at most this many quantile bins, fast (default: 255)")
    bins.add_argument("--exact", action="store_true",
                      help="exact split points between adjacent values instead of bins (as CART/C4.5)")
    opt.add("--min-samples-leaf", metavar="N",
            help="fewest rows in each child of a split; a float is a fraction of the rows (default: 1)")
    opt.add("--min-samples-split", metavar="N",
            help="fewest rows a node needs to be split; a float is a fraction of the rows (default: 2)")
    opt.add("--memory-budget", metavar="SIZE",
            help="bound on the memory one pass uses, e.g. 512MB, 2GiB (default: 1GB)")
    opt.add("--algorithm",
            help="hybrid: finish in memory the subtrees whose rows fit a quarter of the budget, "
                 "spill rows by node when a level needs several reads, count attributes in groups "
                 "when one node's counts exceed the budget; write: spill and groups only; vertical: "
                 "groups only; read: one pass over the data per level; the same tree in every case "
                 "(default: hybrid; a forest takes hybrid or read)")
    opt.add("--spill-dir", metavar="DIR",
            help="where RF-Write's temporary spill folder (BOAT's work folder) is made, removed after training "
                 "(default: the system's temporary directory)")
    opt.add("--batch-size", metavar="N", help="rows per record batch (default: derived from the memory budget)")
    opt.add("--sample-size", metavar="N",
            help="rows the profiling pass samples: for the bin edges (tree, forest; default: 200000) or BOAT's "
                 "bootstrap trees (default: 100000)")
    opt.add("--random-state", metavar="N",
            help="seed of the profiling sample, a forest's bootstraps and attribute draws, BOAT's bootstraps "
                 "(default: 0: rainforest is deterministic by default)")
    opt.add("--categorical", dest="categorical_features", nargs="+", metavar="COL",
            help="columns to treat as categorical besides string and boolean ones")
    p.add_argument("--features", nargs="+", metavar="COL", default=None,
                   help="feature columns (default: all but the target and the weight)")
    p.add_argument("--weight", metavar="COL", default=None, help="column of row weights")
    opt.add("--class-weight", choices=["balanced"], help="weight classes inversely to their frequency")
    opt.add("--n-jobs", metavar="N", help="threads; -1 uses all cores (default: -1)")
    _add_scheduler_option(p, "run every pass")
    p.add_argument("-v", "--verbose", action="count", default=0, help="print one line per pass over the data")
    g = p.add_argument_group("pruning (--learner tree; --ccp-alpha also forest)")
    opt.add("--ccp-alpha", metavar="A", group=g,
            help="minimal cost-complexity pruning after growth, as scikit-learn's ccp_alpha (default: 0, none)")
    g.add_argument("--prune", choices=["pessimistic", "reduced-error"], default=None,
                   help="pessimistic: C4.5's error-based pruning (no pass); reduced-error: prune against the "
                        "labelled rows of --validation (one pass over them)")
    g.add_argument("--confidence", type=float, default=None, metavar="CF",
                   help="C4.5's confidence factor for --prune pessimistic; smaller prunes more (default: 0.25)")
    g.add_argument("--validation", metavar="DATA", default=None,
                   help="Parquet file, folder or glob with labelled rows for --prune reduced-error")
    g = p.add_argument_group("random forest (--learner forest)")
    opt.add("--n-estimators", metavar="N", group=g,
            help="trees of the forest (default: 100) or rounds of boosting (default: 50)")
    opt.add("--max-features", metavar="F", group=g,
            help="attributes drawn at each node: sqrt, log2, all, a count or a fraction (default: sqrt)")
    g.add_argument("--no-bootstrap", action="store_true", help="grow every tree on all the rows")
    opt.add("--max-samples", metavar="N", group=g,
            help="bootstrap sample size per tree, a count or a fraction of the rows (default: all)")
    opt.add("--oob-score", switch=True, group=g, help="also score each row with the trees that did not draw it")
    g = p.add_argument_group("naive Bayes (--learner bayes; also the base of --learner adaboost --base bayes)")
    opt.add("--numeric", group=g,
            help="numeric attributes as per-class Gaussians, or cut into --max-bins bins (default: gaussian)")
    opt.add("--alpha", metavar="A", group=g, help="Laplace correction added to every category count (default: 1)")
    g = p.add_argument_group("BOAT (--learner boat: the exact tree in two passes)")
    opt.add("--n-bootstrap", metavar="B", group=g, help="bootstrap trees grown on the sample (default: 20)")
    g = p.add_argument_group("boosting (--learner adaboost)")
    g.add_argument("--base", choices=list(BASES), default=None,
                   help="the boosted learner: a one-split stump, a tree of --max-depth (default 3), or naive Bayes "
                        "(default: stump)")
    opt.add("--learning-rate", metavar="R", group=g, help="shrinks each round's weight (default: 1.0)")
    p.set_defaults(func=cmd_train, param_options=opt.dests)

    # predict
    p = _subparser(
        sub, "predict", "Predict the class of every row of Parquet data with a saved model.",
        "Writes a Parquet file with one row per input row, in the input's row order: the column\n"
        "'prediction' and, with --proba, one column 'proba_<class>' per class. The file is\n"
        "written atomically (a temporary file renamed into place); the input may hold extra\n"
        "columns, such as the label, which are ignored.",
        "example:\n  rainforest predict model.json data/new/ --out predictions.parquet --proba")
    p.add_argument("model", metavar="MODEL", help="model file written by 'rainforest train'")
    p.add_argument("data", metavar="DATA", help="Parquet file, folder or glob with the rows to predict; or a "
                   "DuckDB database file or a postgresql:// URL, with --table or --query")
    _add_sql_options(p)
    _add_scheduler_option(p, "read the rows (streamed to this process, which predicts and writes the file)")
    p.add_argument("--out", required=True, metavar="PATH", help="Parquet file to write")
    p.add_argument("--proba", action="store_true", help="also write the probability of each class")
    p.set_defaults(func=cmd_predict)

    # evaluate
    p = _subparser(
        sub, "evaluate", "Measure a saved model on labelled Parquet data.",
        "Prints accuracy, error rate, the confusion matrix (rows: true class, columns: predicted\n"
        "class), per-class precision, recall, specificity and F1 with their macro, weighted and\n"
        "micro averages, balanced accuracy and the ROC AUC (one-vs-rest for more than two\n"
        "classes), all from one pass over DATA. Rows with a missing label are skipped and counted.",
        "examples:\n  rainforest evaluate model.json data/test/ --target label\n"
        "  rainforest evaluate model.json data/test/ --roc roc.png --threshold 0.3")
    p.add_argument("model", metavar="MODEL", help="model file written by 'rainforest train'")
    p.add_argument("data", metavar="DATA", help="Parquet file, folder or glob with labelled rows; or a DuckDB "
                   "database file or a postgresql:// URL, with --table or --query")
    _add_sql_options(p)
    _add_scheduler_option(p, "score the rows")
    p.add_argument("--target", metavar="COL", default=None,
                   help="the label column (default: the column the model was trained on)")
    p.add_argument("--roc", metavar="PNG", default=None,
                   help="also write the ROC curve (one-vs-rest per class for more than two classes) as a PNG")
    p.add_argument("--threshold", type=float, default=None, metavar="P",
                   help="two classes only: predict the positive class when its probability is at least P "
                        "(threshold moving; default: the most probable class)")
    p.add_argument("--pos-label", default=None, metavar="LABEL",
                   help="the positive class for --threshold and the ROC curve (default: the greater class)")
    p.set_defaults(func=cmd_evaluate)

    # inspect
    p = _subparser(
        sub, "inspect", "Show a saved model: its tree, size, classes and feature importances.",
        "Prints the tree as indented text, then its node count, depth, leaves, classes and the\n"
        "features ranked by importance (normalised total impurity decrease). --rules prints the\n"
        "tree as IF-THEN rules with their coverage and accuracy on the training rows instead.",
        "examples:\n  rainforest inspect model.json --max-depth 3\n  rainforest inspect model.json --rules")
    p.add_argument("model", metavar="MODEL", help="model file written by 'rainforest train'")
    p.add_argument("--rules", action="store_true", help="print IF-THEN rules, one per leaf, instead of the tree")
    p.add_argument("--max-depth", type=_int_at_least(0), default=None, metavar="N",
                   help="print the tree only down to this depth (default: all of it)")
    p.add_argument("--tree", type=_int_at_least(0), default=None, metavar="K",
                   help="for a forest: print its tree K (default: only the forest's summary)")
    g = p.add_argument_group("exports (written atomically; the tree, or the forest's tree --tree K)")
    g.add_argument("--dot", metavar="PATH", default=None, help="write the tree as Graphviz DOT text")
    g.add_argument("--png", metavar="PATH", default=None, help="draw the tree as a PNG (needs Graphviz's dot)")
    g.add_argument("--sql", choices=["duckdb", "postgres"], default=None,
                   help="print the tree as one SQL CASE expression giving the class")
    g.add_argument("--onnx", metavar="PATH", default=None,
                   help="write the tree or the whole forest as an ONNX TreeEnsembleClassifier model (pip install "
                        "rainforest[onnx])")
    p.set_defaults(func=cmd_inspect)
    return parser


# -- helpers -------------------------------------------------------------------------
def _out(*lines) -> None:
    for line in lines:
        print(line)


def _peak_rss_mb() -> float | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1e6 if sys.platform == "darwin" else rss * 1024 / 1e6  # bytes on macOS, KiB on Linux


def _seconds(t: float) -> str:
    return f"{t:.2f} s" if t < 120 else f"{t / 60:.1f} min"


def _load(path: str):
    from . import load

    if os.path.isdir(path):
        raise IsADirectoryError(f"the model {path!r} is a folder, not a model file")
    return load(path)


def _tree_summary(tree) -> list[str]:
    return [f"nodes:  {tree.node_count}", f"depth:  {tree.max_depth}", f"leaves: {tree.n_leaves}"]


# -- demo ------------------------------------------------------------------------------
def cmd_demo(args) -> int:
    from . import DecisionTreeClassifier
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
    try:
        train_dir, test_dir = os.path.join(root, "train"), os.path.join(root, "test")
        t0 = time.perf_counter()
        train_files = write_agrawal_parquet(train_dir, n_train, function=args.function,
                                            n_files=min(8, n_train), seed=args.seed)
        test_files = write_agrawal_parquet(test_dir, n_test, function=args.function,
                                           n_files=min(2, n_test), seed=args.seed, start=n_train)
        gen_time = time.perf_counter() - t0
        where = root if temp is None else f"{root} (temporary, removed at the end)"
        _out(f"dataset: Agrawal function {args.function}, seed {args.seed}, {args.rows:,} rows in "
             f"{len(train_files) + len(test_files)} Parquet files, written in {_seconds(gen_time)}",
             f"  train: {n_train:,} rows in {len(train_files)} files  {train_dir}",
             f"  test:  {n_test:,} rows in {len(test_files)} files  {test_dir}",
             f"  where: {where}", "")
        clf = DecisionTreeClassifier(max_depth=args.max_depth, max_bins=args.max_bins,
                                     memory_budget=args.memory_budget)
        _out(f"training {clf!r} out of core ...")
        sys.stdout.flush()
        t0 = time.perf_counter()
        clf.fit(train_dir, target="class")
        fit_time = time.perf_counter() - t0
        accuracy = clf.score(test_dir, target="class")
        tree = clf.tree_
        _out("", "top of the tree (3 levels):", clf.export_text(max_depth=3).rstrip("\n"), "",
             f"nodes:         {tree.node_count} ({tree.n_leaves} leaves, depth {tree.max_depth})",
             f"test accuracy: {accuracy:.4f} on {n_test:,} held-out rows",
             f"passes:        {clf.n_passes_} over the training data ({len(clf.n_passes_per_level_)} tree "
             f"levels)",
             f"fit time:      {_seconds(fit_time)}")
        peak = _peak_rss_mb()
        if peak is not None:
            _out(f"peak memory:   {peak:.0f} MB (peak resident set size of this process)")
        if temp is None:
            _out(f"data kept in:  {root}")
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return 0


# -- train -----------------------------------------------------------------------------
# Each learner's options are its estimator's parameters, as rainforest/constraints.py declares them
# (how an option's text is read comes from there too), plus the command-line options it takes
# that are no parameter. An option given to a learner that has no use for it is an error, not a
# silent no-op.
@dataclass(frozen=True)
class Learner:
    """A ``--learner``: its estimator class (``"module:Class"``, imported when used) and options."""

    estimator: str
    params: dict  # the estimator's declared parameter constraints
    options: frozenset = frozenset()  # command-line options that are no parameter
    fixed: tuple = ()  # (parameter, value) set by the choice itself (a stump's depth)
    defaults: tuple = ()  # (parameter, value) defaults of the command line that differ from the estimator's

    def make(self, **params):
        module, name = self.estimator.split(":")
        return getattr(importlib.import_module(module), name)(**params)


LEARNERS = {
    "tree": Learner("rainforest:DecisionTreeClassifier", TREE_PARAMS,
                    frozenset({"weight", "exact", "prune", "confidence", "validation"})),
    "forest": Learner("rainforest:RandomForestClassifier", FOREST_PARAMS,
                      frozenset({"weight", "exact", "no_bootstrap"})),
    "bayes": Learner("rainforest:NaiveBayesClassifier", NAIVE_BAYES_PARAMS, frozenset({"weight"})),
    "adaboost": Learner("rainforest:AdaBoostClassifier", ADABOOST_PARAMS, frozenset({"weight", "base"})),
    "boat": Learner("rainforest.boat:BoatClassifier", BOAT_PARAMS),
}
#: ``--base`` of ``--learner adaboost``: the weak learner (it takes that learner's options too)
BASES = {
    "stump": Learner("rainforest:DecisionTreeClassifier", {k: v for k, v in TREE_PARAMS.items() if k != "max_depth"},
                     frozenset({"exact"}), fixed=(("max_depth", 1),)),
    "tree": Learner("rainforest:DecisionTreeClassifier", TREE_PARAMS, frozenset({"exact"}),
                    defaults=(("max_depth", 3),)),
    "bayes": Learner("rainforest:NaiveBayesClassifier", NAIVE_BAYES_PARAMS),
}
# what each command-line option that is no parameter means for the parameters
_OPTION_PARAMS = {"exact": ("max_bins", None), "no_bootstrap": ("bootstrap", False)}


class _ParamOptions:
    """Adds ``train``'s options that set an estimator parameter: the option ``--max-depth`` sets
    ``max_depth``, read by that parameter's declared constraints (those of every learner that has it)."""

    def __init__(self, parser):
        self.parser = parser
        self.dests: list[str] = []

    def add(self, option: str, *, dest: str | None = None, group=None, switch: bool = False, **kwargs):
        dest = dest or option.lstrip("-").replace("-", "_")
        target = group if group is not None else self.parser
        # not given: no attribute at all, so the estimator's default holds (and None can be given)
        if switch:  # a True/False parameter: the option sets True
            target.add_argument(option, dest=dest, action="store_const", const=True, default=argparse.SUPPRESS,
                                **kwargs)
        elif "nargs" in kwargs:  # a list (of columns): the estimator checks it
            target.add_argument(option, dest=dest, default=argparse.SUPPRESS, **kwargs)
        else:
            kwargs.setdefault("choices", _choices(dest))
            target.add_argument(option, dest=dest, type=_param_type(dest, option), default=argparse.SUPPRESS,
                                **kwargs)
        self.dests.append(dest)


def _choices(name: str):
    """The values a parameter takes when every learner declares it as a set of options, else None."""
    rules = _param_rules(name)
    if not rules or not all(isinstance(r, Options) for r in rules):
        return None
    return list(dict.fromkeys(v for r in rules for v in r.values))


def _param_rules(name: str) -> list:
    """The constraints of parameter ``name`` in every learner (and boosting base) declaring it."""
    return [entry.params[name] for entry in (*LEARNERS.values(), *BASES.values()) if name in entry.params]


def _param_type(name: str, flag: str):
    def parse(text: str):
        problems = []
        for rule in _param_rules(name):
            try:
                return parse_option(rule, text)
            except ValueError as exc:
                problems.append(str(exc))
        raise argparse.ArgumentTypeError(problems[0] if problems else f"{flag} takes no value")

    parse.__name__ = name
    return parse


def _learner(args):
    """The estimator ``rainforest train`` fits, from ``--learner`` and its options."""
    entry = LEARNERS[args.learner]
    base = BASES[args.base or "stump"] if args.learner == "adaboost" else None
    given = {d: getattr(args, d) for d in args.param_options if hasattr(args, d)}
    given.update((o, True) for o in ("exact", "no_bootstrap", "weight", "prune", "confidence", "validation", "base")
                 if getattr(args, o) not in (None, False))
    takes = set(entry.params) | entry.options | (set(base.params) | base.options if base else set())
    foreign = [k for k in given if k not in takes]
    if foreign:
        where = f"--learner {args.learner}" + (f" --base {args.base or 'stump'}" if base else "")
        option = "--categorical" if foreign[0] == "categorical_features" else f"--{foreign[0].replace('_', '-')}"
        raise ValueError(f"{option} does not apply to {where}")
    for option, (param, value) in _OPTION_PARAMS.items():
        if given.pop(option, None):
            given[param] = value
    if args.verbose:
        given["verbose"] = args.verbose

    def params_of(learner: Learner) -> dict:
        out = dict(learner.defaults)
        out.update((k, v) for k, v in given.items() if k in learner.params)
        out.update(learner.fixed)
        return out

    if base is None:
        return entry.make(**params_of(entry))
    return entry.make(estimator=base.make(**params_of(base)),
                      **{k: v for k, v in params_of(entry).items() if k != "estimator"})


def _summary(clf) -> list[str]:
    """What a fitted (or loaded) model is, in a few lines."""
    import numpy as np

    if hasattr(clf, "tree_"):
        return _tree_summary(clf.tree_)
    if hasattr(clf, "estimators_") and hasattr(clf, "tree_seeds_"):  # a forest
        depths = [t.max_depth for t in clf.estimators_]
        lines = [f"trees:  {len(clf.estimators_)} (depth {min(depths)} to {max(depths)}, "
                 f"{int(np.mean([t.n_leaves for t in clf.estimators_]))} leaves on average)"]
        if getattr(clf, "oob_score_", None) is not None:
            lines.append(f"out-of-bag accuracy: {clf.oob_score_:.4f}")
        return lines
    if hasattr(clf, "estimator_weights_"):  # boosting
        return [f"rounds: {len(clf.estimator_weights_)} (weights {', '.join(f'{w:.3f}' for w in clf.estimator_weights_[:5])}"
                f"{', ...' if len(clf.estimator_weights_) > 5 else ''})"]
    return [f"model:  naive Bayes over {len(clf.feature_names_in_)} features"]


def cmd_train(args) -> int:
    check_outputs({"model": args.model}, [args.data, args.validation])
    clf = _learner(args)
    if (args.prune == "reduced-error") != (args.validation is not None):
        raise ValueError("--prune reduced-error and --validation DATA go together")
    if args.confidence is not None and args.prune != "pessimistic":
        raise ValueError("--confidence applies to --prune pessimistic")
    t0 = time.perf_counter()
    with _opened(args) as data, contextlib.ExitStack() as stack:
        if hasattr(clf, "close"):  # BOAT's work folder goes once the model is saved
            stack.callback(clf.close)
        weight = {"sample_weight": args.weight} if args.weight else {}  # BOAT takes no weights
        clf.fit(data, target=args.target, features=args.features, **weight)
        _prune_and_save(args, clf)
    fit_time = time.perf_counter() - t0
    where = f" on the Dask cluster at {args.scheduler}" if args.scheduler is not None else ""
    rows = getattr(clf, "n_rows_", None)
    _out(f"trained a {type(clf).__name__} on {f'{rows:,} rows, ' if rows else ''}{clf.n_features_in_} features, "
         f"{len(clf.classes_)} classes from {args.data}{where}",
         *_summary(clf),
         *(f"pruned: {p['method'].replace('_', '-')}, {p['nodes_before']} -> {p['nodes_after']} nodes"
           for p in getattr(clf, "pruning_", [])),
         f"passes: {clf.n_passes_}",
         f"time:   {_seconds(fit_time)}",
         f"model:  {args.model}")
    return 0


def _prune_and_save(args, clf) -> None:
    if args.prune == "pessimistic":
        clf.prune_pessimistic(0.25 if args.confidence is None else args.confidence)
    elif args.prune == "reduced-error":
        clf.prune_reduced_error(args.validation, target=args.target)
    clf.save(args.model)


def _add_scheduler_option(p, what: str) -> None:
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help=f"{what} on the Dask cluster of this scheduler, e.g. tcp://scheduler:8786; "
                        "each worker reads its files, so DATA must be visible to the workers and to this "
                        "machine at the same path (default: this process reads DATA)")


def _add_sql_options(p) -> None:
    p.add_argument("--table", metavar="NAME", default=None,
                   help="with a DuckDB file or a PostgreSQL URL as DATA: the table or view to read")
    p.add_argument("--query", metavar="SQL", default=None,
                   help="with a DuckDB file or a PostgreSQL URL as DATA: a query whose rows to read")


@contextlib.contextmanager
def _opened(args):
    """DATA as :func:`_open_data` gives it, or, with --scheduler, a Dask source over the cluster
    (connecting fails at once, naming the address), closed afterwards."""
    if getattr(args, "scheduler", None) is None:
        yield _open_data(args)
        return
    if args.table is not None or args.query is not None:
        raise ValueError("--scheduler reads Parquet DATA; --table and --query are for DuckDB files and PostgreSQL")
    from rainforest.storage import DaskSource

    source = DaskSource(args.data, scheduler=args.scheduler)
    try:
        yield source
    finally:
        source.close()


def _open_data(args):
    """DATA as what fit / predict accept: a PostgreSQL URL or a DuckDB database file (with --table
    or --query) becomes a SQL source, whose passes run in the database; anything else is Parquet."""
    data, table, query = args.data, args.table, args.query
    is_pg = data.startswith(("postgresql://", "postgres://"))
    is_duckdb = data.lower().endswith((".duckdb", ".ddb"))
    if not (is_pg or is_duckdb):
        if table is not None or query is not None:
            raise ValueError("--table and --query need DATA to be a DuckDB file (.duckdb) or a postgresql:// URL")
        return data
    if (table is None) == (query is None):
        raise ValueError(f"give exactly one of --table and --query with {'the URL' if is_pg else 'the DuckDB file'} "
                         f"{data!r}")
    from rainforest.storage import DuckDBSource, PostgresSource

    if is_pg:
        return PostgresSource(data, table=table, query=query)
    return DuckDBSource(table=table, query=query, database=data)


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
    clf = _load(args.model)
    out = os.path.abspath(args.out)
    classes = clf.classes_
    names = ["prediction"] + ([f"proba_{c}" for c in classes] if args.proba else [])
    if len(set(names)) != len(names):
        raise ValueError(f"the classes {list(classes)!r} give clashing column names {names!r}")
    n_rows = 0
    with _opened(args) as data, atomic_path(out, suffix=".parquet") as tmp:  # renamed into place when complete
        writer = None
        try:
            for table in _scan(clf, data, []):
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
    _out(f"wrote {n_rows:,} predictions to {args.out}")
    return 0


# -- evaluate -------------------------------------------------------------------------
def cmd_evaluate(args) -> int:
    import numpy as np

    from .metrics import evaluate

    clf = _load(args.model)
    target = args.target or model_target(clf)
    check_outputs({"ROC plot": args.roc}, [args.model, args.data])
    with _opened(args) as data:  # one pass; on a Dask cluster the workers score their partitions
        pos_label = next((c for c in clf.classes_ if str(c) == args.pos_label), args.pos_label)  # "1" means 1
        ev = evaluate(clf, data, target=target, threshold=args.threshold, pos_label=pos_label)
    cm = ev.confusion_matrix
    total = int(round(cm.sum()))
    if total == 0:
        raise ValueError(f"{args.data!r} holds no row with a label in column {target!r}")
    correct = int(round(np.trace(cm)))
    skipped = ev.n_missing_labels
    _out(f"rows:       {total:,}" + (f" ({skipped:,} rows with a missing label skipped)" if skipped else ""),
         f"accuracy:   {ev.accuracy():.6f}  ({correct:,} of {total:,} correct)",
         f"error rate: {ev.error_rate():.6f}  ({total - correct:,} wrong)", "")
    names = [str(c) for c in ev.classes]
    width = max([len(n) for n in names] + [len(f"{int(cm.max()):,}")])
    _out("confusion matrix (rows: true class, columns: predicted class):",
         " " * (width + 2) + " ".join(f"{n:>{width}}" for n in names))
    for n, row in zip(names, cm):
        _out(f"{n:>{width}}  " + " ".join(f"{int(round(v)):>{width},}" for v in row))
    _out("", ev.report(digits=4))
    if args.roc is not None:
        ev.plot_roc(args.roc, title=f"ROC curve of {os.path.basename(args.model)}")
        _out("", f"ROC curve written to {args.roc}")
    return 0


# -- inspect --------------------------------------------------------------------------
def cmd_inspect(args) -> int:
    import numpy as np

    from .metrics import model_features
    from .tree import Tree

    clf = _load(args.model)
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
            _out(f"round {k} (weight {clf.estimator_weights_[k]:.4f}):")
        _out((tree.export_rules() if args.rules else tree.export_text(max_depth=args.max_depth)).rstrip("\n"), "")
    _out(f"model:     {args.model} ({type(clf).__name__})", f"target:    {model_target(clf)}",
         f"classes:   {', '.join(str(c) for c in clf.classes_)}")
    if hasattr(clf, "tree_"):
        tree = clf.tree_
        _out(f"criterion: {tree.criterion}", f"nodes:     {tree.node_count}", f"depth:     {tree.max_depth}",
             f"leaves:    {tree.n_leaves}")
    else:
        _out(*(f"{label + ':':<10} {rest.strip()}" for label, rest in (line.split(":", 1) for line in _summary(clf))))
    if getattr(clf, "n_passes_", None) is not None:
        _out(f"passes:    {clf.n_passes_} (made by the fit that produced it)")
    for line in exported:
        _out(line)
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
        _out("", f"features ({len(features)}):")
        for name, kind in zip(features, kinds):
            _out(f"  {str(name):<{width}}  {kind}")
        return 0
    _out("", f"features ({len(features)}), by importance:")
    for j in np.argsort(-importances, kind="stable"):
        _out(f"  {str(features[j]):<{width}}  {kinds[j]:<11}  {importances[j]:.4f}")
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
    lines = []
    if args.dot is not None:
        from .dot import export_dot
        export_dot(tree, args.dot, filled=True)
        lines.append(f"DOT:       {args.dot}")
    if args.png is not None:
        from .dot import render_png
        render_png(tree, args.png, filled=True)
        lines.append(f"PNG:       {args.png}")
    if args.onnx is not None:
        from .onnx import to_onnx
        to_onnx(clf if args.tree is None else tree, args.onnx)
        lines.append(f"ONNX:      {args.onnx}")
    if args.sql is not None:
        lines += ["", f"SQL ({args.sql}):", tree.to_sql(args.sql)]
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


# -- entry point --------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    if isinstance(exc, KeyError):  # str(KeyError) quotes the key
        text = f"missing key {text}"
    return text or type(exc).__name__


def main(argv=None) -> int:
    """Run the command line; return the exit status (0 ok, 2 error, 130 interrupted)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with termination_as_interrupt():  # SIGTERM, SIGHUP: the cleanup Ctrl-C gets
            return args.func(args)
    except Terminated as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `rainforest inspect m.json | head`
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 1
    except (ValueError, OSError) as exc:
        # DataError, SourceError, BudgetError are ValueErrors; MissingPathError a FileNotFoundError.
        sys.stdout.flush()
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
