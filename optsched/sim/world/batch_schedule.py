r"""Batch-size schedules of Shockwave's dynamic jobs: the rules, the phases and the phase rates.

Shockwave's 12-field traces (Zheng et al., NSDI 2023; ``scheduler/traces/reproduce``) name a
batch-size adaptation per job: ``static``, ``accordion`` or ``gns``. A dynamic job trains for a
fixed number of **epochs**; its batch size changes from epoch to epoch, and with it the steps an
epoch takes and the steps per second. This module turns a job's mode, model, initial batch size
and work into a **schedule**: consecutive *phases*, each a batch size held for a number of
epochs. The engine (:mod:`optsched.sim.engine.core`) changes the job's rate at each phase boundary,
inside a round; the validator (:mod:`optsched.sim.measure.validate`) re-integrates the phases on its
own.

Provenance marks: **[S]** stated in Shockwave's code (``scheduler/utils.py``,
``scheduler/scheduler.py``) or paper; **[R]** reconstructed here, a simplification whose
difference from Shockwave is said.

Epochs and work
---------------
* An epoch is one pass over the model's training set of ``D`` samples; at batch size ``b`` it is
  ``S(b) = ceil(D / b)`` steps [S]. ``D`` per model is :data:`EPOCH_SAMPLES`.
* The trace's ``total_steps`` are steps at the initial batch size ``b0``; the job trains
  ``E = ceil(total_steps / S(b0))`` epochs [S], and a batch-size change keeps the number of
  epochs (not of steps) [S].
* Progress is counted in *base steps* (steps at ``b0``), so that the job's work ``W`` and the
  engine's bookkeeping stay those of a static job: epoch ``e`` covers the base steps
  ``[e S(b0), (e + 1) S(b0))`` and the last epoch ends at ``W`` (the trace's partial last
  epoch) [R]. A phase ``p`` of epochs ``e_p`` ... ``e_{p+1} - 1`` ends at
  ``min(W, e_{p+1} S(b0))``.

Rates
-----
With ``T(b, n, g)`` the table's steps/s of the model's job type at batch size ``b`` (Gavel's table
keys job types by batch size: ``"ResNet-18 (batch size 64)"``), an epoch at ``b`` takes
``S(b) / T(b)`` seconds [S]. In base steps per second the phase's rate is therefore the job's
base rate times

.. math::

    f_p(g, n) = \frac{\tilde T(b_p, n, g)}{\tilde T(b_0, n, g)} \cdot \frac{S(b_0)}{S(b_p)},
    \qquad \tilde T(b, n, g) = T(v(b), n, g) \cdot \frac{v(b)}{b}

where ``v(b)`` is the table's variant nearest ``b`` (log scale, ties to the smaller; exact when
the table measures ``b``) and ``T(v) v / b`` keeps the variant's samples per second [R]. A phase
whose variant has no rate on ``(g, n)`` keeps the base variant's samples per second,
``\tilde T(b_p) = T(v(b_0)) v(b_0) / b_p`` [R] (Shockwave refuses such a change and keeps the
old batch size [S]; here the rate stays positive wherever the job could start). The job's
``scale`` (duration calibration, :mod:`optsched.sim.world.jobs`) multiplies every phase alike.
Space sharing: a paired job's phase rate is its measured pair rate times its own ``f_p``; the
partner's phase does not enter [R] (pairs are measured at the trace's batch sizes only).

The rules
---------
Only the models Shockwave adapts have rules: ResNet-18, ResNet-50, LM and Recommendation [S];
Transformer, CycleGAN, A3C (and every other model) keep their batch size in every mode [S].
The **large batch size** ``B`` of a model is the largest batch size the throughput table
measures for it (on Gavel's table 256, 128, 80 and 8192: Shockwave's caps for these models [S]).
A job whose ``b0`` is already ``B``, or whose model the table measures at no batch size, stays
static.

``accordion`` (Accordion, Agarwal et al., MLSys 2021: small batches in *critical regimes*, large
batches elsewhere). Epoch ``e`` (0-based) of ``E`` runs at ``b0`` when it is critical, else at
``B`` [S]. Critical are:

* the first ``ACCORDION_HEAD = 10`` epochs [S] (Shockwave lengthens this head for a few
  initial batch sizes: 20 epochs for ResNet-18 at 256, which is ``B`` anyway, and 30-40 for
  Recommendation at 512-2048 [S]; here it is 10 for all [R]);
* the 10 epochs after each learning-rate decay of the model's training recipe [S]: ResNet-18
  (CIFAR-10) at epochs 150 and 250, ResNet-50 (ImageNet) every 30 epochs, Recommendation at
  60 and 80, LM none (:data:`ACCORDION_DECAYS`, :data:`ACCORDION_DECAY_PERIOD`);
* every epoch ``e <= 0.3 E`` (the first 30 % of training always runs small, to keep the
  accuracy) [S].

``gns`` (growth with the gradient noise scale, McCandlish et al. 2018, as in Pollux/AdaptDL).
The batch size doubles at stated epochs up to ``B`` [S]. Shockwave tabulates the doubling
epochs per model, initial batch size and gang size (first doublings between epoch 11 and 191,
later ones 10-90 epochs apart) [S]; here one compact rule per model [R]:

.. math::

    b_e = b_0 \ \text{for}\ e < F, \qquad
    b_e = \min\left(B,\ b_0 \, 2^{\,1 + \lfloor (e - F) / P \rfloor}\right)\ \text{for}\ e \ge F

with ``P = GNS_PERIOD = 20`` epochs and ``F`` of :data:`GNS_FIRST` (20 for ResNet-18, LM and
Recommendation, 100 for ResNet-50, whose tabulated first doublings are 81-191).
The gang size does not enter [R].

``static``: no schedule (the job runs as before, exactly the static code path).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.sim.world.throughputs import Throughputs

__all__ = [
    "ACCORDION_DECAYS",
    "ACCORDION_DECAY_PERIOD",
    "ACCORDION_HEAD",
    "BATCH_MODES",
    "EPOCH_SAMPLES",
    "GNS_FIRST",
    "GNS_PERIOD",
    "BatchPhase",
    "BatchSchedule",
    "accordion_batches",
    "derive_schedule",
    "gns_batches",
    "phase_factor",
    "phase_seconds",
]

#: The batch-size adaptation modes of Shockwave's traces.
BATCH_MODES: tuple[str, ...] = ("static", "accordion", "gns")

#: Samples per epoch by model (lower case, no ``-``/``_``) [S]: the training-set sizes
#: Shockwave's simulator sizes an epoch with. CIFAR-10's 50,000 training images; WikiText-2's
#: 2,088,628 training tokens in 35-token sequences (59,675); ImageNet and MovieLens-20M as the
#: subsets Shockwave trains on (100,000 images; 117,907 users).
EPOCH_SAMPLES: dict[str, int] = {
    "resnet18": 50_000,
    "resnet50": 100_000,
    "lm": 59_675,
    "recommendation": 117_907,
}

#: Critical epochs at the start of training under Accordion [S, one length for all: R].
ACCORDION_HEAD = 10
#: Length of the critical regime after a learning-rate decay [S].
ACCORDION_AFTER_DECAY = 10
#: Fraction of the epochs that always runs at the initial batch size under Accordion [S].
ACCORDION_SMALL_FRACTION = 0.3
#: Learning-rate decay epochs of each model's recipe [S].
ACCORDION_DECAYS: dict[str, tuple[int, ...]] = {
    "resnet18": (150, 250),
    "resnet50": (),
    "lm": (),
    "recommendation": (60, 80),
}
#: Periodic learning-rate decays (every so many epochs) [S].
ACCORDION_DECAY_PERIOD: dict[str, int] = {"resnet50": 30}
#: First epoch of batch growth under GNS [R].
GNS_FIRST: dict[str, int] = {"resnet18": 20, "resnet50": 100, "lm": 20, "recommendation": 20}
#: Epochs between two doublings under GNS [R].
GNS_PERIOD = 20

_VARIANT = re.compile(r"^(.*) \(batch size (\d+)\)$")


def _key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


@dataclass(frozen=True, slots=True)
class BatchPhase:
    """One phase of a schedule: a batch size held for whole epochs.

    Attributes
    ----------
    batch_size : int
    epochs : int
        Epochs of the phase (the last may end early: the trace's partial epoch).
    end : float
        Cumulative work (base steps) at which the phase ends; the last phase ends at the work.
    job_type : str
        The table's variant ``v(b)`` used for its rate.
    variant_batch : int
        The batch size of that variant.
    steps_per_epoch : int
        ``S(b) = ceil(D / b)``.
    """

    batch_size: int
    epochs: int
    end: float
    job_type: str
    variant_batch: int
    steps_per_epoch: int


@dataclass(frozen=True, slots=True)
class BatchSchedule:
    """A job's batch-size phases (see the module notes); phase 0 runs at the initial batch size.

    Attributes
    ----------
    mode : str
        ``"accordion"`` or ``"gns"``.
    epoch_samples : int
        ``D``.
    phases : tuple of BatchPhase
        At least two, consecutive phases differ in batch size.
    """

    mode: str
    epoch_samples: int
    phases: tuple[BatchPhase, ...]

    @property
    def ends(self) -> tuple[float, ...]:
        """The phases' ``end`` values, in order."""
        return tuple(p.end for p in self.phases)

    def phase_at(self, done: float) -> int:
        """Index of the phase that progress ``done`` (base steps) is in.

        The first phase whose ``end`` exceeds ``done``; the last phase once ``done`` reaches the
        work.
        """
        k = bisect.bisect_right(self.ends, done)
        return min(k, len(self.phases) - 1)

    def phase_works(self) -> tuple[float, ...]:
        """Base steps of each phase (``end`` differences)."""
        out: list[float] = []
        prev = 0.0
        for p in self.phases:
            out.append(p.end - prev)
            prev = p.end
        return tuple(out)


def accordion_batches(model: str, b0: int, epochs: int, large: int) -> list[int]:
    """Per-epoch batch sizes of Accordion (module notes: critical regimes small, else ``large``).

    >>> accordion_batches("lm", 10, 20, 80)[:6], accordion_batches("lm", 10, 20, 80)[10:]
    ([10, 10, 10, 10, 10, 10], [80, 80, 80, 80, 80, 80, 80, 80, 80, 80])
    """
    key = _key(model)
    decays = ACCORDION_DECAYS.get(key, ())
    period = ACCORDION_DECAY_PERIOD.get(key)
    out: list[int] = []
    for e in range(epochs):
        critical = e < ACCORDION_HEAD
        critical |= any(d <= e < d + ACCORDION_AFTER_DECAY for d in decays)
        if period is not None:
            critical |= e % period < ACCORDION_AFTER_DECAY
        critical |= e <= ACCORDION_SMALL_FRACTION * epochs
        out.append(b0 if critical else large)
    return out


def gns_batches(model: str, b0: int, epochs: int, large: int) -> list[int]:
    """Per-epoch batch sizes of GNS growth (module notes).

    Doubling every ``GNS_PERIOD`` epochs from ``GNS_FIRST``, capped at ``large``.

    >>> gns_batches("lm", 10, 62, 80)[19:22], gns_batches("lm", 10, 62, 80)[59:]
    ([10, 20, 20], [40, 80, 80])
    """
    first = GNS_FIRST.get(_key(model))
    out: list[int] = []
    for e in range(epochs):
        if first is None or e < first:
            out.append(b0)
            continue
        doublings = 1 + (e - first) // GNS_PERIOD
        # compare in log space: a long job must not overflow 2 ** doublings
        out.append(large if doublings >= math.log2(max(large / b0, 1.0)) else b0 * 2**doublings)
    return [min(b, large) for b in out]


_RULES: dict[str, Callable[[str, int, int, int], list[int]]] = {
    "accordion": accordion_batches,
    "gns": gns_batches,
}


def _variants(family: str, throughputs: Throughputs) -> list[tuple[int, str]]:
    """``(batch size, job type)`` of every table variant of ``family``, sorted."""
    out = []
    for jt in throughputs.job_types:
        m = _VARIANT.match(jt)
        if m is not None and m.group(1) == family:
            out.append((int(m.group(2)), jt))
    return sorted(out)


def _nearest(variants: list[tuple[int, str]], b: int) -> tuple[int, str]:
    return min(variants, key=lambda v: (abs(math.log(v[0] / b)), v[0]))


def derive_schedule(
    mode: str,
    job_type: str,
    batch_size: float,
    work: float,
    throughputs: Throughputs,
    *,
    epoch_samples: Mapping[str, int] | None = None,
) -> BatchSchedule | None:
    """The schedule of a job (module notes), or ``None`` when its batch size never changes.

    Parameters
    ----------
    mode : str
        ``static``, ``accordion`` or ``gns`` (``""`` is static).
    job_type : str
        The job's table type (``"ResNet-18 (batch size 32)"``); its family names the model.
    batch_size : float
        Initial batch size ``b0`` (NaN: the job type's variant batch size).
    work : float
        The job's work in base steps (``total_steps``).
    throughputs : Throughputs
        Gives the model's measured batch sizes (``B`` is the largest) and the phase variants.
    epoch_samples : mapping, optional
        ``D`` by model key (default :data:`EPOCH_SAMPLES`).

    Raises
    ------
    InvalidInstanceError
        An unknown mode (field ``batch_mode``); more epochs than the budget
        ``max_schedule_epochs`` (field ``total_steps``, :mod:`optsched.limits`).
    """
    if mode in ("", "static"):
        return None
    rule = _RULES.get(mode)
    if rule is None:
        raise InvalidInstanceError(
            "batch_mode", f"must be one of {list(BATCH_MODES)}, got {mode[:40]!r}"
        )
    m = _VARIANT.match(job_type)
    if m is None:
        return None  # no batch-size variants: nothing tells batch sizes apart
    family = m.group(1)
    key = _key(family)
    samples = (EPOCH_SAMPLES if epoch_samples is None else epoch_samples).get(key)
    variants = _variants(family, throughputs)
    if samples is None or key not in GNS_FIRST or not variants:
        return None  # a model Shockwave does not adapt
    b0 = int(m.group(2))
    if isinstance(batch_size, int | float) and math.isfinite(batch_size) and batch_size >= 1:
        b0 = int(batch_size)
    large = variants[-1][0]
    if b0 >= large:
        return None
    s0 = math.ceil(samples / b0)
    # bounded before the per-epoch list is built: a job of 1e15 steps would ask for 1e10
    # epochs (hundreds of GB); work / s0 as a float cannot overflow (work is finite)
    limits.check_size("total_steps", work / s0, "max_schedule_epochs", "epochs")
    epochs = math.ceil(work / s0)
    per_epoch = rule(family, b0, epochs, large)
    phases: list[BatchPhase] = []
    e = 0
    for b in _runs(per_epoch):
        count = b[1]
        e += count
        vb, vt = (b0, job_type) if b[0] == b0 else _nearest(variants, b[0])
        phases.append(
            BatchPhase(
                batch_size=b[0],
                epochs=count,
                end=min(work, float(e * s0)),
                job_type=vt,
                variant_batch=vb if b[0] != b0 else int(m.group(2)),
                steps_per_epoch=math.ceil(samples / b[0]),
            )
        )
    if len(phases) < 2:
        return None
    return BatchSchedule(mode=mode, epoch_samples=samples, phases=tuple(phases))


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """Run-length encoding ``[(value, count), ...]``."""
    out: list[tuple[int, int]] = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1] + 1)
        else:
            out.append((v, 1))
    return out


def phase_factor(
    throughputs: Throughputs,
    schedule: BatchSchedule,
    phase: int,
    gpu_type: str,
    n: int,
    consolidated: bool = True,
) -> float:
    r"""``f_p(g, n)``: the phase's rate over the base rate, in base steps (module notes).

    1.0 exactly for a phase at the initial batch size; 0.0 when the base variant has no rate.
    """
    p = schedule.phases[phase]
    base = schedule.phases[0]
    if p.batch_size == base.batch_size:
        return 1.0
    t0 = throughputs.rate(base.job_type, n, gpu_type, consolidated)
    if t0 <= 0:
        return 0.0
    tp = throughputs.rate(p.job_type, n, gpu_type, consolidated)
    # samples/s of the phase; the base variant's when the table lacks this one here
    samples_p = tp * p.variant_batch if tp > 0 else t0 * base.variant_batch
    per_sample = samples_p / (t0 * base.variant_batch)
    return (
        per_sample * (base.batch_size / p.batch_size) * (base.steps_per_epoch / p.steps_per_epoch)
    )


def phase_seconds(schedule: BatchSchedule, rate_of_phase: Callable[[int], float]) -> float:
    """Seconds to do the whole work at ``rate_of_phase(k)`` base steps/s in phase ``k``.

    ``inf`` when some phase with work has no positive rate.
    """
    total = 0.0
    for k, w in enumerate(schedule.phase_works()):
        if w <= 0:
            continue
        r = rate_of_phase(k)
        if r <= 0:
            return math.inf
        total += w / r
    return total
