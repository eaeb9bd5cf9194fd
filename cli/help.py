"""Help-text polish for the whole `pms-cli` tree: this Typer release prints the Python type of
every option (`--env <str>`, `--json <bool>`), which reads like a bug. `set_metavars(app)` gives
every option without an explicit metavar a conventional one (UUID, TEXT, INTEGER, YYYY-MM-DD)
and flags none, in one pass over the registered commands, so no command module has to repeat it.
"""

from __future__ import annotations

import datetime
import inspect
import typing
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import DefaultPlaceholder, OptionInfo

_BY_TYPE: dict[Any, str] = {str: "TEXT", int: "INTEGER", float: "NUMBER", uuid.UUID: "UUID",
                            datetime.date: "YYYY-MM-DD"}


class _BareHelp:
    """`--help` is a flag: show no type after it (Typer would print `<bool>`)."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class Command(_BareHelp, TyperCommand):
    """A command whose `--help` shows no type (after `--help`, nor after an argument: its
    metavar, e.g. `[NAME]...`, says what it takes)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            if param.param_type_name == "argument" and param.metavar:
                param.display_type_rich = lambda ctx: ""
        return params


class Group(_BareHelp, TyperGroup):
    """A group whose `--help` shows no type."""


def _apps(app: typer.Typer) -> Iterator[typer.Typer]:
    yield app
    for group in app.registered_groups:
        if group.typer_instance is not None:
            yield from _apps(group.typer_instance)


def _callbacks(app: typer.Typer) -> Iterator[Callable[..., Any]]:
    for command in app.registered_commands:
        if command.callback is not None:
            yield command.callback
    for group in app.registered_groups:
        if group.typer_instance is not None:
            yield from _callbacks(group.typer_instance)
    if app.registered_callback is not None and app.registered_callback.callback is not None:
        yield app.registered_callback.callback


def metavar_for(name: str, annotation: Any) -> str:
    """The metavar shown for an option: nothing for a flag, else by name or type."""
    if typing.get_origin(annotation) is list:
        annotation = typing.get_args(annotation)[0]
    if annotation is bool:
        return ""
    if name in ("env", "env_id") or annotation is uuid.UUID:
        return "UUID"
    if name.endswith("date"):
        return "YYYY-MM-DD"
    return _BY_TYPE.get(annotation, "TEXT")


def set_metavars(app: typer.Typer) -> None:
    """Give every option of `app`'s commands a readable metavar unless it declares one, and
    every command and group a `--help` without a type."""
    for each in _apps(app):
        if isinstance(each.info.cls, DefaultPlaceholder) or each.info.cls in (None, TyperGroup):
            each.info.cls = Group
        for command in each.registered_commands:
            if command.cls in (None, TyperCommand):
                command.cls = Command
    for callback in _callbacks(app):
        hints = typing.get_type_hints(callback)
        for name, param in inspect.signature(callback).parameters.items():
            info = param.default
            if isinstance(info, OptionInfo) and info.metavar is None:
                info.metavar = metavar_for(name, hints.get(name, str))
