"""``fn.notebook_kit.artifacts``: documents an action renders from a template and data.

``print(template, data, format, name)`` renders HTML, CSV or PDF, keeps the document in
the file storage as ``artifacts/<id>.<ext>`` (its name, format and creation time in the
file's metadata) and returns the id. ``info(id)`` gives the metadata, ``download(id)`` the
content or a presigned link. Rendering happens inside ``print``, so an artifact that has
an id is complete: its ``state`` is always ``"ready"``.

Templates use ``$name`` / ``${name}`` placeholders (``string.Template`` syntax, ``$$`` for
a dollar sign), with dots reaching into nested data (``${customer.name}``). In HTML (and
PDF, which is rendered from the same HTML) every value is HTML-escaped; a list of dicts
becomes a ``<table>``, any other list a ``<ul>``. For CSV the template is the column list.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
import string
import uuid
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..domain.clock import now
from ..errors import BuiltinError, NotebookKitError
from .storage import FileStorage

__all__ = ["ArtifactFunctions", "render_csv", "render_html", "render_pdf"]

FORMATS = {
    "html": "text/html; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "pdf": "application/pdf",
}
FOLDER = "artifacts"
_ID = re.compile(r"[0-9a-f]{32}")
_FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
_FONT_FILES = {
    "": "DejaVuSans.ttf",
    "B": "DejaVuSans-Bold.ttf",
    "I": "DejaVuSans-Oblique.ttf",
    "BI": "DejaVuSans-BoldOblique.ttf",
}


class _Template(string.Template):
    idpattern = r"(?a:[_a-z][_a-z0-9]*(?:\.[_a-z0-9]+)*)"


def _lookup(data: Mapping[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise BuiltinError(
                f"artifacts.print: the template's ${{{dotted}}} has no value in data"
            )
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _html_value(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        columns = list(dict.fromkeys(k for row in value for k in row))
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        cells = (
            "".join(f"<td>{html.escape(_text(row.get(c)))}</td>" for c in columns) for row in value
        )
        body = "".join(f"<tr>{row}</tr>" for row in cells)
        return f'<table border="1"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    if isinstance(value, list):
        return "<ul>" + "".join(f"<li>{html.escape(_text(v))}</li>" for v in value) + "</ul>"
    return html.escape(_text(value))


def render_html(template: str, data: Mapping[str, Any]) -> str:
    """``template`` with each placeholder replaced by its escaped value from ``data``."""
    if not isinstance(template, str):
        raise BuiltinError("artifacts.print: an HTML or PDF template is text")

    class _Values(Mapping[str, str]):
        def __getitem__(self, key: str) -> str:
            return _html_value(_lookup(data, key))

        def __iter__(self) -> Any:
            return iter(data)

        def __len__(self) -> int:
            return len(data)

    try:
        return _Template(template).substitute(_Values())
    except ValueError as exc:
        raise BuiltinError(f"artifacts.print: the template is malformed ({exc})") from None


def _columns(template: Any, rows: list[Mapping[str, Any]]) -> list[str]:
    if template is None or template == "":
        return list(dict.fromkeys(k for row in rows for k in row))
    if isinstance(template, str):
        return next(csv.reader([template]))
    if isinstance(template, list) and all(isinstance(c, str) for c in template):
        return list(template)
    raise BuiltinError("artifacts.print: a CSV template is a list of column names (or None)")


def render_csv(template: Any, data: Any) -> str:
    """Rows (a list of dicts) as CSV; ``template`` names the columns and their order
    (a list, or one comma-separated line), ``None`` takes every key in first-seen order."""
    if not isinstance(data, list) or not all(isinstance(row, Mapping) for row in data):
        raise BuiltinError("artifacts.print: CSV data is a list of dicts (one per row)")
    columns = _columns(template, data)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in data:
        writer.writerow([_text(row.get(c)) for c in columns])
    return out.getvalue()


def render_pdf(template: str, data: Mapping[str, Any]) -> bytes:
    """The HTML rendering laid out as a PDF by fpdf2 (headings, paragraphs, bold/italic,
    lists, tables). DejaVu Sans is used when installed (all of Unicode it covers), else
    Helvetica, which only has Latin-1."""
    from fpdf import FPDF
    from fpdf.errors import FPDFException

    markup = render_html(template, data)
    pdf = FPDF()
    family = "helvetica"
    if all((_FONT_DIR / name).is_file() for name in _FONT_FILES.values()):
        family = "dejavu"
        for style, name in _FONT_FILES.items():
            pdf.add_font(family, style, str(_FONT_DIR / name))
    pdf.add_page()
    pdf.set_font(family, size=11)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fpdf2 warns about HTML it approximates
            pdf.write_html(markup, font_family=family)
            return bytes(pdf.output())
    except (FPDFException, ValueError, KeyError, IndexError) as exc:
        raise BuiltinError(f"artifacts.print: the PDF cannot be laid out ({exc})") from None


def _check_name(name: Any, artifact_id: str, ext: str) -> str:
    if name is None:
        return f"{artifact_id}.{ext}"
    if not isinstance(name, str) or not name.strip():
        raise BuiltinError("artifacts.print: name is non-empty text")
    if len(name) > 200 or any(c in name for c in "/\\") or not name.isprintable():
        raise BuiltinError(
            "artifacts.print: name is at most 200 printable characters without '/' or '\\'"
        )
    return name if name.lower().endswith(f".{ext}") else f"{name}.{ext}"


class ArtifactFunctions:
    """``fn.notebook_kit.artifacts``. ``storage`` and ``max_bytes`` are read per call;
    ``presign(path, options)`` is ``fn.getPresignedUrl``."""

    def __init__(
        self,
        storage: Callable[[], FileStorage],
        max_bytes: Callable[[], int],
        presign: Callable[[str, Mapping[str, Any]], str],
    ) -> None:
        self._storage = storage
        self._max_bytes = max_bytes
        self._presign = presign

    def __repr__(self) -> str:
        return "<fn.notebook_kit.artifacts: download, info, print>"

    def print(
        self, template: Any, data: Any = None, format: str = "html", name: str | None = None
    ) -> str:
        """Render ``data`` into ``template`` as ``format`` ("html", "csv" or "pdf"), keep
        it as ``artifacts/<id>.<format>`` and return the id (32 hex digits).

        HTML/PDF: ``$name`` placeholders, values escaped, a list of dicts becomes a table.
        CSV: ``data`` is a list of dicts, ``template`` the columns (or None for all keys).
        ``name`` is the download file name (the extension is added if missing).
        """
        fmt = format.lower() if isinstance(format, str) else format
        if fmt not in FORMATS:
            raise BuiltinError(f"artifacts.print: format is html, csv or pdf, not {format!r}")
        if fmt != "csv" and not isinstance(data, Mapping):
            if data is not None:
                raise BuiltinError("artifacts.print: HTML and PDF data is a dict of values")
            data = {}
        if fmt == "html":
            content: bytes = render_html(template, data).encode()
        elif fmt == "csv":
            content = render_csv(template, data).encode()
        else:
            content = render_pdf(template, data)
        limit = self._max_bytes()
        if len(content) > limit:
            raise BuiltinError(
                f"artifacts.print: the {fmt} document is {len(content)} bytes; "
                f"the limit (max_file_bytes) is {limit}"
            )
        artifact_id = uuid.uuid4().hex
        metadata = {"filename": _check_name(name, artifact_id, fmt), "created": now()}
        try:
            self._storage().write(
                f"{FOLDER}/{artifact_id}.{fmt}", content, FORMATS[fmt], metadata=metadata
            )
        except (NotebookKitError, OSError) as exc:
            raise BuiltinError(f"artifacts.print: cannot store the document ({exc})") from None
        return artifact_id

    def _find(self, artifact_id: Any, caller: str) -> tuple[str, dict[str, Any]]:
        if isinstance(artifact_id, str) and _ID.fullmatch(artifact_id):
            storage = self._storage()
            for fmt in FORMATS:
                path = f"{FOLDER}/{artifact_id}.{fmt}"
                try:
                    info = storage.stat(path)
                except NotebookKitError:
                    continue
                return path, {
                    "id": artifact_id,
                    "name": info.metadata.get("filename", os.path.basename(path)),
                    "format": fmt,
                    "contentType": info.content_type,
                    "size": info.size,
                    "created": info.metadata.get("created", info.modified),
                    "state": "ready",
                    "path": path,
                }
        raise BuiltinError(f"artifacts.{caller}: no artifact {artifact_id!r}")

    def info(self, artifact_id: str) -> dict[str, Any]:
        """The artifact's metadata: ``{"id", "name", "format", "contentType", "size",
        "created", "state", "path"}``; ``path`` is where it lies in the file storage."""
        return self._find(artifact_id, "info")[1]

    def download(self, artifact_id: str, options: Mapping[str, Any] | None = None) -> Any:
        """The artifact's content (str for HTML and CSV, bytes for PDF), or with
        ``{"presigned": True, "expiresIn": seconds}`` a presigned GET link to it."""
        options = dict(options or {})
        unknown = set(options) - {"presigned", "expiresIn"}
        if unknown:
            raise BuiltinError(f"artifacts.download: unknown option {sorted(unknown)[0]!r}")
        path, info = self._find(artifact_id, "download")
        if options.get("presigned"):
            link_options = {"method": "GET"}
            if "expiresIn" in options:
                link_options["expiresIn"] = options["expiresIn"]
            return self._presign(path, link_options)
        try:
            data = self._storage().read(path).data
        except (NotebookKitError, OSError) as exc:
            raise BuiltinError(f"artifacts.download: cannot read {artifact_id!r} ({exc})") from None
        return data if info["format"] == "pdf" else data.decode("utf-8")
