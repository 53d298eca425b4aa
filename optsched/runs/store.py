"""One resumable, keyed store for every sweep.

A sweep (``oasis ratio``, ``pace sweep``, ``sim sweep`` ...) is a set of independent runs, each
named by a key built from its parameters. :class:`RunStore` keeps one record per key in an
SQLite file, so that

* every record is written whole (one transaction per record, ``synchronous=FULL``): a sweep
  killed at any instant leaves every finished run on disk and no partial one (SQLite's journal
  rolls back a torn write on the next open);
* the parameters that affect results (the sweep's *config*) are stored with the first record and
  compared on every reopen: resuming with other parameters is an error naming the parameter, not
  a silent mix of results;
* every record carries a SHA-256 checksum of its JSON text and the sweep's kind: a corrupt,
  edited or foreign record is reported as an error naming its key, never skipped or trusted;
* rerunning a sweep redoes only the keys it lacks, and the table it yields equals an
  uninterrupted run's;
* one writer at a time: a store open for writing holds an exclusive advisory lock
  (``flock``) on its file until it is closed or its process dies (``SIGKILL`` included: the
  kernel drops the lock), and a second sweep opening the same store is refused at once with an
  error naming the file, instead of computing the same runs twice. Readers
  (:meth:`RunStore.open_existing`) take the lock only when they first write.

SQLite ships with Python (no dependency) and is safe against power loss and kills, which a
hand-written JSON-lines file is not without the same care.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched._json import to_jsonable
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMAT_VERSION", "RunStore", "as_stored", "run_key"]

#: Version of the store's layout, recorded in the file.
FORMAT_VERSION = 1


def _canonical(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def run_key(**params: Any) -> str:
    """A run's key: its parameters as canonical JSON (sorted keys, no spaces).

    >>> run_key(seed=3, policy="fifo")
    '{"policy":"fifo","seed":3}'
    """
    return _canonical(params)


def as_stored(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record as the store gives it back: its canonical JSON text, parsed.

    Keys sorted, NumPy values as Python ones, NaN as ``None``, infinities as ``"inf"`` /
    ``"-inf"``. A sweep passes its fresh records through this too, so that a table built from
    them equals one built from the store.

    >>> as_stored({"b": float("inf"), "a": (1, 2)})
    {'a': [1, 2], 'b': 'inf'}
    """
    out: dict[str, Any] = json.loads(_canonical(dict(record)))
    return out


#: JSON's names of the values ``json.loads`` gives back (for refusals).
_JSON_TYPES = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def stored_config(meta: Mapping[str, str], path: Path) -> dict[str, Any]:
    """A store's ``config`` metadata as an object, checked as a file's contents are.

    JSON, an object, within the depth and number budgets (``optsched.limits``). The store's
    own writer wrote it, but anyone can edit the file: a config nested thousands
    deep would exhaust the decoder's stack, or later the comparison with a sweep's config.

    Raises
    ------
    InvalidInstanceError
        Naming ``config`` (and the offending path inside it) and the file.
    """
    from optsched._io import check_tree

    try:
        config = json.loads(meta.get("config", ""))
    except (json.JSONDecodeError, RecursionError, ValueError):
        # RecursionError: a config nested thousands deep exhausts the decoder's stack
        raise InvalidInstanceError(
            "config", "the stored config is not valid JSON (or nests too deeply)", file=str(path)
        ) from None
    if not isinstance(config, dict):
        raise InvalidInstanceError(
            "config",
            f"the stored config is a JSON {_JSON_TYPES.get(type(config), 'value')}, not an object",
            file=str(path),
        )
    try:
        check_tree(config)
    except InvalidInstanceError as exc:
        raise InvalidInstanceError(f"config.{exc.field}", exc.message, file=str(path)) from None
    return config


def _checksum(kind: str, key: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{key}\0{text}".encode()).hexdigest()


class RunStore:
    """A keyed, checksummed, resumable store of sweep records in one SQLite file.

    Parameters
    ----------
    path : str or Path
        The SQLite file (created with its parent directory if missing). A directory path
        stores ``runs.sqlite`` inside it.
    kind : str
        What sweep this is (e.g. ``"oasis-ratio"``); a store of another kind is refused.
    config : mapping
        Every parameter that affects the results and is shared by all runs (JSON-ready). On
        reopen it must equal the stored one.
    exclusive : bool, default True
        Take the store's writer lock now (module notes); ``False`` defers it to the first
        write.

    Raises
    ------
    InvalidInstanceError
        The file is not a store, is of another kind or format version, or was made with a
        different config (the differing parameter is named); or another process (or another
        open store in this one) is writing to it (field ``store``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with RunStore(d, kind="demo", config={"jobs": 10}) as store:
    ...     store.put(run_key(seed=0), {"ratio": 1.25})
    ...     sorted(store.keys())
    ['{"seed":0}']
    >>> RunStore(d, kind="demo", config={"jobs": 20})
    Traceback (most recent call last):
    ...
    optsched.errors.InvalidInstanceError: ...config.jobs: differs from the stored sweep...
    """

    def __init__(
        self, path: str | Path, *, kind: str, config: Mapping[str, Any], exclusive: bool = True
    ) -> None:
        p = Path(path)
        if p.is_dir() or (not p.exists() and p.suffix == ""):
            p = p / "runs.sqlite"
        p.parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self.kind = kind
        self.config = json.loads(_canonical(dict(config)))
        self._lock: int | None = None
        try:
            self._db = sqlite3.connect(p, isolation_level=None)
        except sqlite3.OperationalError as exc:
            # a folder no file may be created in (read-only, forbidden): the place given
            raise InvalidInstanceError("store", f"cannot open {p}: {exc}", file=str(p)) from None
        if exclusive:
            try:
                self._claim()
            except BaseException:
                self._db.close()
                raise
        try:
            self._db.execute("PRAGMA synchronous=FULL")
            self._init()
            # damage in the middle of the file (a flipped page) passes the header and meta
            # reads above and would surface later as a bare DatabaseError; quick_check reads
            # every page once (linear in the store, small next to the runs it holds)
            problems = [row[0] for row in self._db.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                detail = " ".join(" ".join(str(x).split()) for x in problems[:3])
                raise sqlite3.DatabaseError(detail)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            # UnicodeDecodeError: SQLite's own report of the damage quotes a damaged schema,
            # whose bytes need not be UTF-8 any more
            self.close()
            raise self._corrupt(exc) from None
        except BaseException:
            self.close()
            raise

    # -- opening --------------------------------------------------------------------------

    def _init(self) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS runs (key TEXT PRIMARY KEY, record TEXT NOT NULL, "
                "checksum TEXT NOT NULL, written REAL NOT NULL)"
            )
            meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
            if not meta:
                db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [
                        ("format", str(FORMAT_VERSION)),
                        ("kind", self.kind),
                        ("config", _canonical(self.config)),
                    ],
                )
            db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        if meta:
            self._check_meta(meta)

    def _claim(self) -> None:
        """Take the writer lock (an exclusive ``flock`` on the file), or refuse at once.

        ``flock`` locks are separate from the POSIX record locks SQLite takes on the same file,
        so the two never interfere; the descriptor is kept open until :meth:`close`, after the
        connection (closing a descriptor of the file while SQLite holds its locks would drop
        them). Without ``fcntl`` (Windows) there is no writer lock.
        """
        if self._lock is not None:
            return
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise InvalidInstanceError(
                "store", f"cannot open {self.path}: {exc.strerror}", file=str(self.path)
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InvalidInstanceError(
                "store",
                f"{self.path} is in use by another sweep writing to it; wait until that sweep "
                "ends, or use another store",
                file=str(self.path),
            ) from None
        self._lock = fd

    def _rollback(self) -> None:
        """Undo the open transaction, if one is still open, without hiding why it failed.

        An interrupt (``KeyboardInterrupt``) can land after SQLite has already committed or
        rolled back, e.g. while ``COMMIT`` returns; an unconditional ``ROLLBACK`` would then
        fail with "no transaction is active" and replace the interrupt (exit 1 instead of
        130). The transaction is all-or-nothing either way, so the store stays consistent.
        """
        if self._db.in_transaction:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                # the caller's exception says what went wrong; SQLite rolls the journal back
                # on the next open if this rollback could not
                pass

    def _corrupt(self, exc: sqlite3.DatabaseError | UnicodeDecodeError) -> InvalidInstanceError:
        """The error for a file SQLite cannot read as a store (corrupt, truncated, foreign)."""
        if isinstance(exc, UnicodeDecodeError):
            exc = sqlite3.DatabaseError(
                f"SQLite's report of the damage is not text ({exc.reason} at byte {exc.start})"
            )
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            # a reader of another process held the file past SQLite's busy timeout: not damage
            return InvalidInstanceError(
                "store",
                f"{self.path} is locked by another process ({exc}); try again when it is done",
                file=str(self.path),
            )
        return InvalidInstanceError(
            "<file>",
            f"{self.path} is not a valid run store (corrupt or not a sweep store): {exc}; "
            "remove it or use another output",
            file=str(self.path),
        )

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Turn SQLite's errors on a damaged file into the typed refusal naming the file."""
        try:
            yield
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise self._corrupt(exc) from None

    def _refuse(self, field: str, message: str) -> InvalidInstanceError:
        self.close()
        return InvalidInstanceError(field, message, file=str(self.path))

    def _check_meta(self, meta: dict[str, str]) -> None:
        if meta.get("format") != str(FORMAT_VERSION):
            raise self._refuse("format", f"store format {meta.get('format')!r} is not supported")
        if meta.get("kind") != self.kind:
            raise self._refuse(
                "kind", f"{self.path} holds a {meta.get('kind')!r} sweep, not {self.kind!r}"
            )
        try:
            stored = stored_config(meta, self.path)
        except InvalidInstanceError:
            self.close()
            raise
        if stored != self.config:
            names = sorted(set(stored) | set(self.config))
            diff = [n for n in names if stored.get(n, "<absent>") != self.config.get(n, "<absent>")]
            name = diff[0] if diff else "<config>"
            raise self._refuse(
                f"config.{name}",
                f"differs from the stored sweep's (stored {stored.get(name, '<absent>')!r}, now "
                f"{self.config.get(name, '<absent>')!r}); resume with the same parameters or use "
                "another output",
            )

    @classmethod
    def open_existing(cls, path: str | Path, *, kind: str | None = None) -> RunStore:
        """Open a store that exists, adopting its stored kind and config (to read it back).

        Parameters
        ----------
        path : str or Path
            The SQLite file, or a directory holding ``runs.sqlite``.
        kind : str, optional
            Refuse a store of another kind (default: accept any kind).

        Raises
        ------
        InvalidInstanceError
            No store there, or not a valid store, or of another kind.
        """
        p = Path(path)
        if p.is_dir():
            p = p / "runs.sqlite"
        if not p.is_file():
            raise InvalidInstanceError("<file>", f"{p}: no run store there", file=str(p))
        try:
            with sqlite3.connect(f"file:{p}?mode=ro", uri=True) as db:
                meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            # (UnicodeDecodeError: SQLite's report quotes a damaged schema, see __init__)
            raise InvalidInstanceError(
                "<file>", f"{p} is not a valid run store: {exc}", file=str(p)
            ) from None
        stored_kind = meta.get("kind", "")
        if kind is not None and stored_kind != kind:
            raise InvalidInstanceError(
                "kind", f"{p} holds a {stored_kind!r} sweep, not {kind!r}", file=str(p)
            )
        return cls(p, kind=stored_kind, config=stored_config(meta, p), exclusive=False)

    # -- metadata beside the records --------------------------------------------------------

    def set_meta(self, name: str, value: str) -> None:
        """Store a named text beside the records (e.g. the experiment file that made them).

        The names ``format``, ``kind`` and ``config`` are the store's own and are refused.
        """
        if name in ("format", "kind", "config"):
            raise InvalidInstanceError("name", f"{name!r} is reserved by the store")
        self._claim()
        with self._reading():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def get_meta(self, name: str) -> str | None:
        """A named text stored with :meth:`set_meta` (``None`` if absent)."""
        with self._reading():
            row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    # -- records --------------------------------------------------------------------------

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        """Store one run's record, whole, in its own transaction.

        Raises
        ------
        InvalidInstanceError
            ``key`` is already stored with a different record.
        """
        text = _canonical(dict(record))
        digest = _checksum(self.kind, key, text)
        self._claim()
        db = self._db
        with self._reading():
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT checksum FROM runs WHERE key = ?", (key,)).fetchone()
                if row is None:
                    db.execute(
                        "INSERT INTO runs VALUES (?, ?, ?, ?)", (key, text, digest, time.time())
                    )
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        if row is not None and row[0] != digest:
            raise InvalidInstanceError(
                "key", f"run {key} is already stored with a different record", file=str(self.path)
            )

    def keys(self) -> set[str]:
        """The keys stored (finished runs)."""
        with self._reading():
            return {k for (k,) in self._db.execute("SELECT key FROM runs")}

    def __contains__(self, key: object) -> bool:
        with self._reading():
            row = self._db.execute("SELECT 1 FROM runs WHERE key = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        with self._reading():
            return int(self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every ``(key, record)`` in key order, each checked against its checksum.

        Raises
        ------
        InvalidInstanceError
            A record is corrupt or foreign (checksum mismatch, not JSON); its key is named.
        """
        with self._reading():
            rows = self._db.execute(
                "SELECT key, record, checksum FROM runs ORDER BY key"
            ).fetchall()
        for key, text, digest in rows:
            if _checksum(self.kind, key, text) != digest:
                raise InvalidInstanceError(
                    f"runs[{key}]",
                    "record does not match its checksum (edited, corrupt or from another "
                    "sweep); remove it or start a new store",
                    file=str(self.path),
                )
            yield key, self._decode(key, text)

    def get(self, key: str) -> dict[str, Any] | None:
        """One record (checked), or ``None`` if the run is not stored."""
        with self._reading():
            row = self._db.execute(
                "SELECT record, checksum FROM runs WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        text, digest = row
        if _checksum(self.kind, key, text) != digest:
            raise InvalidInstanceError(
                f"runs[{key}]",
                "record does not match its checksum (edited, corrupt or from another sweep); "
                "remove it or start a new store",
                file=str(self.path),
            )
        return self._decode(key, text)

    def _decode(self, key: str, text: str) -> dict[str, Any]:
        """A record's text as an object, checked like a file: JSON, an object, bounded depth.

        The checksum proves only that the text is the one written with it, and anyone editing
        the file can recompute it; so what it holds is checked as any input is.
        """
        from optsched._io import check_tree

        field = f"runs[{key}]"
        try:
            record = json.loads(text)
        except (json.JSONDecodeError, RecursionError, ValueError):
            # RecursionError: a record nested thousands deep exhausts the decoder's stack
            raise InvalidInstanceError(
                field, "record is not valid JSON (or nests too deeply)", file=str(self.path)
            ) from None
        if not isinstance(record, dict):
            raise InvalidInstanceError(
                field,
                f"record is a JSON {_JSON_TYPES.get(type(record), 'value')}, not an object",
                file=str(self.path),
            )
        try:
            check_tree(record)
        except InvalidInstanceError as exc:
            raise InvalidInstanceError(
                f"{field}.{exc.field}", exc.message, file=str(self.path)
            ) from None
        return record

    def records(self) -> list[dict[str, Any]]:
        """Every record, checked, in key order."""
        return [record for _, record in self.items()]

    def to_frame(self) -> pd.DataFrame:
        """Every record as one row (columns are the records' keys), in key order."""
        import pandas as pd

        return pd.DataFrame(self.records())

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file (every record is already on disk) and release the writer lock."""
        self._db.close()
        if self._lock is not None:
            # after the connection: see _claim
            os.close(self._lock)
            self._lock = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r}, kind={self.kind!r}, runs={len(self)})"
