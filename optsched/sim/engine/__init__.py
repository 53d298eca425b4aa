"""The event loop that carries a policy's decisions out.

The engine (:mod:`.core`), the policy interface it calls (:mod:`.policy`), Gavel's round mechanism
(:mod:`.gavel`) and the replay of a fixed plan (:mod:`.replay`).
"""
