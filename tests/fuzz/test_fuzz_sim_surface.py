"""The simulator's fuzz surface: its seeds are valid and its mutants are what they say.

``make fuzz`` mutates traces of every format, world files, throughput tables and run stores
(``SIM_TARGETS`` of the engine); here the seeds are checked valid (so that a campaign's refusals
are the mutations' doing) and the cell-wise mutators deterministic and effective.
"""

from __future__ import annotations

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
