"""The options of ElasticFlow's mechanism and the rules it reads off a job.

See :mod:`optsched.sim.engine.elasticflow` for the mechanism and the guide page
``docs/guide/elasticflow_mechanism.rst`` for the reading of ElasticFlow's simulator it rests on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    from optsched.sim.engine.policy import Policy
    from optsched.sim.world.jobs import SimJob

__all__ = [
    "DEFAULT_SLOT_SECONDS",
    "EF_POLICIES",
    "ElasticFlowMechanism",
    "batch_size_of",
    "elasticflow_refuses",
    "gang_cap",
    "overhead_seconds",
    "scheme_of",
]

#: ElasticFlow's ``scheduling_slot`` (seconds): the shortest time between two decisions.
DEFAULT_SLOT_SECONDS = 60.0

#: optsched policy name -> the ElasticFlow scheduler it is run as under this mechanism.
EF_POLICIES: dict[str, str] = {
    "elasticflow": "elasticflow",
    "edf": "edf",
    "edf-elastic": "edf",
    "tiresias-las": "dlas",
    "gandiva": "gandiva",
    "themis": "themis",
    "chronus": "chronus",
}

_BATCH = re.compile(r"\(batch size (\d+)\)\s*$")


@dataclass(frozen=True)
class ElasticFlowMechanism:
    """Options of ElasticFlow's mechanism (module notes of :mod:`~.elasticflow`).

    Attributes
    ----------
    slot_seconds : float
        The shortest time between two decisions (ElasticFlow's ``scheduling_slot``, 60 s):
        events closer than this to the last decision are taken together one slot after it.
    overhead : bool
        Charge ElasticFlow's scaling and restart overhead (:func:`overhead_seconds`) to the
        ``elasticflow`` scheduler's running jobs at every decision, as its simulator does
        (default ``True``; its EDF charges none either way).
    restart_every : int
        Every this many decisions the overhead is a restart's and the communicator cache is
        emptied (ElasticFlow reuses ``scheduling_slot`` for it: 60).
    measured_rates : bool
        With a world built from ElasticFlow's scaling profiles: run every job at the rate
        measured for its gang size (ElasticFlow's table, not monotone: bert at batch 128 runs
        slower on 64 A100s than on 16), and plan only on the measured sizes, rather than at the
        concave envelope the world interpolates (default ``True``; the record's world carries
        the measured table, so the validator checks against it).
    clock_origin : float
        The trace's time of the world's ``t = 0`` (a world built from a trace starts its clock
        at the first arrival): ElasticFlow's Gandiva rotates its time slices only at decisions
        whose trace time is a multiple of the slot. ``sim run`` and ``sim compare`` set it to
        the trace's first arrival. Default 0.
    stop_at_plan_end : bool
        The ``elasticflow`` scheduler's running jobs stop at their plan's end, as in
        ElasticFlow's simulator (default ``True``). Between two decisions a job runs from the
        end of its overhead no further than the end its plan was given at the last decision
        (ElasticFlow's ``real_end_time``, which leaves the overhead out), so the work the
        overhead displaced waits for the next decision, where the job is planned again and
        charged again; its GPUs stay its own meanwhile, idle. Its end event is its plan's end
        rounded up to the decision's slot grid plus the overhead (ElasticFlow's ``end_time``):
        when that is the next decision, the job runs on until its work is done, which is by
        then. A planned change of a gang is an event only when it comes before the next arrival
        and every running job's plan end on the grid (ElasticFlow adds it before it charges the
        overheads, against end events still there; one at a plan's end is lost). A job left
        with less work than its overhead's worth makes no progress (a *stall*) until a decision
        falls on its end event. ``False``: a job runs on past its plan's end until its work is
        done or the next decision, its end event is when its work is done, and every planned
        change is an event. Either way a job completes only with all its work done.
    themis_face : {"centre", "vertex"}
        Which point of an optimal face ElasticFlow's Themis takes when its round's optimum is
        not unique (:func:`~optsched.sim.engine.elasticflow_themis.ftf_allocation`): the
        analytic centre (default; where ElasticFlow's interior-point ECOS tends) or the vertex
        HiGHS returns.
    chronus_solver : {"highs", "scip"}
        The matrix backend Chronus's lease MILP is solved with
        (:func:`~optsched.sim.engine.elasticflow_chronus.lease_plan`; default ``"highs"``).
        Both solve it to optimality; which of several optimal plans comes back is the solver's
        own, so this switches the plan among the optima alone (ElasticFlow's is python-mip's).
    """

    slot_seconds: float = DEFAULT_SLOT_SECONDS
    overhead: bool = True
    restart_every: int = 60
    measured_rates: bool = True
    clock_origin: float = 0.0
    stop_at_plan_end: bool = True
    themis_face: str = "centre"
    chronus_solver: str = "highs"

    def __post_init__(self) -> None:
        s = self.slot_seconds
        if isinstance(s, bool) or not (isinstance(s, int | float) and math.isfinite(s) and s > 0):
            raise InvalidInstanceError("slot_seconds", f"must be a finite number > 0, got {s!r}")
        if not isinstance(self.overhead, bool):
            raise InvalidInstanceError("overhead", f"must be a bool, got {self.overhead!r}")
        o = self.clock_origin
        if isinstance(o, bool) or not (isinstance(o, int | float) and math.isfinite(o)):
            raise InvalidInstanceError("clock_origin", f"must be a finite number, got {o!r}")
        if not isinstance(self.measured_rates, bool):
            raise InvalidInstanceError(
                "measured_rates", f"must be a bool, got {self.measured_rates!r}"
            )
        if not isinstance(self.stop_at_plan_end, bool):
            raise InvalidInstanceError(
                "stop_at_plan_end", f"must be a bool, got {self.stop_at_plan_end!r}"
            )
        if self.themis_face not in ("centre", "vertex"):
            raise InvalidInstanceError(
                "themis_face", f"must be 'centre' or 'vertex', got {self.themis_face!r}"
            )
        if self.chronus_solver not in ("highs", "scip"):
            # the matrix backends of optsched.solvers.solve_matrix (not imported here: light)
            raise InvalidInstanceError(
                "chronus_solver", f"must be 'highs' or 'scip', got {self.chronus_solver!r}"
            )
        r = self.restart_every
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise InvalidInstanceError("restart_every", f"must be an integer >= 1, got {r!r}")


def scheme_of(policy: Policy) -> str | None:
    """The ElasticFlow scheduler ``policy`` runs as (``None``: none under this mechanism)."""
    return EF_POLICIES.get(policy.name)


def elasticflow_refuses(policy: Policy) -> str | None:
    """Why ElasticFlow's mechanism cannot carry out ``policy`` (``None``: it can)."""
    if scheme_of(policy) is None:
        names = ", ".join(sorted(EF_POLICIES))
        return (
            "ElasticFlow's mechanism runs its own schedulers, under the policy names "
            f"{names}; this one has no counterpart there yet"
        )
    return None


def batch_size_of(job: SimJob) -> int | None:
    """The global batch size in the job type's name (``"bert (batch size 128)"``), if any."""
    m = _BATCH.search(job.job_type)
    return int(m.group(1)) if m else None


def _elasticflow_cap(model: str, batch: int) -> int:
    """ElasticFlow's largest gang of a model on A100 GPUs for its own scheduler.

    Its simulator caps each model by what was measured to still scale (``models.py``,
    ``get_max_gpu``): deepspeech2 at its batch size, gpt2 at 16 (batch 128) or 32 (256), bert
    at 8 (batch 64) or 16, inception3 at 16 (64) or 32 (128), resnet50 and vgg16 at 32 with
    batch 64; every other case ``min(batch, 64)``.
    """
    rules: dict[tuple[str, int | None], int] = {
        ("gpt2", 128): 16,
        ("gpt2", 256): 32,
        ("bert", 64): 8,
        ("bert", None): 16,
        ("inception3", 64): 16,
        ("inception3", 128): 32,
        ("resnet50", 64): 32,
        ("vgg16", 64): 32,
    }
    if model == "deepspeech2":
        return batch
    if (model, batch) in rules:
        return rules[(model, batch)]
    if (model, None) in rules:
        return rules[(model, None)]
    return min(batch, 64)


def gang_cap(job: SimJob, scheme: str, cluster_gpus: int) -> int:
    """The largest gang ``job`` may be given under ``scheme`` on a cluster of ``cluster_gpus``.

    ``elasticflow``: ElasticFlow's per-model cap (:func:`_elasticflow_cap`); ``edf``: its
    EDF's ``min(64, batch size)`` whatever the trace asks. A job type without a batch size in
    its name keeps its own ``max_gpus``. Never above the cluster.
    """
    batch = batch_size_of(job)
    if scheme in ("dlas", "gandiva", "themis", "chronus"):
        return max(1, min(job.num_gpus, cluster_gpus))  # its requested gang, always
    if batch is None:
        cap = job.max_gpus
    elif scheme == "elasticflow":
        cap = _elasticflow_cap(job.model or job.job_type.split(" ")[0], batch)
    else:
        cap = min(64, batch)
    return max(1, min(cap, cluster_gpus))


def overhead_seconds(gpus: int, cluster_gpus: int, *, restart: bool, cached: bool) -> float:
    r"""ElasticFlow's modelled scaling overhead of one job at one decision (seconds).

    A base of 2 s (7 s on a cluster of 256 GPUs or more) for every running job; a gang whose
    GPU set has no communicator yet (not *cached*) adds :math:`2 (\log_2 n + 1)` for its
    ``n`` GPUs, and at a restart decision also 27 s (47 s on 256 GPUs or more). These are the
    constants ElasticFlow fitted to its measured scaling and restart times.
    """
    big = cluster_gpus >= 256
    base = 7.0 if big else 2.0
    if cached:
        return base
    extra = (47.0 if big else 27.0) if restart else 0.0
    return base + extra + 2.0 * (math.log2(gpus) + 1.0)
