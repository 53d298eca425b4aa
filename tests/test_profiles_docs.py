"""The profile guide's table and example agree with the files they describe."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from optsched._validation import parse
from optsched.profiles import Profile, available_profiles, load_profile

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "profiles.rst"


def _table_rows() -> dict[str, list[str]]:
    text = GUIDE.read_text(encoding="utf-8")
    rows: dict[str, list[str]] = {}
    for block in re.split(r"\n   \* - ", text)[1:]:
        cells = [c.strip().split("\n")[0] for c in re.split(r"\n     - ", block)]
        name = re.fullmatch(r"``(\w+)``", cells[0])
        if name and len(cells) == 8 and name.group(1) in available_profiles():
            rows[name.group(1)] = cells[1:]
    return rows


def test_every_shipped_profile_has_a_row():
    assert set(_table_rows()) == set(available_profiles())


@pytest.mark.parametrize("name", available_profiles())
def test_row_matches_the_file(name):
    model, params, tensors, layers, graph, batch, times = _table_rows()[name]
    p = load_profile(name)
    s = p.summary()
    assert model == p.display_name
    assert params == f"{p.total_params:,}"
    assert int(tensors) == s["n_tensors"]
    assert int(layers) == s["n_layers"]
    assert graph == ("chain" if p.is_chain else "DAG")
    assert int(batch) == p.compute.batch_size
    assert times == f"{s['forward_ms']:.1f} / {s['backward_ms']:.1f}"


def test_the_hand_written_example_loads():
    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"\.\. code-block:: toml\n\n((?:   .*\n|\n)+)", text)
    example = next(b for b in blocks if 'name = "mlp"' in b)
    data = tomllib.loads("\n".join(line[3:] for line in example.splitlines()))
    p = parse(Profile, data)
    assert p.total_params == 784 * 512 + 512 + 512 * 10 + 10
    assert p.is_chain
