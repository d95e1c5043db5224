"""The notebook studio: ipywidgets over one ``Workspace``.

``notebook_kit.studio(ws)`` returns a :class:`Studio`: the application bar and the
definition list on the left, the tabs Edit | Test | Contract | Deploy | Logs | Resources |
Server | Consumers | Secrets on the right. Every panel is a thin face: it reads its inputs,
calls one ``Workspace`` method, and shows the result or the refusal in its OWN status line
beside the button that caused it. Destructive or prod-affecting actions ask first
(``Confirm``: a question, "Confirm ...", Cancel). No rule lives here.

CSS class contract (stable; the browser tests select on these). ipywidgets puts the class
on the widget's root element, so a Text is reached as ``.nk-field-id input``, a Dropdown as
``.nk-field-method select``, a Checkbox as ``.nk-field-auth input``, a Button as
``button.nk-save`` and an Output or HTML by its class. A status line is ``.nk-status`` plus
its own class, with ``nk-status-error`` while it shows a refusal; the studio's status
lines share one ``StatusBoard`` (a status belongs to the latest action, feedback.py).
A ``Confirm`` bar ``X`` (``.nk-confirm.X``) holds ``button.X-confirm`` and
``button.X-cancel``.

Shell: layout, list and state
    nk-studio               the whole studio (HBox of the sidebar and the tabs)
    nk-sidebar              the left pane: application bar, search, New, the list
    nk-tabs                 the right pane (Tab): Edit, Test, Contract, Deploy, Logs,
                            Resources, Server, Consumers, Secrets
    nk-search               search box (Text, filters the list live by label, path or ID)
    nk-new                  "New definition" button (asks first if the form is unsaved)
    nk-discard-ask          Confirm: discard unsaved edits (before New, another row or
                            another application); Cancel keeps the edits
    nk-sidebar-status       status line of the sidebar
    nk-sync                 hidden: makes browser-made actions read what the page shows
                            (sync.py) and Enter / Ctrl+S in the form's fields save
    nk-definitions          the definition list (anywidget); one clickable row
                            ``.nk-definition-row[data-api-id="..."]`` per definition (method
                            badge ``.nk-method``, resource, label, ``.nk-state-dev`` /
                            ``.nk-state-prod``); the open one also ``.nk-selected``

Definition form (nk-form, in the Edit tab)
    nk-field-id, nk-field-label, nk-field-resource, nk-field-content-type,
    nk-field-timeout        Text
    nk-field-method         Dropdown of GET POST PUT DELETE OPTIONS
    nk-field-auth           Checkbox "requires an API key"
    nk-constants            the constant rows; each row nk-constant-row holding
                            nk-constant-name (Text), nk-constant-type (Dropdown),
                            nk-constant-value (Text), nk-constant-remove (Button)
    nk-constant-add         Button adding a row
    nk-action, nk-functions CodeEditors (root also ``.nk-code-editor``; type into
                            ``.nk-action .cm-content``); a compile error marks its line
                            (``.cm-nk-error-line``, ``.cm-nk-error-marker``)
    nk-save                 Save button (Ctrl/Cmd+S in an editor does the same)
    nk-save-status          Save's status line (saved, refused, changed elsewhere); the
                            row of Save, nk-unsaved and nk-save-status is followed at once
                            by nk-manage (Delete and the folded actions): all in view
    nk-unsaved              "● unsaved changes" while the form differs from the saved one
    nk-error                every field's error line (HTML); each also nk-error-<field> with
                            <field> one of app id label method resource content_type timeout
                            constants action functions

Contract panel (nk-contract-panel, in the Contract tab)
    nk-contract-summary     HTML: what is declared (rows tr.nk-contract-parameter,
                            p.nk-contract-body, p.nk-contract-response)
    nk-contract-editor      CodeEditor holding the contract as JSON (Ctrl/Cmd+S saves)
    nk-contract-infer, nk-contract-save, nk-contract-revert, nk-contract-clear
                            Buttons; Clear asks first (Confirm nk-contract-clear-ask)
    nk-contract-status      the tab's status line

Test panel (nk-test)
    nk-test-request         HTML: the method and the full dev URL of the call (the URL in
                            nk-test-url), following the inputs; after Run edited it is the
                            edited version's (method, resource, path parameter inputs),
                            marked i.nk-test-edited, until Run saved or Send to dev
    nk-test-param           one Text per {name} path parameter, also nk-test-param-<name>
    nk-test-query           query string (Text, like a=1&b=2)
    nk-test-headers         headers (Textarea, one "Name: value" per line)
    nk-test-body            body (Textarea)
    nk-test-run-saved       "Run saved" button (the saved definition, a test run)
    nk-test-run-edited      "Run edited" button (the form's unsaved draft, a test run;
                            Ctrl/Cmd+Enter in the editor does the same)
    nk-test-send-dev        "Send to dev" button (the live dev URL, with the dev key)
    nk-test-message         the panel's status line (a Status): what ran, or the refusal
    nk-test-status          HTML "200 OK"; also nk-status-2xx / -3xx / -4xx / -5xx
    nk-test-duration        HTML: the whole run ("0.412 ms", "12.3 ms", "1.50 s")
    nk-test-version         HTML: "ran the saved version" / "ran the edited version" /
                            "sent to the live dev URL"
    nk-test-output          the answer (Output: "METHOD URL", headers, body with JSON
                            indented, printed output, traceback)
    nk-test-curl            the call as curl (Textarea; key masked unless revealed)
    nk-test-curl-reveal     ToggleButton revealing the key in nk-test-curl (the copy button
                            beside it always copies the runnable line)
    nk-test-history         this session's calls, newest first: rows nk-test-history-row,
                            each with a nk-test-history-rerun button

Deploy panel (nk-deploy)
    nk-deploy-dev, nk-deploy-prod               Buttons
    nk-deploy-prod-ask      Confirm for prod: nk-deploy-prod-ask-confirm / -cancel
    nk-undeploy-dev, nk-undeploy-prod           Buttons; both ask in nk-undeploy-ask
                            (nk-undeploy-ask-confirm / -cancel)
    nk-deploy-description   Text: the next deploy's description (optional, one line)
    nk-deploy-status        Status beside the buttons: stage, deployment ID and time
    nk-diff                 HTML: saved against live, per stage a div nk-diff-<stage>
                            (data-in-sync="true|false") listing nk-diff-added /
                            nk-diff-removed / nk-diff-changed definitions, a unified diff
                            of a changed action or functions in pre.nk-diff-unified
    nk-deployments          ClickableHtml: per stage a table nk-deployments-<stage>, newest
                            first, rows <tr data-deployment-id data-stage> (local time,
                            host .nk-deployment-host, .nk-deployment-description); the
                            live one holds span.nk-live, every other one a
                            button.nk-row-rollback (asks in nk-rollback-ask)
    nk-rollback-stage       Dropdown dev / prod
    nk-rollback-target      Dropdown of that stage's kept deployments but the live one
                            (disabled while there is none)
    nk-rollback             Button; asks in nk-rollback-ask (-confirm / -cancel)
    nk-rollback-status      Status beside the rollback controls
    nk-urls                 endpoint URLs as links (HTML with <a class="nk-url-dev"> and
                            <a class="nk-url-prod">)
    nk-url-text             Text widgets holding each URL (also nk-url-text-dev / -prod)
    nk-copy                 copy-to-clipboard buttons (anywidget)
    nk-curl                 ready-made curl line (Textarea; key masked unless revealed, path
                            parameters from the Test tab); nk-curl-reveal its ToggleButton

Definition and application actions (nk-manage, in the Edit tab, right under Save)
    nk-delete, nk-delete-ask, nk-delete-status          Delete (confirmed)
    nk-manage-more          ToggleButton "Copy, export, import, commit": shows or hides
                            nk-manage-more-box, which holds the four rows below
    nk-copy-to-app, nk-copy-new-id, nk-copy-run, nk-copy-status     Copy elsewhere
    nk-export, nk-export-link, nk-export-status         Export; the link is <a download=...>
    nk-import-upload, nk-import-replace, nk-import-status           Import an export file
    nk-commit-repo, nk-commit-message, nk-commit-run, nk-commit-status   Commit to git

Application bar (nk-app-bar; ApplicationBar)
    nk-app-welcome          "Start here: create an application": shown, with the new
                            application's fields, instead of the rest while there is none
    nk-app-picker           the application to work on (Dropdown of IDs)
    nk-app-label            its label (Text); nk-app-rename saves it (Button)
    nk-app-delete           Button; asks in nk-app-delete-ask (Confirm: the question says how
                            many definitions go and which stages it is undeployed from;
                            nk-app-delete-ask-confirm / nk-app-delete-ask-cancel)
    nk-app-new              ToggleButton "New application": shows nk-app-new-fields (open
                            by itself while the workspace has no application; folds again
                            after a create)
    nk-app-new-id, nk-app-new-label             Text; nk-app-create (Button), inside
                            nk-app-new-fields
    nk-app-status           the bar's status line: created, renamed, deleted, or the refusal

Logs panel (nk-logs; LogsPanel)
    nk-logs-stage, nk-logs-app, nk-logs-status  filters (Dropdowns: stage, application,
                            status class 2xx..5xx; the value '' is "all")
    nk-logs-refresh         Button; nk-logs-feedback the panel's status line ("N of M logged
                            requests match ...", "No requests yet")
    nk-logs-empty           the friendly note shown instead of the charts when none matches
    nk-logs-chart-rate      HTML holding an <svg class="nk-chart nk-chart-rate">: requests per
                            minute, a <rect class="nk-bar nk-bar-2xx|3xx|4xx|5xx"> per class
    nk-logs-chart-latency   HTML holding an <svg class="nk-chart nk-chart-latency">: p50/p99
                            (<polyline class="nk-line nk-line-p50|p99">, <circle class="nk-point">)
    nk-logs-table           ClickableHtml table of the newest requests; status cells
                            nk-status-<class>; a row opens its entry in nk-logs-details
                            (button.nk-logs-details-close folds it)

Resources panel (nk-resources; ResourcesPanel)
    nk-resources-refresh    Button; nk-resources-status its status line
    nk-resources-view       HTML: per stage a box nk-resources-<stage> (also
                            nk-resources-stage) with nk-resources-total and nk-resources-quota,
                            a box nk-resource-app[data-app] per application, a
                            nk-resource-node[data-path] per path node, method badges
                            nk-method nk-method-<METHOD>

Server tab (nk-server)
    nk-server-state         HTML: "running on http://...:PORT (port PORT)" or "stopped"
    nk-server-port          IntText (0 picks a free port; shows the real port once running)
    nk-server-start, nk-server-stop, nk-server-status   Buttons and their status line
    nk-server-url           Text with the base URL the links and "Send to dev" use (set to
                            the server's URL when it starts; edit it for `notebook-kit serve`)
    nk-key-dev, nk-key-prod HTML, masked unless revealed
    nk-keys-reveal          ToggleButton
    nk-rotate-dev, nk-rotate-prod, nk-rotate-ask, nk-keys-status    Rotate (confirmed)
"""

from __future__ import annotations

from ..extra import require_notebook_extra

# Before any widget module: without the notebook extra, one error naming the install.
require_notebook_extra("notebook_kit.studio (and request_charts)")

from .applications import ApplicationBar  # noqa: E402
from .definition_list import DefinitionList  # noqa: E402
from .deploy import DeployPanel  # noqa: E402
from .form import DefinitionForm  # noqa: E402
from .logs import LogsPanel  # noqa: E402
from .manage import ManagePanel  # noqa: E402
from .resources import ResourcesPanel  # noqa: E402
from .server_panel import ServerPanel  # noqa: E402
from .studio import Studio  # noqa: E402
from .tester import TestPanel  # noqa: E402

__all__ = [
    "ApplicationBar",
    "DefinitionForm",
    "DefinitionList",
    "DeployPanel",
    "LogsPanel",
    "ManagePanel",
    "ResourcesPanel",
    "ServerPanel",
    "Studio",
    "TestPanel",
]
