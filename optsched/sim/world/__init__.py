"""The simulated world: jobs, the cluster, GPU rates and what shapes them.

Jobs and the world (:mod:`.jobs`), its file form (:mod:`.file`), the cluster (:mod:`.cluster`),
rates (:mod:`.throughputs`, :mod:`.sources`, :mod:`.elasticflow_profiles`), batch-size schedules
(:mod:`.batch_schedule`), colocation (:mod:`.colocation`), generators (:mod:`.generate`) and offered
load (:mod:`.load`).

The direction of the imports: :mod:`.jobs` (the world) is read by :mod:`.file` and
:mod:`.colocation`, and imports neither. The world's document methods (:meth:`World.save
<optsched.sim.world.jobs.World.save>`, ``load``, ``to_dict``, ``from_dict``, ``schema``) reach
the file format through :data:`~optsched.sim.world.jobs.WORLD_IO`, which this package fills
below (the file format, and pydantic with it, imported on first use); the colocation mode is
named by its interface, :class:`~optsched.sim.world.jobs.ColocationMode`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched.sim.world.jobs import WORLD_IO

if TYPE_CHECKING:
    from optsched.sim.world.file import WorldFile
    from optsched.sim.world.jobs import World


def _record(world: World) -> WorldFile:
    from optsched.sim.world.file import world_record

    return world_record(world)


def _load(path: str | Path) -> World:
    from optsched.sim.world.file import load_world

    return load_world(path)


def _from_dict(data: Any) -> World:
    from optsched.sim.world.file import world_from_dict

    return world_from_dict(data)


def _schema() -> dict[str, Any]:
    from optsched.sim.world.file import WorldFile

    return WorldFile.schema()


WORLD_IO.update(record=_record, load=_load, from_dict=_from_dict, schema=_schema)
