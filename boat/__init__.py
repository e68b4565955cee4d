"""BOAT: bootstrapped optimistic tree construction (Gehrke et al., SIGMOD 1999).

Planned (see the project's issues); it will build the same :class:`rainforest.Tree`.
Nothing is exported yet.
"""
__all__: list[str] = []
