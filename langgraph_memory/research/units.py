"""Numbers with units: each numeric research field says once what it measures and which values it takes.

A drawdown of 31 % is ``0.31``, not ``31``; a Sharpe ratio is a plain number; commissions are basis points.
Each kind of number is one `Unit`, and each numeric field and parameter is annotated with one, e.g.
``max_drawdown: Annotated[float | None, DRAWDOWN]``. Everything else is derived from that annotation:

* the record schemas (`langgraph_memory.research.collections`) refuse a value outside the range when it is
  written, with a message that suggests the fraction (``31`` -> "did you mean 0.31?");
* the research API checks its arguments the same way before anything is written or searched
  (`check_units`), and its docstrings list the units (``help(Memory.store_backtest)``);
* the MCP tools' JSON schema carries the unit as the parameter's ``description`` with ``minimum`` and
  ``maximum``, and the ``langgraph-memory research`` options print it in ``--help``.

    from langgraph_memory.research.units import DRAWDOWN

    DRAWDOWN.check(0.31, "max_drawdown")   # 0.31
    DRAWDOWN.check(31, "max_drawdown")     # ValidationError: ... got 31; did you mean 0.31?
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from langgraph_memory.errors import ValidationError

__all__ = [
    "Unit",
    "units_of",
    "check_units",
    "CONFIDENCE",
    "SHARPE",
    "SORTINO",
    "DRAWDOWN",
    "CAGR",
    "VOLATILITY",
    "WIN_RATE",
    "TURNOVER",
    "TRADES",
    "BPS",
    "COST_FRACTION",
    "ITERATION",
    "VERSION",
    "RELEVANCE",
    "TREND_STRENGTH",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Unit:
    """What a number measures and the values it may take.

    ``fraction`` marks a fraction that people often write as a percentage or with the wrong sign: a value
    outside the range is refused with the fraction it probably meant (``31`` -> ``0.31``, ``-0.2`` -> ``0.2``).

    Examples:
        >>> Unit("share of winning trades (0.55 = 55 %)", ge=0, le=1, fraction=True).describe()
        'share of winning trades (0.55 = 55 %); a fraction from 0 to 1'
    """

    meaning: str
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    fraction: bool = False
    whole: bool = False

    @property
    def range(self) -> str:
        """The allowed values in words: ``"a fraction from 0 to 1"``, ``"0 or more"``, ``"any finite number"``."""
        kind = "a fraction" if self.fraction else ("a whole number" if self.whole else "")
        if self.ge is not None and self.le is not None:
            bounds = f"from {self.ge:g} to {self.le:g}"
        elif self.gt is not None:
            bounds = f"above {self.gt:g}"
        elif self.ge is not None:
            bounds = f"{self.ge:g} or more"
        else:
            return kind or "any finite number"
        if not kind:
            return bounds
        return f"{kind} {bounds}" if bounds[0].isalpha() else f"{kind}, {bounds}"

    def describe(self) -> str:
        """The unit and its range, as the CLI help, the MCP schema and the docstrings print it."""
        return f"{self.meaning}; {self.range}"

    def admits(self, value: float) -> bool:
        return (
            (self.ge is None or value >= self.ge)
            and (self.le is None or value <= self.le)
            and (self.gt is None or value > self.gt)
        )

    def check(self, value: Any, name: str) -> Any:
        """``value`` as stored (a float, an int for a whole number, None for None), or `ValidationError`.

        Examples:
            >>> WIN_RATE.check(55, "win_rate")
            Traceback (most recent call last):
            ...
            langgraph_memory.errors.ValidationError: win_rate must be a fraction from 0 to 1 (share of winning trades: 0.55 = 55 %), got 55; did you mean 0.55?
        """
        if value is None:
            return None
        if self.whole:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValidationError(f"{name} must be {self.range} ({self.meaning}), got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValidationError(f"{name} must be a number ({self.describe()}), got {value!r}")
        if not math.isfinite(value):
            raise ValidationError(f"{name} must be a finite number ({self.describe()}), got {value!r}")
        if not self.admits(value):
            shown = f"{value:g}" if isinstance(value, float) else repr(value)  # 31, as typed, not 31.0
            raise ValidationError(f"{name} must be {self.range} ({self.meaning}), got {shown}{self._hint(value)}")
        return value if self.whole else float(value)

    def _hint(self, value: float) -> str:
        if not self.fraction:
            return ""
        for guess in (value / 100, -value, -value / 100):
            if self.admits(guess) and guess != 0:
                return f"; did you mean {round(guess, 10):g}?"
        return ""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        # The unit goes where MCP clients and LLMs read it: the parameter's description and bounds.
        schema = dict(handler(core_schema))
        schema["description"] = self.describe()
        bounds = {"minimum": self.ge, "maximum": self.le, "exclusiveMinimum": self.gt}
        schema.update({k: v for k, v in bounds.items() if v is not None})
        return schema


CONFIDENCE = Unit("how sure: 0.8 = 80 %", ge=0, le=1, fraction=True)
SHARPE = Unit("annualised Sharpe ratio, a plain number (1.2, not 120)")
SORTINO = Unit("annualised Sortino ratio, a plain number (1.6, not 160)")
DRAWDOWN = Unit("largest fall from a peak, as a positive fraction of it: 0.18 = 18 %", ge=0, le=1, fraction=True)
CAGR = Unit("compound annual growth rate: 0.09 = 9 % a year, -0.2 = -20 %", gt=-1, fraction=True)
VOLATILITY = Unit("annualised volatility of returns: 0.15 = 15 %", ge=0, fraction=True)
WIN_RATE = Unit("share of winning trades: 0.55 = 55 %", ge=0, le=1, fraction=True)
TURNOVER = Unit("annual one-way turnover, a multiple of capital: 4.2 = 420 % a year", ge=0)
TRADES = Unit("number of trades", ge=0, whole=True)
BPS = Unit("basis points: 1 bp = 0.01 %", ge=0)
COST_FRACTION = Unit("costs paid over the whole backtest, a fraction of starting capital: 0.02 = 2 %", ge=0)
ITERATION = Unit("the research loop's iteration", ge=0, whole=True)
VERSION = Unit("a version number, 1 for the first", ge=1, whole=True)
RELEVANCE = Unit("a search score to keep: 0.3 = a relevance of 30 %", ge=-1, le=1, fraction=True)
TREND_STRENGTH = Unit("trend strength on your indicator's own scale (an ADX of 25, say)")


def unit_of(hint: Any) -> Unit | None:
    """The `Unit` an annotation carries (``Annotated[float | None, DRAWDOWN]``), else None."""
    if typing.get_origin(hint) is typing.Annotated:
        return next((m for m in hint.__metadata__ if isinstance(m, Unit)), None)
    return None


def units_of(fn: Callable[..., Any]) -> dict[str, Unit]:
    """The units of ``fn``'s parameters, by name, read from their annotations.

    A parameter that takes a record model (``costs: BacktestCosts | dict``) has its fields' units listed
    under dotted names (``costs.commission_bps``).
    """
    out: dict[str, Unit] = {}
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        if name == "return":
            continue
        if (unit := unit_of(hint)) is not None:
            out[name] = unit
        for model in _models(hint):
            for field, info in model.model_fields.items():
                found = next((m for m in info.metadata if isinstance(m, Unit)), None)
                if found is not None:
                    out[f"{name}.{field}"] = found
    return out


def _models(hint: Any) -> list[type[BaseModel]]:
    """The pydantic models a parameter's annotation admits (``BacktestCosts | dict | None``)."""
    args = typing.get_args(hint) or (hint,)
    return [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]


def _argument(arguments: Mapping[str, Any], name: str) -> Any:
    """The argument ``name`` (``costs.total``: the field of a dict or model argument), None when absent."""
    head, _, field = name.partition(".")
    value = arguments.get(head)
    if not field or value is None:
        return value
    return value.get(field) if isinstance(value, Mapping) else getattr(value, field, None)


def check_units(fn: F) -> F:
    """Check ``fn``'s numeric arguments against their units before it runs; list the units in its docstring.

    Examples:
        >>> @check_units
        ... def f(win_rate: typing.Annotated[float | None, WIN_RATE] = None) -> float | None:
        ...     return win_rate
        >>> f(0.5), "win_rate: share of winning trades" in f.__doc__
        (0.5, True)
    """
    units = units_of(fn)
    if not units:
        return fn
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind(*args, **kwargs).arguments
        for name, unit in units.items():
            unit.check(_argument(arguments, name), name)
        return fn(*args, **kwargs)

    checked.__doc__ = _with_units(inspect.getdoc(fn) or "", units)
    return checked  # type: ignore[return-value]


def _with_units(doc: str, units: Mapping[str, Unit]) -> str:
    lines = [f"    {name}: {unit.describe()}" for name, unit in units.items()]
    return doc.rstrip() + "\n\nUnits:\n" + "\n".join(lines) + "\n"
