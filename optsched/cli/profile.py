"""``optsched profile``: inspect the DNN workload profiles (shipped ones or your own files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from optsched.cli.common import (
    TextTable,
    emit,
    err_console,
    json_option,
    output_option,
    print_json,
    print_written,
    wide_option,
    with_units,
)
from optsched.cli.json_units import PROFILE_UNITS
from optsched.errors import InvalidInstanceError

__all__ = ["profile_cmd", "profile_report", "register"]


def profile_report(name_or_path: str) -> dict[str, Any]:
    """The JSON report of one profile: its summary, every tensor and every layer.

    Tensors carry ``params``, ``bytes`` and the index of their ``layer``; layers carry their
    resolved ``inputs`` (the previous layer when the file omits them) and their tensor names.
    """
    from optsched.profiles import load_profile

    p = load_profile(name_or_path)
    report = p.summary()
    report["tensors"] = [
        {"name": t.name, "params": t.params, "bytes": int(b), "layer": int(layer)}
        for t, b, layer in zip(p.tensors, p.tensor_bytes, p.tensor_layer, strict=True)
    ]
    report["layers"] = [
        {
            "name": layer.name,
            "forward_ms": layer.forward_ms,
            "backward_ms": layer.backward_ms,
            "flops": layer.flops,
            "inputs": list(p.layer_inputs(i)),
            "tensors": [t.name for t in layer.tensors],
        }
        for i, layer in enumerate(p.layers)
    ]
    return report


def _list_report() -> dict[str, Any]:
    from optsched.profiles import available_profiles, load_profile

    rows = []
    for name in available_profiles():
        s = load_profile(name).summary()
        rows.append(
            {
                k: s[k]
                for k in (
                    "name",
                    "display_name",
                    "total_params",
                    "n_tensors",
                    "n_layers",
                    "is_chain",
                    "forward_ms",
                    "backward_ms",
                )
            }
        )
    return {"profiles": rows}


def _print_list(rows: list[dict[str, Any]]) -> None:
    table = TextTable(
        "shipped profiles (optsched profile NAME for details)",
        box="simple",
        notes=["fwd / bwd ms: forward / backward compute time of one iteration (ms)"],
    )
    for col in ("name", "parameters", "tensors", "layers", "graph", "fwd ms", "bwd ms"):
        table.add_column(col, justify="left" if col in {"name", "graph"} else "right")
    for r in rows:
        table.add_row(
            r["name"],
            f"{r['total_params']:,}",
            str(r["n_tensors"]),
            str(r["n_layers"]),
            "chain" if r["is_chain"] else "DAG",
            f"{r['forward_ms']:.2f}",
            f"{r['backward_ms']:.2f}",
        )
    emit(table)


def _print_profile(report: dict[str, Any], show_layers: bool) -> None:
    c = report["compute"]
    summary = TextTable(f"{report['display_name']} ({report['name']})", show_header=False)
    summary.add_column(justify="left")
    summary.add_column(justify="left", wrap=True)
    largest = report["largest_tensor"]
    flops = report["flops"]
    for key, value in (
        ("source", report["source"]),
        (
            "parameters",
            f"{report['total_params']:,} ({report['total_bytes'] / 1e6:.1f} MB "
            f"at {report['dtype_bytes']} B each)",
        ),
        ("tensors / layers", f"{report['n_tensors']} / {report['n_layers']}"),
        ("largest tensor", f"{largest['name']} ({largest['params']:,})" if largest else "-"),
        ("graph", "chain" if report["is_chain"] else "DAG (layers read several inputs)"),
        ("forward / backward", f"{report['forward_ms']:.3f} / {report['backward_ms']:.3f} ms"),
        ("forward FLOPs", "-" if flops is None else f"{flops:,.0f}"),
        (
            "compute times",
            f"{c['provenance']} on {c['device']}, batch {c['batch_size']}"
            + (f", {c['throughput_tflops']:g} TFLOPS" if c.get("throughput_tflops") else ""),
        ),
    ):
        summary.add_row(key, value)
    emit(summary)
    if show_layers:
        table = TextTable("layers in forward order (times in ms)")
        for col in ("#", "layer", "fwd ms", "bwd ms", "params", "inputs"):
            text = col not in {"#", "fwd ms", "bwd ms", "params"}
            table.add_column(col, justify="left" if text else "right", wrap=text)
        params_of = {t["name"]: t["params"] for t in report["tensors"]}
        for i, layer in enumerate(report["layers"]):
            default = [report["layers"][i - 1]["name"]] if i else []
            table.add_row(
                str(i),
                layer["name"],
                f"{layer['forward_ms']:.4f}",
                f"{layer['backward_ms']:.4f}",
                f"{sum(params_of[t] for t in layer['tensors']):,}",
                "" if layer["inputs"] == default else ", ".join(layer["inputs"]),
            )
        emit(table)


@click.command("profile")
@click.argument("model", metavar="MODEL_OR_FILE", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the shipped profiles.")
@click.option(
    "--layers",
    "show_layers",
    is_flag=True,
    help="Also print the per-layer table, or with --json the tensors and layers.",
)
@output_option((".json",), help="Write the whole report, tensors and layers included")
@json_option
@wide_option
def profile_cmd(
    model: str | None, list_only: bool, show_layers: bool, output: Path | None, as_json: bool
) -> None:
    """Show a DNN workload profile: a shipped MODEL name or a profile FILE (.toml/.json).

    With --json, prints name, display_name, source, total_params, dtype_bytes, total_bytes,
    n_tensors, n_layers, is_chain, largest_tensor, forward_ms, backward_ms, flops and compute
    (provenance, device, throughput_tflops, batch_size, note); --layers adds tensors and
    layers (every tensor and layer: thousands of lines for a large model). -o FILE.json writes
    the whole report, tensors and layers included; --json then prints one line naming the
    file with the headline numbers. A file that fails validation exits 2 with the offending
    field named.
    """
    if list_only:
        report = _list_report()
        if as_json:
            print_json(with_units(report, PROFILE_UNITS))
        else:
            _print_list(report["profiles"])
        return
    if model is None:
        raise InvalidInstanceError("MODEL_OR_FILE", "give a profile name or file, or --list")
    report = profile_report(model)
    summary = {k: v for k, v in report.items() if k not in _PER_LAYER}
    if output is not None:
        from optsched._json import dumps

        output.write_text(dumps(report) + "\n", encoding="utf-8")
        if as_json:
            headline = {k: report[k] for k in _HEADLINE}
            print_written(output, "dnn-profile-report", headline, PROFILE_UNITS)
            return
        err_console.print(f"wrote {output}", highlight=False, markup=False)
    if as_json:
        print_json(with_units(report if show_layers else summary, PROFILE_UNITS))
    else:
        _print_profile(report, show_layers)


#: The figures ``--json -o FILE`` prints on its one line.
_HEADLINE = (
    "name",
    "total_params",
    "total_bytes",
    "n_tensors",
    "n_layers",
    "forward_ms",
    "backward_ms",
    "flops",
)
#: The report's per-tensor and per-layer lists (``--json`` leaves them out unless ``--layers``).
_PER_LAYER = frozenset({"tensors", "layers"})


def register(group: click.Group) -> None:
    """Add ``profile`` to the root command."""
    group.add_command(profile_cmd)
