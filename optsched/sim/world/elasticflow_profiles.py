r"""ElasticFlow's per-model scaling profiles: reader and concave interpolation.

ElasticFlow (Gu et al., ASPLOS 2023) publishes one CSV per model and GPU type: the header is
``global_batch_size,1,2,4,8,16,32,64`` (GPU counts), each row a global batch size, each value the
iterations per second of the whole job on that many GPUs. :func:`load_scaling_profiles` reads a
directory (or a list) of such files, the model being the file's stem (``resnet50.csv`` is the
model ``resnet50``, the name ElasticFlow's traces use).

**A rate of 0 or an empty field** marks a count the model was not run on
(``resnet50_cifar10.csv`` has 0 from 16 GPUs up; ``deepspeech2.csv``, batch 32, leaves 64 GPUs
empty): it is not a measurement and is left out of the interpolation.

**Interpolation** (:class:`ScalingCurve`). Measured rates are neither monotone nor concave in the
GPU count (resnet50, batch 64, on A100: 21.5 it/s on 16 GPUs, 22.7 on 32, 20.97 on 64). The rate
of ``n`` GPUs is defined from the measured points :math:`(n_k, r_k)`, :math:`n_1 < \dots < n_K`,
in two steps:

1. *Achievable rates.* A gang granted ``n`` GPUs can run on any measured count
   :math:`n_k \le n` and leave the other GPUs idle, so :math:`M_k = \max_{j \le k} r_j` is a rate
   actually measured, not an invented one (this is the only sense in which a running maximum is
   taken).
2. *Concave envelope.* The rate is the least concave majorant :math:`f` of the points
   :math:`(0, 0), (n_1, M_1), \dots, (n_K, M_K)` on :math:`[0, n_K]` (the upper convex hull of
   the points, piecewise linear between its vertices), and :math:`f(n) = M_K` for
   :math:`n > n_K`: no extrapolation beyond the largest measured count.

Why the majorant: schedulers that divide GPUs by marginal gains (ElasticFlow's, Optimus's) need
non-increasing marginal gains, i.e. a concave rate. Among concave functions that never rate a
count below what is achievable there, :math:`f` is the smallest, so it adds the least. Where the
measurements are concave it adds nothing; where they are not it raises the dips to the chord of
the hull: resnet50 batch 64 on 16 A100s is rated 21.76 it/s (measured 21.51), the chord from 8 to
32 GPUs. This is stated, not hidden: :meth:`ScalingCurve.raised` lists every measured count whose
rate the envelope raises.

**Proof of the properties.** Let :math:`0 = v_0 < v_1 < \dots < v_m = n_K` be the hull's
vertices and :math:`s_i` the slope of its i-th piece. (i) *Concave on* :math:`[0, n_K]`: the upper
hull turns clockwise at each vertex, so :math:`s_1 \ge s_2 \ge \dots \ge s_m`, and a continuous
piecewise-linear function with non-increasing slopes is concave. (ii) *Non-decreasing*: the last
vertex is :math:`(n_K, M_K)` (the rightmost point is always a hull vertex) and :math:`M_K \ge M_k`
for every k, also :math:`M_K \ge 0`; the last piece joins a point of height at most :math:`M_K`
to :math:`M_K`, so :math:`s_m \ge 0`, hence every :math:`s_i \ge s_m \ge 0`. (iii) *Concave and
non-decreasing on* :math:`[0, \infty)`: beyond :math:`n_K` the slope is 0, and
:math:`0 \le s_m`, so the slopes stay non-increasing. (iv) *Equal to the measurements where they
are concave and increasing*: then :math:`M_k = r_k` and every point (with :math:`(0, 0)`) lies on
the upper hull of the points (a vertex, or on a segment between two), so :math:`f(n_k) = r_k`.
(v) :math:`f \ge M` at every measured count, by definition of a majorant.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from optsched.errors import InvalidInstanceError
from optsched.traces._rows import Rows
from optsched.traces.schema import BOUNDS

__all__ = [
    "MAX_PROFILE_FILES",
    "MAX_PROFILE_ROWS",
    "MAX_RATE",
    "ScalingCurve",
    "ScalingProfiles",
    "load_scaling_profiles",
    "profile_job_type",
]

#: Most profile files read from one directory (ElasticFlow ships 6 or 7 per GPU type).
MAX_PROFILE_FILES = 10_000
#: Most batch-size rows in one file.
MAX_PROFILE_ROWS = 100_000
#: Largest rate accepted (iterations/s of a whole job); anything larger is a unit error.
MAX_RATE = 1e9


def profile_job_type(model: str, batch_size: int) -> str:
    """The job type of ``model`` at global batch size ``batch_size``.

    The name follows the variant pattern ``"<model> (batch size <b>)"`` of Gavel's tables, which
    :func:`optsched.sim.world.jobs.job_type_for` matches against a trace's model and batch size.
    """
    return f"{model} (batch size {batch_size})"


@dataclass(frozen=True)
class ScalingCurve:
    """Rate of one (model, batch size) as a concave non-decreasing function of the GPU count.

    Parameters
    ----------
    counts : tuple of int
        Measured GPU counts, strictly increasing, all ``>= 1``.
    rates : tuple of float
        The measured rates at ``counts`` (finite, ``> 0``).

    Notes
    -----
    See the module notes for the rule and its proof.
    """

    counts: tuple[int, ...]
    rates: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.counts or len(self.counts) != len(self.rates):
            raise InvalidInstanceError("counts", "needs one rate per count, at least one count")
        if any(c < 1 for c in self.counts) or any(
            b <= a for a, b in zip(self.counts, self.counts[1:], strict=False)
        ):
            raise InvalidInstanceError("counts", f"must be increasing and >= 1, got {self.counts}")
        for r in self.rates:
            if not (math.isfinite(r) and r > 0):
                raise InvalidInstanceError("rates", f"must be finite and > 0, got {r!r}")
        best, achievable = 0.0, []
        for r in self.rates:
            best = max(best, r)
            achievable.append(best)
        xs, ys = _upper_hull([0.0, *map(float, self.counts)], [0.0, *achievable])
        object.__setattr__(self, "_xs", tuple(xs))
        object.__setattr__(self, "_ys", tuple(ys))

    @property
    def vertices(self) -> tuple[tuple[float, float], ...]:
        """The hull's vertices ``(count, rate)``, from ``(0, 0)`` to the largest count."""
        return tuple(zip(self._xs, self._ys, strict=True))  # type: ignore[attr-defined]

    @property
    def n_max(self) -> int:
        """Largest measured count; the rate is flat beyond it."""
        return self.counts[-1]

    def __call__(self, n: float) -> float:
        """Interpolated rate on ``n`` GPUs (0 for ``n <= 0``)."""
        xs: tuple[float, ...] = self._xs  # type: ignore[attr-defined]
        ys: tuple[float, ...] = self._ys  # type: ignore[attr-defined]
        if n <= 0:
            return 0.0
        if n >= xs[-1]:
            return ys[-1]
        i = bisect_right(xs, n)  # xs[i-1] <= n < xs[i]
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 + (y1 - y0) * (n - x0) / (x1 - x0)

    def raised(self) -> tuple[tuple[int, float, float], ...]:
        """Measured counts whose rate the envelope raises: ``(count, measured, interpolated)``."""
        return tuple(
            (c, r, self(c)) for c, r in zip(self.counts, self.rates, strict=True) if self(c) > r
        )


def _upper_hull(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """Vertices of the upper concave hull of points with increasing ``xs`` (monotone chain)."""
    hx: list[float] = []
    hy: list[float] = []
    for x, y in zip(xs, ys, strict=True):
        # drop the last vertex while it lies on or below the chord from its predecessor to (x, y)
        while len(hx) >= 2 and (hy[-1] - hy[-2]) * (x - hx[-2]) <= (y - hy[-2]) * (hx[-1] - hx[-2]):
            hx.pop()
            hy.pop()
        hx.append(x)
        hy.append(y)
    return hx, hy


@dataclass(frozen=True)
class ScalingProfiles:
    """Profiles of one GPU type: ``curves[(model, batch_size)]`` (see :class:`ScalingCurve`).

    Attributes
    ----------
    gpu_type : str
    curves : mapping
        ``(model, global batch size) -> ScalingCurve``.
    files : tuple of str
        The files read, in order.
    """

    gpu_type: str
    curves: Mapping[tuple[str, int], ScalingCurve]
    files: tuple[str, ...] = ()

    @property
    def models(self) -> tuple[str, ...]:
        """Models with a profile (sorted)."""
        return tuple(sorted({m for m, _ in self.curves}))

    def rate(self, model: str, batch_size: int, n: float) -> float:
        """Interpolated rate; 0.0 when ``(model, batch_size)`` has no profile."""
        curve = self.curves.get((model, batch_size))
        return 0.0 if curve is None else curve(n)


def _files(source: str | Path | Iterable[str | Path]) -> list[Path]:
    if isinstance(source, str | Path):
        p = Path(source)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.suffix == ".csv" and q.is_file())
            if not found:
                raise InvalidInstanceError("<file>", "holds no .csv profile", file=str(p))
            if len(found) > MAX_PROFILE_FILES:
                raise InvalidInstanceError(
                    "<file>", f"holds {len(found)} profiles, over {MAX_PROFILE_FILES}", file=str(p)
                )
            return found
        return [p]
    paths = [Path(q) for q in source]
    if not paths:
        raise InvalidInstanceError("files", "names no profile file")
    if len(paths) > MAX_PROFILE_FILES:
        raise InvalidInstanceError("files", f"names {len(paths)} files, over {MAX_PROFILE_FILES}")
    return paths


def _read_one(path: Path, model: str, out: dict[tuple[str, int], ScalingCurve]) -> None:
    rows = Rows(path)
    header: list[str] | None = None
    counts: list[int] = []
    n_rows = 0
    for _number, parts in rows.lines():
        if header is None:
            header = [h.strip() for h in parts]
            if not header or header[0] != "global_batch_size":
                raise rows.error(
                    header[0] if header else "<row>",
                    "the first column must be 'global_batch_size' (ElasticFlow's profile header)",
                )
            if len(header) < 2:
                raise rows.error("<row>", "the header names no GPU count")
            for name in header[1:]:
                c = rows.count(name, f"header {name!r}", bound=BOUNDS["num_gpus"])
                if c in counts:
                    raise rows.error(f"header {name!r}", f"GPU count {c} appears twice")
                if counts and c < counts[-1]:
                    raise rows.error(f"header {name!r}", "GPU counts must be increasing")
                counts.append(c)
            continue
        n_rows += 1
        if n_rows > MAX_PROFILE_ROWS:
            raise rows.error("<row>", f"more than {MAX_PROFILE_ROWS} batch-size rows")
        rows.fields(parts, header)
        batch = rows.count(parts[0], "global_batch_size", bound=BOUNDS["batch_size"])
        if (model, batch) in out:
            raise rows.error("global_batch_size", f"batch size {batch} appears twice")
        measured = [
            (c, rows.number(text, column, bound=MAX_RATE, empty=0.0))
            for c, text, column in zip(counts, parts[1:], header[1:], strict=True)
        ]
        kept = [(c, r) for c, r in measured if r > 0]  # 0: the count was not run (module notes)
        if not kept:
            raise rows.error("<row>", f"batch size {batch} has no positive rate")
        out[(model, batch)] = ScalingCurve(tuple(c for c, _ in kept), tuple(r for _, r in kept))
    if header is None:
        raise InvalidInstanceError("<file>", "is empty (no header)", file=str(path))
    if n_rows == 0:
        raise InvalidInstanceError("<file>", "has a header but no batch-size row", file=str(path))


def load_scaling_profiles(
    source: str | Path | Iterable[str | Path], *, gpu_type: str
) -> ScalingProfiles:
    """Read ElasticFlow profile CSVs of one GPU type.

    Parameters
    ----------
    source : path or iterable of paths
        A directory (every ``*.csv`` in it, sorted by name) or the files themselves. The model of
        a file is its stem.
    gpu_type : str
        The GPU type the files were measured on (ElasticFlow's folder name: ``throughputs_A100``
        is ``a100``); the name used in the simulator's cluster.

    Raises
    ------
    InvalidInstanceError
        With ``file`` and ``row`` set and the column named (``header '16'``,
        ``global_batch_size``, or the GPU-count column): a first column other than
        ``global_batch_size``, a GPU count that is not a whole number in ``[1, 10**6]``, repeated
        or decreasing, a rate that is not a finite number in ``[0, 1e9]`` (an empty field is
        read as 0, not run), a row with the wrong number of fields, a batch size repeated, a
        row without a positive rate, an empty file;
        a file over the guarded loader's byte budget (:mod:`optsched._io`), more than
        :data:`MAX_PROFILE_ROWS` rows or :data:`MAX_PROFILE_FILES` files; two files of the
        same model.
    """
    if not (isinstance(gpu_type, str) and gpu_type.strip()):
        raise InvalidInstanceError("gpu_type", f"must be a non-empty name, got {gpu_type!r}")
    paths = _files(source)
    curves: dict[tuple[str, int], ScalingCurve] = {}
    seen: dict[str, Path] = {}
    for path in paths:
        model = path.stem
        if model in seen:
            raise InvalidInstanceError(
                "<file>", f"model {model!r} also read from {seen[model]}", file=str(path)
            )
        seen[model] = path
        _read_one(path, model, curves)
    return ScalingProfiles(gpu_type=gpu_type, curves=curves, files=tuple(str(p) for p in paths))
