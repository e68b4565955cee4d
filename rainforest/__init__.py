"""rainforest: decision trees over data of any size, grown from RainForest AVC-groups.

Public API
----------
DecisionTreeClassifier
    The out-of-core decision tree (exact or binned splits, gini / entropy / gain ratio).
DecisionTreeRegressor
    The same tree for a numeric target (CART's variance reduction, scikit-learn's ``squared_error``).
NaiveBayesClassifier
    Naive Bayes in one pass (Gaussian or binned numerics, Laplace-corrected categories).
AdaBoostClassifier
    SAMME boosting of stumps or shallow trees (two passes in all) or naive Bayes (one pass per round).
RandomForestClassifier
    Random forests (Forest-RI / Forest-RC) whose trees grow together, one pass per level.
RandomForestRegressor
    The same forest of regression trees (the mean of the trees' leaf means).
load
    Read a model saved with ``save``.
Tree
    The flat-array model format shared by every learner.

Modules
-------
rainforest.metrics
    ``evaluate``: a fitted model scored in one pass (confusion matrix, per-class and averaged
    metrics, exact ROC curves and AUC; a regressor's MSE, MAE and R²).
rainforest.evaluation
    Holdout, random subsampling, k-fold cross-validation, the .632 bootstrap, the paired
    t-test, threshold moving and class resampling, over any source without copying it.
"""
from rainforest.storage.lazy import lazy_names

from .errors import BudgetError, DataError, ModelError, NotFittedError

# The learners are imported on first use (``rainforest.DecisionTreeClassifier``, ``from rainforest
# import ...``): importing them compiles nothing but loads Numba, which a program that only reads
# a saved model's metadata or the version need not pay for.
_LAZY = {"DecisionTreeClassifier": "estimators", "load": "estimators", "root_avc_group": "estimators",
         "DecisionTreeRegressor": "regressor", "RandomForestRegressor": "forest_regressor",
         "NaiveBayesClassifier": "bayes", "AdaBoostClassifier": "boosting", "RandomForestClassifier": "forest",
         "Tree": "tree"}

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "NaiveBayesClassifier", "AdaBoostClassifier",
           "RandomForestClassifier", "RandomForestRegressor", "load", "root_avc_group", "Tree", "DataError",
           "BudgetError", "ModelError", "NotFittedError"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
