"""``optsched docs`` and ``optsched examples``, and a plug-in found beside its experiment file.

The documentation build runs Sphinx on a small site written by the test (the real site takes
minutes: ``make docs`` and the wheel smoke cover it); it is skipped, saying why, where Sphinx or
the theme is not installed. No test opens a browser (``--print-path``, ``--no-open``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import optsched.docs as docs
from optsched.cli import cli, main
from optsched.errors import InvalidInstanceError

ROOT = Path(__file__).resolve().parents[1]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def test_examples_writes_the_repository_examples(tmp_path: Path) -> None:
    dest = tmp_path / "ex"
    code, out = _invoke("examples", str(dest), "--json")
    assert code == 0
    written = {Path(p).relative_to(dest).as_posix() for p in json.loads(out)["written"]}
    source = ROOT / "examples"
    expected = {
        p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.is_file() and not {"__pycache__", "runs"} & set(p.relative_to(source).parts)
    }
    assert "my_policy.py" in written and "experiments/tiny.toml" in written
    assert written == expected
    for name in written:
        assert (dest / name).read_bytes() == (source / name).read_bytes()
    # again: nothing differs, nothing is written
    code, out = _invoke("examples", str(dest), "--json")
    assert code == 0 and json.loads(out)["written"] == []


def test_examples_never_overwrites_edits_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "ex"
    assert main(["examples", str(dest)]) == 0
    edited = dest / "my_policy.py"
    edited.write_text("# mine\n")
    capsys.readouterr()
    assert main(["examples", str(dest), "--json"]) == 2
    said = json.loads(capsys.readouterr().out)
    assert said["field"] == "dest" and "--force" in said["message"]
    assert edited.read_text() == "# mine\n"
    assert main(["examples", str(dest), "--force"]) == 0
    assert edited.read_bytes() == (ROOT / "examples" / "my_policy.py").read_bytes()


def test_the_shipped_example_plugin_runs_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "ex"
    assert main(["examples", str(dest)]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    trace = ROOT / "tests" / "data" / "traces" / "gavel" / "physical_cluster_small_test.trace"
    try:
        code, out = _invoke(
            "sim",
            "compare",
            str(trace),
            "--cluster",
            "v100=2,k80=2",
            "--policies",
            "fifo,fewest-gpus",
            "--plugin",
            str(dest / "my_policy.py"),
            "--json",
        )
    finally:
        # a plug-in registers for the process: forgotten, so "all" elsewhere stays the built-ins
        _forget("fewest-gpus", "my_policy")
    assert code == 0
    rows = json.loads(out)["policies"]
    assert [r["policy"] for r in rows] == ["fifo", "fewest-gpus"]
    assert all(r["valid"] for r in rows)


def test_pages_resolve_by_path_or_last_part() -> None:
    assert docs.page_source("glossary") == ROOT / "docs" / "guide" / "glossary.rst"
    assert docs.page_source("api/sim") == ROOT / "docs" / "api" / "sim.rst"
    assert docs.page_source("guide/simulator.html").name == "simulator.rst"
    with pytest.raises(InvalidInstanceError) as info:
        docs.page_source("no-such-page")
    assert info.value.field == "page"


def test_unknown_page_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "nope", "--print-path", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "page"


def test_without_sphinx_the_source_path_and_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPTSCHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(docs, "missing_build_modules", lambda: ["sphinx"])
    assert main(["docs", "glossary", "--print-path"]) == 0
    out, err = capsys.readouterr()
    assert Path(out.strip()) == ROOT / "docs" / "guide" / "glossary.rst"
    assert "optsched[docs]" in err
    assert not any(tmp_path.iterdir())  # nothing built, nothing half-written


def test_no_build_never_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPTSCHED_CACHE_DIR", str(tmp_path))
    assert main(["docs", "glossary", "--no-build", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["built"] is False and said["path"].endswith("glossary.rst")
    assert not any(tmp_path.iterdir())


def _small_site(root: Path) -> Path:
    """A source tree shaped like the shipped one: docs/ (conf, index, one page), examples/."""
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "examples" / "x.py").write_text("print('x')\n")
    (root / "docs" / "conf.py").write_text('project = "small"\nextensions = []\n')
    (root / "docs" / "index.rst").write_text("Small\n=====\n\n.. toctree::\n\n   guide/glossary\n")
    (root / "docs" / "guide" / "glossary.rst").write_text(
        "Glossary\n========\n\n.. glossary::\n\n   rho\n      A ratio.\n"
    )
    return root


def test_build_into_the_cache_then_reuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if "sphinx" in docs.missing_build_modules():
        pytest.skip("Sphinx is not installed (the docs extra: pip install 'optsched[docs]')")
    site = _small_site(tmp_path / "site")
    monkeypatch.setattr(docs, "source_root", lambda: site)
    monkeypatch.setattr(docs, "missing_build_modules", lambda: [])
    monkeypatch.setenv("OPTSCHED_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["docs", "glossary", "--no-open"]) == 0
    page = Path(capsys.readouterr().out.strip())
    assert page == docs.default_html_dir() / "guide" / "glossary.html"
    assert page.is_relative_to(tmp_path / "cache")
    assert "A ratio." in page.read_text()
    stamp = page.stat().st_mtime_ns
    assert main(["docs", "glossary", "--print-path"]) == 0  # built: reused, not rebuilt
    assert Path(capsys.readouterr().out.strip()) == page and page.stat().st_mtime_ns == stamp
    # an edited source is another build (the directory names the sources' digest)
    (site / "docs" / "guide" / "glossary.rst").write_text(
        "Glossary\n========\n\n.. glossary::\n\n   rho\n      Another ratio.\n"
    )
    assert main(["docs", "glossary", "--print-path"]) == 0
    again = Path(capsys.readouterr().out.strip())
    assert again != page and "Another ratio." in again.read_text()
    leftovers = [p.name for p in again.parents[1].iterdir() if p.name.startswith(".build-")]
    assert not leftovers


def test_a_plugin_module_name_resolves_beside_its_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from optsched.runs.experiment import load_experiment

    study = tmp_path / "study"
    study.mkdir()
    # a module name no other test imports (plug-ins stay registered for the process)
    (study / "beside_policy.py").write_text(
        (ROOT / "examples" / "my_policy.py")
        .read_text()
        .replace('"fewest-gpus"', '"fewest-gpus-beside"')
    )
    (study / "s.toml").write_text(
        'name = "s"\ntraces = ["synthetic:4"]\nclusters = ["v100=4"]\n'
        'policies = ["fifo", "fewest-gpus-beside"]\nplugins = ["beside_policy"]\n'
    )
    monkeypatch.chdir(tmp_path)  # neither cwd nor sys.path holds the study's folder
    try:
        loaded = load_experiment(study / "s.toml", allow_plugins=True)
    finally:
        _forget("fewest-gpus-beside", "beside_policy")
    assert loaded.experiment.plugins == ["beside_policy"]


def test_python_m_optsched_docs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPTSCHED_CACHE_DIR", str(tmp_path))
    assert docs.main(["glossary", "--no-build"]) == 0
    out, err = capsys.readouterr()
    assert Path(out.strip()) == ROOT / "docs" / "guide" / "glossary.rst" and "not built" in err
    assert docs.main(["no-such-page", "--print-path"]) == 2
    assert "no page 'no-such-page'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_build_needs_exactly_the_docs_extra() -> None:
    import tomllib
    from importlib import metadata

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["docs"]
    names = [re.split(r"[<>=!~ ]", req, maxsplit=1)[0] for req in extra]
    installed = []
    for name in names:
        try:
            metadata.distribution(name)
            installed.append(name)
        except metadata.PackageNotFoundError:
            pass
    assert sorted(docs.missing_build_modules()) == sorted(set(names) - set(installed))


def _forget(policy: str, module: str) -> None:
    """Unregister a plug-in's policy and drop its module (the registry is the process's)."""
    import sys

    from optsched.sim.policies import policy_names, unregister_policy

    if policy in policy_names():
        unregister_policy(policy)
    sys.modules.pop(module, None)
