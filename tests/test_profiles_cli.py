"""``optsched profile``: the result on stdout (JSON or tables), exit 2 naming the field."""

from __future__ import annotations

import json
import tomllib
from importlib import resources

import pytest
import tomli_w

from optsched.cli import main


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_resnet50_json(capsys):
    code, out, _ = _run(capsys, "profile", "resnet50", "--json", "--layers")
    assert code == 0
    report = json.loads(out)
    assert report["total_params"] == 25_557_032
    assert report["n_tensors"] == len(report["tensors"]) == 161
    assert report["n_layers"] == len(report["layers"]) == 107
    assert report["total_bytes"] == 4 * 25_557_032
    assert report["is_chain"] is False
    assert report["compute"]["provenance"] == "estimated"
    assert sum(t["params"] for t in report["tensors"]) == 25_557_032
    assert sum(t["bytes"] for t in report["tensors"]) == report["total_bytes"]
    layers = report["layers"]
    # every tensor points at the layer that lists it; inputs are resolved
    for t in report["tensors"]:
        assert t["name"] in layers[t["layer"]]["tensors"]
    assert layers[1]["inputs"] == ["conv1"]
    assert layers[0]["inputs"] == []


def test_vgg16_is_a_chain(capsys):
    code, out, _ = _run(capsys, "profile", "--json", "VGG-16")
    assert code == 0
    report = json.loads(out)
    assert report["is_chain"] is True
    assert report["total_params"] == 138_357_544


def test_list(capsys):
    code, out, _ = _run(capsys, "profile", "--list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["profiles"]}
    assert rows["gpt2_small"]["total_params"] == 124_439_808
    assert rows["bert_base"]["total_params"] == 109_482_240
    code, out, err = _run(capsys, "profile", "--list")
    assert code == 0 and err == ""
    assert "inception_v3" in out


def test_human_output_goes_to_stdout(capsys):
    code, out, err = _run(capsys, "profile", "alexnet", "--layers")
    assert code == 0
    assert err == ""
    assert "61,100,840" in out
    assert "classifier.6" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_json_is_a_summary_unless_layers_or_a_file(capsys, tmp_path):
    # --json alone: the figures, not one entry per tensor and layer (thousands of lines)
    code, out, _ = _run(capsys, "profile", "resnet50", "--json")
    summary = json.loads(out)
    assert code == 0 and "tensors" not in summary and "layers" not in summary
    assert summary["total_params"] == 25_557_032 and summary["n_layers"] == 107
    code, out, _ = _run(capsys, "profile", "resnet50", "--json", "--layers")
    full = json.loads(out)
    # each document's units map names the fields it holds: the full one's covers the summary's
    rest = ("tensors", "layers", "units")
    assert {k: v for k, v in full.items() if k not in rest} == {
        k: v for k, v in summary.items() if k != "units"
    }
    assert summary["units"].items() <= full["units"].items()
    # -o: the whole report in the file, one line naming it on stdout
    path = tmp_path / "resnet50.json"
    code, out, _ = _run(capsys, "profile", "resnet50", "--json", "-o", str(path))
    assert code == 0 and len(out.strip().splitlines()) == 1
    line = json.loads(out)
    assert line["output"] == str(path) and line["total_params"] == 25_557_032
    # the file is the report itself; the units map is part of what is printed
    assert json.loads(path.read_text()) == {k: v for k, v in full.items() if k != "units"}
    assert line["units"]["total_params"] == "parameters"


def test_user_file_by_path(capsys, tmp_path):
    data = {
        "name": "tiny",
        "display_name": "Tiny",
        "source": "two layers",
        "total_params": 30,
        "compute": {"provenance": "measured", "device": "laptop", "batch_size": 4},
        "layers": [
            {"name": "a", "forward_ms": 1.0, "backward_ms": 2.0, "tensors": [
                {"name": "a.weight", "params": 20}]},
            {"name": "b", "forward_ms": 0.5, "backward_ms": 1.0, "inputs": [],
             "tensors": [{"name": "b.weight", "params": 10}]},
            {"name": "c", "forward_ms": 0.5, "backward_ms": 1.0, "inputs": ["a", "b"]},
        ],
    }  # fmt: skip
    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(data))
    code, out, _ = _run(capsys, "profile", str(path), "--json", "--layers")
    assert code == 0
    report = json.loads(out)
    assert report["total_params"] == 30
    assert report["is_chain"] is False
    assert report["forward_ms"] == pytest.approx(2.0)
    assert report["flops"] is None
    assert report["layers"][2]["inputs"] == ["a", "b"]


def test_bad_file_exits_2_naming_the_field(capsys, tmp_path):
    text = (resources.files("optsched.models") / "resnet50.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    data["layers"][3]["forward_ms"] = -1
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(data))
    code, out, err = _run(capsys, "profile", str(path), "--json")
    assert code == 2
    payload = json.loads(out)
    assert payload["field"] == "layers[3].forward_ms"
    # The message names the file first (the profile loader now attaches it), then the field.
    assert payload["message"].startswith(f"{path}: layers[3].forward_ms: must be >= 0")
    assert payload["file"] == str(path)
    code, out, err = _run(capsys, "profile", str(path))
    assert code == 2
    assert out == ""
    assert "layers[3].forward_ms" in err


def test_unknown_model_and_missing_argument_exit_2(capsys):
    code, out, _ = _run(capsys, "profile", "resnet51", "--json")
    assert code == 2
    assert json.loads(out)["field"] == "model"
    code, _, err = _run(capsys, "profile")
    assert code == 2
    assert "MODEL_OR_FILE" in err


def test_schema_command_lists_the_profile_format(capsys):
    code, out, _ = _run(capsys, "schema", "dnn-profile")
    assert code == 0
    assert "layers" in json.loads(out)["properties"]
