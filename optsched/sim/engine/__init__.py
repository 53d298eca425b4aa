"""The event loop that carries a policy's decisions out.

The engine (:mod:`.core`: :func:`~.core.simulate`; its parts listed in :mod:`.state`), the policy
interface it calls (:mod:`.policy`), Gavel's round mechanism (:mod:`.gavel`, in parts:
:mod:`.gavel_options`, :mod:`.gavel_book`, :mod:`.gavel_walk`, :mod:`.gavel_round`) and the replay
of a fixed plan (:mod:`.replay`).
"""
