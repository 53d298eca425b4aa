"""ElasticFlow scaling profiles: the reader, the concave interpolation, the simulator's table."""

from __future__ import annotations

import csv
import itertools
import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.sim import job_frame

from optsched import limits
from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.sim import (
    ClusterSpec,
    GpuType,
    Grant,
    Policy,
    PolicyDecision,
    SimState,
    World,
    simulate,
    validate,
)
from optsched.sim.world import elasticflow_profiles as pe
from optsched.sim.world.elasticflow_profiles import (
    ScalingCurve,
    load_scaling_profiles,
    profile_job_type,
)
from optsched.sim.world.jobs import job_type_for
from optsched.sim.world.throughputs import GENERIC, Throughputs
from optsched.tolerances import RATIO_TOL, TIME_TOL, within

# Synthetic profiles in ElasticFlow's schema (SOURCE.md beside them): the published ones carry no
# license that lets them be shipped.
A100 = Path(__file__).parent / "data" / "profiles" / "synthetic_a100"
HEADER = "global_batch_size,1,2,4,8,16,32,64\n"


def _a100() -> pe.ScalingProfiles:
    return load_scaling_profiles(A100, gpu_type="a100")


def _csv(tmp_path: Path, text: str, name: str = "m.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- reader ---------------------------------------------------------------------------------------


def test_reader_matches_the_csv_module_on_every_shipped_file() -> None:
    profiles = _a100()
    assert profiles.models == (
        "bert",
        "deepspeech2",
        "gpt2",
        "inception3",
        "resnet50",
        "resnet50_cifar10",
        "vgg16",
    )
    checked = 0
    for path in sorted(A100.glob("*.csv")):
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
        counts = [int(c) for c in rows[0][1:]]
        for row in rows[1:]:
            curve = profiles.curves[(path.stem, int(row[0]))]
            # empty and zero fields are counts not run: left out, the rest read exactly
            expected = [
                (c, float(v)) for c, v in zip(counts, row[1:], strict=True) if v and float(v)
            ]
            assert list(zip(curve.counts, curve.rates, strict=True)) == expected
            checked += 1
    assert checked == len(profiles.curves) == 17


def test_zero_and_empty_fields_are_counts_not_run() -> None:
    curves = _a100().curves
    assert curves[("resnet50_cifar10", 64)].counts == (1, 2, 4, 8)
    assert curves[("deepspeech2", 32)].counts == (1, 2, 4, 8, 16, 32)
    assert curves[("deepspeech2", 64)].counts == (1, 2, 4, 8, 16, 32, 64)


@pytest.mark.parametrize(
    ("text", "row", "column", "match"),
    [
        ("batch,1,2\n64,1,2\n", 1, "batch", "global_batch_size"),
        ("global_batch_size,1,1\n64,1,2\n", 1, "header '1'", "twice"),
        ("global_batch_size,2,1\n64,1,2\n", 1, "header '1'", "increasing"),
        ("global_batch_size,1,0\n64,1,2\n", 1, "header '0'", ">= 1"),
        ("global_batch_size,1,1e7\n64,1,2\n", 1, "header '1e7'", "<="),
        ("global_batch_size,1,x\n64,1,2\n", 1, "header 'x'", "whole number"),
        ("global_batch_size,1,2\n64,1,-2\n", 2, "2", ">= 0"),
        ("global_batch_size,1,2\n64,nan,2\n", 2, "1", "finite"),
        ("global_batch_size,1,2\n64,1,inf\n", 2, "2", "finite"),
        ("global_batch_size,1,2\n64,1,2e12\n", 2, "2", "<="),
        ("global_batch_size,1,2\n64,1,fast\n", 2, "2", "not a number"),
        ("global_batch_size,1,2\n64,1,2\n128,1\n", 3, "2", "missing"),
        ("global_batch_size,1,2\n64,1,2,3\n", 2, "<row>", "fields"),
        ("global_batch_size,1,2\n64,1,2\n64,2,3\n", 3, "global_batch_size", "twice"),
        ("global_batch_size,1,2\n64.5,1,2\n", 2, "global_batch_size", "whole number"),
        ("global_batch_size,1,2\n64,0,0\n", 2, "<row>", "no positive rate"),
    ],
)
def test_errors_name_file_row_and_column(
    tmp_path: Path, text: str, row: int, column: str, match: str
) -> None:
    path = _csv(tmp_path, text)
    with pytest.raises(InvalidInstanceError, match=match) as err:
        load_scaling_profiles(path, gpu_type="a100")
    assert (err.value.file, err.value.row, err.value.field) == (str(path), row, column)


def test_empty_and_header_only_files_are_refused(tmp_path: Path) -> None:
    for text, match in (("", "empty"), (HEADER, "no batch-size row")):
        path = _csv(tmp_path, text)
        with pytest.raises(InvalidInstanceError, match=match) as err:
            load_scaling_profiles([path], gpu_type="a100")
        assert err.value.file == str(path)


def test_budgets_refuse_absurd_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _csv(tmp_path, HEADER + "64,1,2,3,4,5,6,7\n128,1,2,3,4,5,6,7\n")
    with limits.override(max_trace_bytes=20), pytest.raises(InvalidInstanceError, match="budget"):
        load_scaling_profiles(path, gpu_type="a100")
    monkeypatch.setattr(pe, "MAX_PROFILE_ROWS", 1)
    with pytest.raises(InvalidInstanceError, match="more than 1") as err:
        load_scaling_profiles(path, gpu_type="a100")
    assert err.value.row == 3
    monkeypatch.setattr(pe, "MAX_PROFILE_FILES", 1)
    with pytest.raises(InvalidInstanceError, match="over 1"):
        load_scaling_profiles([path, path], gpu_type="a100")


def test_directory_and_model_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInstanceError, match=r"no \.csv") as err:
        load_scaling_profiles(tmp_path, gpu_type="a100")
    assert err.value.file == str(tmp_path)
    a = _csv(tmp_path, HEADER + "64,1,2,3,4,5,6,7\n", "m.csv")
    sub = tmp_path / "sub"
    sub.mkdir()
    b = _csv(sub, HEADER + "64,1,2,3,4,5,6,7\n", "m.csv")
    with pytest.raises(InvalidInstanceError, match="also read") as err:
        load_scaling_profiles([a, b], gpu_type="a100")
    assert err.value.file == str(b)
    with pytest.raises(InvalidInstanceError) as err:
        load_scaling_profiles(a, gpu_type=" ")
    assert err.value.field == "gpu_type"
    with pytest.raises(InvalidInstanceError) as err:
        load_scaling_profiles([], gpu_type="a100")
    assert err.value.field == "files"


# -- interpolation on the resnet50 file (shaped like the published one) ------------------------


def test_resnet50_batch64_envelope() -> None:
    curve = _a100().curves[("resnet50", 64)]
    r = dict(zip(curve.counts, curve.rates, strict=True))
    # 1..8 GPUs: the measured rates are concave there, so they are kept
    for n in (1, 2, 4, 8):
        assert curve(n) == r[n]
    # between measured counts: the chord
    assert within(curve(3), (r[2] + r[4]) / 2, RATIO_TOL)
    # 16 GPUs lies below the chord from 8 to 32 GPUs: raised onto it
    chord16 = r[8] + (r[32] - r[8]) * (16 - 8) / (32 - 8)
    assert within(curve(16), chord16, RATIO_TOL)
    assert curve(16) > r[16]
    assert curve(32) == r[32]
    # 64 GPUs measured lower: the gang runs on 32 of them, the best rate up to there
    assert curve(64) == r[32] > r[64]
    # beyond 64: flat, no extrapolation
    assert curve(65) == curve(200) == curve(10**6) == r[32]
    assert [c for c, _, _ in curve.raised()] == [16, 64]


def test_resnet50_batch256_is_concave_and_kept_exactly() -> None:
    curve = _a100().curves[("resnet50", 256)]
    assert curve.raised() == ()
    for c, r in zip(curve.counts, curve.rates, strict=True):
        assert curve(c) == r
    assert curve(100) == curve.rates[-1]
    assert curve(0) == 0.0


# -- interpolation properties ----------------------------------------------------------------


@st.composite
def _points(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[float, ...]]:
    counts = sorted(draw(st.sets(st.integers(1, 256), min_size=1, max_size=8)))
    rates = draw(
        st.lists(
            st.floats(0.01, 1000.0, allow_nan=False), min_size=len(counts), max_size=len(counts)
        )
    )
    return tuple(counts), tuple(rates)


def _grid(n_max: int) -> list[float]:
    return [k * n_max / 97 for k in range(0, 2 * 97 + 1)]


@given(_points())
def test_interpolant_is_concave_non_decreasing_and_flat_beyond(
    pts: tuple[tuple[int, ...], tuple[float, ...]],
) -> None:
    counts, rates = pts
    curve = ScalingCurve(counts, rates)
    xs = _grid(curve.n_max)
    ys = [curve(x) for x in xs]
    scale = max(rates)
    for a, b in itertools.pairwise(ys):
        assert b >= a - RATIO_TOL * scale  # non-decreasing
    # equal spacing: concave iff second differences are <= 0
    for a, b, c in zip(ys, ys[1:], ys[2:], strict=False):
        assert b - a >= c - b - RATIO_TOL * scale
    best = 0.0
    for c, r in zip(counts, rates, strict=True):
        best = max(best, r)
        assert curve(c) >= best - RATIO_TOL * scale  # never below an achievable rate
    assert curve(curve.n_max) == max(rates)
    assert curve(curve.n_max + 1) == curve(10 * curve.n_max) == max(rates)


@given(
    st.lists(st.floats(0.01, 100.0), min_size=1, max_size=7),
    st.lists(st.integers(1, 8), min_size=7, max_size=7),
)
def test_concave_increasing_measurements_are_reproduced(
    gains: list[float], steps: list[int]
) -> None:
    # counts with gaps, rates with per-GPU marginal gains that decrease: concave and increasing
    # through (0, 0)
    counts, rates = [], []
    n, r = 0, 0.0
    for g, s in zip(sorted(gains, reverse=True), steps, strict=False):
        n, r = n + s, r + g * s
        counts.append(n)
        rates.append(r)
    # strictly decreasing slopes keep every point a vertex; equal slopes make collinear points,
    # which the interpolant also goes through
    curve = ScalingCurve(tuple(counts), tuple(rates))
    for c, v in zip(counts, rates, strict=True):
        assert within(curve(c), v, RATIO_TOL)


def test_curve_refuses_bad_points() -> None:
    with pytest.raises(InvalidInstanceError):
        ScalingCurve((2, 1), (1.0, 2.0))
    with pytest.raises(InvalidInstanceError):
        ScalingCurve((1,), (math.nan,))
    with pytest.raises(InvalidInstanceError):
        ScalingCurve((1, 2), (1.0,))


# -- the simulator's table -------------------------------------------------------------------


def test_table_rates_are_the_interpolant_for_every_count() -> None:
    profiles = _a100()
    table = Throughputs.from_scaling_profiles([profiles])
    assert table.reference == "a100"
    curve = profiles.curves[("resnet50", 64)]
    jt = profile_job_type("resnet50", 64)
    for n in (1, 3, 8, 12, 16, 48, 64, 100):
        assert table.rate(jt, n, "a100") == curve(n)
    assert table.rate(jt, 4, "a100", consolidated=False) == curve(4)
    assert table.rate(jt, 4, "v100") == 0.0
    assert table.rate(GENERIC, 4, "a100") == 4.0


def test_trace_models_map_to_their_profile() -> None:
    table = Throughputs.from_scaling_profiles([_a100()])
    for model in ("resnet50", "bert", "vgg16", "inception3", "deepspeech2", "gpt2"):
        batch = min(b for m, b in _a100().curves if m == model)
        assert job_type_for(model, batch, table) == profile_job_type(model, batch)
    # nearest measured batch size in log scale; the median variant when unknown
    assert job_type_for("resnet50", 100, table) == "resnet50 (batch size 128)"
    assert job_type_for("resnet50", math.nan, table) == "resnet50 (batch size 128)"
    # no profile: generic
    assert job_type_for("yolov3", 64, table) == GENERIC


def test_two_gpu_types_and_table_errors(tmp_path: Path) -> None:
    slow = tmp_path / "t4"
    slow.mkdir()
    _csv(slow, HEADER + "64,2,4,8,16,32,64,128\n", "m.csv")
    _csv(slow, HEADER + "64,1,2,3,4,5,6,7\n", "n.csv")
    fast = tmp_path / "a100"
    fast.mkdir()
    _csv(fast, HEADER + "64,8,16,32,64,128,256,512\n", "m.csv")
    _csv(fast, HEADER + "64,2,2,3,4,5,6,7\n", "n.csv")
    table = Throughputs.from_scaling_profiles(
        [load_scaling_profiles(slow, gpu_type="t4"), load_scaling_profiles(fast, gpu_type="a100")],
        reference="a100",
    )
    # geometric mean of the one-GPU speed-ups relative to a100: sqrt(2/8 * 1/2)
    assert within(table.generic_speed["t4"], math.sqrt(0.25 * 0.5), RATIO_TOL)
    assert table.generic_speed["a100"] == 1.0
    t4 = load_scaling_profiles(slow, gpu_type="t4")
    with pytest.raises(InvalidInstanceError) as err:
        Throughputs.from_scaling_profiles([t4, t4])
    assert err.value.field == "gpu_type"
    with pytest.raises(InvalidInstanceError) as err:
        Throughputs.from_scaling_profiles([t4], reference="a100")
    assert err.value.field == "reference"
    with pytest.raises(InvalidInstanceError) as err:
        Throughputs.from_scaling_profiles([])
    assert err.value.field == "profiles"


class _Sized(Policy):
    """Grants every active job ``sizes[k]`` A100s at its k-th decision (the last size after)."""

    def __init__(self, sizes: list[int], round_seconds: float) -> None:
        self.name = "sized"
        self.sizes = sizes
        self.round_seconds = round_seconds

    def allocate(self, state: SimState) -> PolicyDecision:
        grants = []
        for s in state.active:
            k = min(state.decisions_seen(s) - 1, len(self.sizes) - 1)
            grants.append(Grant(s.job_id, "a100", num_gpus=self.sizes[k]))
        return PolicyDecision(tuple(grants))


def test_an_elastic_job_runs_at_the_interpolated_rates() -> None:
    profiles = _a100()
    table = Throughputs.from_scaling_profiles([profiles])
    curve = profiles.curves[("resnet50", 64)]
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=16, gpus_per_server=8),))
    steps = 2000.0
    frame = job_frame(
        [{"model": "resnet50", "batch_size": 64, "total_steps": steps, "num_gpus": 4}]
    )
    world = World.from_frame(frame, cluster, table).elastic(max_factor=4.0)
    job = world.jobs[0]
    assert job.job_type == "resnet50 (batch size 64)"
    assert (job.min_gpus, job.max_gpus) == (1, 16)
    # 10 s on 3 GPUs (interpolated between 2 and 4), then 12 GPUs (between 8 and 32)
    result = simulate(world, _Sized([3, 12], round_seconds=10.0))
    done = 10.0 * curve(3)
    expected = 10.0 + (steps - done) / curve(12)
    assert within(result.completion[0], expected, TIME_TOL)
    assert validate(world, result).ok


# -- command line ----------------------------------------------------------------------------


def test_cli_takes_a_profile_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "throughputs_A100"
    shutil.copytree(A100, profiles)
    trace = _csv(
        tmp_path,
        "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
        "a,0,4,resnet50,1000,,64,1,,u\nb,0,2,yolov3,,50,,1,,u\n",
        "trace.csv",
    )
    args = ["sim", "run", str(trace), "--cluster", "a100=8", "--throughputs", str(profiles)]
    code = main([*args, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["valid"] is True
    curve = load_scaling_profiles(A100, gpu_type="a100").curves[("resnet50", 64)]
    # the two jobs fit side by side: resnet50 takes 1000 steps at its 4-GPU rate
    assert within(out["metrics"]["makespan"], max(1000.0 / curve(4), 50.0), TIME_TOL)
    code = main(["sim", "run", str(trace), "--cluster", "v100=8", "--throughputs", str(profiles)])
    assert code != 0
    assert "GPU type 'a100'" in capsys.readouterr().err


def test_a_world_with_profiles_saves_and_loads_whole(tmp_path: Path) -> None:
    table = Throughputs.from_scaling_profiles([_a100()])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=16, gpus_per_server=8),))
    frame = job_frame(
        [{"model": "resnet50", "batch_size": 64, "total_steps": 500.0, "num_gpus": 4}]
    )
    world = World.from_frame(frame, cluster, table).elastic(max_factor=4.0)
    path = tmp_path / "world.json"
    world.save(path)
    loaded = World.load(path)
    jt = world.jobs[0].job_type
    # the interpolant, not the linear rule of measured tables, after the round trip
    for n in (3, 12, 16, 100):
        assert loaded.throughputs.rate(jt, n, "a100") == table.rate(jt, n, "a100")
    assert loaded == world


def test_a_profile_measured_only_on_large_gangs_is_known(tmp_path: Path) -> None:
    path = _csv(tmp_path, "global_batch_size,16,32\n512,10,15\n", "big.csv")
    table = Throughputs.from_scaling_profiles([load_scaling_profiles(path, gpu_type="a100")])
    assert table.knows("big (batch size 512)")
    assert not table.knows("big (batch size 64)")
    # below the smallest measured count: the chord from (0, 0)
    assert within(table.rate("big (batch size 512)", 8, "a100"), 5.0, RATIO_TOL)
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=32, gpus_per_server=8),))
    frame = job_frame([{"model": "big", "batch_size": 512, "duration": 100.0, "num_gpus": 16}])
    world = World.from_frame(frame, cluster, table)
    world.save(tmp_path / "w.json")
    assert World.load(tmp_path / "w.json") == world
