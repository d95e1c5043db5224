"""Examples of definitions: saving them, and checking an application against them.

An example is saved only for a definition that exists, with a value for each of its path
parameters and no others; a name is unique per definition (an existing one is replaced
only when asked). ``check_application`` runs all of an application's examples, each a
test run (a fresh sandboxed process, held to the definition's time limit), on the saved
definitions or on what a stage serves (docs/examples.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..domain.checks import CheckReport
from ..domain.examples import Example
from ..domain.models import Stage
from ..errors import ConflictError, NotFoundError, ValidationError
from ..store.store import Store
from .publishing import Publisher

__all__ = [
    "check_application",
    "list_examples",
    "postman_examples",
    "remove_example",
    "save_example",
]


def _definition_exists(store: Store, app: str, api_id: str) -> tuple[str, ...]:
    """The path parameters of ``app``'s definition ``api_id`` (NotFoundError if none)."""
    found = store.get_definition(app, api_id)
    if found is None:
        if store.get_application(app) is None:
            raise NotFoundError(f"no application {app!r}")
        raise NotFoundError(f"no definition {api_id!r} in application {app!r}")
    return found.path_parameters


def save_example(store: Store, example: Example, replace: bool = False) -> Example:
    """Save ``example`` of a saved definition; refused whole if anything is wrong."""
    with store.transaction():
        example.check_parameters(_definition_exists(store, example.app, example.api_id))
        if not replace and store.examples.get(example.app, example.api_id, example.name):
            raise ConflictError(
                f"definition {example.api_id!r} of {example.app!r} already has an example "
                f"{example.name!r}; choose another name or replace it (CLI: --replace)"
            )
        store.examples.put(example)
    return example


def list_examples(store: Store, app: str, api_id: str | None = None) -> list[Example]:
    """The examples of ``app`` (of its definition ``api_id`` only, if given)."""
    if api_id is not None:
        _definition_exists(store, app, api_id)
    elif store.get_application(app) is None:
        raise NotFoundError(f"no application {app!r}")
    return store.examples.list(app, api_id)


def remove_example(store: Store, app: str, api_id: str, name: str) -> None:
    with store.transaction():
        _definition_exists(store, app, api_id)
        if store.examples.get(app, api_id, name) is None:
            raise NotFoundError(f"definition {api_id!r} of {app!r} has no example {name!r}")
        store.examples.delete(app, api_id, name)


def check_application(publisher: Publisher, app: str, stage: Stage | None) -> CheckReport:
    """Run ``app``'s examples on its saved definitions (``stage`` None) or on what
    ``stage`` serves (NotFoundError when it serves nothing of ``app``)."""
    store = publisher.store
    if store.get_application(app) is None:
        raise NotFoundError(f"no application {app!r}")
    if stage is None:
        target, definitions = "saved", store.list_definitions(app)
    else:
        target, definitions = str(stage), publisher.live_snapshot(app, stage)[1]
    examples = store.examples.list(app)
    ran = publisher.check(app, target, definitions, examples, stage or Stage.DEV)
    return ran or CheckReport(app, target)


def postman_examples(
    publisher: Publisher, app: str, stage: Stage, collection: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """``collection`` (converted from ``app``'s OpenAPI document on ``stage``) with each
    saved example of ``app`` as a request with tests, and the examples left out
    (``domain.postman.with_example_tests``)."""
    from ..domain.postman import with_example_tests

    if not isinstance(collection, Mapping) or not isinstance(collection.get("item"), list):
        raise ValidationError(
            "not a Postman collection (it has no 'item' list): convert the application's "
            "OpenAPI document with openapi-to-postmanv2 first",
            field="collection",
        )
    definitions = publisher.live_snapshot(app, stage)[1]
    return with_example_tests(collection, definitions, publisher.store.examples.list(app))
