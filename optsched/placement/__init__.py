"""Placement of training tasks on servers: instances, exact ILPs, heuristics and a validator.

Every algorithm in this package returns the same :class:`Placement` type, and one independent
validator (:func:`validate`) re-derives feasibility and every objective from the instance and the
placement alone.
"""

from __future__ import annotations

__all__: list[str] = []
