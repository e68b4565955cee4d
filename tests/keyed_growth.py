"""Test helpers: exact growth with value keys at a small cap, or with one slot per distinct value."""
from __future__ import annotations

import functools

from rainforest import row_encoding, tree_setup
from rainforest.grow import GrowParams


def key_at_small_cap(monkeypatch, cap=16):
    """Growth with a small KEY_CAP: every column with more than ``cap`` distinct values is keyed; the
    keys computed are counted (the list returned), so a test sees that the road it takes is the keyed one."""
    monkeypatch.setattr(tree_setup, "KEY_CAP", cap)
    calls = []
    original = row_encoding.key_slots
    monkeypatch.setattr(row_encoding, "key_slots", lambda x, out: calls.append(len(x)) or original(x, out))
    return calls


def count_one_slot_per_value(monkeypatch):
    """Growth told to count one slot per distinct value (the reference exact trees are built so)."""
    monkeypatch.setattr(tree_setup, "GrowParams", functools.partial(GrowParams, exact_bins=0))
