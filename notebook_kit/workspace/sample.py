"""Installing the sample application ``restapi_sample`` (its data, definitions and deploys).

Running it again changes nothing that is already as the sample has it: rows are replaced,
definitions are rewritten only when their content differs, and a stage is deployed only
when what it serves is not already the saved sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..domain import sample
from ..domain.models import Application, Stage
from .publishing import Publisher, same_content

__all__ = ["install_sample"]


def install_sample(
    database: Any, publisher: Publisher, deploy: Callable[[str, Stage], Any]
) -> Application:
    """Create (or restore) ``restapi_sample`` (its rows in ``database``, the environment
    database) and deploy it to both stages with ``deploy``."""
    with database.transaction() as db:  # portable SQL: SQLite, PostgreSQL, any database_url
        db.execute(sample.EMPLOYEE_TABLE)
        db.executemany("DELETE FROM employee WHERE id = ?", [(row[0],) for row in sample.EMPLOYEES])
        db.executemany("INSERT INTO employee (id, name, age) VALUES (?, ?, ?)", sample.EMPLOYEES)
    app = sample.SAMPLE_APP
    store = publisher.store
    with store.transaction():
        if store.get_application(app.id) != app:
            store.put_application(app)
        for definition in sample.sample_definitions():
            current = store.get_definition(app.id, definition.id)
            if current is None or not same_content(current, definition):
                store.replace_definition(definition.id, definition)
    for stage in Stage:
        if not publisher.is_live_as_saved(app.id, stage):
            deploy(app.id, stage)
    return app
