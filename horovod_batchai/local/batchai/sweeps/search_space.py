"""A sweep's search space, as Azure ML's sweep job spells it, and drawing values from it.

On the wire each parameter is ``[distribution, [arguments]]``, e.g. ``"lr": ["uniform", [0.001,
0.1]]`` or ``"batch": ["choice", [[32, 64]]]`` (the recorded Azure ML sweep submit). Azure ML's
meanings: ``loguniform(a, b)`` is ``exp(uniform(a, b))`` and ``lognormal(mu, sigma)`` is
``exp(normal(mu, sigma))``; the ``q`` forms round to a multiple of ``q``; ``randint(upper)`` is an
integer in ``[0, upper)``. Pure: no I/O.
"""
from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ...core.arm_errors import InvalidParameter

__all__ = ["Parameter", "parse_search_space", "grid_points", "random_point", "DISTRIBUTIONS"]

#: distribution -> how many numeric arguments it takes (choice takes one list).
DISTRIBUTIONS = {"choice": 1, "uniform": 2, "loguniform": 2, "normal": 2, "lognormal": 2, "quniform": 3,
                 "qloguniform": 3, "qnormal": 3, "qlognormal": 3, "randint": 1}
_TARGET = "properties.searchSpace"
#: a parameter name is what ${{search_space.<name>}} can name.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class Parameter:
    """One parameter of the search space."""

    name: str
    distribution: str
    #: the numeric arguments; for ``choice``, the values to choose from.
    args: tuple[Any, ...]

    @property
    def q(self) -> Optional[float]:
        return float(self.args[2]) if self.distribution.startswith("q") else None

    def quantize(self, value: float) -> float:
        q = self.q
        # rounded again to 12 places: 3 * 0.1 is 0.30000000000000004, which a command line would carry.
        return value if q is None else round(round(value / q) * q, 12)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidParameter(f"The property '{where}' must be a finite number; got {value!r}.", target=where)
    return float(value)


def _parameter(name: str, raw: Any) -> Parameter:
    where = f"{_TARGET}.{name}"
    if not name or not set(name) <= _NAME_CHARS:
        raise InvalidParameter(f"The search space parameter name {name[:80]!r} is invalid: use letters, digits and "
                               "'_' (it is named as ${{search_space.<name>}}).", target=where)
    form = "[distribution, [arguments]], e.g. [\"uniform\", [0.001, 0.1]] or [\"choice\", [[32, 64]]]"
    if not (isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], str) and isinstance(raw[1], list)):
        raise InvalidParameter(f"The property '{where}' must be {form}; got {str(raw)[:120]}.", target=where)
    distribution, args = raw[0].lower(), raw[1]
    if distribution not in DISTRIBUTIONS:
        raise InvalidParameter(f"The property '{where}' names the distribution {raw[0]!r}; the valid ones are "
                               f"{', '.join(DISTRIBUTIONS)}.", target=where)
    if len(args) != DISTRIBUTIONS[distribution]:
        raise InvalidParameter(f"The distribution {distribution} of '{where}' takes {DISTRIBUTIONS[distribution]} "
                               f"argument(s); got {len(args)}.", target=where)
    if distribution == "choice":
        values = args[0]
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
            raise InvalidParameter(f"The choice of '{where}' must be [[value, ...]]: a non-empty list of numbers or "
                                   "strings.", target=where)
        return Parameter(name, distribution, tuple(values))
    if distribution == "randint":
        upper = _number(args[0], where)
        if upper < 1 or upper != int(upper):
            raise InvalidParameter(f"randint of '{where}' takes an integer upper bound >= 1; got {args[0]!r}.",
                                   target=where)
        return Parameter(name, distribution, (int(upper),))
    numbers = tuple(_number(a, where) for a in args)
    if distribution in ("uniform", "loguniform", "quniform", "qloguniform") and not numbers[0] < numbers[1]:
        raise InvalidParameter(f"The bounds of '{where}' must be [low, high] with low < high; got {args[:2]}.",
                               target=where)
    if distribution in ("normal", "lognormal", "qnormal", "qlognormal") and not numbers[1] > 0:
        raise InvalidParameter(f"The sigma of '{where}' must be > 0; got {args[1]!r}.", target=where)
    if len(numbers) == 3 and not numbers[2] > 0:
        raise InvalidParameter(f"The q of '{where}' must be > 0; got {args[2]!r}.", target=where)
    return Parameter(name, distribution, numbers)


def parse_search_space(raw: Any) -> list[Parameter]:
    if not isinstance(raw, dict) or not raw:
        raise InvalidParameter("The property 'properties.searchSpace' must be an object naming at least one "
                               "parameter: {\"lr\": [\"uniform\", [0.001, 0.1]]}.", target=_TARGET)
    return [_parameter(name, value) for name, value in raw.items()]


def grid_points(space: list[Parameter]) -> list[dict[str, Any]]:
    """Every combination of the choices, in order (the first parameter varies slowest)."""
    return [dict(zip((p.name for p in space), combo)) for combo in itertools.product(*(p.args for p in space))]


def _draw(p: Parameter, rng: random.Random) -> Any:
    a = p.args
    if p.distribution == "choice":
        return a[rng.randrange(len(a))]
    if p.distribution == "randint":
        return rng.randrange(a[0])
    if p.distribution in ("uniform", "quniform"):
        value = rng.uniform(a[0], a[1])
    elif p.distribution in ("loguniform", "qloguniform"):
        value = math.exp(rng.uniform(a[0], a[1]))
    elif p.distribution in ("normal", "qnormal"):
        value = rng.gauss(a[0], a[1])
    else:  # lognormal, qlognormal
        value = math.exp(rng.gauss(a[0], a[1]))
    return p.quantize(value)


def random_point(space: list[Parameter], seed: Optional[int], index: int) -> dict[str, Any]:
    """Trial ``index``'s values: drawn from a generator seeded by the sweep's seed and the index, so a
    sweep with a seed draws the same trials whatever its concurrency or restarts (one without draws
    from the system's entropy)."""
    rng = random.Random(f"{seed}:{index}" if seed is not None else None)
    return {p.name: _draw(p, rng) for p in space}


def bounds_in_optuna(p: Parameter) -> Mapping[str, Any]:
    """The keyword arguments of Optuna's distribution for ``p`` (bounded distributions only)."""
    a = p.args
    if p.distribution == "uniform":
        return {"low": a[0], "high": a[1]}
    if p.distribution == "loguniform":
        return {"low": math.exp(a[0]), "high": math.exp(a[1]), "log": True}
    if p.distribution == "quniform":
        return {"low": a[0], "high": a[1]}
    if p.distribution == "qloguniform":
        return {"low": math.exp(a[0]), "high": math.exp(a[1]), "log": True}
    raise ValueError(p.distribution)
