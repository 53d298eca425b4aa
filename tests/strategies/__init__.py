"""Hypothesis strategies shared by the test modules, one module per family.

Every strategy of the suite lives here, none in a test module, and is imported one way:
``from strategies.<family> import ...``. ``tests/`` has no ``__init__.py``, so pytest's rootdir
conftest puts ``tests/`` itself on ``sys.path`` (``rootdir``-relative "prepend" import mode);
that holds for ``pytest``, ``python -m pytest`` and every pytest-xdist worker alike, whereas
``tests.strategies`` would resolve only when the checkout's root is on ``sys.path`` too. The
brute-force references the tests check against live beside it, in ``brute/``, imported as
``from brute.<family> import ...``.
"""
