"""Drafting a definition's contract from the calls it has seen (``Workspace.infer_contract``).

The requests are the definition's saved examples and the recorded calls the request log
keeps that reach it (``record_requests_dev`` / ``_prod``); the answers are what the saved
definition gives each of them now, run as the Test tab runs it (in a sandboxed process,
within its limits) with its contract set aside, so the draft describes the action rather
than the contract being replaced. ``domain.contract_drafts`` turns them into a draft.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..domain.contract_drafts import SampleAnswer, SampleRequest, infer_contract
from ..domain.contracts import EMPTY, Contract
from ..domain.models import Definition
from ..errors import NotebookKitError
from ..store.store import Store
from .examples import list_examples
from .replay import logged_call

if TYPE_CHECKING:
    from ..domain.test_runs import Invocation

__all__ = ["MAX_RECORDED", "draft_contract", "samples_of"]

#: The most recorded calls a draft reads (the newest).
MAX_RECORDED = 50


def samples_of(store: Store, definition: Definition) -> list[SampleRequest]:
    """The requests ``definition`` was shown: its examples', then recorded calls (newest
    ``MAX_RECORDED``) that reach it."""
    requests = [
        SampleRequest(
            e.request.path_parameters, e.request.query, e.request.headers, e.request.body.encode()
        )
        for e in list_examples(store, definition.app, definition.id)
    ]
    prefixes = tuple(f"/{stage}/{definition.app}/" for stage in ("dev", "prod"))
    recorded = [
        row["id"]
        for row in store.request_log()
        if row.get("request") is not None
        and str(row["path"]).startswith(prefixes)
        and row["method"] == definition.method
    ]
    for entry_id in reversed(recorded[-MAX_RECORDED:]):
        try:
            call = logged_call(store, entry_id)
        except NotebookKitError:  # the saved definitions no longer route it
            continue
        if call.api_id == definition.id and not call.truncated:
            requests.append(
                SampleRequest(call.path_parameters, call.query, call.headers, call.body.encode())
            )
    return requests


def draft_contract(
    store: Store, test: Callable[..., Invocation], definition: Definition
) -> Contract:
    """A draft contract of the saved ``definition`` (see the module docstring); ``test``
    runs a definition on a request (``ActionRunner.test``). With no call seen, the draft
    declares only the path parameters."""
    requests = samples_of(store, definition)
    plain = replace(definition, contract=EMPTY)
    answers = []
    for request in requests:
        try:
            run = test(
                plain,
                path_parameters=request.path_parameters,
                query=request.query,
                headers=request.headers,
                body=request.body,
            )
        except NotebookKitError:  # a path parameter missing, sources that do not compile
            continue
        if run.reason is None:  # the action's own answer (not a time-out or a crash)
            answers.append(SampleAnswer(run.status, run.content_type, run.body))
    return infer_contract(definition.method, definition.path_parameters, requests, answers)
