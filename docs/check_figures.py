"""Check the figures: every figure type the library draws, rendered and measured; and every
figure a docs page asks for, drawn into the built HTML.

**The library's figures** (``python docs/check_figures.py --render DIR``): :data:`GALLERY`
draws every figure type of :mod:`optsched.report` (and the demo's JCT CDF, which is
:func:`~optsched.report.sim.plot_jct_cdf`) from small seeded inputs, writes each as
``DIR/<name>.png`` for a person to look at, and runs
:func:`optsched.report.style.figure_problems` on it (units on axes, labelled series with
markers, no error bar below 0, no legend over data, no hidden series); exits 1 naming every
problem. ``tests/test_figures.py`` compares the same figures with baseline images.

**The docs' own figures** (``python docs/check_figures.py --render-docs docs DIR``, from
the repository root): every ``.. plot::`` block of the pages run as the build runs it (the
same pre-code and rcParams), each figure written to ``DIR/<page>-<n>.png`` and measured the
same way; problems are printed, for a person to judge (a page's figure is the page's).

**The docs build:**

matplotlib's ``.. plot::`` directive keeps only the figures pyplot knows about: a block whose
code draws on a :class:`~matplotlib.figure.Figure` made without pyplot builds without an error
or a warning, and the page silently shows no figure. This check counts, for every source page,
the ``.. plot::`` blocks that do not say ``:nofigs:`` and requires at least that many images of
the plot directive (``_images/<page>-<n>.png``) in the built page.

Usage: ``python docs/check_figures.py DOCS_SOURCE BUILD_HTML`` (``make docs`` runs it); exits 1
naming every page that misses figures.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Dots per inch of the rendered gallery (and of the baseline images).
GALLERY_DPI = 80

_DIRECTIVE = re.compile(r"^\.\. plot::\s*$")
_OPTION = re.compile(r"^\s+:([a-z-]+):")


def expected_figures(source: Path) -> int:
    """``.. plot::`` blocks of an RST file that should draw (no ``:nofigs:`` option)."""
    lines = source.read_text(encoding="utf-8").splitlines()
    count = 0
    for k, line in enumerate(lines):
        if not _DIRECTIVE.match(line):
            continue
        nofigs = False
        for option in lines[k + 1 :]:
            m = _OPTION.match(option)
            if m is None:
                break  # options come first, right under the directive
            nofigs = nofigs or m.group(1) == "nofigs"
        count += not nofigs
    return count


def drawn_figures(page: Path, stem: str) -> int:
    """Images of the plot directive (``<stem>-<n>.png``) referenced by a built page."""
    if not page.is_file():
        return 0
    html = page.read_text(encoding="utf-8")
    return len(set(re.findall(rf'src="[^"]*_images/{re.escape(stem)}-\d+\.png"', html)))


def missing(source_root: Path, build_root: Path) -> list[str]:
    """One message per page with fewer figures in the build than its source asks for."""
    out = []
    for source in sorted(source_root.rglob("*.rst")):
        if "_build" in source.parts:
            continue
        want = expected_figures(source)
        if want == 0:
            continue
        rel = source.relative_to(source_root).with_suffix(".html")
        got = drawn_figures(build_root / rel, source.stem)
        if got < want:
            out.append(f"{rel}: {want} plot block(s) should draw, {got} figure(s) in the build")
    return out


# ------------------------------------------------------------------------------------------
# The library's figures, from small seeded inputs
# ------------------------------------------------------------------------------------------


@functools.cache
def _sweep() -> Any:
    """A small experiment: four policies, three seeds, two loads (a few seconds)."""
    from optsched.runs.experiment import Experiment, run_experiment

    experiment = Experiment(
        name="gallery",
        traces=["synthetic:10"],
        clusters=["v100=8,p100=8"],
        policies=["fifo", "srtf", "tiresias-las", "max-min"],
        seeds=[0, 1, 2],
        loads=[1.0, 2.0],
        round_seconds=360.0,
    )
    return run_experiment(experiment, backend="serial")


def _one_load() -> Any:
    """The small experiment's runs at load 1 only (a study without a load sweep)."""
    from optsched.runs.experiment import ExperimentResult

    full = _sweep()
    keep = full.runs["load"] == 1.0
    return ExperimentResult(
        runs=full.runs[keep].reset_index(drop=True),
        jcts={k: v for k, v in full.jcts.items() if k[4] == 1.0},
        rhos={k: v for k, v in full.rhos.items() if k[4] == 1.0},
        name=full.name,
        policies=full.policies,
    )


@functools.cache
def _sim_runs() -> dict[str, Any]:
    """Five policies on 60 heavy-tailed synthetic jobs (FIFO and SJF tie on some traces)."""
    import numpy as np
    import pandas as pd

    from optsched.sim import JOB_COLUMNS, World, parse_cluster, simulate
    from optsched.sim.policies import make_policy

    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "arrival": np.cumsum(rng.exponential(300.0, n)),
            "num_gpus": rng.choice([1, 1, 1, 2, 4], n),
            "model": "",
            "total_steps": np.nan,
            "duration": rng.lognormal(7.0, 1.2, n),
            "batch_size": np.nan,
            "weight": 1.0,
            "deadline": np.nan,
            "user": "",
        }
    )[list(JOB_COLUMNS)]
    world = World.from_frame(frame, parse_cluster("v100=4:4,k80=4:4"))
    names = ("fifo", "srtf", "tiresias-las", "max-min", "themis")
    return {p: simulate(world, make_policy(p)) for p in names}


@functools.cache
def _oasis() -> tuple[Any, Any]:
    """OASiS and three baselines against the proven optimum (no time limit decides anything).

    The Dorm-like baseline is left out: each of its steps is a MILP under a wall-clock limit
    (1 s by default), so its schedule depends on the machine's speed.
    """
    from optsched.online.oasis import DRF, FIFO, RRH, OASiS, generate_instance
    from optsched.online.oasis.competitive import compare_algorithms

    inst = generate_instance(12, 2, 2, 10, seed=0, scale=0.08)
    algorithms: list[Any] = [OASiS(tighten=True), FIFO(seed=0), DRF(), RRH(seed=0)]
    return inst, compare_algorithms(inst, time_limit=None, algorithms=algorithms)


def _oasis_unproven() -> Any:
    """The comparison as if the ILP had stopped short: OPT between its incumbent and a bound."""
    import dataclasses

    from optsched.report.oasis import plot_comparison

    _, comparison = _oasis()
    off = comparison.offline
    assert off.optimum is not None
    stopped = dataclasses.replace(off, optimum=None, incumbent=0.97 * off.optimum)
    return plot_comparison(
        dataclasses.replace(comparison, offline=stopped, upper=1.05 * off.optimum)
    )


def _oasis_sweep() -> Any:
    from optsched.report.oasis import plot_sweep, ratio_sweep

    with tempfile.TemporaryDirectory() as tmp:
        records = ratio_sweep(
            8, tmp, n_jobs=6, worker_servers=2, ps_servers=2, horizon=6, time_limit=None
        )
    return plot_sweep(records)


def _pace_iteration() -> Any:
    from optsched.comm.pace import CommInstance, run_policy
    from optsched.report.pace import plot_iteration

    return plot_iteration(
        run_policy(
            "bytescheduler", CommInstance(profile="resnet50", workers=8, bandwidth_gbps=10.0)
        )
    )


def _pace_speedup() -> Any:
    from optsched.report.pace import plot_speedup
    from optsched.runs.pace_sweep import sweep

    return plot_speedup(sweep(["resnet50", "vgg16"], [1.0, 10.0, 100.0], [4, 8]).to_frame())


def _placement() -> Any:
    from optsched.placement import compare, generate_instance
    from optsched.report.placement import plot_gap_table

    inst = generate_instance(5, gpus=4, max_workers=5, fill=0.9, racks=2, seed=2)
    return plot_gap_table(compare(inst, objectives=["servers", "traffic", "max-load"]))


def _tensorlights() -> Any:
    from optsched.comm.tensorlights import fair, generate_instance, one_green, rotate, smith
    from optsched.report.tensorlights import plot_jct

    inst = generate_instance(2, 6, max_shards=2, iterations=(20, 40), seed=1)
    runs = {"fair": fair(inst), "priority (Smith)": smith(inst), "rotate": rotate(inst)}
    return plot_jct({**runs, "one-green": one_green(inst)})


def _harmony_curve() -> Any:
    import numpy as np

    from optsched.report.harmony import plot_learning_curve

    rng = np.random.default_rng(3)
    reward = np.cumsum(rng.normal(0.05, 0.4, 80)) - 20.0
    jct = 900.0 - 4.0 * np.arange(80) + rng.normal(0.0, 40.0, 80)
    curve = [
        {"iteration": i, "reward": float(r), "avg_jct_s": float(j)}
        for i, (r, j) in enumerate(zip(reward, jct, strict=True))
    ]
    return plot_learning_curve(curve)


def _harmony_gaps() -> Any:
    import numpy as np

    from optsched.report.harmony import plot_gap_histogram

    rng = np.random.default_rng(4)
    ratios = np.where(rng.random(200) < 0.6, 1.0, 1.0 + rng.exponential(0.08, 200))
    return plot_gap_histogram(ratios.tolist())


def _harmony_cdfs() -> Any:
    import numpy as np

    from optsched.report.harmony import plot_jct_cdfs

    rng = np.random.default_rng(5)
    base = rng.lognormal(6.0, 0.6, 30)
    # two policies with the same JCTs: one line, labelled with both names
    return plot_jct_cdfs(
        {"harmony": base, "first-fit": base * 1.3, "true-exact": base * 0.95, "copy": base}
    )


def _sweep_figures() -> dict[str, Callable[[], Any]]:
    from optsched.report import sweep as sw

    return {
        "sweep_bars_makespan": lambda: sw.plot_sweep_bars(_sweep(), "makespan", unit="h"),
        "sweep_bars_rho": lambda: sw.plot_sweep_bars(_sweep(), "rho_max"),
        "sweep_cdf_jct": lambda: sw.plot_sweep_cdf(_sweep(), kind="jct", load=2.0),
        "sweep_cdf_rho": lambda: sw.plot_sweep_cdf(_sweep(), kind="rho", load=2.0),
        "sweep_jct_vs_load": lambda: sw.plot_jct_vs_load(_sweep()),
        "sweep_jct_one_load": lambda: sw.plot_jct_vs_load(_one_load()),
    }


def _sim_figures() -> dict[str, Callable[[], Any]]:
    import pandas as pd

    from optsched.report import sim
    from optsched.sim.measure.metrics import run_metrics

    def bars() -> Any:
        runs = _sim_runs()
        table = pd.DataFrame(
            [{"policy": p, "jct_mean": run_metrics(r)["jct_mean"]} for p, r in runs.items()]
        )
        return sim.plot_policy_metric(table, "jct_mean", scale=3600.0, label="mean JCT (h)")

    return {
        "sim_jct_cdf": lambda: sim.plot_jct_cdf(_sim_runs(), unit="h"),
        "sim_rho_cdf": lambda: sim.plot_rho_cdf(_sim_runs()),
        "sim_utilization": lambda: sim.plot_utilization(_sim_runs()["srtf"], unit="h"),
        "sim_policy_metric": bars,
    }


def gallery() -> dict[str, Callable[[], Any]]:
    """Every figure type the library draws: name -> a function drawing it (a Figure)."""
    from optsched.report import oasis

    return {
        **_sweep_figures(),
        **_sim_figures(),
        "oasis_comparison": lambda: oasis.plot_comparison(_oasis()[1]),
        "oasis_schedule": lambda: oasis.plot_schedule(
            _oasis()[0], _oasis()[1].reports[0].run.schedule
        ),
        "oasis_comparison_unproven": _oasis_unproven,
        "oasis_sweep": _oasis_sweep,
        "pace_iteration": _pace_iteration,
        "pace_speedup": _pace_speedup,
        "placement_gap_table": _placement,
        "tensorlights_jct": _tensorlights,
        "harmony_learning_curve": _harmony_curve,
        "harmony_gap_histogram": _harmony_gaps,
        "harmony_jct_cdfs": _harmony_cdfs,
    }


def settled(fig: Any) -> Any:
    """``fig`` after one draw: constrained layout settles on its second pass, so every later
    rendering of the figure is the same image (the first may differ by a few pixels)."""
    fig.draw_without_rendering()
    return fig


def render(directory: Path, names: list[str] | None = None) -> dict[str, list[str]]:
    """Draw the gallery (or ``names`` of it) into ``directory/<name>.png``; problems per name."""
    from optsched.report.style import figure_problems

    directory.mkdir(parents=True, exist_ok=True)
    problems = {}
    for name, draw in gallery().items():
        if names and name not in names:
            continue
        fig = settled(draw())
        problems[name] = figure_problems(fig)
        fig.savefig(directory / f"{name}.png", dpi=GALLERY_DPI)
    return problems


def plot_blocks(source: Path) -> list[tuple[str, set[str]]]:
    """The code and options of every ``.. plot::`` block of an RST file, in order."""
    lines = source.read_text(encoding="utf-8").splitlines()
    blocks = []
    for k, line in enumerate(lines):
        if not _DIRECTIVE.match(line):
            continue
        options: set[str] = set()
        j = k + 1
        while j < len(lines) and (_OPTION.match(lines[j]) or lines[j].startswith("      ")):
            m = _OPTION.match(lines[j])
            if m:
                options.add(m.group(1))
            j += 1
        code = []
        while j < len(lines) and (not lines[j].strip() or lines[j].startswith("   ")):
            code.append(lines[j][3:])
            j += 1
        blocks.append(("\n".join(code), options))
    return blocks


def render_docs(source_root: Path, directory: Path) -> dict[str, list[str]]:
    """Run every page's ``.. plot::`` blocks as the build does; save and measure each figure.

    The blocks of a page share one namespace (the directive's ``:context:``), run from the
    repository root with ``conf.py``'s pre-code and rcParams. Figures are written as
    ``directory/<page>-<n>.png``; problems are keyed by that name.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from optsched.report.style import figure_problems

    conf: dict[str, Any] = {"__file__": str(source_root.resolve() / "conf.py")}
    exec(compile((source_root / "conf.py").read_text(encoding="utf-8"), "conf.py", "exec"), conf)
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[str]] = {}
    for page in sorted(source_root.rglob("*.rst")):
        if "_build" in page.parts or not plot_blocks(page):
            continue
        namespace: dict[str, Any] = {}
        n = 0
        with matplotlib.rc_context(conf["plot_rcparams"]), contextlib.chdir(source_root.parent):
            for code, options in plot_blocks(page):
                plt.close("all")
                if "context" not in options or not namespace:
                    # a block without :context: runs in a fresh namespace, as in the build
                    namespace = {}
                    exec(conf["plot_pre_code"], namespace)
                exec(compile(code, str(page), "exec"), namespace)
                if "nofigs" in options:
                    continue
                for number in plt.get_fignums():
                    n += 1
                    fig = plt.figure(number)
                    name = f"{page.stem}-{n}"
                    fig.savefig(directory / f"{name}.png", dpi=GALLERY_DPI)
                    out[name] = figure_problems(fig)
        plt.close("all")
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--render-docs"] and len(argv) == 3:
        found = render_docs(Path(argv[1]), Path(argv[2]))
        for name, ps in found.items():
            for p in ps:
                print(f"{name}: {p}")
        print(f"{len(found)} docs figure(s) in {argv[2]}")
        return 0
    if argv[:1] == ["--render"] and len(argv) >= 2:
        found = render(Path(argv[1]), argv[2:] or None)
        bad = [f"{name}: {p}" for name, ps in found.items() for p in ps]
        for line in bad:
            print(line, file=sys.stderr)
        print(f"{len(found)} figure(s) in {argv[1]}, {len(bad)} problem(s)")
        return 1 if bad else 0
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    problems = missing(Path(argv[0]), Path(argv[1]))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("a plot block draws on a Figure pyplot does not know (use plt.subplots and ax=)")
        return 1
    print(f"every plot block of {argv[0]} drew its figure")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
