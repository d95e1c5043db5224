"""The studio's own CSS: the two panes, buttons sized to their labels, rows that wrap.

One ``<style>`` element inside the studio (an HTML widget), so it needs no JupyterLab
extension and applies only under ``.nk-studio``.
"""

from __future__ import annotations

__all__ = ["STUDIO_STYLE"]

STUDIO_STYLE = """<style>
.nk-studio { width: 100%; min-width: 0; align-items: flex-start; }
.nk-sidebar { flex: 0 0 270px; min-width: 220px; max-width: 320px; }
.nk-tabs { flex: 1 1 400px; min-width: 0; }
/* Narrow panes (800 px screens, a side panel open): rows wrap, the tabs go under the
   list, and no field, area or box is wider than what holds it. */
.nk-studio.widget-hbox, .nk-studio .widget-hbox { flex-wrap: wrap; }
.nk-studio .widget-inline-hbox, .nk-studio .widget-textarea,
.nk-studio .widget-html, .nk-studio .widget-box { min-width: 0; max-width: 100%; }
.nk-studio .widget-inline-hbox input, .nk-studio .widget-inline-hbox select,
.nk-studio textarea { min-width: 0; }
.nk-studio .nk-test-request, .nk-studio .nk-urls, .nk-studio .nk-deployment-description,
.nk-studio .nk-deployment-host { overflow-wrap: anywhere; }
.nk-studio .widget-checkbox { width: auto; }
.nk-studio .widget-checkbox label { white-space: normal; }
.nk-studio .widget-button, .nk-studio .jupyter-button { width: auto; min-width: max-content; }
.nk-studio .nk-tabs > .lm-TabBar .lm-TabBar-content { flex-wrap: wrap; }
.nk-studio .nk-tabs > .lm-TabBar .lm-TabBar-tab {
  flex: 0 0 auto; min-width: max-content; max-width: none; }
.nk-studio .widget-hbox, .nk-studio .widget-vbox { gap: 4px 8px; }
.nk-studio .widget-dropdown.nk-rollback-target { width: auto; }
.nk-studio .widget-dropdown.nk-rollback-target select { width: auto; flex: 0 0 auto; }
.nk-studio .widget-label { overflow: visible; text-overflow: clip; white-space: normal; }
.nk-studio .widget-dropdown.nk-rollback-stage { width: auto; }
.nk-studio .widget-dropdown.nk-rollback-stage select { width: 6em; flex: 0 0 auto; }
.nk-studio h4 { margin: 2px 0 6px 0; }
.nk-studio .nk-confirm .widget-html-content,
.nk-studio .nk-status .widget-html-content { line-height: 1.4; align-self: center; }
.nk-studio .widget-html:has(> .widget-html-content:empty) { display: none; }
</style>"""
