r"""NumPy's PCG64 draws inside Numba kernels, bit for bit (for :mod:`.pollux_kernels`).

Pollux's genetic search draws from a :class:`numpy.random.Generator` (PCG64). Its compiled
path (:mod:`optsched.goodput.policies.pollux_kernels`) takes the generator's state into a
``uint64`` array, draws from it with the functions below, and writes the state back, so that
the generator ends where the plain NumPy path leaves it and every draw is the same number.

The state array is ``[state_hi, state_lo, inc_hi, inc_lo, has_uint32, uinteger]``. PCG64 is a
128-bit linear congruential generator :math:`s \leftarrow a s + c \pmod{2^{128}}` with the
XSL-RR output of the new state (O'Neill, 2014); 128-bit products are formed from 64-bit halves.
What NumPy's ``Generator`` makes of the raw 64-bit outputs:

``random()``
    :math:`(x \gg 11) \cdot 2^{-53}`, one output per double.
32-bit draws
    the low half of an output, its high half kept for the next 32-bit draw (``has_uint32``).
``integers(low, high)`` (``int64``, range :math:`r = \text{high} - 1 - \text{low} < 2^{32} - 1`)
    no draw when :math:`r = 0`, else Lemire's multiply-and-reject on 32-bit draws.
``permutation(n)``
    a Fisher-Yates shuffle of ``arange(n)`` from the last position down, each position
    :math:`i` swapped with :math:`j \in [0, i]` drawn by masked rejection on 32-bit draws.

A draw whose value cannot change the search (module notes of :mod:`.pollux_kernels`) is
skipped by jumping the generator ahead (:func:`skip`: :math:`O(\log k)` for :math:`k` outputs,
Brown's algorithm), which leaves the state where drawing it would have.
The tests check every function against NumPy's generator, values and final state.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

__all__ = [
    "advance",
    "bounded",
    "draw32",
    "interval",
    "jump",
    "load_state",
    "next32",
    "next64",
    "next_double",
    "permutation",
    "skip",
    "step",
    "store_state",
    "to_double",
]

U64 = npt.NDArray[np.uint64]

_MASK64 = (1 << 64) - 1
#: PCG64's 128-bit multiplier, high and low halves.
MULT_HI = np.uint64(2549297995355413924)
MULT_LO = np.uint64(4865540595714422341)


def load_state(rng: np.random.Generator) -> U64 | None:
    """The PCG64 state of ``rng`` as the kernels' ``uint64`` array (``None``: not PCG64)."""
    raw: Any = rng.bit_generator.state
    if raw.get("bit_generator") != "PCG64":
        return None
    state, inc = int(raw["state"]["state"]), int(raw["state"]["inc"])
    return np.array(
        [state >> 64, state & _MASK64, inc >> 64, inc & _MASK64,
         int(raw["has_uint32"]), int(raw["uinteger"])],
        dtype=np.uint64,
    )  # fmt: skip


def store_state(rng: np.random.Generator, st: U64) -> None:
    """Write the kernels' state array back into ``rng`` (:func:`load_state`'s inverse)."""
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {
            "state": (int(st[0]) << 64) | int(st[1]),
            "inc": (int(st[2]) << 64) | int(st[3]),
        },
        "has_uint32": int(st[4]),
        "uinteger": int(st[5]),
    }


_M32 = np.uint64(0xFFFFFFFF)
_S32, _S11, _S58, _S63 = np.uint64(32), np.uint64(11), np.uint64(58), np.uint64(63)
_ONE, _ZERO = np.uint64(1), np.uint64(0)
_njit = numba.njit(cache=True, nogil=True)


@_njit
def mulhi(a: Any, b: Any) -> Any:
    """High 64 bits of the 128-bit product of two uint64."""
    a0, a1, b0, b1 = a & _M32, a >> _S32, b & _M32, b >> _S32
    p0, p1, p2, p3 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p0 >> _S32) + (p1 & _M32) + (p2 & _M32)
    return p3 + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)


@_njit
def mul128(ah: Any, al: Any, bh: Any, bl: Any) -> Any:
    """Product of two 128-bit numbers (high, low) modulo :math:`2^{128}`."""
    return mulhi(al, bl) + ah * bl + al * bh, al * bl


@_njit
def add128(ah: Any, al: Any, bh: Any, bl: Any) -> Any:
    """Sum of two 128-bit numbers (high, low) modulo :math:`2^{128}`."""
    lo = al + bl
    return ah + bh + (_ONE if lo < al else _ZERO), lo


@_njit
def step(hi: Any, lo: Any, inc_hi: Any, inc_lo: Any) -> Any:
    """One LCG step of state ``(hi, lo)``: ``(output, hi, lo)`` (XSL-RR of the new state)."""
    hi, lo = mul128(hi, lo, MULT_HI, MULT_LO)
    hi, lo = add128(hi, lo, inc_hi, inc_lo)
    rot = hi >> _S58
    x = hi ^ lo
    return (x >> rot) | (x << ((np.uint64(64) - rot) & _S63)), hi, lo


@_njit
def next64(st: Any) -> Any:
    """One 64-bit output: step the LCG, XSL-RR of the new state."""
    out, st[0], st[1] = step(st[0], st[1], st[2], st[3])
    return out


@_njit
def to_double(x: Any) -> float:
    r"""``Generator.random()``'s double of a 64-bit output, :math:`(x \gg 11) 2^{-53}`."""
    # the 53 bits fit an int64, whose conversion to a double is one instruction (exact)
    return float(np.int64(x >> _S11)) * (1.0 / 9007199254740992.0)


@_njit
def draw32(hi: Any, lo: Any, inc_hi: Any, inc_lo: Any, has: Any, buf: Any) -> Any:
    """:func:`next32` on a state held in variables: ``(x, hi, lo, has, buf)``."""
    if has != _ZERO:
        return buf, hi, lo, _ZERO, buf
    out, hi, lo = step(hi, lo, inc_hi, inc_lo)
    return out & _M32, hi, lo, _ONE, out >> _S32


@_njit
def advance(hi: Any, lo: Any, inc_hi: Any, inc_lo: Any, k: int) -> Any:
    """:func:`skip` on a state held in variables: ``(hi, lo)`` after ``k`` outputs."""
    if k < 16:
        for _ in range(k):
            _, hi, lo = step(hi, lo, inc_hi, inc_lo)
        return hi, lo
    return jump(hi, lo, inc_hi, inc_lo, k)


@_njit
def next_double(st: Any) -> float:
    """``Generator.random()``: one double in :math:`[0, 1)`."""
    return to_double(next64(st))


@_njit
def next32(st: Any) -> Any:
    """A 32-bit draw: the kept high half of the last output, else the low half of a new one."""
    if st[4] != _ZERO:
        st[4] = _ZERO
        return st[5]
    x = next64(st)
    st[4] = _ONE
    st[5] = x >> _S32
    return x & _M32


@_njit
def skip(st: Any, k: int) -> None:
    """Advance by ``k`` 64-bit outputs (the 32-bit buffer is left as it is)."""
    # Brown's jump-ahead: (a, c) composed with itself bit by bit of k
    if k <= 0:
        return
    if k < 16:
        for _ in range(k):
            next64(st)
        return
    st[0], st[1] = jump(st[0], st[1], st[2], st[3], k)


@_njit
def jump(hi: Any, lo: Any, inc_hi: Any, inc_lo: Any, k: int) -> Any:
    """State ``(hi, lo)`` advanced by ``k >= 0`` steps, by Brown's jump-ahead."""
    # (a, c) composed with itself bit by bit of k
    acc_mh, acc_ml, acc_ph, acc_pl = _ZERO, _ONE, _ZERO, _ZERO
    cur_mh, cur_ml, cur_ph, cur_pl = MULT_HI, MULT_LO, inc_hi, inc_lo
    while k > 0:
        if k & 1:
            acc_mh, acc_ml = mul128(acc_mh, acc_ml, cur_mh, cur_ml)
            acc_ph, acc_pl = mul128(acc_ph, acc_pl, cur_mh, cur_ml)
            acc_ph, acc_pl = add128(acc_ph, acc_pl, cur_ph, cur_pl)
        sh, sl = add128(cur_mh, cur_ml, _ZERO, _ONE)
        cur_ph, cur_pl = mul128(sh, sl, cur_ph, cur_pl)
        cur_mh, cur_ml = mul128(cur_mh, cur_ml, cur_mh, cur_ml)
        k >>= 1
    hi, lo = mul128(acc_mh, acc_ml, hi, lo)
    return add128(hi, lo, acc_ph, acc_pl)


@_njit
def bounded(st: Any, rng: int) -> Any:
    """``Generator.integers``' offset in :math:`[0, rng]` (Lemire), none drawn for ``rng = 0``."""
    # Generator.integers' draw of an offset in [0, rng], rng < 2**32 - 1 (Lemire)
    if rng == 0:
        return np.int64(0)
    excl = np.uint64(rng + 1)
    m = next32(st) * excl
    left = m & _M32
    if left < excl:
        threshold = (_M32 - np.uint64(rng)) % excl
        while left < threshold:
            m = next32(st) * excl
            left = m & _M32
    return np.int64(m >> _S32)


@_njit
def interval(st: Any, top: int) -> Any:
    """An index in :math:`[0, top]` by masked rejection (``Generator.shuffle``'s draw)."""
    # an index in [0, top] by masked rejection (Generator.shuffle's draw)
    if top == 0:
        return np.int64(0)
    mask = np.uint64(top)
    for sh in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(sh)
    v = next32(st) & mask
    while v > np.uint64(top):
        v = next32(st) & mask
    return np.int64(v)


@_njit
def permutation(st: Any, n: int) -> Any:
    """``Generator.permutation(n)``: Fisher-Yates from the last position down."""
    out = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = interval(st, i)
        out[i], out[j] = out[j], out[i]
    return out
