"""The browser suite: one JupyterLab and one Chromium, ended with the package (Playwright's
sync API keeps an event loop on the main thread while it runs)."""
