"""The best split of each node of a chunk across the attribute groups counted apart (RF-Vertical):
each group's search (:func:`rainforest.criteria.best_splits`) is kept where it beats the groups
searched before, by the rule one search over all attributes in order follows."""
from __future__ import annotations

import numpy as np

from .count_bins import group_offsets as group_offsets_of
from .criteria import best_splits


def search_group(avc, chunk, attrs, lead, offsets, schema, n_classes, weighted, crit, params, min_weight_leaf,
                 best, parents, copy):
    """Search the splits of ``chunk``'s nodes over the attribute group ``attrs`` and keep, per node in
    ``best``, the better of it and the groups searched before: the higher score, the lower attribute
    index on a tie, as one search over all attributes in order would choose.  ``best`` holds views of
    ``avc`` unless ``copy`` (RF-Vertical: a group's AVC-groups are released before the next one's), and
    of ``parents`` (the AVC-groups as counted, kept for histogram subtraction; None: not kept)."""
    keep = np.copy if copy else (lambda a: a)
    group_offsets = group_offsets_of(offsets, attrs)
    k_nodes = len(chunk)
    n_slots = int(group_offsets[-1])
    attr, score, left_slot, right_slot, inf_thr, n_branches, branches, branch_start = best_splits(
        avc.reshape(k_nodes * n_slots, avc.shape[2]), np.arange(k_nodes + 1) * n_slots,
        np.tile(group_offsets, (k_nodes, 1)), schema.kinds[attrs], n_classes, weighted, crit, params.multiway,
        float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive, int(np.diff(group_offsets).max()),
        lead)
    for k, node in enumerate(chunk):
        j = int(attr[k])
        if j < 0:
            continue
        lo, hi = group_offsets[j], group_offsets[j + 1]
        br = branches[branch_start[k]:branch_start[k] + hi - lo]
        keep_better(best, node, score[k], int(attrs[j]), (int(left_slot[k]), int(right_slot[k]), bool(inf_thr[k]),
                                                   int(n_branches[k]), keep(br), keep(avc[k, lo:hi]),
                                                   None if parents is None else parents[k]))


def keep_better(best: dict, node: int, score: float, a: int, split: tuple) -> None:
    """Keep ``(score, a, *split)`` as ``node``'s best split unless the one held is better: the higher
    score, the lower attribute index on a tie, as one search over all attributes in order chooses."""
    if node in best:
        held, b = best[node][0], best[node][1]
        if score < held or (score == held and a > b):
            return
    best[node] = (score, a, *split)
