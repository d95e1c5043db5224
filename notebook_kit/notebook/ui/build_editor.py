"""Build the CodeEditor's JavaScript bundle: ``npm ci`` (when needed), then esbuild.

    python -m notebook_kit.notebook.ui.build_editor

reads ``js/code-editor/`` in the source tree and writes ``static/code_editor.js`` next to
this file. ``setup.py`` runs the same :func:`build` for ``pip install .`` and
``pip install -e .``. Standard library only: setup.py loads this file by path in the
isolated build environment, where notebook_kit's dependencies are not installed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUNDLE = HERE / "static" / "code_editor.js"
JS_SOURCE = HERE.parents[2] / "js" / "code-editor"
NODE_PACKAGES = "Node.js 18+ and npm (Debian: apt-get install nodejs npm)"


class BuildError(RuntimeError):
    """The bundle could not be built; the message says what is missing."""


def sources(source: Path = JS_SOURCE) -> list[Path]:
    """The files the bundle is made from (setup.py puts them in the sdist)."""
    fixed = [source / name for name in ("package.json", "package-lock.json", "build.mjs")]
    return fixed + sorted((source / "src").rglob("*.js"))


def build(source: Path = JS_SOURCE, bundle: Path = BUNDLE) -> Path:
    """Write the minified ES module to ``bundle`` and return its path.

    Installs the pinned npm packages with ``npm ci`` only when ``node_modules`` is missing
    or older than ``package-lock.json``. Without a JS source tree (an installed package),
    an existing bundle is kept as it is.
    """
    if not (source / "package.json").is_file():
        if bundle.is_file():
            return bundle
        raise BuildError(
            f"no JavaScript sources at {source} and no bundle at {bundle}: "
            "reinstall notebook-kit from its source tree"
        )
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise BuildError(f"building the code editor needs {NODE_PACKAGES} on PATH")
    installed = source / "node_modules" / ".package-lock.json"
    lock = source / "package-lock.json"
    if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
        # --ignore-scripts: no package needs one (esbuild's JS API finds its binary itself)
        _run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], source)
    bundle.parent.mkdir(parents=True, exist_ok=True)
    _run([node, "build.mjs", str(bundle)], source)
    if not bundle.is_file():
        raise BuildError(f"esbuild reported success but wrote no {bundle}")
    return bundle


def _run(command: list[str], cwd: Path) -> None:
    print("build_editor:", Path(command[0]).name, *command[1:], file=sys.stderr, flush=True)
    result = subprocess.run(command, cwd=cwd, check=False)
    if result.returncode != 0:
        raise BuildError(f"{' '.join(command)} failed (exit {result.returncode}) in {cwd}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=BUNDLE, help="bundle path (%(default)s)")
    args = parser.parse_args(argv)
    try:
        print(build(bundle=args.out.resolve()))
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
