"""scikit-learn's estimator tags for every version of it, without depending on it.

scikit-learn >= 1.6 asks ``__sklearn_tags__()`` (a ``Tags`` dataclass); older versions read
``_estimator_type`` and ``_more_tags()``. Both answer from one place: :attr:`ClassifierTags._tags`.
``sklearn.base.is_classifier`` then answers True, so ``cross_val_score`` stratifies the folds and
``scoring="roc_auc"`` finds ``predict_proba``.
"""
from __future__ import annotations


class ClassifierTags:
    """Mixin: the estimator is a classifier, for every scikit-learn version."""

    _estimator_type = "classifier"  # scikit-learn < 1.6
    #: what the estimator accepts, as scikit-learn's input tags name it
    _tags = {"allow_nan": True, "multi_class": True, "poor_score": False}

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        return {"allow_nan": self._tags["allow_nan"], "requires_y": True, "poor_score": self._tags["poor_score"],
                "binary_only": not self._tags["multi_class"]}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        from sklearn.utils import ClassifierTags as SkClassifierTags, InputTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=SkClassifierTags(poor_score=self._tags["poor_score"],
                                                     multi_class=self._tags["multi_class"]),
                    input_tags=InputTags(allow_nan=self._tags["allow_nan"]))


class RegressorTags:
    """Mixin: the estimator is a regressor, for every scikit-learn version (``is_regressor`` answers True,
    so ``cross_val_score`` scores R² and does not stratify)."""

    _estimator_type = "regressor"  # scikit-learn < 1.6

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        return {"allow_nan": True, "requires_y": True}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        from sklearn.utils import InputTags, RegressorTags as SkRegressorTags, Tags, TargetTags

        return Tags(estimator_type="regressor", target_tags=TargetTags(required=True),
                    regressor_tags=SkRegressorTags(), input_tags=InputTags(allow_nan=True))
