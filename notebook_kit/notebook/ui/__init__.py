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
    nk-test-param           one Text per {name} path parameter, also nk-test-param-<name>
    nk-test-query           query string (Text, like a=1&b=2)
    nk-test-headers         headers (Textarea, one "Name: value" per line)
    nk-test-body            body (Textarea)
    nk-test-run             "Test" button (runs the saved definition in-process)
    nk-test-send-dev        "Send to dev" button (calls the live dev URL with the dev key)
    nk-test-output          the result (Output: status, duration, headers, body, printed
                            output, traceback)

Deploy panel (nk-deploy)
    nk-deploy-dev, nk-deploy-prod               Buttons
    nk-deploy-prod-confirm  "Confirm deploy to prod" (shown after nk-deploy-prod is clicked)
    nk-undeploy-dev, nk-undeploy-prod           Buttons
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

Application bar (nk-app-bar; ApplicationBar)
    nk-app-picker           the application to work on (Dropdown of IDs)
    nk-app-label            its label (Text); nk-app-rename saves it (Button)
    nk-app-delete           Button; asks in nk-app-delete-ask (Confirm: the question says how
                            many definitions go and which stages it is undeployed from;
                            nk-app-delete-ask-confirm / nk-app-delete-ask-cancel)
    nk-app-new-id, nk-app-new-label             Text; nk-app-create (Button)
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
    nk-logs-table           HTML table of the newest requests; status cells nk-status-<class>

Resources panel (nk-resources; ResourcesPanel)
    nk-resources-refresh    Button; nk-resources-status its status line
    nk-resources-view       HTML: per stage a box nk-resources-<stage> (also
                            nk-resources-stage) with nk-resources-total and nk-resources-quota,
                            a box nk-resource-app[data-app] per application, a
                            nk-resource-node[data-path] per path node, method badges
                            nk-method nk-method-<METHOD>

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

from .applications import ApplicationBar
from .deploy import DeployPanel
from .form import DefinitionForm
from .logs import LogsPanel
from .manage import ManagePanel
from .resources import ResourcesPanel
from .server_panel import ServerPanel
from .studio import Studio
from .table import DefinitionTable
from .tester import TestPanel

__all__ = [
    "ApplicationBar",
    "DefinitionForm",
    "DefinitionTable",
    "DeployPanel",
    "LogsPanel",
    "ManagePanel",
    "ResourcesPanel",
    "ServerPanel",
    "Studio",
    "TestPanel",
]
