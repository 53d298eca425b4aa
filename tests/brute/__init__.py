"""Brute-force references the tests check the exact models against, one module per family.

Imported as ``from brute.<family> import ...`` (``tests/`` is on ``sys.path`` through the
rootdir conftest, as for ``strategies``).
"""
