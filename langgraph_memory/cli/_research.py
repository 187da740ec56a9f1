"""``langgraph-memory research CALL ...``: every typed research call, its options derived from the call itself.

The options are those the MCP tools take (see `langgraph_memory.research.calls`): one declaration, in the
research API, serves Python, MCP and this command. The result is printed as JSON.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from langgraph_memory.cli._common import AS_OF_HELP, EXIT_OK, Ctx, json_arg, json_object_arg, moment_arg
from langgraph_memory.config import MIN_RELEVANCE
from langgraph_memory.research.calls import ResearchCall, research_calls
from langgraph_memory.research.units import Unit

__all__ = ["register"]


def _help(param: inspect.Parameter, hint: Any) -> str | None:
    """What an option takes, from its declaration: the unit of a number, a Field's description, a model's fields.

    argparse reads ``%`` in help as a format: it is doubled.
    """
    text: str | None = None
    if typing.get_origin(param.annotation) is typing.Annotated:
        for meta in param.annotation.__metadata__:
            if isinstance(meta, Unit):
                text = meta.describe()
            elif isinstance(meta, FieldInfo) and meta.description and hint is not str:  # not "the text; not empty"
                text = meta.description
    if text is None and isinstance(hint, type) and issubclass(hint, BaseModel):
        units = {
            name: next((m for m in f.metadata if isinstance(m, Unit)), None) for name, f in hint.model_fields.items()
        }
        text = "a JSON object of " + ", ".join(f"{name} ({u.describe()})" if u else name for name, u in units.items())
    return None if text is None else text.replace("%", "%%")


def _option(parser: argparse.ArgumentParser, param: inspect.Parameter) -> None:
    """One ``--option`` for ``param``, typed after its annotation."""
    hint: Any = param.annotation
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)
    if optional:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    kwargs: dict[str, Any] = {"dest": param.name, "help": _help(param, hint)}
    required = param.default is inspect.Parameter.empty
    if required:
        kwargs["required"] = True
    else:
        kwargs["default"] = param.default
    origin = typing.get_origin(hint)
    if origin is Literal:
        kwargs["choices"] = list(typing.get_args(hint))
    elif hint is bool:
        kwargs["action"] = argparse.BooleanOptionalAction
    elif origin is list:
        (item,) = typing.get_args(hint)
        scalar = item in (str, int, float)
        kwargs.update(
            nargs="+", type=item if scalar else json_object_arg if typing.get_origin(item) is dict else json_arg
        )
    elif hint in (int, float, str):
        kwargs["type"] = hint
    elif origin is dict or (isinstance(hint, type) and issubclass(hint, BaseModel)):
        kwargs.update(type=json_object_arg, metavar="JSON")
    if param.name == "as_of":
        kwargs.update(type=moment_arg, help=AS_OF_HELP, metavar="WHEN")
    flag = "--" + param.name.replace("_", "-")
    parser.add_argument(flag, **kwargs)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "research", parents=[common], help="the typed research calls (findings to lessons), as the MCP tools offer them"
    )
    calls = p.add_subparsers(dest="call", required=True, metavar="CALL")
    for call in research_calls():
        cp = calls.add_parser(call.name, parents=[common], help=call.summary, description=call.summary)
        for param in call.signature.parameters.values():
            _option(cp, param)
        cp.set_defaults(func=functools.partial(_run, call))


def _run(call: ResearchCall, ctx: Ctx) -> int:
    arguments = {name: getattr(ctx.args, name) for name in call.signature.parameters}
    with ctx.open_memory(embed=True, create=call.name.startswith("store_")) as mem:
        ctx.load_model(mem)
        result = call.invoke(mem, arguments, min_relevance=MIN_RELEVANCE)
    ctx.emit(result)
    return EXIT_OK
