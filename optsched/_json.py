"""The one JSON encoder: numpy scalars/arrays, enums, dataclasses, tuples, non-finite floats.

Every JSON document optsched writes (CLI output, saved instances, sweep records) goes through
:func:`to_jsonable`, so a NaN never reaches ``json.dumps`` (which would write the non-standard
token ``NaN``): NaN becomes ``null`` and infinities the strings ``"inf"``/``"-inf"``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from typing import Any

__all__ = ["dumps", "to_jsonable"]


def to_jsonable(obj: Any) -> Any:
    """Convert ``obj`` into plain JSON-ready Python data.

    Objects with a ``to_dict()`` method are converted through it; pandas DataFrames become a list
    of records.
    """
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if obj is None or isinstance(obj, str):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict) and type(obj).__module__.split(".")[0] == "optsched":
        return to_jsonable(to_dict())
    if type(obj).__name__ == "DataFrame" and hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict(orient="records"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # field by field, not dataclasses.asdict: asdict deep-copies every value, and a field
        # holding a solver object (a HiGHS basis) cannot be copied; it becomes its str here
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if hasattr(obj, "item") and callable(obj.item):  # numpy 0-d and pandas scalars
        return to_jsonable(obj.item())
    return str(obj)


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    """Serialise ``obj`` as strict JSON (no ``NaN``/``Infinity`` tokens)."""
    return json.dumps(to_jsonable(obj), indent=indent, allow_nan=False)
