"""The documentation as people read it: the README's links lead somewhere, no user-facing
page speaks of tracker issues, the changelog is versioned and is the site's changelog page."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import notebook_kit

ROOT = Path(__file__).resolve().parent.parent


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """The anchor GitHub and MkDocs give a heading: lower case, punctuation dropped,
    spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+)$", text, re.M)}


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for match in _LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):  # https:, mailto: ... (no network here)
            continue
        file_part, _, fragment = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(target)
            continue
        if fragment and linked.suffix == ".md" and fragment not in _anchors(linked):
            broken.append(target)
    return broken


def test_readme_links_resolve() -> None:
    readme = ROOT / "README.md"
    assert _LINK.search(readme.read_text())  # the README does link to the site's pages
    assert _broken_links(readme) == []


def test_readme_opens_with_the_two_commands() -> None:
    """What it is, then the two commands a fresh machine needs, before anything else."""
    text = (ROOT / "README.md").read_text()
    first_block = text.split("```")[1]
    assert "bash scripts/run.sh" in first_block and "bash scripts/test.sh" in first_block
    assert text.index("```") < text.index("\n## ")


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A page\n\n## Some `code` here\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# Title\n[ok](there.md) [ok](there.md#some-code-here) [ok](#title) "
        "[web](https://example.org/x) ![pic](there.md)\n"
        "[gone](missing.md) [gone too](missing.md#x)\n"
        "[bad anchor](there.md#nowhere) [bad local](#nope)\n"
        "```\n[not a link](inside-code.md)\n```\n"
    )
    assert _broken_links(page) == ["missing.md", "missing.md#x", "there.md#nowhere", "#nope"]


def _user_pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers_in_user_facing_docs(page: Path) -> None:
    hits = re.findall(r".{0,30}\bissues?[\s#-]*\d+.{0,30}", page.read_text(), re.I)
    assert hits == []


def test_changelog_is_versioned() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.M)
    assert versions[0] == ("Unreleased", "")
    released = versions[1:]
    assert released and all(date for _, date in released)
    assert ("0.1.0" in {v for v, _ in released}) and notebook_kit.__version__ == "0.1.0"


def test_site_changelog_page_is_the_changelog() -> None:
    """The site's changelog page includes CHANGELOG.md (a snippet), so the two never differ."""
    page = (ROOT / "docs" / "changelog.md").read_text()
    assert '--8<-- "CHANGELOG.md"' in page


# -- the site build ----------------------------------------------------------------------

_BUILD = re.compile(r"^(?:\S+=\S+ )*python -m mkdocs build .*$", re.M)


def _site_copy(tmp_path: Path) -> Path:
    """The site's sources in a scratch directory (the package and the nginx recipe linked,
    not copied: mkdocstrings reads one, a page includes the other)."""
    import shutil

    copy = tmp_path / "site-src"
    copy.mkdir()
    shutil.copytree(ROOT / "docs", copy / "docs")
    for name in ("mkdocs.yml", "CHANGELOG.md"):
        shutil.copy(ROOT / name, copy / name)
    for name in ("notebook_kit", "deploy"):
        (copy / name).symlink_to(ROOT / name)
    return copy


def _build(copy: Path) -> subprocess.CompletedProcess[str]:
    """The site built exactly as ``scripts/test.sh`` builds it."""
    command = _BUILD.search((ROOT / "scripts" / "test.sh").read_text())
    assert command, "scripts/test.sh builds the site"
    line = command.group(0).replace("python -m", f"{sys.executable} -m")
    return subprocess.run(
        ["bash", "-c", line], cwd=copy, capture_output=True, text=True, timeout=300
    )


def test_the_test_command_builds_the_site_before_pytest() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text()
    command = _BUILD.search(script)
    assert command and "--strict" in command.group(0) and " -q" not in command.group(0)
    assert script.index(command.group(0)) < script.index("python -m pytest")


def test_the_site_build_fails_on_a_broken_link_and_not_on_a_page_outside_the_nav(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mkdocs")
    copy = _site_copy(tmp_path)
    # a page someone adds before its nav line: noted, not fatal
    (copy / "docs" / "later.md").write_text("# Later\n\nSee [install](install.md#extras).\n")
    built = _build(copy)
    assert built.returncode == 0, built.stderr
    assert "later.md" in built.stderr  # listed among the pages not in the nav
    # a broken anchor on that page: fatal
    (copy / "docs" / "later.md").write_text("# Later\n\nSee [install](install.md#nowhere).\n")
    broken = _build(copy)
    assert broken.returncode != 0
    assert "'#nowhere'" in broken.stderr
