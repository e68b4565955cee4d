"""The ``rainforest`` command line: demo, train, predict, evaluate, inspect.

Every subcommand streams its data out of core (Parquet files, folders or
globs), so the data may be larger than memory. Bad input ends in one line
``rainforest: error: <message>`` on stderr and exit status 2 (the same status
argparse uses for usage errors); Ctrl-C ends with status 130, SIGTERM and SIGHUP
with 128 + the signal's number, after the same cleanup. Output files (models,
predictions, plots, exports) are checked before any work (writable, not a folder,
not an input however spelled) and written atomically: a failed command leaves none
behind, half-written or otherwise.

This module is the parser, the error handling and the dispatch; the commands are
:mod:`rainforest.cli_train`, :mod:`rainforest.cli_model` (predict, evaluate, inspect) and
:mod:`rainforest.cli_demo`, over what they share in :mod:`rainforest.cli_io`.

Heavy modules (Numba kernels, pyarrow) are imported by the subcommands, not
at import time, so ``rainforest --help`` answers at once.
"""
from __future__ import annotations

import argparse
import os
import sys

from .errors import MissingDependency  # light: errors imports only storage's base
from .cli_demo import cmd_demo
from .cli_model import cmd_evaluate, cmd_inspect, cmd_predict
from .cli_train import BASES, LEARNERS, REGRESSORS, cmd_train
from .params import Options, parse_option
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
        "  rainforest train data/sales/ --target amount --model reg.json --learner forest --max-depth 12\n"
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
    p.add_argument("--task", choices=["auto", "classification", "regression"], default="auto",
                   help="regression: a regression tree or forest (--learner tree or forest) predicting the mean "
                        "target; auto: regression when the target column is floating point (an integer target is "
                        "a class label unless --task regression says otherwise) (default: auto)")
    opt = _ParamOptions(p)
    opt.add("--criterion", help="split quality: Gini index (CART), information gain (ID3) or gain ratio (C4.5); "
                                "a regressor's: squared_error, variance reduction (default: gini, squared_error)")
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
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="print one line per pass over the data (on a terminal: beside the progress bar)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar (drawn on stderr by default when it is a terminal)")
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


# -- train's options from the learners' declared parameters ------------------------------------
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
    return [entry.params[name] for entry in (*LEARNERS.values(), *REGRESSORS.values(), *BASES.values())
            if name in entry.params]


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
    p.add_argument("--transfer", choices=["auto", "rows", "aggregates"], default="auto",
                   help="with a DuckDB file or a PostgreSQL URL as DATA: 'rows' streams the rows out once into "
                        "the row store (2 queries a tree); 'aggregates' runs every pass in the database and only "
                        "counts come back (the rows never leave it; one query a level); 'auto' (default): rows "
                        "for DuckDB, and for PostgreSQL unless they would not fit the local disk")


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
        with termination_as_interrupt():  # SIGTERM, SIGHUP: the cleanup Ctrl-C gets (none raised in the compiler)
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
    except (ValueError, OSError, MissingDependency) as exc:
        # DataError, SourceError, BudgetError are ValueErrors; MissingPathError a FileNotFoundError;
        # MissingDependency names the package to install (the command's other outputs are written).
        sys.stdout.flush()
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
