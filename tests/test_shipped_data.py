"""The data slices shipped in ``tests/data`` are what their SOURCE files say they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched.sim import load_throughputs

DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def test_the_alone_table_loads_with_every_gpu_type() -> None:
    table = load_throughputs(DATA / "gavel" / "simulation_throughputs_alone.json")
    assert set(table.gpu_types) == {"k80", "p100", "v100"}
    assert table.rate("ResNet-50 (batch size 64)", 1, "v100") > table.rate(
        "ResNet-50 (batch size 64)", 1, "k80"
    )


@pytest.mark.skipif(
    not (SHARED / "gavel" / "simulation_throughputs.json").is_file(),
    reason="the shared data (../shared/data/gavel) is not present",
)
def test_the_alone_table_is_the_originals_null_entries() -> None:
    original = json.loads((SHARED / "gavel" / "simulation_throughputs.json").read_text())
    shipped = json.loads((DATA / "gavel" / "simulation_throughputs_alone.json").read_text())
    expected = {
        gpu: {key: {"null": entry["null"]} for key, entry in table.items()}
        for gpu, table in original.items()
    }
    assert shipped == expected
