"""A Falcon router whose compiled route tree is shared by every app built from one route table.

Falcon's `CompiledRouter` checks each route as it is added (responders, template segments,
conflicts with the routes before it) and, on the first request, generates and compiles the
source of its `find`. For the route table of this service that is most of what building an app
costs, and it is the same work each time: the tree depends only on the templates and on which
resource class and responder serves each, not on the resource instances' dependencies. So the
first app built from a table compiles the tree with its own resources, and every later app with
the same table (another gunicorn worker, or the next test) reuses it: a route found there is
answered with this app's instance of the resource's class and its responders of the same name.

The table is the process's static route list (pms.routes), so sharing it holds no state that
requests could change; an app with a table of its own (tests that build one) gets its own tree.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from falcon.routing import CompiledRouter

__all__ = ["SharedRouter"]

_TREES: OrderedDict[tuple[Any, ...], CompiledRouter] = OrderedDict()
_TREES_KEPT = 8  # distinct route tables: the service has one; tests build a few of their own
_LOCK = threading.Lock()


class SharedRouter:
    """The router of one app (Falcon's custom-router interface: `add_route`, `find`, `options`)."""

    def __init__(self) -> None:
        self._added: list[tuple[str, Any, tuple[tuple[str, Any], ...]]] = []
        self._instances: dict[type, Any] = {}
        self._tree: CompiledRouter | None = None
        self._bound: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._suffixes: dict[str, str | None] = {}
        self._private = False  # two instances of one class: this app's own tree, nothing shared
        self.options = CompiledRouter().options

    def add_route(self, uri_template: str, resource: object, **kwargs: Any) -> None:
        if self._tree is not None:
            raise RuntimeError("routes are added before the app serves its first request")
        cls = type(resource)
        if self._instances.setdefault(cls, resource) is not resource:
            self._private = True
        self._added.append((uri_template, resource, tuple(sorted(kwargs.items()))))
        self._suffixes[uri_template] = kwargs.get("suffix")

    def find(self, uri: str, req: Any = None) -> tuple[Any, dict[str, Any], dict[str, Any], str] | None:
        found = (self._tree or self._shared_tree()).find(uri, req)
        if found is None:
            return None
        if self._private:
            return found
        resource, method_map, params, template = found
        bound = self._bound.get(id(method_map))
        if bound is None:
            bound = self._bound[id(method_map)] = self._rebind(resource, method_map, template)
        return bound[0], bound[1], params, template

    def _rebind(self, resource: Any, method_map: dict[str, Any],
                template: str) -> tuple[Any, dict[str, Any]]:
        """This app's resource of the found one's class, and its responders for the route
        (`on_<method>[_<suffix>]`, as Falcon maps them; Falcon's own defaults, such as 405 and
        OPTIONS, belong to the route, not to a resource)."""
        mine = self._instances[type(resource)]
        if mine is resource:
            return resource, method_map
        suffix = self._suffixes.get(template)
        tail = f"_{suffix}" if suffix else ""
        return mine, {method: (getattr(mine, f"on_{method.lower()}{tail}")
                               if getattr(responder, "__self__", None) is resource else responder)
                      for method, responder in method_map.items()}

    def _shared_tree(self) -> CompiledRouter:
        if self._private:
            self._tree = self._compiled()
            return self._tree
        key = tuple((template, type(resource), kwargs) for template, resource, kwargs in self._added)
        with _LOCK:
            tree = _TREES.get(key)
            if tree is None:
                tree = _TREES[key] = self._compiled()
                while len(_TREES) > _TREES_KEPT:
                    _TREES.popitem(last=False)
            else:
                _TREES.move_to_end(key)
        self._tree = tree
        return tree

    def _compiled(self) -> CompiledRouter:
        tree = CompiledRouter()
        for name, converter in self.options.converters.items():
            tree.options.converters[name] = converter
        for template, resource, kwargs in self._added:
            tree.add_route(template, resource, **dict(kwargs))
        tree.find("/")  # compile now rather than on a request
        return tree
