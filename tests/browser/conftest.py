"""One JupyterLab and one Chromium for the browser package (ended after its last test, so
Playwright's event loop is gone before the other tests run): each module writes its
notebook into a folder of its own in the shared lab and opens its own page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.lab import Lab, launch_browser, new_page, running_lab


@pytest.fixture(scope="package")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(tmp_path_factory.mktemp("lab")) as lab:
        yield lab


@pytest.fixture(scope="package")
def chromium() -> Iterator[Any]:
    with launch_browser() as browser:
        yield browser


@pytest.fixture(scope="module")
def page(chromium: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page of the module's own, sized by its ``VIEWPORT``."""
    viewport = getattr(request.module, "VIEWPORT", {"width": 1280, "height": 1200})
    with new_page(chromium, viewport) as tab:
        yield tab
