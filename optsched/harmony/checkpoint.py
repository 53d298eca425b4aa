"""Network weights as ``.npz`` files: written with a digest, read through the guarded loader.

A checkpoint holds one array per parameter (``param/<name>``, float32) and ``meta``, the UTF-8
bytes of a JSON document: the format tag, the world the network was trained on, the training
settings, and two SHA-256 digests. ``digest`` is the model's identity: it covers the
parameters' names, shapes, dtypes and bytes and the *configuration* (every metadata entry but
the records of :data:`RECORD_KEYS` and the signature), never a time, so two bit-identical
trainings have the same digest. ``record_digest`` covers the records (the learning curve, the
reward model's errors), so they cannot be edited unnoticed either.

**Integrity, not origin.** The digests are plain SHA-256: they prove the file is the one its
writer wrote (no bit flipped, no field edited *without recomputing them*), but anyone who edits
a checkpoint can recompute them. So the loader treats every checkpoint as untrusted input and
bounds everything it reads (below). When origin matters, either sign checkpoints with a key
(``signature``: HMAC-SHA256 under a user key over both digests; :func:`save_checkpoint` with
``key``, checked by :func:`load_checkpoint` with ``key``; the command line reads the key from
:data:`KEY_ENV`) or pin the digests you trust (``trusted_digests``; ``--trust`` on the command
line).

Loading, in this order, never decompressing or allocating more than the checks allow:

1. the file through :func:`optsched._io.read_bytes` (regular file, ``max_file_bytes``);
2. the zip's end record and central directory: exactly one member per expected array
   (``meta.npy`` and ``param/<name>.npy``; nothing else, no duplicate), each member's declared
   uncompressed size (:attr:`zipfile.ZipInfo.file_size`, which also caps what is inflated)
   within bounds, all **before** any member is decompressed;
3. ``meta``: a ``uint8`` vector, parsed by optsched's guarded JSON parser (no NaN, no duplicate
   key, no 5,000-digit integer), of the right ``format``;
4. the caller's ``shapes(meta)``: the shape of every parameter, derived by arithmetic from the
   settings and checked against size budgets (:mod:`optsched.limits`); every parameter member's
   declared size must equal its ``.npy`` header plus those float32 bytes;
5. each parameter: its ``.npy`` header (version 1 or 2, little-endian float32, C order, the
   expected shape) and payload length checked before the array is built from the bytes
   (``allow_pickle`` never enters: no object array is ever parsed), then finiteness;
6. both digests recomputed, then the signature or the trusted list when asked for.

Every refusal is a :class:`CheckpointError` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import math
import zipfile
import zlib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from optsched import _io, limits
from optsched.errors import InvalidInstanceError

__all__ = [
    "KEY_ENV",
    "NPY_HEADER_MAX",
    "RECORD_KEYS",
    "CheckpointError",
    "load_checkpoint",
    "model_digest",
    "save_checkpoint",
    "signature",
]

#: Metadata entries that record what training measured rather than configure the model: kept
#: out of ``digest`` and covered by ``record_digest``.
RECORD_KEYS = ("curve", "record")
_DIGESTS = ("digest", "record_digest", "signature")

#: The environment variable the command line reads a signing key from (UTF-8 text).
KEY_ENV = "OPTSCHED_HARMONY_KEY"

#: Most bytes of one member's ``.npy`` header (NumPy writes 128; its own reader allows 10,000).
NPY_HEADER_MAX = 4096

#: Most bytes of one central-directory entry of a member (46 fixed, the name, the extra field):
#: bounds the directory :mod:`zipfile` parses before any check of ours can run.
_CD_ENTRY_MAX = 1024


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


def signature(meta: Mapping[str, Any], key: bytes) -> str:
    """HMAC-SHA256 under ``key`` of the two digests of ``meta`` (hex)."""
    message = f"{meta.get('digest')}\n{meta.get('record_digest')}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def model_digest(params: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> str:
    """The ``digest`` a checkpoint of ``params`` and ``meta`` carries (weights as float32)."""
    return _digest({k: np.asarray(v, dtype=np.float32) for k, v in params.items()}, meta)


def save_checkpoint(
    path: str | Path,
    params: Mapping[str, np.ndarray],
    meta: Mapping[str, Any],
    *,
    key: bytes | None = None,
) -> Path:
    """Write ``params`` (float32) and ``meta`` (JSON-able) with their digests to ``path``.

    With ``key``, also a ``signature`` (:func:`signature`); the digests do not cover it, so a
    signed and an unsigned copy of one model have the same ``digest``.
    """
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    full = {k: v for k, v in meta.items() if k not in _DIGESTS}
    full["digest"] = _digest(arrays, full)
    full["record_digest"] = _record_digest(full)
    if key is not None:
        full["signature"] = signature(full, key)
    blob = np.frombuffer(json.dumps(full, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    p = Path(path)
    with open(p, "wb") as fh:
        named: dict[str, np.ndarray] = {f"param/{k}": v for k, v in arrays.items()}
        named["meta"] = blob
        np.savez(fh, **named)  # type: ignore[arg-type]
    return p


def _directory_size(data: bytes) -> tuple[int, int] | None:
    """(entries, bytes) of the zip's central directory from its end record, or ``None``."""
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if at < 0 or at + 22 > len(data):
        return None
    return int.from_bytes(data[at + 10 : at + 12], "little"), int.from_bytes(
        data[at + 12 : at + 16], "little"
    )


def _npy(raw: bytes, refuse: Callable[[str], CheckpointError]) -> tuple[Any, bool, np.dtype, int]:
    """(shape, fortran order, dtype, header length) of one ``.npy`` member, never its data."""
    fp = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            header = np.lib.format.read_array_header_1_0(fp, max_header_size=NPY_HEADER_MAX)
        elif version == (2, 0):
            header = np.lib.format.read_array_header_2_0(fp, max_header_size=NPY_HEADER_MAX)
        else:
            raise refuse(f"is .npy version {version}, not 1.0 or 2.0")
    except (ValueError, TypeError, SyntaxError, EOFError) as exc:
        raise refuse(f"is not a .npy array ({exc})") from None
    shape, fortran, dtype = header
    return shape, bool(fortran), dtype, fp.tell()


class _Archive:
    """The members of a checkpoint's zip, each checked before it is decompressed.

    Construction reads the end record and the central directory only: the member names must
    be exactly ``meta.npy`` and ``param/<name>.npy`` (no extra, no duplicate), and the
    directory small enough to be worth parsing.
    """

    def __init__(self, data: bytes, path: Path, kinds: Mapping[str, tuple[str, ...]]) -> None:
        self.path = path
        layouts = {
            kind: {"meta.npy": "meta", **{f"param/{n}.npy": f"param/{n}" for n in names}}
            for kind, names in kinds.items()
        }
        most = max(len(m) for m in layouts.values())
        allowed = {name for m in layouts.values() for name in m}
        directory = _directory_size(data)
        if directory is None:
            raise self.refuse("<file>", "not a NumPy .npz archive (no zip end record)")
        entries, cd_bytes = directory
        if entries > 2 * most or cd_bytes > most * _CD_ENTRY_MAX:
            # too many to be worth parsing: the names are checked below on a small directory
            raise self.refuse(
                "<file>",
                f"holds {entries} members in a {cd_bytes:,}-byte directory; a checkpoint "
                f"holds at most {most}",
            )
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise self.refuse("<file>", f"not a NumPy .npz archive ({exc})") from None
        listed = [i.filename for i in infos]
        unexpected = sorted(set(listed) - allowed)
        if unexpected:
            raise self.refuse(
                unexpected[0], f"unexpected member {unexpected[0]!r} (not decompressed)"
            )
        #: The kinds whose members the archive holds exactly.
        self.kinds = [k for k, m in layouts.items() if set(listed) == set(m)]
        if len(listed) != len(set(listed)) or not self.kinds:
            raise self.refuse(
                "<file>",
                "members missing or duplicated (not decompressed); expected exactly one of "
                + " | ".join(", ".join(m) for m in layouts.values()),
            )
        self.info = {layouts[self.kinds[0]][i.filename]: i for i in infos}

    def refuse(self, field: str, message: str) -> CheckpointError:
        return CheckpointError(field, message, file=str(self.path))

    def read(self, field: str, size_cap: int) -> tuple[bytes, Any, bool, np.dtype, int]:
        """The bytes of one member, its ``.npy`` header parsed; refused over ``size_cap``."""
        zi = self.info[field]
        if zi.file_size > size_cap:
            raise self.refuse(
                field,
                f"inflates to {zi.file_size:,} bytes, more than the {size_cap:,} its "
                "settings allow (not decompressed)",
            )
        try:
            with self.zip.open(zi) as fh:
                # The stream stops at the declared size and checks the CRC at its end.
                raw = fh.read(zi.file_size + 1)
        except (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError,
                EOFError, OSError, ValueError) as exc:  # fmt: skip
            raise self.refuse(field, f"cannot be decompressed ({exc})") from None
        if len(raw) != zi.file_size:
            raise self.refuse(field, f"holds {len(raw):,} bytes, not the {zi.file_size:,} declared")
        return (raw, *_npy(raw, lambda m: self.refuse(field, m)))

    def meta(self) -> dict[str, Any]:
        """The metadata document, of a format whose members the archive holds."""
        raw, shape, _, dtype, at = self.read(
            "meta", NPY_HEADER_MAX + limits.current().max_file_bytes
        )
        if dtype != np.dtype(np.uint8) or len(shape) != 1 or shape[0] != len(raw) - at:
            raise self.refuse("meta", "missing or not a byte vector (not an optsched weights file)")
        try:
            text = raw[at:].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.refuse("meta", f"is not UTF-8 ({exc})") from None
        try:
            meta = _io._parse_json(text, self.path)
        except InvalidInstanceError as exc:
            raise self.refuse("meta", f"is not JSON optsched reads ({exc.message})") from None
        if not isinstance(meta, dict) or meta.get("format") not in self.kinds:
            got = meta.get("format") if isinstance(meta, dict) else None
            want = self.kinds[0] if len(self.kinds) == 1 else self.kinds
            raise self.refuse("meta.format", f"must be {want!r}, got {got!r}")
        return meta

    def param(self, name: str, want: tuple[int, ...] | None) -> np.ndarray:
        """One float32 parameter of shape ``want`` (any shape within budget if ``None``)."""
        field = f"param/{name}"
        cells = limits.current().max_checkpoint_weights if want is None else math.prod(want)
        raw, shape, fortran, dtype, at = self.read(field, NPY_HEADER_MAX + 4 * cells)
        f32 = np.dtype("<f4")
        if dtype != f32 or fortran:
            raise self.refuse(field, f"must be little-endian float32 in C order, got {dtype}")
        if want is not None and tuple(shape) != tuple(want):
            raise self.refuse(field, f"shape {tuple(shape)} != {tuple(want)} from the settings")
        if 4 * math.prod(shape) != len(raw) - at:
            raise self.refuse(
                field, f"shape {tuple(shape)} does not match its {len(raw) - at:,} bytes"
            )
        arr = np.frombuffer(raw, dtype=f32, offset=at).reshape(shape).copy()
        if not np.all(np.isfinite(arr)):
            raise self.refuse(field, "holds a non-finite weight")
        return arr


def load_checkpoint(
    path: str | Path,
    *,
    kind: str | Mapping[str, tuple[str, ...]],
    names: tuple[str, ...] = (),
    shapes: Callable[[Mapping[str, Any]], Mapping[str, tuple[int, ...]]] | None = None,
    key: bytes | None = None,
    trusted_digests: Collection[str] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a checkpoint of ``kind`` holding exactly the parameters ``names`` (or one of kinds).

    Parameters
    ----------
    path : str or Path
    kind : str or mapping of str to tuple of str
        The required ``meta.format``; or every accepted format with its parameters.
    names : tuple of str
        The parameters, exactly (when ``kind`` is one format).
    shapes : callable, optional
        ``shapes(meta)``: the shape of every parameter, derived from the settings by arithmetic
        and checked against budgets; it raises :class:`~optsched.errors.InvalidInstanceError`
        naming the setting (re-raised as a :class:`CheckpointError` naming the file). Without
        it, each parameter member is bounded by ``max_checkpoint_weights`` only.
    key : bytes, optional
        Require a ``signature`` made with this key (origin, not only integrity).
    trusted_digests : collection of str, optional
        Require the ``digest`` to be one of these.

    Returns
    -------
    (params, meta)

    Raises
    ------
    CheckpointError
        Not a zip of the expected members, a member larger than it may be, object or other
        non-float32 arrays, another kind, a setting out of range or over its budget, a shape
        that does not match the settings, a non-finite weight, a digest that does not match
        (the file was altered), a missing or wrong signature, an untrusted digest; the field
        and the file are named.
    InvalidInstanceError
        Not a regular file or over the size budget.
    """
    p = Path(path)
    kinds = {kind: names} if isinstance(kind, str) else dict(kind)
    archive = _Archive(_io.read_bytes(p), p, kinds)
    meta = archive.meta()
    names = kinds[meta["format"]]
    want: Mapping[str, tuple[int, ...]] | None = None
    if shapes is not None:
        try:
            want = shapes(meta)
        except InvalidInstanceError as exc:
            raise archive.refuse(exc.field, exc.message) from None
    params = {n: archive.param(n, None if want is None else want[n]) for n in names}
    if meta.get("digest") != _digest(params, meta):
        raise archive.refuse(
            "digest", "does not match the weights and metadata: the file was altered"
        )
    if meta.get("record_digest") != _record_digest(meta):
        raise archive.refuse(
            "record_digest", "does not match the training record: the file was altered"
        )
    if key is not None:
        sig = meta.get("signature")
        if not isinstance(sig, str):
            raise archive.refuse(
                "signature", "missing: the file is not signed, and a key was given"
            )
        if not hmac.compare_digest(sig, signature(meta, key)):
            raise archive.refuse(
                "signature", "does not match the key: signed by another key or forged"
            )
    if trusted_digests is not None and meta["digest"] not in set(trusted_digests):
        raise archive.refuse("digest", f"{meta['digest'][:16]}... is not in the trusted list")
    return params, meta
