"""The notebook studio: ipywidgets over one ``Workspace``.

``notebook_kit.studio(ws)`` returns a :class:`Studio`: the application bar and the
definition list on the left, the tabs Edit | Test | Deploy | Logs | Resources | Server on
the right. Every panel is a thin face: it reads its inputs, calls one ``Workspace`` method,
and shows the result or the refusal in its OWN status line beside the button that caused
it. Destructive or prod-affecting actions ask first (``Confirm``: a question, "Confirm ...",
Cancel). No rule lives here.

CSS class contract (stable; the browser tests select on these). ipywidgets puts the class
on the widget's root element, so a Text is reached as ``.nk-field-id input``, a Dropdown as
``.nk-field-method select``, a Checkbox as ``.nk-field-auth input``, a Button as
``button.nk-save`` and an Output or HTML by its class. A status line is ``.nk-status`` plus
its own class, with ``nk-status-error`` while it shows a refusal. A ``Confirm`` bar ``X``
(``.nk-confirm.X``) holds ``button.X-confirm`` and ``button.X-cancel``.

Shell: layout, list and state
    nk-studio               the whole studio (HBox of the sidebar and the tabs)
    nk-sidebar              the left pane: application bar, search, New, the list
    nk-tabs                 the right pane (Tab): Edit, Test, Deploy, Logs, Resources, Server
    nk-search               label search box (Text, filters the list live)
    nk-new                  "New definition" button (asks first if the form is unsaved)
    nk-discard-ask          Confirm: discard unsaved edits (before New, another row or
                            another application); Cancel keeps the edits
    nk-sidebar-status       status line of the sidebar
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
    nk-save-status          Save's status line (saved, refused, changed elsewhere)
    nk-unsaved              "● unsaved changes" while the form differs from the saved one
    nk-error                every field's error line (HTML); each also nk-error-<field> with
                            <field> one of app id label method resource content_type timeout
                            constants action functions

Definition and application actions (nk-manage, in the Edit tab)
    nk-delete, nk-delete-ask, nk-delete-status          Delete (confirmed)
    nk-copy-to-app, nk-copy-new-id, nk-copy-run, nk-copy-status     Copy elsewhere
    nk-export, nk-export-link, nk-export-status         Export; the link is <a download=...>
    nk-import-upload, nk-import-replace, nk-import-status           Import an export file
    nk-commit-repo, nk-commit-message, nk-commit-run, nk-commit-status   Commit to git

Server tab (nk-server)
    nk-server-state         HTML: "running on http://...:PORT (port PORT)" or "stopped"
    nk-server-port          IntText (0 picks a free port; shows the real port once running)
    nk-server-start, nk-server-stop, nk-server-status   Buttons and their status line
    nk-server-url           Text with the base URL the links and "Send to dev" use (set to
                            the server's URL when it starts; edit it for `notebook-kit serve`)
    nk-key-dev, nk-key-prod HTML, masked unless revealed
    nk-keys-reveal          ToggleButton
    nk-rotate-dev, nk-rotate-prod, nk-rotate-ask, nk-keys-status    Rotate (confirmed)

Test tab (nk-test), Deploy tab (nk-deploy): see tester.py and deploy.py.
Logs tab (nk-logs), Resources tab (nk-resources), application bar (nk-app-bar): see
logs.py, resources.py and applications.py.
"""

from __future__ import annotations

from .applications import ApplicationBar
from .definition_list import DefinitionList
from .deploy import DeployPanel
from .form import DefinitionForm
from .logs import LogsPanel
from .manage import ManagePanel
from .resources import ResourcesPanel
from .server_panel import ServerPanel
from .studio import Studio
from .tester import TestPanel

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
