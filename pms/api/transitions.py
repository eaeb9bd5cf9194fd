"""One generic transition resource for the aggregates moved by `POST .../{id}/{trigger}` (room
blocks, banquet events): one `on_post_<trigger>` responder per trigger of the machine, each
declared with `@endpoint` like any other, calling the aggregate's `run(ctx, property_id, id,
trigger, **params)` (params: `query` when the endpoint declares one).

The routes stay one per trigger (`Route(path + "/" + trigger, Resource, trigger)`), so the
operation ids, summaries and descriptions of the OpenAPI document stay one per trigger too."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import falcon

from pms.api.spec import endpoint


def transition_resource(name: str, triggers: Iterable[str], run: Callable[..., Any], *,
                        scope: str, summary: str, **declared: Any) -> type:
    """A resource class named `name` with a responder per trigger. `summary` is formatted with
    `trigger`; the other keyword arguments go to `@endpoint` as they are."""

    def responder_for(trigger: str) -> Any:
        @endpoint(scope, summary=summary.format(trigger=trigger), **declared)
        def responder(self: Any, req: falcon.Request, resp: falcon.Response, property_id: Any,
                      id: Any, **params: Any) -> None:  # noqa: A002
            resp.media = run(req.context.ctx, property_id, id, trigger, **params)

        responder.__name__ = f"on_post_{trigger}"
        return responder

    def __init__(self: Any, deps: Any) -> None:
        self.deps = deps

    namespace: dict[str, Any] = {"__init__": __init__, "__doc__": f"{name}: {summary}"}
    for trigger in triggers:
        namespace[f"on_post_{trigger}"] = responder_for(trigger)
    return type(name, (), namespace)


__all__ = ["transition_resource"]
