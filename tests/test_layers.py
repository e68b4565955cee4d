"""The package's layers, checked on the source text (no import runs).

Layers, lowest first: storage (where rows live) < engine (schemas, row hash, criteria, AVC
groups, kernels, the grower) < learners (the estimators, BOAT, what is done with fitted models)
< the command line and the package's front door.  A module may import its own layer or lower
ones, never a higher one; no module imports another module's underscore name (``from x import
_y`` or ``x._y`` on an imported module ``x``); BOAT uses only the engine's public names (no
underscore, and listed in ``__all__`` where the module has one).  Imports inside functions
count: they are dependencies too; a package's dunder metadata (``__version__``) does not. And no
two modules import each other, directly or through others (imports inside functions included).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Folder -> the import name it is installed as (pyproject.toml's package-dir).
PACKAGES = {"rainforest": "rainforest", "storage": "rainforest.storage", "boat": "rainforest.boat"}

STORAGE, ENGINE, LEARNERS, CLI = 0, 1, 2, 3
LAYER_NAMES = {STORAGE: "storage", ENGINE: "engine", LEARNERS: "learners", CLI: "cli"}
# Every module of rainforest/ is placed here by hand (a new module fails until it is): the
# storage and BOAT packages by prefix.
ENGINE_MODULES = ["atomic", "split_choice", "target_parts", "avc", "bin_routing", "bayes_counts", "boost_store", "bayes_sql", "bayes_state", "bootstrap", "budget", "categorical_splits",
                  "combinations", "compact", "constraints", "count_bins", "counting", "cost_complexity", "criteria",
                  "dask_predict", "exact_bins", "exact_gather", "exact_search", "gather_kernels", "gather_scratch",
                  "datasets", "errors", "forest_exact", "forest_grow", "forest_kernels", "forest_levels", "forest_oob", "forest_passes",
                  "forest_rows", "grow", "in_bag", "inputs", "meter", "model_fields", "nodes", "outputs",
                  "params", "partition", "plan", "profile", "profile_data", "pruning", "pushdown", "node_tables", "rowhash", "rows", "row_encoding",
                  "rules", "schema", "signals", "slot_values", "spill", "split_bounds", "split_scores", "sql", "subtree", "supply",
                  "threads", "tree", "tree_check", "tree_setup", "value_keys", "warm_up", "write_behind"]
LEARNER_MODULES = ["base", "bayes", "boosted_source", "boosting", "class_resampling", "classifier_metrics",
                   "decision_threshold", "dot", "estimators", "evaluation", "forest", "forest_estimator", "forest_file",
                   "forest_regressor", "metrics", "model_check", "model_comparison", "model_file", "onnx", "onnx_nodes",
                   "regression_evaluation",
                   "regression_metrics", "regressor", "sklearn_compat", "tree_estimator"]
CLI_MODULES = ["__main__", "cli", "cli_demo", "cli_io", "cli_model", "cli_train"]
LAYER_OF = {"rainforest": CLI,
            **{f"rainforest.{m}": ENGINE for m in ENGINE_MODULES},
            **{f"rainforest.{m}": LEARNERS for m in LEARNER_MODULES},
            **{f"rainforest.{m}": CLI for m in CLI_MODULES}}
PREFIX_LAYERS = {"rainforest.storage": STORAGE, "rainforest.boat": LEARNERS}

# Violations tolerated for now, each with its reason (a violation string -> why). Empty: every rule
# holds; an entry may only be added with a reason and is taken off once its violation is gone.
ALLOWED: dict[str, str] = {}


@dataclass(frozen=True)
class Module:
    name: str
    is_package: bool
    tree: ast.Module


def read_modules(root: Path, packages: dict[str, str]) -> dict[str, Module]:
    """Every module under the ``packages`` folders of ``root``, by import name."""
    out = {}
    for folder, package in packages.items():
        for path in sorted((root / folder).glob("*.py")):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            out[name] = Module(name, path.stem == "__init__", ast.parse(path.read_text(), str(path)))
    return out


def layer(name: str, layer_of: dict[str, int], prefixes: dict[str, int]) -> int | None:
    if name in layer_of:
        return layer_of[name]
    for prefix, lay in prefixes.items():
        if name == prefix or name.startswith(prefix + "."):
            return lay
    return None


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id] + parts[::-1])


def public_names(module: Module) -> set[str] | None:
    """The names in the module's ``__all__``, or None where it has none."""
    for node in module.tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, (ast.List, ast.Tuple))):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return None


def violations(modules: dict[str, Module], layer_of: dict[str, int], prefixes: dict[str, int]) -> list[str]:
    """Every breach of the three rules in ``modules``, one sentence each."""
    out = []
    for mod in modules.values():
        own = layer(mod.name, layer_of, prefixes)
        if own is None:
            out.append(f"{mod.name} has no layer: place it in tests/test_layers.py")
            continue
        imported: list[tuple[str, str | None]] = []  # (module, name taken from it)
        bound: dict[str, str] = {}  # local name -> the project module it is
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    imported.append((a.name, None))
                    if a.asname:
                        bound[a.asname] = a.name
                    else:
                        bound[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                source = absolute(mod, node)
                for a in node.names:
                    if f"{source}.{a.name}" in modules:  # `from package import module`
                        imported.append((f"{source}.{a.name}", None))
                        bound[a.asname or a.name] = f"{source}.{a.name}"
                    else:
                        imported.append((source, a.name))
            elif isinstance(node, ast.Attribute) and private(node.attr):
                chain = dotted(node.value)
                if chain is not None:
                    head, _, rest = chain.partition(".")
                    if head in bound:
                        target = ".".join(p for p in (bound[head], rest) if p)
                        if target in modules and target != mod.name:
                            imported.append((target, node.attr))
        for source, name in imported:
            if not source.startswith("rainforest"):
                continue
            lay = layer(source, layer_of, prefixes)
            metadata = name is not None and name.startswith("__")  # e.g. the package's __version__
            if lay is not None and lay > own and not metadata:
                out.append(f"{mod.name} ({LAYER_NAMES[own]}) imports {source} ({LAYER_NAMES[lay]})")
            if name is None or source == mod.name:
                continue
            if private(name):
                out.append(f"{mod.name} imports underscore name {source}.{name}")
            if mod.name.startswith("rainforest.boat") and lay == ENGINE and source in modules:
                names = public_names(modules[source])
                if private(name) or (names is not None and name not in names):
                    out.append(f"{mod.name} imports non-public engine name {source}.{name}")
    return sorted(set(out))


@pytest.fixture(scope="module")
def project() -> dict[str, Module]:
    """The repository's modules, parsed once for the tests that read them (about a second a parse)."""
    return read_modules(REPO, PACKAGES)


@pytest.fixture(scope="module")
def found(project) -> list[str]:
    return violations(project, LAYER_OF, PREFIX_LAYERS)


def test_the_tree_keeps_its_layers(found):
    assert set(found) <= set(ALLOWED), "\n".join(sorted(set(found) - set(ALLOWED)))


def test_storage_imports_nothing_above_it(found):
    """Rule (a) holds for storage with no exception: the allowlist has no entry for it."""
    assert [v for v in found if v.startswith("rainforest.storage") and " imports rainforest." in v] == []


def test_allowlist_names_only_what_still_happens(found):
    """An entry whose violation is gone is taken off, so the list only shrinks."""
    assert set(ALLOWED) - set(found) == set()


@pytest.fixture
def synthetic(tmp_path):
    """A tiny tree of three packages laid out like the project's."""
    for folder in PACKAGES:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "storage" / "base.py").write_text("X = 1\n")
    (tmp_path / "rainforest" / "grow.py").write_text("def _split(): pass\ndef grow_tree(): pass\n")
    (tmp_path / "rainforest" / "forest.py").write_text("from .grow import grow_tree\n")
    (tmp_path / "boat" / "finish.py").write_text("from rainforest.grow import grow_tree\n")
    return tmp_path


SYNTHETIC_LAYERS = {"rainforest": CLI, "rainforest.grow": ENGINE, "rainforest.forest": LEARNERS}


def check(root):
    return violations(read_modules(root, PACKAGES), SYNTHETIC_LAYERS, PREFIX_LAYERS)


def test_checker_passes_a_clean_tree(synthetic):
    assert check(synthetic) == []


@pytest.mark.parametrize("folder, text, expected", [
    ("storage", "from rainforest.forest import X\n",
     "rainforest.storage.bad (storage) imports rainforest.forest (learners)"),
    ("storage", "def f():\n    import rainforest.grow\n",
     "rainforest.storage.bad (storage) imports rainforest.grow (engine)"),
    ("rainforest", "from .forest import X\n", "rainforest.bad (engine) imports rainforest.forest (learners)"),
    ("rainforest", "from .grow import _split\n", "rainforest.bad imports underscore name rainforest.grow._split"),
    ("rainforest", "from rainforest import grow\ngrow._split()\n",
     "rainforest.bad imports underscore name rainforest.grow._split"),
    ("rainforest", "import rainforest.grow as g\ng._split()\n",
     "rainforest.bad imports underscore name rainforest.grow._split"),
    ("rainforest", "import rainforest.grow\nrainforest.grow._split()\n",
     "rainforest.bad imports underscore name rainforest.grow._split"),
    ("boat", "from rainforest.grow import _split\n",
     "rainforest.boat.bad imports non-public engine name rainforest.grow._split"),
])
def test_checker_finds_a_forbidden_import(synthetic, folder, text, expected):
    (synthetic / folder / "bad.py").write_text(text)
    layers = {**SYNTHETIC_LAYERS, "rainforest.bad": ENGINE}
    assert expected in violations(read_modules(synthetic, PACKAGES), layers, PREFIX_LAYERS)


def test_checker_holds_boat_to_all(synthetic):
    (synthetic / "rainforest" / "grow.py").write_text("__all__ = ['grow_tree']\ndef grow_tree(): pass\ndef helper(): pass\n")
    (synthetic / "boat" / "finish.py").write_text("from rainforest.grow import helper\n")
    assert check(synthetic) == ["rainforest.boat.finish imports non-public engine name rainforest.grow.helper"]


def test_checker_wants_every_module_placed(synthetic):
    (synthetic / "rainforest" / "new.py").write_text("")
    assert check(synthetic) == ["rainforest.new has no layer: place it in tests/test_layers.py"]


# -- no import circle ---------------------------------------------------------------------------------
def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in it, inside functions too)."""
    graph = {name: set() for name in modules}
    for mod in modules.values():
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = absolute(mod, node)
                targets = [source] + [f"{source}.{a.name}" for a in node.names]
            else:
                continue
            graph[mod.name].update(t for t in targets
                                   if t in modules and t != mod.name and not modules[t].is_package)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of two or more modules that import each other, directly or through others
    (strongly connected components)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_two_modules_import_each_other(project):
    assert circles(import_graph(project)) == []


def test_a_circle_through_a_function_level_import_is_found(synthetic):
    (synthetic / "rainforest" / "grow.py").write_text("def grow_tree():\n    from .forest import x\n")
    (synthetic / "rainforest" / "forest.py").write_text("from .grow import grow_tree\nx = 1\n")
    assert circles(import_graph(read_modules(synthetic, PACKAGES))) == [["rainforest.forest", "rainforest.grow"]]
