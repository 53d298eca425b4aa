"""Running a peer's own simulator beside optsched: the pieces the cross-check benchmarks share.

``bench_gavel_sim``, ``bench_elasticflow_sim`` and ``bench_pollux_sim`` each run a published
scheduler's simulator, unmodified, in a child process with that project's own Python, on the
inputs optsched runs on. What they share lives here, as small functions:

* where things are: :func:`cache_dir` (a benchmark's cache, an environment variable or
  ``~/.cache/optsched/<name>``), :func:`find_mirror` (a bare git mirror in a parent directory);
* the peer's source: :func:`export_tree` writes a folder of a mirror at a revision (blobs the
  mirror lacks, Git LFS objects, skipped), :func:`export_once` does it once into a cache
  directory marked complete with the commit, :func:`copy_given` copies a checkout named by an
  environment variable into the cache;
* the peer's Python: :func:`python_works` (imports a probe), :func:`peer_python` (a given
  interpreter, else a virtual environment under the cache, built once from a list of packages);
* its runs: :func:`run_key` (a digest of the run's inputs: file bytes, settings, the commit;
  :func:`tree_digest` stands for a whole source tree),
  :func:`timeout_from` (a limit in seconds from the environment), :func:`cached_result` /
  :func:`keep_result` (a JSON result kept under its key; a run stopped at a limit is tried again
  only under a larger one, a failed run is not kept), :func:`run_niced` (a child under
  ``nice -n 19`` with a timeout, its wall and CPU seconds measured);
* the table: :func:`say` (a progress line on stderr), :func:`chosen` (a comma-separated
  environment list), :func:`skipped` (the result of a benchmark that cannot run, with the reason).

Nothing here writes into the working tree: exports, environments and results go to the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The marker written last by :func:`export_once` (it holds the commit).
COMPLETE = ".complete"
#: Hex digits of a run key (64 bits: no collision among a benchmark's runs).
KEY_DIGITS = 16


def say(message: str) -> None:
    """A progress line on stderr (the tables go to the result files)."""
    print(message, file=sys.stderr, flush=True)


def chosen(variable: str) -> set[str]:
    """The comma-separated names in an environment variable (empty: every one)."""
    return {v.strip() for v in os.environ.get(variable, "").split(",") if v.strip()}


def skipped(name: str, title: str, description: str, column: str, reason: str) -> dict[str, Any]:
    """The result of a benchmark that cannot run: no rows, the reason as its note."""
    say(f"skipped: {reason}")
    return {
        "name": name,
        "title": title,
        "description": description,
        "columns": [column],
        "rows": [],
        "notes": [f"skipped: {reason}"],
    }


# ----------------------------------------------------------------------------- places


def cache_base() -> Path:
    """``$XDG_CACHE_HOME/optsched``, else ``~/.cache/optsched``."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "optsched"


def cache_dir(variable: str, name: str) -> Path:
    """A benchmark's cache: the directory the environment variable names, else
    ``cache_base() / name``."""
    given = os.environ.get(variable)
    if given:
        return Path(given).expanduser()
    return cache_base() / name


def find_mirror(here: Path, relative: Path) -> Path | None:
    """The first ``parent / relative`` that is a directory, over the parents of ``here``."""
    for parent in here.parents:
        if (parent / relative).is_dir():
            return parent / relative
    return None


def head_of(git_dir: Path, rev: str = "HEAD") -> str:
    """The abbreviated commit a revision of a mirror names ("" when git cannot say)."""
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", "--short", rev],
        capture_output=True,
        text=True,
    ).stdout.strip()


# ----------------------------------------------------------------------------- source


def export_tree(git_dir: Path, rev: str, folder: str, dest: Path) -> int:
    """Write ``folder`` of the mirror at ``rev`` under ``dest`` (``dest / folder / ...``).

    Blobs the mirror lacks (Git LFS objects of a partial clone) are skipped. One ``git
    cat-file --batch`` reads every blob, so the cost is one pass over the folder's bytes.

    Returns
    -------
    int
        The number of files written.
    """
    listing = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", rev, "--", folder],
        check=True,
        capture_output=True,
    ).stdout
    entries: list[tuple[str, bytes]] = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, name = record.split(b"\t", 1)
        _mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((name.decode(), sha))
    written = 0
    with subprocess.Popen(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for rel, sha in entries:
            proc.stdin.write(sha + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if header[-1] == b"missing":  # Git LFS objects the mirror does not hold
                continue
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
        proc.stdin.close()
    return written


def export_once(git_dir: Path, commit: str, folder: str, dest: Path) -> Path:
    """``folder`` of the mirror at ``commit`` exported into ``dest`` unless already there.

    The marker :data:`COMPLETE` (holding the commit) is written last, so an interrupted export
    is redone, not used. Returns ``dest / folder``.
    """
    import shutil

    marker = dest / COMPLETE
    if not (marker.is_file() and marker.read_text().strip() == commit):
        shutil.rmtree(dest, ignore_errors=True)
        export_tree(git_dir, commit, folder, dest)
        marker.write_text(commit + "\n")
    return dest / folder


def copy_given(
    variable: str, folder: str, marker: str, cache: Path
) -> tuple[Path | None, str] | None:
    """A peer's source named by ``$<variable>``, copied into ``cache / "src-given" / folder``.

    The variable names the folder itself (holding the file ``marker``) or its parent (holding
    ``folder / marker``). The copy is what runs (a peer's run or build writes into its tree:
    stubs, ``__pycache__``), never the given tree. None when the variable is unset; ``(None,
    why)`` when it names neither.
    """
    import shutil

    given = os.environ.get(variable)
    if not given:
        return None
    root = Path(given).expanduser()
    source = root if (root / marker).is_file() else root / folder
    if not (source / marker).is_file():
        return None, f"{variable}={given} holds no {folder}/{marker}"
    copy = cache / "src-given" / folder
    shutil.rmtree(copy.parent, ignore_errors=True)
    shutil.copytree(source, copy)
    return copy, f"{variable} (copied into {copy.parent})"


# ----------------------------------------------------------------------------- Python


def python_works(python: str, probe: str, timeout: float = 300.0) -> bool:
    """Whether ``python -c probe`` (the peer's imports) exits 0 within ``timeout`` seconds."""
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@dataclass(frozen=True)
class PeerPython:
    """Where a peer's Python comes from and how it is checked.

    Attributes
    ----------
    who : str
        The peer's name in messages ("Gavel").
    needs : str
        What the probe imports, in messages ("Gavel's dependencies").
    variable : str
        The environment variable naming an interpreter to use as it is.
    venv : str
        The cached virtual environment's folder under :func:`cache_base`.
    probe : str
        Python code importing what the peer's simulator needs.
    base : str
        The interpreter that creates the environment (the peer's Python version).
    """

    who: str
    needs: str
    variable: str
    venv: str
    probe: str
    base: str = sys.executable


def peer_python(peer: PeerPython, deps: Callable[[], list[str]]) -> tuple[str | None, str]:
    """A Python with the peer's packages, and where it came from (else None and why).

    ``$<variable>`` when set (used as it is, or refused); else the environment
    ``cache_base() / peer.venv``, built there once with ``peer.base -m venv`` and ``pip install
    deps()`` when it is absent or fails the probe.
    """
    given = os.environ.get(peer.variable)
    if given:
        if python_works(given, peer.probe):
            return given, peer.variable
        return None, f"{peer.variable}={given} cannot import {peer.needs}"
    venv = cache_base() / peer.venv
    shown = f"~/.cache/optsched/{peer.venv}"
    python = venv / "bin" / "python"
    if python.exists() and python_works(str(python), peer.probe):
        return str(python), f"the cached environment {shown}"
    packages = deps()
    say(f"building a Python environment for {peer.who}'s simulator in {venv} (once): {packages}")
    try:
        subprocess.run([peer.base, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *packages], check=True, timeout=1800
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"could not build {peer.who}'s environment in {venv}: {exc}"
    if not python_works(str(python), peer.probe):
        return None, f"the environment built in {venv} cannot import {peer.needs}"
    return str(python), f"the environment just built in {shown}"


# ----------------------------------------------------------------------------- runs


def run_key(*parts: bytes) -> str:
    """:data:`KEY_DIGITS` hex digits of the SHA-256 of ``parts`` joined by NUL bytes.

    The parts are what decides a run's result: input files' bytes, the settings, the peer's
    commit (and the driver's bytes, where a driver runs the peer). Changing any of them gives
    another key, so a stale result is never read back.
    """
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:KEY_DIGITS]


def tree_digest(folder: Path) -> bytes:
    """The SHA-256 of every file under ``folder`` (relative path and bytes, in path order),
    ``__pycache__`` left out: a run-key part for a peer's source tree, whatever its origin."""
    digest = hashlib.sha256()
    files = [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    for path in sorted(files, key=lambda p: p.relative_to(folder).as_posix()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


def timeout_from(variable: str, default: float = 3600.0) -> float:
    """Seconds a peer's run may take: ``$<variable>`` when set, else ``default``."""
    return float(os.environ.get(variable, str(default)))


def cached_result(path: Path, limit: float) -> dict[str, Any] | None:
    """The result kept at ``path``, unless absent or stopped at a limit below ``limit``.

    A run stopped at its timeout is kept with ``timed_out`` and ``timeout_s``: it stands for
    every later call with the same or a smaller limit, and is tried again under a larger one.
    """
    if not path.is_file():
        return None
    result: dict[str, Any] = json.loads(path.read_text())
    if result.get("timed_out") and result.get("timeout_s", 0) < limit:
        return None
    return result


def keep_result(path: Path, result: dict[str, Any]) -> bool:
    """Write ``result`` to ``path`` when it succeeded or timed out; whether it was kept.

    A failed run (``error`` set, not a timeout) is reported, not kept: the next run tries again.
    """
    if result.get("error") is None or result.get("timed_out"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result))
        return True
    return False


def niced(cmd: list[str]) -> list[str]:
    """``cmd`` under ``nice -n 19`` (a peer's runs yield the machine to everything else)."""
    return ["nice", "-n", "19", *cmd]


@dataclass(frozen=True)
class ChildRun:
    """How a child run ended: exit code (None when stopped at the limit), seconds, output."""

    returncode: int | None
    wall_seconds: float
    cpu_seconds: float
    stderr: str = ""

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_niced(
    cmd: list[str],
    timeout: float,
    *,
    cwd: Path | None = None,
    stdout: Path | None = None,
) -> ChildRun:
    """Run ``cmd`` under ``nice -n 19``, stopped after ``timeout`` seconds.

    Its standard output goes to the file ``stdout`` (else is dropped), its standard error is
    returned (the last 2,000 characters). CPU seconds are the user + system time of the
    children this process waited for meanwhile (``RUSAGE_CHILDREN``): the run's alone as long
    as the benchmark runs one child at a time, as these benchmarks do.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    out = stdout.open("wb") if stdout is not None else subprocess.DEVNULL
    try:
        done = subprocess.run(
            niced(cmd), cwd=cwd, stdout=out, stderr=subprocess.PIPE, timeout=timeout, check=False
        )
        code: int | None = done.returncode
        err = done.stderr.decode(errors="replace")[-2000:]
    except subprocess.TimeoutExpired:
        code, err = None, f"stopped after {timeout:g} s"
    finally:
        if stdout is not None:
            out.close()  # type: ignore[union-attr]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ChildRun(code, time.perf_counter() - began, cpu, err)
