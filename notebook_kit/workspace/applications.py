"""Applications as a whole: finding, creating, renaming and deleting one, and what
deleting one takes with it."""

from __future__ import annotations

from dataclasses import dataclass

from ..domain.models import Application, Stage
from ..errors import ConflictError, NotFoundError
from ..store.store import Store

__all__ = [
    "Deletion",
    "create_application",
    "delete_application",
    "deletion_impact",
    "find_application",
    "rename_application",
]


def find_application(store: Store, app: str) -> Application:
    """The application ``app``; NotFoundError when there is none."""
    found = store.get_application(app)
    if found is None:
        raise NotFoundError(f"no application {app!r}")
    return found


def create_application(store: Store, app: str, label: str = "") -> Application:
    """Save a new, empty application; ConflictError when ``app`` exists."""
    record = Application(app, label)
    with store.transaction():
        if store.get_application(app):
            raise ConflictError(f"application {app!r} already exists")
        store.put_application(record)
    return record


def delete_application(store: Store, app: str) -> None:
    """Remove ``app``, its definitions, its secrets (every version) and what it has live
    (its deployment history stays)."""
    with store.transaction():
        find_application(store, app)
        store.delete_application(app)
        store.secrets.forget(app)
        store.bump_generation()


def rename_application(store: Store, app: str, label: str) -> Application:
    """Give ``app`` a new label (blank: its ID, as at creation); its ID never changes.

    The label shows in exports and in the OpenAPI title of the next deploy; what is live
    keeps the label it was deployed with.
    """
    with store.transaction():
        found = store.get_application(app)
        if found is None:
            raise NotFoundError(f"no application {app!r}")
        record = Application(found.id, label, found.type)
        store.put_application(record)
        store.bump_generation()  # other studios and servers notice the change
    return record


@dataclass(frozen=True)
class Deletion:
    """What ``Workspace.delete_application(app)`` would remove: its saved definitions and
    the stages it is live on (undeployed there). Its deployment history stays."""

    app: str
    definitions: int
    live_stages: tuple[str, ...]

    def describe(self) -> str:
        """The sentence a person reads before confirming."""
        count = f"{self.definitions} definition{'s' if self.definitions != 1 else ''}"
        live = (
            f"it is undeployed from {' and '.join(self.live_stages)}"
            if self.live_stages
            else "nothing of it is live"
        )
        return f"Delete application {self.app}: its {count} go and {live} (history stays)."


def deletion_impact(store: Store, app: str) -> Deletion:
    """What deleting ``app`` removes; refused (NotFoundError) for an unknown application."""
    if store.get_application(app) is None:
        raise NotFoundError(f"no application {app!r}")
    live = {(str(stage), live_app) for stage, live_app, _, _ in store.live_snapshots()}
    return Deletion(
        app,
        len(store.list_definitions(app)),
        tuple(str(s) for s in Stage if (str(s), app) in live),
    )
