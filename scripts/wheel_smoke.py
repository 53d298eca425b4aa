"""Build the wheel, install it in a throwaway virtual environment, and use it from outside the tree.

``make test`` runs this after the test suite, which imports the editable install: a module left
out of the wheel, a data file not declared as package data or an import of something outside
``optsched/`` passes there and fails for every user of the wheel. This script

1. builds the wheel from a copy of the source (``pip wheel --no-deps --no-build-isolation``:
   no network, nothing written into the working tree);
2. checks that the wheel holds every module and data file under ``optsched/``;
3. creates a virtual environment without optsched, installs the wheel there with ``--no-deps``,
   and gives it the dependencies already installed in the running environment through a
   ``.pth`` file naming that environment's ``site-packages`` directory (a directory named in a
   ``.pth`` file is appended to ``sys.path`` without its own ``.pth`` files being run, so the
   editable install's import hook there never loads: ``import optsched`` finds the wheel);
4. from a fresh directory outside the source tree, runs ``optsched families --json``,
   ``optsched demo``, and this script again inside that environment (``--inside``), which
   solves and validates every registered family's small instance;
5. checks what a user of the wheel alone needs beyond the package: the documentation sources
   and the examples shipped in ``optsched/_docs/`` (every file of the repository's ``docs/``
   and ``examples/`` that ``optsched/_docs_manifest.py`` names), ``optsched examples`` writing
   them out, the README's ``--plugin examples/my_policy.py`` from there, and
   ``optsched docs glossary --print-path --no-build`` naming the installed page (with
   ``--build-docs``, also the whole HTML build into a scratch cache: minutes).

Usage: ``python scripts/wheel_smoke.py [--keep] [--build-docs]`` (``--keep`` leaves the
temporary directory).
Exits non-zero, saying what failed, on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the build reads besides the package itself (setup.py copies the docs and examples).
BUILD_FILES = ("pyproject.toml", "README.md", "LICENSE", "setup.py", "MANIFEST.in")
#: What of the repository ships in ``optsched/_docs/`` (TREES, FILES, EXCLUDED, SHIPPED_DIR).
MANIFEST = runpy.run_path(str(ROOT / "optsched" / "_docs_manifest.py"))
#: Files under optsched/ that are build products, not sources: the wheel need not carry them.
NOT_SHIPPED_SUFFIXES = (".pyc", ".pyo", ".nbi", ".nbc")


def _fail(message: str) -> None:
    print(f"wheel smoke: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def _run(args: list[str], *, cwd: Path, env: dict[str, str], what: str) -> str:
    started = time.perf_counter()
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        _fail(
            f"{what} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n"
            f"--- stderr\n{done.stderr[-4000:]}"
        )
    print(f"wheel smoke: {what}: ok ({seconds:.1f} s)", file=sys.stderr)
    return done.stdout


def shipped_files(source: Path) -> set[str]:
    """Paths (relative to ``source``'s parent, ``/``-separated) the wheel must contain.

    Every file under ``source`` but caches: modules, and data files, which ship only when
    declared as package data in ``pyproject.toml``.
    """
    out = set()
    for path in source.rglob("*"):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        if path.suffix not in NOT_SHIPPED_SUFFIXES:
            out.add(path.relative_to(source.parent).as_posix())
    return out


def check_contents(wheel: Path, source: Path) -> None:
    """Fail unless the wheel holds every module, package and data file under ``source``."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    missing = sorted(shipped_files(source) - names)
    if missing:
        _fail(f"{wheel.name} lacks {len(missing)} files of the source tree: {missing[:20]}")
    packages = {
        p.relative_to(source.parent).as_posix()
        for p in source.rglob("*")
        if p.is_dir() and "__pycache__" not in p.parts and any(p.glob("*.py"))
    }
    for package in sorted(packages):
        if f"{package}/__init__.py" not in names:
            _fail(f"{wheel.name} lacks the package {package.replace('/', '.')}")
    print(f"wheel smoke: {wheel.name} holds all {len(packages)} packages", file=sys.stderr)


def shipped_docs_files(root: Path) -> set[str]:
    """Wheel paths of every docs and examples file the manifest ships (under optsched/_docs)."""
    out = set()
    excluded = set(MANIFEST["EXCLUDED"])
    for tree in MANIFEST["TREES"]:
        for path in (root / tree).rglob("*"):
            rel = path.relative_to(root)
            if path.is_file() and not excluded & set(rel.parts):
                out.add(rel.as_posix())
    out.update(MANIFEST["FILES"])
    return {f"optsched/{MANIFEST['SHIPPED_DIR']}/{name}" for name in out}


def check_docs_contents(wheel: Path, root: Path) -> None:
    """Fail unless the wheel holds the docs sources and examples the manifest names."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    wanted = shipped_docs_files(root)
    missing = sorted(wanted - names)
    if missing:
        _fail(f"{wheel.name} lacks {len(missing)} docs/examples files: {missing[:20]}")
    print(f"wheel smoke: {wheel.name} holds the {len(wanted)} docs and examples files",
          file=sys.stderr)  # fmt: skip


def copy_build_tree(src: Path) -> None:
    """The files a wheel build reads into ``src``: package, build files, docs and examples."""
    src.mkdir()
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "optsched", src / "optsched", ignore=shutil.ignore_patterns("__pycache__")
    )
    ignore = shutil.ignore_patterns(*MANIFEST["EXCLUDED"])
    for tree in MANIFEST["TREES"]:
        shutil.copytree(ROOT / tree, src / tree, ignore=ignore)
    for name in MANIFEST["FILES"]:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)


def build_wheel(work: Path, env: dict[str, str]) -> Path:
    """Build the wheel from a copy of the source tree (the tree itself is left untouched)."""
    src = work / "src"
    copy_build_tree(src)
    dist = work / "dist"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(src),
        ],
        cwd=work,
        env=env,
        what="pip wheel",
    )
    wheels = sorted(dist.glob("optsched-*.whl"))
    if len(wheels) != 1:
        _fail(f"expected one optsched wheel in {dist}, found {[w.name for w in wheels]}")
    return wheels[0]


def make_venv(work: Path, wheel: Path, env: dict[str, str]) -> Path:
    """A virtual environment holding the wheel, seeing the running one's dependencies."""
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=work, env=env,
         what="venv")  # fmt: skip
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "_optsched_smoke_deps.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        cwd=work,
        env=env,
        what="pip install (the wheel, no dependencies)",
    )
    return venv


def inside() -> None:
    """In the wheel's environment: import from it, solve and validate every family."""
    import optsched
    from optsched.family import FAMILIES

    here = Path(optsched.__file__).resolve()
    if Path(sys.prefix).resolve() not in here.parents:
        # E.g. from the source tree, or through an editable install's import hook.
        _fail(f"optsched was imported from {here}, not from the wheel installed in {sys.prefix}")
    for name in FAMILIES:
        family = FAMILIES[name]
        instance = family.small_instance()
        path = Path.cwd() / f"{name}.json"
        instance.save(path)
        if family.Instance.load(path) != instance:  # type: ignore[attr-defined]
            _fail(f"{name}: the instance does not survive save/load")
        result = family.solve(instance)
        report = family.validate(instance, result.solution)
        if not (result.optimal and report.ok):
            _fail(f"{name}: status {result.status}, violations {report.violations}")
        print(f"  {name:<13} {result.objective_name} = {result.objective:.6g}", file=sys.stderr)
    print(f"{len(FAMILIES)} families solved and validated with {here.parent}")


def check_docs_and_examples(
    venv: Path, run: Path, env: dict[str, str], *, build_docs: bool
) -> None:
    """What a wheel-only user runs: examples written out, the README's plug-in, the docs."""
    optsched_cmd = str(venv / "bin" / "optsched")
    _run([optsched_cmd, "examples"], cwd=run, env=env, what="optsched examples")
    plugin = run / "examples" / "my_policy.py"
    if plugin.read_bytes() != (ROOT / "examples" / "my_policy.py").read_bytes():
        _fail(f"optsched examples wrote {plugin} unlike the repository's examples/my_policy.py")
    shipped = shipped_docs_files(ROOT)
    written = {p.relative_to(run).as_posix() for p in (run / "examples").rglob("*") if p.is_file()}
    expected = {name.split("/", 2)[2] for name in shipped if name.split("/", 3)[2] == "examples"}
    if written != expected:
        _fail(f"optsched examples wrote {sorted(written ^ expected)[:10]} unlike examples/")
    python = str(venv / "bin" / "python")
    trace = subprocess.run(
        [python, "-c", "import optsched.sim, pathlib; print(pathlib.Path(optsched.sim.__file__)"
         ".parent / 'data' / 'gavel_small_test_head8.trace')"],
        cwd=run, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    out = _run(
        [optsched_cmd, "sim", "compare", trace, "--cluster", "v100=2,p100=2,k80=2",
         "--policies", "fifo,fewest-gpus", "--plugin", "examples/my_policy.py", "--json"],
        cwd=run, env=env, what="optsched sim compare --plugin examples/my_policy.py",
    )  # fmt: skip
    rows = json.loads(out)["policies"]
    if [r["policy"] for r in rows] != ["fifo", "fewest-gpus"] or not all(r["valid"] for r in rows):
        _fail(f"the plug-in comparison gave {rows}")
    env = {**env, "OPTSCHED_CACHE_DIR": str(run / "cache")}
    args = [optsched_cmd, "docs", "glossary", "--print-path", "--no-build"]
    page = Path(_run(args, cwd=run, env=env, what=" ".join(args[1:])).strip())
    if not (page.is_file() and page.resolve().is_relative_to(venv.resolve())):
        _fail(f"optsched docs named {page}, not the page installed in {venv}")
    if build_docs:
        args = [optsched_cmd, "docs", "glossary", "--no-open"]
        built = Path(_run(args, cwd=run, env=env, what="optsched docs (the whole build)").strip())
        if not (built.suffix == ".html" and built.is_file()):
            _fail(f"the docs build gave {built}, not the glossary's HTML page")
        if "never_completable" not in built.read_text(encoding="utf-8"):
            _fail(f"{built} is not the glossary")


def main() -> None:
    """Build, check, install and run the wheel (or, with ``--inside``, the registry walk)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--build-docs", action="store_true", help="also build the HTML docs from the wheel"
    )
    args = parser.parse_args()
    if args.inside:
        inside()
        return
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_NO_INPUT"] = "1"
    work = Path(tempfile.mkdtemp(prefix="optsched-wheel-"))
    try:
        wheel = build_wheel(work, env)
        check_contents(wheel, ROOT / "optsched")
        check_docs_contents(wheel, ROOT)
        venv = make_venv(work, wheel, env)
        run = work / "run"  # outside the source tree: nothing there to import optsched from
        run.mkdir()
        optsched_cmd = str(venv / "bin" / "optsched")
        listing = json.loads(
            _run([optsched_cmd, "families", "--json"], cwd=run, env=env, what="optsched families")
        )
        if not listing.get("families"):
            _fail("optsched families --json listed no family")
        _run([optsched_cmd, "demo"], cwd=run, env=env, what="optsched demo")
        said = _run(
            [str(venv / "bin" / "python"), str(Path(__file__).resolve()), "--inside"],
            cwd=run,
            env=env,
            what="every family's small solve and validate",
        )
        print(f"wheel smoke: {said.strip()}", file=sys.stderr)
        check_docs_and_examples(venv, run, env, build_docs=args.build_docs)
    finally:
        if args.keep:
            print(f"wheel smoke: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wheel smoke: passed in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
