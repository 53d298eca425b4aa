"""Hostile files against every command that reads them: the contract holds for each run.

For every format the command reads and every command reading it, Hypothesis picks a mutator and
a seed (derandomised under the ``ci`` profile); the mutant is written and the real ``optsched``
command runs in a subprocess under a timeout and an address-space limit. The run must exit 0, 2
(naming a field) or 3, print exactly one JSON object with ``--json``, and show no traceback, no
hang and no memory blow-up. Each failure message holds the command line and the mutation, so it
replays by hand; ``scripts/fuzz.py`` runs the same engine for longer.

``OPTSCHED_FUZZ_EXAMPLES`` sets the examples per (format, command) pair (default 2).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from fuzz_engine import (
    MUTATORS,
    TARGETS,
    check_contract,
    command_name,
    fill,
    mutate,
    run_optsched,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("OPTSCHED_FUZZ_EXAMPLES", "2"))

PAIRS = [(fmt, template) for fmt, templates in TARGETS.items() for template in templates]


def _report(fmt: str, args: list[str], what: str, outcome: object, stderr: str) -> str:
    return (
        f"{fmt} mutant ({what}) broke the contract: {outcome}\n"
        f"  replay: optsched {' '.join(args)}\n  stderr tail: {stderr.strip()[-800:]}"
    )


def test_seed_files_are_valid(seeds: dict[str, Path]) -> None:
    """The unmutated seeds pass every command (so a failure below is the mutation's doing)."""
    for fmt in ("oasis-instance", "placement-instance", "tensorlights-instance"):
        with tempfile.TemporaryDirectory() as out:
            run = run_optsched(fill(["validate", "{f}", "--json"], seeds, seeds[fmt], Path(out)))
        assert run.returncode == 0, run.stderr
    for fmt, template in (
        ("oasis-schedule", ["validate", "{oasis-instance}", "{f}", "--json"]),
        ("placement", ["validate", "{placement-instance}", "{f}", "--json"]),
        ("dnn-profile", ["profile", "{f}", "--json"]),
        ("oasis-prices", ["oasis", "online", "{oasis-instance}", "--prices", "{f}", "--json"]),
    ):
        with tempfile.TemporaryDirectory() as out:
            run = run_optsched(fill(template, seeds, seeds[fmt], Path(out)))
        assert run.returncode == 0, f"{fmt}: {run.stderr}"


@pytest.mark.parametrize(
    ("fmt", "template"), PAIRS, ids=[f"{f}:{command_name(t)}" for f, t in PAIRS]
)
@settings(
    max_examples=EXAMPLES,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutator=st.sampled_from(sorted(MUTATORS)), seed=st.integers(0, 2**32 - 1))
def test_mutant_keeps_the_contract(
    seeds: dict[str, Path], fmt: str, template: list[str], mutator: str, seed: int
) -> None:
    source = seeds[fmt]
    data, what = mutate(source, mutator, seed)
    with tempfile.TemporaryDirectory() as d:
        mutant = Path(d) / source.name
        mutant.write_bytes(data)
        args = fill(template, seeds, mutant, Path(d))
        run = run_optsched(args, cwd=Path(d))
    outcome = check_contract(run)
    assert outcome.ok, _report(fmt, args, f"{mutator} seed {seed}: {what}", outcome, run.stderr)
