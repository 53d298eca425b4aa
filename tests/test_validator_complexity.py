"""Every validator is small functions: none has a McCabe complexity above 15.

``make lint`` enforces the same limit through ruff's C901; this test holds the validators to it
without ruff (which is a lint extra, not a test one), by counting with the standard library's
``ast``.

The counting rule (McCabe's cyclomatic complexity, one plus the decision points):

* 1 for the function itself;
* +1 for each ``if`` / ``elif``, conditional expression (``a if c else b``), ``for``, ``async
  for``, ``while``, ``except`` clause and ``match`` case;
* +(n - 1) for each boolean operation with n operands (``a and b or c`` counts 2);
* +1 for each ``for`` of a comprehension and +1 for each of its ``if`` filters;
* nested functions, lambdas and classes count toward the function that contains them (and are
  checked on their own as well).

``with``, ``try`` without handlers, ``assert``, ``return`` and ``break`` add nothing. The rule
counts boolean operators and comprehensions where ruff's C901 does not, so it is at least as
strict.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Every family's validator module.
VALIDATOR_MODULES = (
    "optsched/online/oasis/schedule.py",
    "optsched/online/aonline/schedule.py",
    "optsched/placement/validator.py",
    "optsched/allocation/gavel/validate.py",
    "optsched/allocation/optimus/validate.py",
    "optsched/allocation/chronus/validate.py",
    "optsched/allocation/andreas/validate.py",
    "optsched/comm/tensorlights/validator.py",
    "optsched/comm/pace/solve.py",
    "optsched/comm/pace/validator.py",
    "optsched/sim/measure/validate.py",
)

#: Modules a validator runs its checks in (held to the same limit; no ``validate`` of their own).
VALIDATOR_PARTS = (
    "optsched/sim/measure/reference.py",
    "optsched/sim/measure/segments.py",
)

MAX_COMPLEXITY = 15

_BRANCHES = (
    ast.If,
    ast.IfExp,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ExceptHandler,
    ast.match_case,
)


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """McCabe complexity of ``function`` by the rule of the module docstring."""
    count = 1
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, _BRANCHES):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
    return count


def functions(source: str) -> dict[str, int]:
    """Complexity of every function (methods and nested ones included) of a module's source."""
    tree = ast.parse(source)
    return {
        node.name: complexity(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _one(source: str) -> int:
    (value,) = functions(textwrap.dedent(source)).values()
    return value


def test_the_count_follows_the_documented_rule():
    assert _one("def f():\n    return 1\n") == 1
    assert _one("def f(x):\n    if x:\n        return 1\n    elif x > 2:\n        return 2\n") == 3
    assert _one("def f(x):\n    for i in x:\n        while i:\n            i -= 1\n") == 3
    assert _one("def f(a, b, c):\n    return a and b or c\n") == 3
    assert _one("def f(x):\n    return 1 if x else 2\n") == 2
    assert _one("def f(x):\n    return [i for i in x if i if i > 1 for j in i]\n") == 5
    body = "def f(x):\n    try:\n        pass\n    except ValueError:\n        pass\n"
    assert _one(body + "    except KeyError:\n        pass\n") == 3
    match = "def f(x):\n    match x:\n        case 1:\n            pass\n"
    assert _one(match + "        case _:\n            pass\n") == 3
    assert _one("def f(x):\n    with x:\n        assert x\n") == 1
    nested = functions("def f(x):\n    def g(y):\n        if y:\n            pass\n    return g\n")
    assert nested == {"f": 2, "g": 2}


@pytest.mark.parametrize("path", VALIDATOR_MODULES + VALIDATOR_PARTS)
def test_no_validator_function_is_more_complex_than_the_limit(path):
    source = (ROOT / path).read_text(encoding="utf-8")
    found = functions(source)
    assert found, f"{path} has no functions"
    assert path in VALIDATOR_PARTS or "validate" in found or "check_trace" in found, path
    too_complex = {name: c for name, c in found.items() if c > MAX_COMPLEXITY}
    assert not too_complex, f"{path}: {too_complex} (limit {MAX_COMPLEXITY})"
