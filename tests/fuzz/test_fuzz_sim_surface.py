"""The simulator's fuzz surface: its seeds are valid and its mutants are what they say.

``make fuzz`` mutates traces of every format, world files, throughput tables and run stores
(``SIM_TARGETS`` of the engine); here the seeds are checked valid (so that a campaign's refusals
are the mutations' doing) and the cell-wise mutators deterministic and effective. The campaign's
finds on this surface are kept as regression cases.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from fuzz_engine import (
    MUTATORS,
    SIM_SEED_FILES,
    SIM_TARGETS,
    check_contract,
    fill,
    make_sim_seeds,
    mutate_any,
    rewrite_store,
    run_optsched,
)


@pytest.fixture(scope="module")
def sim_seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_sim_seeds(tmp_path_factory.mktemp("sim-seeds"))


def test_every_sim_seed_passes_its_first_command(sim_seeds: dict[str, Path]) -> None:
    assert set(sim_seeds) == set(SIM_SEED_FILES)
    for fmt, templates in SIM_TARGETS.items():
        with tempfile.TemporaryDirectory() as out:
            run = run_optsched(fill(templates[0], sim_seeds, sim_seeds[fmt], Path(out)))
        assert run.returncode == 0, f"{fmt}: {run.stderr}"
        assert check_contract(run).ok


@pytest.mark.parametrize("mutator", sorted(MUTATORS))
@pytest.mark.parametrize("fmt", ["trace-elasticflow", "trace-gavel", "run-store"])
def test_mutants_are_deterministic_and_differ_from_the_seed(
    sim_seeds: dict[str, Path], fmt: str, mutator: str
) -> None:
    seed = sim_seeds[fmt]
    first, what = mutate_any(seed, mutator, 7)
    again, _ = mutate_any(seed, mutator, 7)
    assert first == again and what
    assert first != seed.read_bytes(), f"{mutator} left {fmt} unchanged ({what})"


@pytest.mark.parametrize("seed", [1675664755, 4061748931])
def test_a_store_config_nested_too_deep_keeps_the_contract(
    sim_seeds: dict[str, Path], seed: int
) -> None:
    """Two breaches of the campaign of seed 1130: ``sim report`` on an experiment store whose
    config was rewritten to nest 1,000 and 100,000 deep stopped with an internal RecursionError
    (exit 1); it is refused now, exit 2, naming ``config``."""
    with tempfile.TemporaryDirectory() as d:
        store = Path(d) / "s.sqlite"
        shutil.copyfile(sim_seeds["experiment-store"], store)
        what = rewrite_store(store, "deep-nesting", seed)
        assert what.startswith("config:"), what
        template = ["sim", "report", "{store}", "-o", "{out}/report", "--json"]
        run = run_optsched(fill(template, {**sim_seeds, "store": store}, None, Path(d)), cwd=d)
    outcome = check_contract(run)
    assert outcome.ok, (outcome, run.stderr[-400:])
    assert run.returncode == 2, (run.returncode, run.stderr[-400:])
    assert isinstance(outcome.payload, dict)
    assert str(outcome.payload.get("field", "")).startswith("config"), outcome.payload
