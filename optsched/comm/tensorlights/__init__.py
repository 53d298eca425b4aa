"""TensorLights: parameter-server broadcasts contending at host NICs, and priority among them.

A resource manager co-locates the parameter servers (PSs) of several training jobs on the same
hosts. Every iteration, each PS shard broadcasts its part of the model to every worker of its
job, so co-located PSs contend for the host's NIC and workers straggle. TensorLights gives the
PS traffic of co-located jobs priorities at the host NIC and rotates them. This family is a
fluid model of that mechanism, with the family protocol:

* :class:`TensorLightsInstance` (hosts, :class:`NicHost`; jobs, :class:`PSJob`) with
  ``load``/``save``/``schema``, and :func:`generate_instance`;
* :func:`solve` -- the exact best static priority order, an
  :class:`~optsched.results.ExactResult` of :class:`SimulationResult`;
* the policies :func:`fair`, :func:`priority`, :func:`rotate`, :func:`one_green` and
  :func:`smith`, one calling convention (``policy(instance, **options)``, also
  :func:`run` by name), each returning a :class:`SimulationResult`; the engine under them is
  :func:`simulate` (Numba kernel, or its plain-Python reference);
* :func:`validate` -- an independent check of a run against its instance, a
  :class:`~optsched.results.Report`.
"""

from optsched.comm.tensorlights.family import FAMILY
from optsched.comm.tensorlights.generate import DEFAULT_BANDWIDTH, generate_instance
from optsched.comm.tensorlights.instance import NicHost, PSJob, TensorLightsInstance
from optsched.comm.tensorlights.order import lower_bound, smith_order, smith_rule_is_optimal, solve
from optsched.comm.tensorlights.policies import (
    ALGORITHMS,
    compare_policies,
    fair,
    one_green,
    priority,
    rotate,
    run,
    smith,
)
from optsched.comm.tensorlights.simulator import POLICIES, event_bound, simulate
from optsched.comm.tensorlights.solution import OBJECTIVES, NicTrace, SimulationResult
from optsched.comm.tensorlights.validator import validate

__all__ = [
    "ALGORITHMS",
    "DEFAULT_BANDWIDTH",
    "FAMILY",
    "OBJECTIVES",
    "POLICIES",
    "NicHost",
    "NicTrace",
    "PSJob",
    "SimulationResult",
    "TensorLightsInstance",
    "compare_policies",
    "event_bound",
    "fair",
    "generate_instance",
    "lower_bound",
    "one_green",
    "priority",
    "rotate",
    "run",
    "simulate",
    "smith",
    "smith_order",
    "smith_rule_is_optimal",
    "solve",
    "validate",
]
