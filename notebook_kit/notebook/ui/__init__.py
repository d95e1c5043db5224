"""The notebook studio: ipywidgets over one ``Workspace``.

``notebook_kit.studio(ws)`` returns a :class:`Studio`. Every panel is a thin face: it reads
its inputs, calls one ``Workspace`` method, and shows the result or the refusal in the
studio's status line. No rule lives here.

CSS class contract (stable; the browser tests select on these). ipywidgets puts the class
on the widget's root element, so a Text is reached as ``.nk-field-id input``, a Textarea as
``.nk-action textarea``, a Dropdown as ``.nk-field-method select``, a Checkbox as
``.nk-field-auth input``, a Button as ``button.nk-save`` and an Output or HTML by its class.

Studio and status
    nk-studio               the whole studio (VBox)
    nk-status               the status line (HTML); also nk-status-error when it shows a refusal
    nk-app-picker           application (Combobox: pick one or type a new ID, then Enter)
    nk-search               label search box (Text, filters live)
    nk-new                  "New" button: empty form for a new definition
    nk-definitions          the definitions table (HTML; one <tr data-api-id="..."> per row)
    nk-definition-picker    the definition to edit (Dropdown; follows the search filter)

Definition form (nk-form)
    nk-field-id, nk-field-label, nk-field-resource, nk-field-content-type   Text
    nk-field-method         Dropdown of GET POST PUT DELETE OPTIONS
    nk-field-auth           Checkbox "requires authentication"
    nk-constants            the constant rows; each row nk-constant-row holding
                            nk-constant-name (Text), nk-constant-type (Dropdown),
                            nk-constant-value (Text), nk-constant-remove (Button)
    nk-constant-add         Button adding a row
    nk-action               action source (Textarea, monospace; also nk-code)
    nk-functions            user functions (Textarea, monospace; also nk-code)
    nk-save                 Save button
    nk-error                every field's error line (HTML); each also nk-error-<field> with
                            <field> one of app id label method resource content_type
                            constants action functions

Test panel (nk-test)
    nk-test-request         HTML: the method and the full dev URL of the call (the URL in
                            nk-test-url), following the inputs
    nk-test-param           one Text per {name} path parameter, also nk-test-param-<name>
    nk-test-query           query string (Text, like a=1&b=2)
    nk-test-headers         headers (Textarea, one "Name: value" per line)
    nk-test-body            body (Textarea)
    nk-test-run-saved       "Run saved" button (the saved definition, in-process)
    nk-test-run-edited      "Run edited" button (the form's unsaved draft, in-process;
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
    nk-deploy-status        Status beside the buttons: stage, deployment ID and time
    nk-diff                 HTML: saved against live, per stage a div nk-diff-<stage>
                            (data-in-sync="true|false") listing nk-diff-added /
                            nk-diff-removed / nk-diff-changed definitions, a unified diff
                            of a changed action or functions in pre.nk-diff-unified
    nk-deployments          HTML: per stage a table nk-deployments-<stage>, newest first,
                            rows <tr data-deployment-id data-stage>; the live one holds
                            span.nk-live
    nk-rollback-stage       Dropdown dev / prod
    nk-rollback-target      Dropdown of that stage's kept deployments but the live one
    nk-rollback             Button; asks in nk-rollback-ask (-confirm / -cancel)
    nk-rollback-status      Status beside the rollback controls
    nk-urls                 endpoint URLs as links (HTML with <a class="nk-url-dev"> and
                            <a class="nk-url-prod">)
    nk-url-text             Text widgets holding each URL (also nk-url-text-dev / -prod)
    nk-copy                 copy-to-clipboard buttons (anywidget)
    nk-curl                 ready-made curl line (Textarea)

Definition actions (nk-manage)
    nk-delete, nk-delete-confirm                Delete, then "Confirm delete"
    nk-copy-to-app, nk-copy-new-id, nk-copy-run Copy to another application
    nk-export, nk-export-link                   Export; the link is <a download=...>
    nk-import-upload, nk-import-replace         FileUpload and "replace existing" Checkbox
    nk-commit-repo, nk-commit-message, nk-commit-run   Commit to a git repository

Resources panel (nk-resources)
    nk-resources-refresh    Button
    nk-resources-view       HTML: per stage the totals and the tree

Server panel (nk-server)
    nk-server-port          IntText (0 picks a free port)
    nk-server-start, nk-server-stop             Buttons
    nk-server-url           Text with the base URL the links and "Send to dev" use (set to
                            the server's URL when it starts; edit it for `notebook-kit serve`)
    nk-server-state         HTML: "running on http://..." or "stopped"
    nk-key-dev, nk-key-prod HTML, masked unless revealed
    nk-keys-reveal          ToggleButton
    nk-rotate-dev, nk-rotate-prod               Buttons
"""

from __future__ import annotations

from .deploy import DeployPanel
from .form import DefinitionForm
from .manage import ManagePanel
from .resources import ResourcesPanel
from .server_panel import ServerPanel
from .studio import Studio
from .table import DefinitionTable
from .tester import TestPanel

__all__ = [
    "DefinitionForm",
    "DefinitionTable",
    "DeployPanel",
    "ManagePanel",
    "ResourcesPanel",
    "ServerPanel",
    "Studio",
    "TestPanel",
]
