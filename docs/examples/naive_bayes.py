"""Naive Bayes in one pass, and partial_fit over batches that arrive later.

Run: python docs/examples/naive_bayes.py
"""
import numpy as np

from rainforest import NaiveBayesClassifier
from rainforest.datasets import agrawal_table

rows = agrawal_table(60_000, function=1, seed=0)
nb = NaiveBayesClassifier().fit(rows, target="class")
print(f"passes: {nb.n_passes_}")

incremental = NaiveBayesClassifier()
for start in range(0, 60_000, 20_000):       # three batches, merged count by count
    incremental.partial_fit(rows.slice(start, 20_000), target="class")
same = np.allclose(incremental.predict_proba(rows), nb.predict_proba(rows), rtol=0, atol=1e-12)
print(f"partial_fit equals fit: {same}")
assert nb.n_passes_ == 1 and same
