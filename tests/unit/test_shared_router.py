"""Apps built from one route table share its compiled tree, and each answers with its own
resources: a request never reaches another app's dependencies."""

from __future__ import annotations

import falcon
import falcon.testing

from pms.api.router import SharedRouter


class Item:
    def __init__(self, name: str) -> None:
        self.name = name

    def on_get(self, req, resp, item_id):
        resp.media = {"app": self.name, "id": item_id}

    def on_get_list(self, req, resp):
        resp.media = {"app": self.name, "list": True}

    def on_post_list(self, req, resp):
        resp.media = {"app": self.name, "posted": True}


class Other:
    def __init__(self, name: str) -> None:
        self.name = name

    def on_get(self, req, resp):
        resp.media = {"other": self.name}


def app_of(name: str, *, extra: bool = False) -> tuple[falcon.App, SharedRouter]:
    router = SharedRouter()
    app = falcon.App(router=router)
    item = Item(name)
    app.add_route("/items/{item_id:int}", item)
    app.add_route("/items", item, suffix="list")
    if extra:
        app.add_route("/other", Other(name))
    return app, router


def client(app: falcon.App) -> falcon.testing.TestClient:
    return falcon.testing.TestClient(app)


def test_each_app_answers_with_its_own_resources_through_one_tree():
    first, first_router = app_of("first")
    second, second_router = app_of("second")
    assert client(first).simulate_get("/items/7").json == {"app": "first", "id": 7}
    assert client(second).simulate_get("/items/7").json == {"app": "second", "id": 7}
    assert client(second).simulate_get("/items").json == {"app": "second", "list": True}
    assert client(second).simulate_post("/items").json == {"app": "second", "posted": True}
    assert client(first).simulate_post("/items").json == {"app": "first", "posted": True}
    assert first_router._tree is second_router._tree  # compiled once


def test_falcons_own_responders_still_answer_on_a_shared_tree():
    app_of("first")
    second, _ = app_of("second")
    assert client(second).simulate_delete("/items/7").status_code == 405
    options = client(second).simulate_options("/items")
    assert options.status_code == 200
    assert set(options.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}
    assert client(second).simulate_get("/nowhere").status_code == 404
    assert client(second).simulate_get("/items/not-a-number").status_code == 404


def test_another_table_gets_its_own_tree():
    _, plain = app_of("plain")
    app, extended = app_of("extended", extra=True)
    assert client(app).simulate_get("/other").json == {"other": "extended"}
    client(app_of("again")[0]).simulate_get("/items")
    assert extended._tree is not plain._tree


def test_two_instances_of_one_class_keep_an_unshared_tree():
    router = SharedRouter()
    app = falcon.App(router=router)
    app.add_route("/a", Other("a"))
    app.add_route("/b", Other("b"))
    assert client(app).simulate_get("/a").json == {"other": "a"}
    assert client(app).simulate_get("/b").json == {"other": "b"}


def test_the_services_apps_route_to_their_own_dependencies(settings, database, clock):
    """Two apps of the service with different settings: each request sees its own app's."""
    from dataclasses import replace

    from pms.app import create_app

    first = create_app(settings, db=database, clock=clock)
    other_settings = replace(settings, jwt_audience="someone-else")
    second = create_app(other_settings, db=database, clock=clock)
    first_router, second_router = first._router, second._router
    client(first).simulate_get("/v1/health")
    client(second).simulate_get("/v1/health")
    assert first_router._tree is second_router._tree
    resource, _map, _params, _template = second_router.find("/v1/health")
    assert resource.deps.settings.jwt_audience == "someone-else"
    resource, _map, _params, _template = first_router.find("/v1/health")
    assert resource.deps.settings.jwt_audience == settings.jwt_audience
