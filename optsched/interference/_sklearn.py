"""The one check that scikit-learn (the ``ml`` extra) is installed, with the install hint."""

from __future__ import annotations

from importlib.util import find_spec

from optsched.errors import MissingExtraError

__all__ = ["MissingExtraError", "require_sklearn"]


def require_sklearn() -> None:
    """Raise :class:`MissingExtraError` unless scikit-learn can be imported.

    The learned predictors fit scikit-learn models; the ground truth, the mean baselines and
    :func:`~optsched.interference.interference_matrix` need only NumPy.
    """
    if find_spec("sklearn") is None:
        raise MissingExtraError(
            "the learned interference predictors need scikit-learn: "
            "pip install 'optsched[ml]' (or pip install scikit-learn)"
        )
