"""The OpenAPI documents as real clients take them, against one real server.

One in-thread server for the module serves the sample, ``shop`` (a small items API that
declares contracts) and ``bare`` (the same API declaring nothing), each with saved
examples. On their documents:

- docs/guide/openapi.md's commands run as written (with this server's URL for port
  8000): the document, a Python client, a Postman collection, the examples as its
  tests, newman running them, and the Python that calls the client;
- ``redocly lint`` (recommended rules) and ``spectral lint`` (``spectral:oas``) find no
  error in any 3.1 or 3.0 document, and do find a broken one's;
- ``openapi-python-client`` generates each client without a warning, the packages
  install, and every operation is called with the key as the document says;
- ``openapi-to-postmanv2`` converts, ``notebook-kit example postman`` adds the saved
  examples as tests, ``newman`` runs them: no failure, and a wrong expectation is one;
- ``schemathesis run --checks all`` finds nothing, its stateful phase following the
  declared links.

The npm tools are those tests/tools/package-lock.json pins, which scripts/test.sh installs
(``npm ci``), like openapi-python-client (the ``test`` extra).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.shop import install_shop

from notebook_kit.domain.examples import Example
from notebook_kit.domain.openapi import document_path
from notebook_kit.domain.postman import with_example_tests
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tests" / "tools"
NODE_BIN = TOOLS / "node_modules" / ".bin"
PYTHON_BIN = Path(sys.executable).parent
GUIDE = REPO / "docs" / "guide" / "openapi.md"
GUIDE_URL = "http://127.0.0.1:8000"  # the guide's server; this module's is elsewhere
APPS = ("restapi_sample", "shop", "bare")
PACKAGES = {
    "restapi_sample": "rest_api_sample_client",
    "shop": "shop_client",
    "bare": "bare_client",
}
JSON_BODY = {"content-type": "application/json"}


@dataclass
class Site:
    """The served workspace, its server's URL and dev key, a folder for files, and the
    environment the tools run in (the npm tools and this interpreter's scripts first)."""

    ws: Workspace
    url: str
    key: str
    folder: Path
    env: dict[str, str]
    fuzzing: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    def run(
        self, *command: str | Path, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command``; fail the test with its output when it fails."""
        result = subprocess.run(
            [str(part) for part in command],
            cwd=cwd or self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert result.returncode == 0, f"{command[0]}: {result.stdout}\n{result.stderr}"
        return result

    def run_all(
        self, *commands: list[str | Path], cwd: Path | None = None, check: bool = True
    ) -> list[subprocess.CompletedProcess[str]]:
        """Run ``commands`` side by side; with ``check``, fail the test when one fails."""
        running = [
            subprocess.Popen(
                [str(part) for part in command],
                cwd=cwd or self.folder,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for command in commands
        ]
        done = []
        for process in running:
            stdout, stderr = process.communicate(timeout=180)
            done.append(
                subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
            )
            assert not check or process.returncode == 0, f"{process.args}: {stdout}\n{stderr}"
        return done

    def document(self, app: str, version: str = "3.1") -> Path:
        """The document the server serves, written to a file (once)."""
        path = self.folder / f"{app}-{version}.json"
        if not path.exists():
            answer = httpx.get(self.url + document_path("dev", app, version), timeout=10)
            assert answer.status_code == 200
            path.write_text(answer.text)
        return path


def _tools_missing() -> list[str]:
    needed = [NODE_BIN / name for name in ("redocly", "spectral", "openapi2postmanv2", "newman")]
    needed += [PYTHON_BIN / "openapi-python-client", PYTHON_BIN / "schemathesis"]
    return [path.name for path in needed if not path.exists()]


def _save_examples(ws: Workspace) -> None:
    ws.add_example(
        "restapi_sample",
        "calculator",
        "sum",
        request={"body": {"arg1": 1, "arg2": 2, "operation": "plus"}},
        expect={"json": {"$": 3}},
    )
    for app in ("shop", "bare"):
        pen = {"name": "pen", "price": 1.5}
        ws.add_example(
            app,
            "create-item",
            "pen",
            request={"body": pen, "headers": JSON_BODY},
            expect={"status": 201, "json": pen},
        )
        missing = {"path_parameters": {"id": "999999"}}
        ws.add_example(
            app,
            "get-item",
            "missing",
            request=missing,
            expect={"status": 404, "json": {"message": "no such item"}},
        )
        ws.add_example(
            app,
            "put-item",
            "missing",
            request={**missing, "body": pen, "headers": JSON_BODY},
            expect={"status": 404},
        )
        ws.add_example(app, "delete-item", "missing", request=missing, expect={"status": 404})
        ws.add_example(
            app,
            "list-items",
            "none",
            request={"query": "q=no-such-name&limit=5"},
            expect={"json": {"items": []}, "max_ms": 30000},
        )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    missing = _tools_missing()
    if missing:
        pytest.fail(
            f"missing {', '.join(missing)}: run scripts/test.sh once (npm ci in tests/tools, "
            "pip install -e '.[test]')"
        )
    folder = tmp_path_factory.mktemp("openapi-clients")
    home = folder / "workspace"
    home.mkdir(mode=0o700)
    ws = Workspace(home)
    ws.install_sample()
    install_shop(ws, "shop", stage=None)
    install_shop(ws, "bare", declared=False, stage=None)
    for app, declared in FUZZED.items():  # apps of their own: fuzzing changes their rows
        install_shop(ws, app, declared)
    _save_examples(ws)
    for app in ("shop", "bare"):
        ws.deploy(app, "dev")  # the examples run: the deploy gate agrees with newman
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(NODE_BIN), str(PYTHON_BIN), os.environ.get("PATH", "")]),
        "NOTEBOOK_KIT_HOME": str(home),
        "REDOCLY_TELEMETRY": "off",
        "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
        "NO_COLOR": "1",
    }
    with BackgroundServer(ws) as server:
        site = Site(ws, server.url, ws.keys()["dev"], folder, env)
        _start_fuzzing(site)  # in the background, while the other tests run
        yield site
        for process in site.fuzzing.values():
            if process.poll() is None:
                process.kill()
            process.communicate()
    ws.close()


# -- docs/guide/openapi.md, as written ---------------------------------------------------


@dataclass
class Guide:
    folder: Path  # where its commands ran
    output: str  # what its bash blocks printed
    python: str  # its Python block
    printed: list[str]  # what that block shows it prints


@pytest.fixture(scope="module")
def guide(site: Site) -> Guide:
    """Run the guide's bash blocks in order, in one shell, in a folder of their own."""
    blocks = re.findall(r"^```(bash|python)\n(.*?)^```$", GUIDE.read_text(), re.M | re.S)
    bash = [text.replace(GUIDE_URL, site.url) for kind, text in blocks if kind == "bash"]
    [python] = [text.replace(GUIDE_URL, site.url) for kind, text in blocks if kind == "python"]
    folder = site.folder / "guide"
    folder.mkdir()
    result = site.run("bash", "-c", "set -euo pipefail\n" + "\n".join(bash), cwd=folder)
    code = [line for line in python.splitlines() if not line.startswith("# ")]
    printed = [line[2:] for line in python.splitlines() if line.startswith("# ")]
    return Guide(folder, result.stdout + result.stderr, "\n".join(code), printed)


@pytest.fixture(scope="module")
def clients(site: Site, guide: Guide) -> Iterator[Path]:
    """The Python clients of the three documents (the sample's made by the guide), each
    generated without a warning, then installed into one folder on ``sys.path``."""
    made = site.folder / "clients"
    made.mkdir()
    outputs = site.run_all(
        *(
            ["openapi-python-client", "generate", "--path", site.document(app), "--meta", "setup"]
            for app in ("shop", "bare")
        ),
        cwd=made,
    )
    for generated in outputs:
        said = generated.stdout + generated.stderr
        assert "warning" not in said.lower(), said
    target = site.folder / "site-packages"
    projects = [guide.folder / "rest-api-sample-client", made / "shop-client", made / "bare-client"]
    site.run(
        sys.executable,
        *("-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"),
        *("--no-build-isolation", "--target", target, *projects),
    )
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target))
    for name in list(sys.modules):
        if name.split(".")[0] in PACKAGES.values():
            del sys.modules[name]


def test_guide_commands_run_as_written(site: Site, guide: Guide) -> None:
    assert (guide.folder / "sample.json").is_file()
    assert (guide.folder / "rest-api-sample-client" / "rest_api_sample_client").is_dir()
    assert "warning" not in guide.output.lower()  # openapi-python-client said none
    collection = json.loads((guide.folder / "sample.postman.json").read_text())
    assert collection["item"][-1]["name"] == "Examples"
    assert "added 2 examples of restapi_sample to sample.postman.json as tests" in guide.output
    assert re.search(r"│\s+assertions\s+│\s+\d+\s+│\s+0\s+│", guide.output), guide.output


def test_guide_python_runs_as_written(site: Site, guide: Guide, clients: Path) -> None:
    env = {**site.env, "PYTHONPATH": str(clients), "DEV_KEY": site.key}
    result = subprocess.run(
        [sys.executable, "-c", guide.python], env=env, capture_output=True, text=True, timeout=60
    )
    assert (result.stderr, result.stdout.splitlines()) == ("", guide.printed)


# -- linters ---------------------------------------------------------------------------


def _broken(site: Site) -> Path:
    """shop's document with a mistake each linter reports: an operation without security,
    an operation ID used twice."""
    document = json.loads(site.document("shop").read_text())
    del document["paths"]["/items"]["post"]["security"]
    document["paths"]["/items/{id}"]["get"]["operationId"] = "list-items"
    path = site.folder / "broken.json"
    path.write_text(json.dumps(document, indent=1))
    return path


def _redocly_problems(output: str) -> list[dict[str, Any]]:
    """The problems of ``redocly lint --format json`` (one JSON value per file)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := output.find("{", at)) != -1:
        value, at = decoder.raw_decode(output, at)
        found += value["problems"]
    return found


def test_linters_find_no_error(site: Site) -> None:
    documents = [site.document(app, version) for app in APPS for version in ("3.1", "3.0")]
    broken = _broken(site)
    files = [str(path) for path in [*documents, broken]]
    redocly, spectral = site.run_all(
        ["redocly", "lint", "--extends", "recommended", "--format", "json", *files],
        ["spectral", "lint", "--ruleset", TOOLS / "spectral.yaml", "--format", "json", *files],
        check=False,  # both find the broken document's errors
    )
    problems = _redocly_problems(redocly.stdout)
    by_file: dict[str, set[tuple[str, str]]] = {}
    for problem in problems:
        source = Path(problem["location"][0]["source"]["ref"]).name
        by_file.setdefault(source, set()).add((problem["severity"], problem["ruleId"]))
    assert {rule for severity, rule in by_file["broken.json"] if severity == "error"} >= {
        "security-defined",
        "operation-operationId-unique",
    }
    for document in documents:  # the only warning: no license (which the app cannot say)
        assert by_file.get(document.name, set()) <= {("warn", "info-license")}, document.name

    found: dict[str, set[tuple[int, str]]] = {}
    for problem in json.loads(spectral.stdout):
        found.setdefault(Path(problem["source"]).name, set()).add(
            (problem["severity"], problem["code"])
        )
    assert (0, "operation-operationId-unique") in found["broken.json"]  # 0: an error
    for document in documents:  # the only warning: no contact (which the app cannot say)
        assert found.get(document.name, set()) <= {(1, "info-contact")}, document.name


# -- generated Python clients ----------------------------------------------------------


class Calls:
    """Calls of generated operations (``sync_detailed``), remembering which were made."""

    def __init__(self, site: Site, clients: contextlib.ExitStack) -> None:
        self.site = site
        self.clients = clients  # closes them
        self.made: set[tuple[str, str]] = set()

    def client(self, package: str, app: str, key: str | None = "key") -> Any:
        """The package's client for ``app`` on dev: with the key as the document says it
        is sent (``x-api-key``, no prefix), or without one."""
        module = importlib.import_module(package)
        base_url = f"{self.site.url}/dev/{app}"
        if key is None:
            return self.clients.enter_context(module.Client(base_url=base_url))
        return self.clients.enter_context(
            module.AuthenticatedClient(
                base_url=base_url, token=self.site.key, prefix="", auth_header_name="x-api-key"
            )
        )

    def __call__(self, package: str, operation: str, *args: Any, **kwargs: Any) -> Any:
        [module] = [
            importlib.import_module(f"{package}.api.{path.parent.name}.{path.stem}")
            for path in (Path(importlib.import_module(package).__file__).parent / "api").glob(
                f"*/{operation}.py"
            )
        ]
        self.made.add((package, operation))
        return module.sync_detailed(*args, **kwargs)

    def missed(self) -> set[tuple[str, str]]:
        every = set()
        for package in PACKAGES.values():
            api = Path(importlib.import_module(package).__file__).parent / "api"
            every |= {(package, p.stem) for p in api.glob("*/*.py") if p.stem != "__init__"}
        return every - self.made


def test_generated_clients_call_every_operation(site: Site, clients: Path) -> None:
    with contextlib.ExitStack() as opened:
        _call_every_operation(Calls(site, opened))


def _call_every_operation(call: Calls) -> None:
    sample = "rest_api_sample_client"
    with_key, without = (
        call.client(sample, "restapi_sample"),
        call.client(sample, "restapi_sample", None),
    )
    found = call(sample, "employee", "E001", client=with_key)
    assert (found.status_code, found.parsed) == (
        200,
        {"id": "E001", "name": "Alice Martin", "age": 34},
    )
    assert call(sample, "employee", "E001", client=without).status_code == 403
    assert call(sample, "employee_preflight", "E001", client=without).status_code == 200
    summed = call(
        sample, "calculator", client=with_key, body={"arg1": 1, "arg2": 2, "operation": "plus"}
    )
    assert (summed.status_code, summed.parsed) == (200, "3")
    assert call(sample, "calculator_preflight", client=without).status_code == 200

    shop = importlib.import_module("shop_client.models")
    with_key, without = call.client("shop_client", "shop"), call.client("shop_client", "shop", None)
    created = call(
        "shop_client",
        "create_item",
        client=with_key,
        body=shop.CreateItemBody(name="kettle", price=20),
    )
    assert created.status_code == 201
    number = created.parsed.id  # a model of the declared answer
    got = call("shop_client", "get_item", number, client=with_key)
    assert (got.status_code, got.parsed.name, got.parsed.price) == (200, "kettle", 20)
    listed = call("shop_client", "list_items", client=without, q="kettle", limit=100)
    assert [item.id for item in listed.parsed.items] == [number]
    refused = call("shop_client", "list_items", client=without, limit=0)
    assert refused.status_code == 422
    assert [(e.in_.value, e.pointer) for e in refused.parsed.errors] == [("query", "/limit")]
    put = call(
        "shop_client",
        "put_item",
        number,
        client=with_key,
        body=shop.PutItemBody(name="pot", price=3),
    )
    assert (put.status_code, put.parsed.name) == (200, "pot")
    assert call("shop_client", "get_item", number, client=without).parsed.message == "Forbidden"
    assert call("shop_client", "delete_item", number, client=with_key).status_code == 204
    gone = call("shop_client", "get_item", number, client=with_key)
    assert (gone.status_code, gone.parsed.message) == (404, "no such item")

    with_key = call.client("bare_client", "bare")
    created = call("bare_client", "create_item", client=with_key, body={"name": "cup", "price": 2})
    assert created.status_code == 201
    number = str(created.parsed["id"])  # no declared answer: the JSON as it is
    assert call("bare_client", "get_item", number, client=with_key).parsed["name"] == "cup"
    assert call("bare_client", "list_items", client=with_key).status_code == 200
    assert (
        call(
            "bare_client", "put_item", number, client=with_key, body={"name": "mug", "price": 2}
        ).status_code
        == 200
    )
    assert call("bare_client", "create_item", client=with_key, body=[]).status_code == 400
    assert call("bare_client", "delete_item", number, client=with_key).status_code == 204
    assert call.missed() == set()


# -- Postman -----------------------------------------------------------------------------


def test_postman_runs_the_examples_as_tests(site: Site) -> None:
    """shop's and bare's (the guide ran the sample's): no failure; a wrong expectation
    added to shop's collection is one, so the run can fail."""
    collections = {app: site.folder / f"{app}.postman.json" for app in ("shop", "bare")}
    site.run_all(
        *(
            ["openapi2postmanv2", "--spec", site.document(app), "--output", collection]
            for app, collection in collections.items()
        )
    )
    wrong = Example.of("shop", "get-item", "wrong", {"path_parameters": {"id": "999999"}}, {})
    for app, collection in collections.items():  # as notebook-kit example postman does
        tested, missing = site.ws.postman_examples(app, "dev", json.loads(collection.read_text()))
        assert missing == []
        if app == "shop":
            extra, _ = with_example_tests(tested, site.ws.live("dev")["shop"], [wrong])
            tested["item"][-1]["item"] += extra["item"][-1]["item"]
        collection.write_text(json.dumps(tested))
    reports = {app: site.folder / f"{app}.newman.json" for app in collections}
    key, report = ["--env-var", f"apiKey={site.key}"], ["--reporters", "json"]
    newman = site.run_all(
        *(
            [
                "newman",
                "run",
                c,
                "--folder",
                "Examples",
                *key,
                *report,
                "--reporter-json-export",
                reports[app],
            ]
            for app, c in collections.items()
        ),
        check=False,
    )
    assert [run.returncode for run in newman] == [1, 0]  # shop's has the wrong expectation
    for app, path in reports.items():
        run = json.loads(path.read_text())["run"]
        assert run["stats"]["requests"] == {"total": 5 + (app == "shop"), "pending": 0, "failed": 0}
        failed = [(f["source"]["name"], f["error"]["test"]) for f in run["failures"]]
        assert failed == ([("get-item/wrong", "status is 200")] if app == "shop" else []), app
        assert run["stats"]["assertions"]["total"] >= 10


# -- schemathesis ------------------------------------------------------------------------

# schemathesis runs on the sample and on copies of shop and bare (it adds and deletes rows).
FUZZED = {"fuzz-shop": True, "fuzz-bare": False}
# An undeclared definition's document says any body is valid, but its action may answer
# 400: schemathesis is told that such a 400 may answer valid data. A declared one gets the
# default: valid data must not be refused. Links: the document's only (none inferred).
SCHEMATHESIS_CONFIG = """\
[phases.stateful.inference]
algorithms = []
"""
UNDECLARED_CONFIG = (
    SCHEMATHESIS_CONFIG
    + """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
"""
)


def _start_fuzzing(site: Site) -> None:
    for app in ("restapi_sample", *FUZZED):
        config = site.folder / f"{app}.schemathesis.toml"
        config.write_text(SCHEMATHESIS_CONFIG if FUZZED.get(app) else UNDECLARED_CONFIG)
        command = ["schemathesis", "--config-file", str(config), "run"]
        command += [site.url + document_path("dev", app), "--checks", "all"]
        command += ["--header", f"x-api-key: {site.key}", "--max-examples", "5", "--seed", "26"]
        site.fuzzing[app] = subprocess.Popen(
            [*command, "--no-color"],
            env=site.env,
            cwd=site.folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )


def test_schemathesis_all_checks(site: Site) -> None:
    """Every check, on every operation; on fuzz-shop the stateful phase follows each
    declared link (POST /items -> GET, PUT, DELETE /items/{id})."""
    outputs = {app: process.communicate(timeout=300)[0] for app, process in site.fuzzing.items()}
    for app, process in site.fuzzing.items():
        assert process.returncode == 0, outputs[app]
        assert re.search(r"\d+ generated, \d+ passed", outputs[app]), outputs[app]
    links = re.search(
        r"API Links:\s+(\d+) covered / \d+ selected / (\d+) total", outputs["fuzz-shop"]
    )
    assert links is not None, outputs["fuzz-shop"]
    assert links.groups() == ("3", "3")
