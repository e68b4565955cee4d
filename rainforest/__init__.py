"""rainforest: decision trees over data of any size, grown from RainForest AVC-groups.

Public API
----------
DecisionTreeClassifier
    The out-of-core decision tree (exact or binned splits, gini / entropy / gain ratio).
NaiveBayesClassifier
    Naive Bayes in one pass (Gaussian or binned numerics, Laplace-corrected categories).
AdaBoostClassifier
    SAMME boosting of stumps, shallow trees or naive Bayes, one pass per round.
RandomForestClassifier
    Random forests (Forest-RI / Forest-RC) whose trees grow together, one pass per level.
load
    Read a model saved with ``save``.
Tree
    The flat-array model format shared by every learner.

Modules
-------
rainforest.metrics
    ``evaluate``: a fitted model scored in one pass (confusion matrix, per-class and averaged
    metrics, exact ROC curves and AUC).
rainforest.evaluation
    Holdout, random subsampling, k-fold cross-validation, the .632 bootstrap, the paired
    t-test, threshold moving and class resampling, over any source without copying it.
"""
from .errors import BudgetError, DataError, ModelError, NotFittedError
from .bayes import NaiveBayesClassifier
from .boosting import AdaBoostClassifier
from .estimators import DecisionTreeClassifier, load, root_avc_group
from .forest import RandomForestClassifier
from .tree import Tree

__all__ = ["DecisionTreeClassifier", "NaiveBayesClassifier", "AdaBoostClassifier", "RandomForestClassifier", "load", "root_avc_group", "Tree", "DataError", "BudgetError", "ModelError", "NotFittedError"]
__version__ = "0.1.0"
