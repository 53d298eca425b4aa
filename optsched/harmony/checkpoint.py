"""Network weights as ``.npz`` files: written with a digest, read through the guarded loader.

A checkpoint holds one array per parameter (``param/<name>``, float32) and ``meta``, the UTF-8
bytes of a JSON document: the format tag, the world the network was trained on, the training
settings, and two SHA-256 digests. ``digest`` is the model's identity: it covers the
parameters' names, shapes, dtypes and bytes and the *configuration* (every metadata entry but
the records of :data:`RECORD_KEYS`), never a time, so two bit-identical trainings have the same
digest. ``record_digest`` covers the records (the learning curve, the reward model's errors),
so they cannot be edited unnoticed either. Loading reads the file through
:func:`optsched._io.read_bytes` (regular file, size budget), parses it with
``allow_pickle=False`` (an ``.npz`` with object arrays is refused, never unpickled), checks
every expected array, its shape and finiteness, and recomputes both digests: a file edited
after it was written is refused with :class:`CheckpointError`.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from optsched import _io
from optsched.errors import InvalidInstanceError

__all__ = [
    "RECORD_KEYS",
    "CheckpointError",
    "load_checkpoint",
    "model_digest",
    "save_checkpoint",
]

#: Metadata entries that record what training measured rather than configure the model: kept
#: out of ``digest`` and covered by ``record_digest``.
RECORD_KEYS = ("curve", "record")
_DIGESTS = ("digest", "record_digest")


class CheckpointError(InvalidInstanceError):
    """A weights file is malformed, of another kind, or altered after it was written."""


def _digest(params: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> str:
    """SHA-256 over the parameters and the configuration (records and digests excluded)."""
    h = hashlib.sha256()
    config = {k: v for k, v in meta.items() if k not in _DIGESTS and k not in RECORD_KEYS}
    h.update(json.dumps(config, sort_keys=True).encode())
    for name in sorted(params):
        arr = np.ascontiguousarray(params[name])
        h.update(f"{name}:{arr.dtype.str}:{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _record_digest(meta: Mapping[str, Any]) -> str:
    records = {k: meta.get(k) for k in RECORD_KEYS}
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()


def model_digest(params: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> str:
    """The ``digest`` a checkpoint of ``params`` and ``meta`` carries (weights as float32)."""
    return _digest({k: np.asarray(v, dtype=np.float32) for k, v in params.items()}, meta)


def save_checkpoint(
    path: str | Path, params: Mapping[str, np.ndarray], meta: Mapping[str, Any]
) -> Path:
    """Write ``params`` (float32) and ``meta`` (JSON-able) with their digest to ``path``."""
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    full = dict(meta)
    full["digest"] = _digest(arrays, full)
    full["record_digest"] = _record_digest(full)
    blob = np.frombuffer(json.dumps(full, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    p = Path(path)
    with open(p, "wb") as fh:
        named: dict[str, np.ndarray] = {f"param/{k}": v for k, v in arrays.items()}
        named["meta"] = blob
        np.savez(fh, **named)  # type: ignore[arg-type]
    return p


def load_checkpoint(
    path: str | Path, *, kind: str, names: tuple[str, ...]
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a checkpoint of ``kind`` holding exactly the parameters ``names``.

    Returns
    -------
    (params, meta)

    Raises
    ------
    CheckpointError
        Not an ``.npz`` archive, object arrays, another kind, a missing or extra parameter,
        a non-finite weight, or a digest that does not match (the file was altered); the field
        and the file are named.
    InvalidInstanceError
        Not a regular file or over the size budget.
    """
    p = Path(path)
    data = _io.read_bytes(p)

    def refuse(field: str, message: str) -> CheckpointError:
        return CheckpointError(field, message, file=str(p))

    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise refuse("<file>", f"not a NumPy .npz archive of plain arrays ({exc})") from None
    if "meta" not in arrays or arrays["meta"].dtype != np.uint8:
        raise refuse("meta", "missing (not an optsched weights file)")
    try:
        meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise refuse("meta", f"is not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != kind:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise refuse("meta.format", f"must be {kind!r}, got {got!r}")
    params: dict[str, np.ndarray] = {}
    for key, arr in arrays.items():
        if not key.startswith("param/"):
            raise refuse(key, "unexpected array")
        params[key.removeprefix("param/")] = arr
    missing = sorted(set(names) - set(params))
    extra = sorted(set(params) - set(names))
    if missing or extra:
        raise refuse("param", f"missing {missing}, unexpected {extra}")
    for name, arr in params.items():
        if arr.dtype != np.float32:
            raise refuse(f"param/{name}", f"must be float32, got {arr.dtype}")
        if not np.all(np.isfinite(arr)):
            raise refuse(f"param/{name}", "holds a non-finite weight")
    if meta.get("digest") != _digest(params, meta):
        raise refuse("digest", "does not match the weights and metadata: the file was altered")
    if meta.get("record_digest") != _record_digest(meta):
        raise refuse("record_digest", "does not match the training record: the file was altered")
    return params, meta
