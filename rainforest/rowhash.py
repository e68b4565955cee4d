"""The row hash, as the engine and learners see it: :mod:`rainforest.storage.rowhash`.

The hash lives in the storage layer (row selections hash row identities too); this module
keeps its public names importable from the engine's namespace.
"""
from rainforest.storage.rowhash import HASH_SPAN, M32, hash_row, row_hash, row_hash_sql, seed_keys

__all__ = ["HASH_SPAN", "M32", "hash_row", "row_hash", "row_hash_sql", "seed_keys"]
