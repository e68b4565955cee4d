"""Naive Bayes from one pass: the root AVC-group plus per-class moments *is* the model.

Categorical attributes keep weighted class counts per category (Laplace
correction ``alpha``); numeric attributes keep, per class, the weighted count,
mean and sum of squared deviations, merged across batches with the parallel
(Chan et al.) formula, so Gaussian naive Bayes needs exactly one pass over data
of any size and ``partial_fit`` is the same merge.  ``numeric="binned"`` counts
numeric attributes per quantile bin instead; bin edges need the profiling pass,
so it takes two passes.  Missing values are skipped attribute by attribute, in
training and in prediction; a category never seen in training is skipped too.
"""
from __future__ import annotations

from contextlib import contextmanager
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .avc import root_avc
# the counting pass lives in the engine; its public names stay importable from here
from .bayes_counts import BayesPass, column_moments  # noqa: F401  (column_moments: re-exported)
from .bayes_state import BayesCounts, Moments, add_gaussian_terms, add_table_terms
from .dask_predict import lazy_on_dask
from .errors import DataError
from .base import Classifier
from .inputs import feature_tables
from .model_file import BAYES_FORMAT, BAYES_VERSION, params_from_json, register_reader, write_model
from .constraints import NAIVE_BAYES_PARAMS
from .model_check import check_document
from .profile import ProfileTask
from .schema import (CATEGORICAL, NUMERIC, Attribute, Label, Schema, category_values, check_classes, check_weight_total,
                     numeric_values)
from .tree import plain_value

#: the naive Bayes part of a model file (also embedded, once per round, in a boosted model)


# -- the estimator --------------------------------------------------------------------------
@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class NaiveBayesClassifier(Classifier):
    """Naive Bayes over data of any size, trained in one pass.

    Parameters
    ----------
    alpha : float, default=1.0
        Laplace (additive) correction of the category counts; 0 disables it.
    numeric : {"gaussian", "binned"}, default="gaussian"
        Numeric attributes as per-class normal distributions (one pass), or
        discretized into at most ``max_bins`` quantile bins and counted like
        categories (two passes: the bins need the profiling pass).
    var_smoothing : float, default=1e-9
        Added to every Gaussian variance: this fraction of the largest
        variance of any numeric attribute (as scikit-learn's ``GaussianNB``).
    max_bins : int, default=255
        Bins per numeric attribute with ``numeric="binned"``.
    categorical_features : "auto" or list, default="auto"
        Integer columns to treat as categorical (strings and booleans always are).
    batch_size : int, default=262144
        Rows per record batch; the model does not depend on it.
    n_jobs : int or None, default=-1
        Threads for the binned mode's Numba kernels.

    Attributes
    ----------
    classes_ : ndarray
    class_count_ : ndarray
        Weighted rows per class.
    class_log_prior_ : ndarray
    theta_, var_ : ndarray of shape (n_classes, n_numeric)
        Per-class means and variances of the Gaussian attributes (``numeric_features_`` order).
    feature_log_prob_ : list of ndarray of shape (n_classes, n_values)
        Smoothed log P(value | class) of each counted attribute (``counted_features_`` order).
    n_passes_ : int
        Passes over the data made by the last ``fit`` (1 with Gaussian numerics).
    feature_names_in_ : ndarray of str
        The feature columns.
    feature_kinds_ : dict
        The kind of each feature column, in ``feature_names_in_`` order (``rainforest.schema``'s
        ``CATEGORICAL`` or ``NUMERIC``); read-only, a copy.
    target_ : str
        The label column.

    Notes
    -----
    :meth:`save` writes the counts themselves (Gaussian mode) or the count
    tables and bin edges (binned mode), so a loaded model predicts bit for bit
    as the saved one and ``partial_fit`` goes on counting where it stopped.

    Examples
    --------
    >>> from rainforest import NaiveBayesClassifier
    >>> nb = NaiveBayesClassifier().fit("data/train/", target="label")  # doctest: +SKIP
    >>> nb.n_passes_  # doctest: +SKIP
    1
    """

    def __init__(self, *, alpha=1.0, numeric="gaussian", var_smoothing=1e-9, max_bins=255,
                 categorical_features="auto", batch_size=262144, n_jobs=-1):
        self.alpha = alpha
        self.numeric = numeric
        self.var_smoothing = var_smoothing
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.batch_size = batch_size
        self.n_jobs = n_jobs

    _parameter_constraints = NAIVE_BAYES_PARAMS
    _fitted_attribute = "classes_"

    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Count everything in one pass (two with ``numeric="binned"``) and set the model.

        Parameters are those of :meth:`DecisionTreeClassifier.fit`.
        """
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features) as run:
            self._kinds, self._target = run.kinds, run.data.target
            if self.numeric == "binned":
                self._fit_binned(run.data, run.kinds)
            else:
                self._set_gaussian_model(self._one_pass(run.data, run.kinds))
            self._set_inputs()
        return self

    def partial_fit(self, X, y=None, *, target=None, sample_weight=None, features=None, classes=None):
        """Add a batch of rows to the counts; any split of the data gives the model of one ``fit``.

        Parameters
        ----------
        X, y, target, sample_weight, features
            As :meth:`fit`.
        classes : array-like, optional
            Every class the calls will see (scikit-learn's convention). Classes not in this batch
            get zero counts, so ``classes_`` holds them all from the first call on; a batch with
            a class not listed is an error.

        Returns
        -------
        self
        """
        if self.numeric != "gaussian":
            raise ValueError("partial_fit needs numeric='gaussian' (bin edges are fixed by a profiling pass)")
        passes = getattr(self, "n_passes_", None) if hasattr(self, "_counts") else None
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features) as run:
            counts = self._one_pass(run.data, run.kinds)
            if hasattr(self, "_counts"):
                if run.kinds != self._kinds:
                    raise DataError("partial_fit got other feature columns or kinds than before")
                counts = self._counts.merge(counts)
            if classes is not None:
                counts = _with_classes(counts, classes)
            self._kinds, self._target = run.kinds, run.data.target
            self._set_gaussian_model(counts)
            self._set_inputs()
        if passes is not None:  # the passes of every partial_fit since the model began
            self.n_passes_ += passes
        return self

    @classmethod
    def from_counts(cls, counts: BayesCounts, kinds: dict, target: str, **params) -> "NaiveBayesClassifier":
        """The Gaussian model of ``counts`` (what :class:`BayesPass` counted over the attributes ``kinds``
        and the label column ``target``), with ``params``: how a learner counted by another pass
        (boosting's) is built.

        Returns
        -------
        NaiveBayesClassifier
            Fitted; ``n_passes_`` is not set (the passes were someone else's).
        """
        est = cls(**params)
        est._kinds, est._target = dict(kinds), target
        est._set_gaussian_model(counts)
        est._set_inputs()
        return est

    @property
    def feature_kinds_(self) -> dict:
        """The kind of each feature column (a copy: the model's own stays unchanged)."""
        return dict(self._kinds)

    def _set_inputs(self):
        """The fitted attributes describing the input columns (all in ``_kinds``, in order)."""
        self.n_features_in_ = len(self._kinds)
        self.feature_names_in_ = np.asarray(list(self._kinds), dtype=object)
        self.n_classes_ = len(self.classes_)
        self.n_outputs_ = 1
        self.target_ = self._target

    def _one_pass(self, data, kinds) -> BayesCounts:
        task = BayesPass(kinds, data.target, data.weight, data.source.description)
        columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
        counts = data.source.run_pass(task, columns, self.batch_size)
        check_weight_total(sum(counts.class_weight.values()), data.weight, data.source.description)
        if counts.n_rows == 0:
            raise DataError(f"{data.source.description} has no rows")
        check_classes(counts.class_weight, data.target, data.source.description)
        counts.check_columns(kinds, data.source.description)
        return counts

    # -- turning counts into the model -------------------------------------------------
    def _set_classes(self, class_weight: dict):
        self.classes_ = np.asarray(sorted(class_weight))
        self.class_count_ = np.array([class_weight[c] for c in self.classes_], dtype=np.float64)
        if len(self.classes_) < 2:
            raise DataError(f"the target has a single class ({self.classes_[0]!r}); a classifier needs two")
        self.class_log_prior_ = np.log(self.class_count_) - np.log(self.class_count_.sum())

    def _set_gaussian_model(self, counts: BayesCounts):
        self._counts = counts  # kept: partial_fit and save go on from them
        self._set_classes(counts.class_weight)
        classes = list(self.classes_)
        self.numeric_features_ = [a for a, k in self._kinds.items() if k != CATEGORICAL]
        self.counted_features_ = [a for a, k in self._kinds.items() if k == CATEGORICAL]
        n = len(classes)
        self.theta_ = np.zeros((n, len(self.numeric_features_)))
        self.var_ = np.zeros((n, len(self.numeric_features_)))
        for j, a in enumerate(self.numeric_features_):
            per_class = counts.moments.get(a, {})
            for i, c in enumerate(classes):
                m = per_class.get(c, Moments())
                self.theta_[i, j], self.var_[i, j] = m.mean, m.var
        spread = [counts.spread[a].var for a in self.numeric_features_ if a in counts.spread]
        self.epsilon_ = self.var_smoothing * (max(spread) if spread else 0.0)
        self.var_ = self.var_ + self.epsilon_
        self.categories_ = []
        self.category_count_ = []
        for a in self.counted_features_:
            cnt = counts.categories.get(a, {})
            values = sorted({v for _, v in cnt})
            index = {v: k for k, v in enumerate(values)}
            table = np.zeros((n, len(values)))
            for (c, v), w in cnt.items():
                table[classes.index(c), index[v]] += w
            self.categories_.append(values)
            self.category_count_.append(table)
        self._set_log_probs()

    def _set_log_probs(self):
        self.feature_log_prob_ = []
        for table in self.category_count_:
            smoothed = table + self.alpha
            with np.errstate(divide="ignore"):
                self.feature_log_prob_.append(np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True)))

    def _fit_binned(self, data, kinds):
        task = ProfileTask(kinds, data.target, data.weight, data.source.description, exact=False,
                           max_bins=self.max_bins)
        columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
        schema = task.schema(data.source.run_pass(task, columns, self.batch_size))  # under fit's threads
        n_classes = len(schema.label.classes)
        avc = root_avc(data.source, schema, self.batch_size)
        offsets = schema.slot_offsets()
        first = avc[offsets[0]:offsets[1], :n_classes].sum(axis=0)
        # the AVC-set of each attribute, its missing slot dropped, is its count table
        tables = [avc[offsets[j]:offsets[j + 1] - 1, :n_classes].T.copy() for j in range(len(schema.attributes))]
        self._set_binned_model(schema, dict(zip(schema.label.classes, first)), tables)

    def _set_binned_model(self, schema: Schema, class_weight: dict, tables: list):
        """The binned model from its attributes (bin edges, categories), class weights and count tables."""
        if hasattr(self, "_counts"):  # a refit in binned mode: nothing left to partial_fit on
            del self._counts
        self._set_classes(class_weight)
        self._schema = schema
        self.numeric_features_ = []
        self.counted_features_ = schema.names
        self.theta_ = self.var_ = np.zeros((len(self.classes_), 0))
        self.category_count_ = tables
        self.categories_ = [a.categories if a.kind == CATEGORICAL else list(a.cuts) for a in schema.attributes]
        self._set_log_probs()

    # -- persistence ------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the model as versioned JSON (no pickle), atomically; :func:`rainforest.load` reads it.

        Parameters
        ----------
        path : str or path-like
            The file; written to a temporary file in its folder, then renamed over it.
        """
        self._check_fitted()
        write_model(path, self, getattr(self, "n_passes_", None), naive_bayes=self.model_dict())

    @classmethod
    def from_document(cls, doc: dict, path: str = "<document>") -> NaiveBayesClassifier:
        """The estimator saved in ``doc`` (a parsed model file whose estimator is this class).

        Raises
        ------
        ValueError
            If ``doc`` holds no valid naive Bayes model (the message names ``path``).
        """
        check_document(doc, path, cls)
        with reading_model(doc, cls.__name__, path):
            est = cls.from_model_dict(doc["naive_bayes"], **params_from_json(doc["params"]))
            if doc.get("n_passes") is not None:  # a model built by partial_fit alone has none
                est.n_passes_ = int(doc["n_passes"])
        return est

    def model_dict(self) -> dict:
        """What prediction and ``partial_fit`` need, as JSON: lists of pairs where a dict would be keyed
        by a class or a value (JSON keys are strings only; the values keep their types)."""
        d = {"format": BAYES_FORMAT, "version": BAYES_VERSION, "target": self._target,
             "features": [[name, int(kind)] for name, kind in self._kinds.items()]}
        if hasattr(self, "_counts"):  # Gaussian: the counts are the model
            c = self._counts
            d["counts"] = {
                "n_rows": int(c.n_rows),
                "class_weight": [[plain_value(k), float(w)] for k, w in c.class_weight.items()],
                "categories": [[a, [[plain_value(k), plain_value(v), float(w)] for (k, v), w in cnt.items()]]
                               for a, cnt in c.categories.items()],
                "moments": [[a, [[plain_value(k), *_moments_list(m)] for k, m in per_class.items()]]
                            for a, per_class in c.moments.items()],
                "spread": [[a, *_moments_list(m)] for a, m in c.spread.items()]}
            return d
        d["class_weight"] = [[plain_value(k), float(w)] for k, w in zip(self.classes_, self.class_count_)]
        d["attributes"] = [{"name": a.name, "kind": int(a.kind), "counts": table.tolist(),
                            "values": [plain_value(v) for v in a.categories] if a.kind == CATEGORICAL
                            else [float(x) for x in a.cuts]}
                           for a, table in zip(self._schema.attributes, self.category_count_)]
        return d

    @classmethod
    def from_model_dict(cls, d: dict, **params) -> "NaiveBayesClassifier":
        """The fitted model of :meth:`model_dict`'s output, with ``params`` (ValueError, KeyError, ...
        if ``d`` is malformed)."""
        est = cls(**params)
        est._set_model_dict(d)
        return est

    def _set_model_dict(self, d: dict) -> None:
        if d.get("format") != BAYES_FORMAT:
            raise ValueError(f"no naive Bayes model in it (format {d.get('format')!r})")
        if d.get("version") != BAYES_VERSION:
            raise ValueError(f"naive Bayes format version {d.get('version')!r}; this build reads {BAYES_VERSION}")
        kinds = {}
        for name, kind in d["features"]:
            if not isinstance(name, str) or kind not in (NUMERIC, CATEGORICAL) or isinstance(kind, bool):
                raise ValueError(f"feature {name!r} has an unknown kind {kind!r}")
            kinds[name] = kind
        self._kinds, self._target = kinds, d["target"]
        if "counts" in d:
            self._set_gaussian_model(_counts_from_dict(d["counts"]))
        else:
            class_weight = {k: float(w) for k, w in d["class_weight"]}
            attributes, tables = [], []
            for a in d["attributes"]:
                numeric = a["kind"] == NUMERIC
                attributes.append(Attribute(a["name"], a["kind"], exact=False,
                                            cuts=np.asarray(a["values"] if numeric else [], np.float64),
                                            categories=[] if numeric else list(a["values"])))
                tables.append(np.asarray(a["counts"], np.float64))
                if tables[-1].shape != (len(class_weight), attributes[-1].n_slots):
                    raise ValueError(f"the count table of {a['name']!r} has shape {tables[-1].shape}")
            schema = Schema(attributes, Label(self._target, sorted(class_weight)))
            self._set_binned_model(schema, class_weight, tables)
        self._set_inputs()

    # -- prediction ------------------------------------------------------------------------
    def _joint_log_likelihood(self, table: pa.Table) -> np.ndarray:
        n = table.num_rows
        jll = np.tile(self.class_log_prior_, (n, 1))
        for j, a in enumerate(self.numeric_features_):
            var = np.ascontiguousarray(self.var_[:, j])
            add_gaussian_terms(numeric_values(table.column(a)), np.ascontiguousarray(self.theta_[:, j]), var,
                               -0.5 * np.log(2.0 * np.pi * var), jll)
        for j, a in enumerate(self.counted_features_):  # missing and unseen values (code -1) are skipped
            add_table_terms(self._codes(j, a, table.column(a)), np.ascontiguousarray(self.feature_log_prob_[j]), jll)
        return jll

    def _codes(self, j: int, name: str, col) -> np.ndarray:
        if self.numeric == "binned" and self._schema.attributes[j].kind != CATEGORICAL:
            x = numeric_values(col)
            codes = np.searchsorted(np.asarray(self.categories_[j]), x, side="left").astype(np.int64)
            codes[np.isnan(x)] = -1
            return codes
        values = category_values(col)
        cats = self.categories_[j]
        idx = pc.index_in(values, value_set=pa.array(cats, type=values.type) if cats else pa.array([], values.type))
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    def predict_joint_log_proba(self, X) -> np.ndarray:
        """log P(x, c) = log P(c) + sum_i log P(x_i | c) for every row and class."""
        self._check_fitted()
        parts = [self._joint_log_likelihood(t) for t in feature_tables(
            X, list(self.feature_names_in_), strict_names=False, batch_size=self.batch_size)]
        return np.concatenate(parts) if parts else np.empty((0, len(self.classes_)))

    def predict_log_proba(self, X) -> np.ndarray:
        """log P(c | x), normalised in log space."""
        jll = self.predict_joint_log_proba(X)
        top = jll.max(axis=1, keepdims=True)
        return jll - (top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True)))

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row."""
        jll = self.predict_joint_log_proba(X)  # checks that the model is fitted before classes_ is read
        return self.classes_[np.argmax(jll, axis=1)]


# -- model files ------------------------------------------------------------------------------
@contextmanager
def reading_model(doc, estimator: str, path: str):
    """Read a parsed model file of ``estimator``: whatever is malformed in it becomes one
    ValueError naming the file (the top-level format and version are checked by ``load``)."""
    if not isinstance(doc, dict) or doc.get("estimator") != estimator:
        raise ValueError(f"{path!r} holds no {estimator} model")
    try:
        yield
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        why = f"the entry {exc} is missing" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"{path!r} holds a corrupt {estimator} model: {why}") from None


def _moments_list(m: Moments) -> list:
    return [float(m.w), float(m.mean), float(m.m2)]


def _counts_from_dict(d: dict) -> BayesCounts:
    """:class:`BayesCounts` from the ``counts`` part of :meth:`NaiveBayesClassifier.model_dict`."""
    counts = BayesCounts(n_rows=int(d["n_rows"]))
    counts.class_weight = {k: float(w) for k, w in d["class_weight"]}
    counts.categories = {a: {(k, v): float(w) for k, v, w in cells} for a, cells in d["categories"]}
    counts.moments = {a: {k: Moments(float(w), float(mean), float(m2)) for k, w, mean, m2 in per_class}
                      for a, per_class in d["moments"]}
    counts.spread = {a: Moments(float(w), float(mean), float(m2)) for a, w, mean, m2 in d["spread"]}
    return counts


def _with_classes(counts: BayesCounts, classes) -> BayesCounts:
    """``counts`` holding every class of ``classes`` (zero weight for those not seen); a class seen
    but not listed is a DataError."""
    listed = [plain_value(c) for c in np.asarray(classes).tolist()]
    unknown = [c for c in counts.class_weight if c not in listed]
    if unknown:
        raise DataError(f"partial_fit saw class {unknown[0]!r}, which is not in classes={listed!r}")
    for c in listed:
        counts.class_weight.setdefault(c, 0.0)
    return counts


register_reader("NaiveBayesClassifier", NaiveBayesClassifier.from_document)
