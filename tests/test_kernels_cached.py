"""Every Numba kernel is compiled once per machine, not once per process: it is declared with
``cache=True`` and nothing in it stops Numba from saving it (a kernel that reads
``numba.get_num_threads()`` inside, for one, uses a dynamic global and is compiled again by every
process, with a "Cannot cache" warning)."""
import importlib
import pkgutil
import subprocess
import sys
import textwrap

import numba
from numba.core.caching import NullCache

import rainforest
import rainforest.boat
import rainforest.storage


def test_every_kernel_is_declared_with_cache():
    uncached, seen = [], 0
    modules = [info.name for package in (rainforest, rainforest.storage, rainforest.boat)
               for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    for name in sorted(set(modules)):
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher) and value.__module__ == name:
                seen += 1
                if isinstance(value._cache, NullCache):
                    uncached.append(f"{name}.{attribute}")
    assert seen > 50  # the walk found the kernels
    assert not uncached, f"kernels without cache=True: {uncached}"


def test_spilled_fits_compile_nothing_numba_cannot_save(tmp_path):
    """Fits that spill their rows and count them level by level (classes, a regressor's exact parts,
    exact mode's gathering) warn of no kernel Numba cannot cache."""
    script = textwrap.dedent(f"""
        import warnings
        from rainforest import DecisionTreeClassifier, DecisionTreeRegressor
        from rainforest.datasets import agrawal_table
        table = agrawal_table(30_000, function=7, seed=3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            budget = dict(memory_budget="600KB", spill_dir={str(tmp_path)!r})
            DecisionTreeClassifier(max_depth=5, **budget).fit(table, target="class")
            DecisionTreeClassifier(max_depth=4, max_bins=None, **budget).fit(table, target="class")
            DecisionTreeRegressor(max_depth=5, **budget).fit(table.drop(["class"]), target="hvalue")
        for w in caught:
            print("WARNING", w.category.__name__, w.message)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Cannot cache" not in done.stdout + done.stderr, done.stdout[-3000:]
