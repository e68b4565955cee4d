"""BOAT: bootstrapped optimistic tree construction (Gehrke, Ganti, Ramakrishnan, Loh, SIGMOD 1999).

:class:`BoatClassifier` builds, in two passes over the data, the exact tree that
``rainforest.DecisionTreeClassifier(max_bins=None)`` builds level by level, as the same
:class:`rainforest.tree.Tree`, and keeps it up to date under insertions and deletions.
See docs/boat.md.
"""
from .estimator import BoatClassifier

__all__ = ["BoatClassifier"]
