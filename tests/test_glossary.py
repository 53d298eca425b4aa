"""Every JSON key a representative set of commands prints is defined in the glossary.

The glossary (docs/guide/glossary.rst) is a Sphinx ``.. glossary::``; its terms are read from
the source. The commands run through click's CliRunner on small inputs (a generated OASiS
instance, the Gavel test trace, the ``tiny`` experiment), and every key of their ``--json``
objects, at every depth, must be a term. Maps whose keys are data (a trace's most frequent
values, the gang sizes of a trace) are skipped by name (:data:`DATA_MAPS`). A term may hold one
``{placeholder}`` (``obj_{objective}``, ``{metric}_ci``): it matches a key whose part in its
place is itself a term, so a pattern never defines a word the glossary does not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from optsched.cli import cli

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / "guide" / "glossary.rst"
GAVEL_SMALL = ROOT / "tests" / "data" / "traces" / "gavel" / "physical_cluster_small_test.trace"
TINY = ROOT / "examples" / "experiments" / "tiny.toml"

#: Keys whose values are maps keyed by data, not by names of the library (their own key is a
#: term; their children are not walked): a trace's most frequent values, its jobs per gang
#: size, the unit of every other key (keyed by those keys, each defined under its own name), and
#: the text that named each policy (keyed by the policies' labels).
DATA_MAPS = frozenset({"top", "gpu_demand", "units", "policy_specs"})

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def glossary_terms(text: str) -> set[str]:
    """The terms of every ``.. glossary::`` block (one per term line, literals unquoted)."""
    terms: set[str] = set()
    inside = False
    for line in text.splitlines():
        if line.startswith(".. glossary::"):
            inside = True
            continue
        if inside and line and not line.startswith(" "):
            inside = False
        if not inside or not line.startswith("   ") or line.startswith("    "):
            continue
        if line.strip().startswith(":"):  # a directive option (:sorted:)
            continue
        terms.add(line.strip().replace("``", ""))
    return terms


def defined(key: str, terms: set[str]) -> bool:
    """``key`` is a term, or matches a pattern term whose placeholder part is a term."""
    if key in terms:
        return True
    for term in terms:
        match = _PLACEHOLDER.search(term)
        if match is None:
            continue
        head, tail = term[: match.start()], term[match.end() :]
        if key.startswith(head) and key.endswith(tail) and len(key) > len(head) + len(tail):
            inner = key[len(head) : len(key) - len(tail)]
            if inner in terms:
                return True
    return False


def keys(obj: Any) -> Iterator[tuple[str, str]]:
    """Every (key, where) of a JSON value, at every depth, skipping :data:`DATA_MAPS`."""
    stack: list[tuple[Any, str]] = [(obj, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            for key, child in value.items():
                yield key, where
                if key not in DATA_MAPS:
                    stack.append((child, f"{where}.{key}"))
        elif isinstance(value, list):
            stack.extend((child, f"{where}[]") for child in value)


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output[-2000:])
    out: dict[str, Any] = json.loads(result.stdout)
    return out


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every key the representative commands print -> the first command and place."""
    tmp = tmp_path_factory.mktemp("glossary")
    inst, sched = str(tmp / "inst.json"), str(tmp / "sched.json")
    CliRunner().invoke(
        cli,
        [
            "oasis",
            "generate",
            "--jobs",
            "4",
            "--worker-servers",
            "2",
            "--ps-servers",
            "2",
            "--horizon",
            "5",
            "--seed",
            "1",
            "-o",
            inst,
        ],
        catch_exceptions=False,
    )
    trace, cluster = str(GAVEL_SMALL), "v100=1,p100=1,k80=2"
    commands = [
        ["families"],
        ["solvers"],
        ["limits"],
        ["oasis", "offline", inst, "-o", sched],
        ["validate", inst, sched],
        ["oasis", "check", inst],
        [
            "oasis",
            "ratio",
            "--instances",
            "2",
            "--jobs",
            "4",
            "--worker-servers",
            "2",
            "--ps-servers",
            "2",
            "--horizon",
            "5",
            "--seed",
            "0",
            "-o",
            str(tmp / "ratio"),
        ],
        ["trace", "info", trace],
        ["sim", "run", trace, "--cluster", cluster, "--policy", "fifo"],
        [
            "sim",
            "compare",
            trace,
            "--cluster",
            cluster,
            "--policies",
            "fifo,srtf,ftf,themis",
            "--bound",
        ],
        ["sim", "sweep", str(TINY), "--store", str(tmp / "tiny.sqlite"), "--backend", "serial"],
    ]
    seen: dict[str, str] = {}
    for args in commands:
        for key, where in keys(_json(args)):
            seen.setdefault(key, f"optsched {' '.join(args[:2])}: {where or 'top level'}")
    return seen


def test_the_glossary_parses() -> None:
    terms = glossary_terms(GLOSSARY.read_text(encoding="utf-8"))
    # the words the tables and JSON use most, and those users asked about
    for word in (
        "rho",
        "ftf_rho",
        "proven_bound",
        "dual_bound",
        "in_paper_band",
        "gap",
        "never_completable",
        "status",
        "H, K, T",
    ):
        assert word in terms


def test_every_emitted_key_is_in_the_glossary(emitted: dict[str, str]) -> None:
    terms = glossary_terms(GLOSSARY.read_text(encoding="utf-8"))
    missing = {k: where for k, where in sorted(emitted.items()) if not defined(k, terms)}
    assert not missing, f"{len(missing)} keys printed but not in {GLOSSARY.name}: {missing}"


def test_patterns_match_only_defined_parts() -> None:
    terms = {"obj_{objective}", "makespan", "{metric}_ci", "jct_mean"}
    assert defined("obj_makespan", terms) and defined("jct_mean_ci", terms)
    assert not defined("obj_energy", terms) and not defined("obj_", terms)
    assert not defined("energy_ci", terms)
    text = ".. glossary::\n\n   ``a``\n   b c\n      Both.\n\n   d\n      D.\n\nafter\n   e\n"
    assert glossary_terms(text) == {"a", "b c", "d"}


def test_help_points_to_the_glossary() -> None:
    runner = CliRunner()
    for args in (["--help"], ["sim", "compare", "--help"], ["oasis", "check", "--help"]):
        said = runner.invoke(cli, args, terminal_width=200).output
        assert "optsched docs glossary" in said, args
