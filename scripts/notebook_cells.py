"""The cells of the bundled notebooks, as data (``make_notebooks.py`` writes and runs them).

Shared pieces first (start, serve, stop), then ``QUICKSTART`` and ``BUILD``; the teaching
tour is in ``notebook_tour.py``.
"""

from __future__ import annotations

import notebook_kit

Cell = tuple[str, str]


def md(text: str) -> Cell:
    return ("markdown", text.strip("\n"))


def code(text: str) -> Cell:
    return ("code", text.strip("\n"))


START = code("""
import tempfile
from pathlib import Path

import httpx

import notebook_kit
from notebook_kit import Workspace

home = Path(tempfile.mkdtemp(prefix="notebook-kit-"))  # a fresh workspace for this run
ws = Workspace(home)
print("workspace ready:", ws.definitions() == [])
""")

SERVE = code("""
# NBVAL_IGNORE_OUTPUT
# (the port is free and chosen at random)
server = ws.serve()     # the Sanic runtime in a background thread of this kernel
keys = ws.keys()        # one API key per stage: {"dev": ..., "prod": ...}
http = httpx.Client(base_url=server.url, timeout=10)
server
""")

STOP = code("""
import shutil

http.close()
server.stop()
shutil.rmtree(home)
print("server running:", server.running)
""")

# The quickstart keeps its work: the studio it shows at the end must go on working after
# "Run all", and a newcomer's first definitions should not vanish with a temp folder.
QUICK_START = code("""
# NBVAL_IGNORE_OUTPUT
# (where the workspace is depends on your machine)
import os
from pathlib import Path

import httpx

import notebook_kit
from notebook_kit import Workspace

# Your work lives in one folder: $NOTEBOOK_KIT_HOME if set, else notebook_kit_workspace/
# beside this notebook. It is kept between sessions; copy the folder to back it up.
home = Path(os.environ.get("NOTEBOOK_KIT_HOME", "notebook_kit_workspace")).resolve()
ws = Workspace(home)
print("your work lives in", ws.home)
""")

QUICK_STOP = code("""
# Optional: stop the server. The workspace stays, so the studio above keeps working
# (its Test runs in this kernel); only the URLs stop answering until ws.serve() again.
http.close()
server.stop()
print("server running:", server.running)
""")

QUICKSTART = [
    md("""
# notebook_kit quickstart

Define, test and publish small REST APIs from this notebook. In five minutes you will:

1. make a workspace (a folder holding the definitions store and the environment database),
2. start the API server **inside this kernel** (no terminal needed),
3. install the sample application `restapi_sample` and call its two APIs,
4. see how many resources the deployment uses, and
5. open the **studio**, the point-and-click editor.

Run the cells from top to bottom (Run → Run All Cells).

## Your workspace

Everything you make is kept in one folder, the **workspace**: `notebook_kit_workspace/`
beside this notebook (or the folder named by the environment variable `NOTEBOOK_KIT_HOME`).
It survives restarts; to keep or back it up, copy the folder (or `notebook-kit export`
an application to a file); the next cell prints where it is.
"""),
    QUICK_START,
    md("""
## Start the server

`ws.serve()` starts the runtime in a background thread and returns a handle with its `url`
and `stop()`. Running the cell again replaces the server instead of failing with
"address already in use". Deploys are live on it within a second.
"""),
    SERVE,
    md("""
## Install the sample

`restapi_sample` holds an employee lookup (`GET employee/{id}`) and a calculator
(`POST calculator`), each with the `OPTIONS` preflight a browser needs. Installing it
deploys it to both stages: **dev** (debug deploy) and **prod** (release deploy).
"""),
    code("""
import time

ws.install_sample()

# The server polls the workspace and swaps in new deployments within a second: wait for it.
for _ in range(50):
    if all(http.options(f"/{s}/restapi_sample/calculator").is_success for s in ("dev", "prod")):
        break
    time.sleep(0.1)
ws.definitions_frame("restapi_sample")[["id", "method", "resource", "requires_auth", "dev", "prod"]]
"""),
    md("""
## Call the employee lookup

The URL is `{base_url}/{stage}/{application}/{resource}`. Both sample APIs require the
stage's key in the `x-api-key` header.
"""),
    code("""
r = http.get("/dev/restapi_sample/employee/E001", headers={"x-api-key": keys["dev"]})
print(r.status_code, r.headers["content-type"])
r.json()
"""),
    code("""
r = http.get("/dev/restapi_sample/employee/E042", headers={"x-api-key": keys["dev"]})
print(r.status_code, r.json())
"""),
    md("Without a key, or with a wrong one, the runtime refuses the call with **403**:"),
    code("""
for headers in ({}, {"x-api-key": "not-the-key"}):
    r = http.get("/dev/restapi_sample/employee/E001", headers=headers)
    print(r.status_code, r.json())
"""),
    md("""
## Call the calculator

It adds or subtracts two JSON numbers exactly (decimal arithmetic, no float rounding) and
answers in `text/plain`. Here on **prod**, so with the prod key.
"""),
    code("""
calc = "/prod/restapi_sample/calculator"
for body in (
    {"arg1": 0.1, "arg2": 0.2, "operation": "plus"},
    {"arg1": 99999999, "arg2": -0.5, "operation": "minus"},
    {"arg1": "1", "arg2": 2, "operation": "plus"},  # a numeric string is not a number
):
    r = http.post(calc, json=body, headers={"x-api-key": keys["prod"]})
    print(r.status_code, r.headers["content-type"], repr(r.text))
"""),
    code("""
r = http.post(calc, json={"arg1": 1, "arg2": 2, "operation": "plus"})
print("without a key:", r.status_code)
"""),
    md("""
## Resource counts

Each path segment of a deployed definition counts as one resource, the method does not, and
the root counts once per stage: `/restapi_sample`, `/employee`, `/{id}`, `/calculator` plus
the root make **5**.
"""),
    code("""
print({stage: counts["total"] for stage, counts in ws.resources().items()})
ws.resources_frame()
"""),
    code('print("\\n".join(ws.resource_tree("dev")))'),
    md("""
## The studio

One call shows the editor: the definitions list with a label search, the form (with the
action in a code editor), the **Test** panel, deploy buttons with the endpoint URLs and a
ready-made `curl` line, and the resource view. Try: pick `employee`, open *Test*, type
`E002` and press **Test**.
"""),
    *(
        [
            code("""
# NBVAL_IGNORE_OUTPUT
# (the widget's text form names the server's random port)
notebook_kit.studio(ws)
""")
        ]
        if hasattr(notebook_kit, "studio")  # part of the package once the studio landed
        else []
    ),
    md("""
## Optional: clean up

Nothing here needs cleaning up: the workspace folder holds your work and the server stops
with the kernel. The next cell only stops the server; the studio above keeps its
workspace. To delete everything, shut down the kernel and remove the folder by hand
(e.g. `rm -r notebook_kit_workspace`).
"""),
    QUICK_STOP,
]


BUILD = [
    md("""
# Build an API

From an empty workspace to a published, committed API:

1. put data in the **environment database** and write an API that reads it (`db.query`),
2. start a second, *external* REST API (an exchange-rate service) and write an API that
   calls it (`http.get_json`),
3. **test** both in-process (`ws.invoke`) before deploying, **deploy** to dev and call them,
4. **export** the application to a file and **commit** it to a git repository,
5. get its **OpenAPI** document and import it with a standard client tool (schemathesis).
"""),
    START,
    SERVE,
    md("""
## 1. An API over the environment database

Every action sees `db`, the workspace's environment database (SQLite). Fill a table:
"""),
    code("""
with ws.database.transaction() as db:
    db.execute(
        "CREATE TABLE product (sku TEXT PRIMARY KEY, name TEXT, category TEXT, price_eur TEXT)"
    )
    db.executemany(
        "INSERT INTO product VALUES (?, ?, ?, ?)",
        [
            ("T-01", "Sencha", "tea", "4.50"),
            ("T-02", "Assam", "tea", "3.90"),
            ("C-01", "Espresso beans", "coffee", "8.20"),
        ],
    )
ws.database.query("SELECT * FROM product ORDER BY sku")
"""),
    md("""
The action is plain Python. It reads `req.pathParameters`, sets `res.statusCode` and
`res.body` (a dict or list is sent as JSON). Messages live in typed **constants** (`const`).
"""),
    code('''
from notebook_kit import Constant

PRODUCTS_ACTION = """
category = req.pathParameters["category"]
rows = db.query(
    "SELECT sku, name, price_eur FROM product WHERE category = ? ORDER BY sku", [category]
)
if rows:
    res.body = {"category": category, "products": rows}
else:
    res.statusCode = 404
    res.body = {"message": const.NOT_FOUND % category}
"""
ws.create(
    "shop", "products",
    label="Products of a category",
    method="GET",
    resource="products/{category}",
    action=PRODUCTS_ACTION,
    content_type="application/json",
    constants=[Constant("NOT_FOUND", "String", "No products in category %s.")],
)
print(ws.get("shop", "products").path_parameters)
'''),
    md("""
**Test before deploying.** `ws.invoke` runs the *saved* definition in this process through
the same action runtime the server uses (the studio's Test button does the same):
"""),
    code("""
result = ws.invoke("shop", "products", path_parameters={"category": "tea"})
print(result.status, result.content_type)
result.json()
"""),
    code("""
result = ws.invoke("shop", "products", path_parameters={"category": "juice"})
print(result.status, result.json())
"""),
    md("""
## 2. An API that calls another REST API

Here is a stand-in for an external service: a tiny exchange-rate API on its own port,
served by Python's `http.server` in a thread of this kernel.
"""),
    code("""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Rates(BaseHTTPRequestHandler):
    RATES = {"base": "EUR", "rates": {"USD": "1.08", "JPY": "162.5", "GBP": "0.85"}}

    def do_GET(self):
        body = json.dumps(self.RATES).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep the notebook quiet
        pass


rates_server = ThreadingHTTPServer(("127.0.0.1", 0), Rates)
threading.Thread(target=rates_server.serve_forever, daemon=True).start()
rates_url = f"http://127.0.0.1:{rates_server.server_port}/latest"
print(httpx.get(rates_url).json()["base"])
"""),
    md("""
Actions call other APIs with `http` (pooled connections, a timeout on every call;
`get_json` raises on a 4xx/5xx answer). The URL of the service is a constant, so moving it
means editing one value. This API also reads the database: price of a product in a
currency, computed with exact decimals.
"""),
    code('''
PRICE_ACTION = """
from decimal import Decimal

sku, currency = req.pathParameters["sku"], req.pathParameters["currency"].upper()
rows = db.query("SELECT name, price_eur FROM product WHERE sku = ?", [sku])
rates = http.get_json(const.RATES_URL)["rates"]
if not rows or currency not in rates:
    res.statusCode = 404
    res.body = {"message": "unknown product or currency"}
else:
    price = Decimal(rows[0]["price_eur"]) * Decimal(rates[currency])
    res.body = {"sku": sku, "name": rows[0]["name"], "currency": currency,
                "price": str(price.quantize(Decimal("0.01")))}
"""
ws.create(
    "shop", "price",
    label="Price of a product in a currency",
    method="GET",
    resource="products/{category}/{sku}/price/{currency}",
    action=PRICE_ACTION,
    content_type="application/json",
    constants=[Constant("RATES_URL", "String", rates_url)],
)
result = ws.invoke(
    "shop", "price", path_parameters={"category": "tea", "sku": "T-01", "currency": "usd"}
)
print(result.status, result.json())
'''),
    md("""
Note the resource: `products/{category}/{sku}/price/{currency}` shares the `{category}`
position with `products/{category}`. One position of the tree takes one parameter name, and
deploy refuses two names at one position.

## 3. Deploy to dev and call

Deploying validates the whole application and publishes a snapshot of it. The running
server picks it up within a second (the cell waits for it):
"""),
    code('''
import time

deployment = ws.deploy("shop", "dev")
print("deployment", deployment.id, "to", deployment.stage)


def call(path, key="dev", **kwargs):
    """Call the server, waiting (up to 5 s) until the new deployment is live."""
    for _ in range(50):
        r = http.get(path, headers={"x-api-key": keys[key]}, **kwargs)
        if r.status_code != 404 or "message" not in r.json() or r.json()["message"] != "Not Found":
            return r
        time.sleep(0.1)
    return r


r = call("/dev/shop/products/coffee")
print(r.status_code, r.json())
'''),
    code("""
r = call("/dev/shop/products/tea/T-02/price/JPY")
print(r.status_code, r.json())
"""),
    md("Not deployed to prod yet, so the release URL does not exist:"),
    code("""
r = http.get("/prod/shop/products/tea", headers={"x-api-key": keys["prod"]})
print(r.status_code, r.json())
"""),
    md("""
## 4. Export and commit

An export is one self-describing JSON file you can import into another workspace. A commit
writes the application as readable files (one folder per definition, the action as `.py`)
into a git repository (created if missing; no git binary needed).
"""),
    code("""
exported = ws.export_file("shop", home / "shop.json")
document = json.loads(exported.read_text())
print(exported.name, document["format"], [d["id"] for d in document["definitions"]])
"""),
    code("""
repo = home / "apis-repo"
sha = ws.commit("shop", repo, "Add the shop API")
print("commit id of", len(sha), "hex digits")
sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)
"""),
    md("""
## 5. OpenAPI out

Each deployed application and stage has an OpenAPI 3.1 document built from what is
deployed (not from what is saved). The runtime serves it at a reserved path that no user
URL can take (user URLs start with `/dev/` or `/prod/`): `/_openapi/{stage}/{app}.json`.
The CLI writes it too: `notebook-kit openapi shop --stage dev --output shop.json`.
"""),
    code("""
doc = http.get("/_openapi/dev/shop.json").json()
assert doc == ws.openapi("shop", "dev", server.url)  # the same document from Python
for path, item in doc["paths"].items():
    for method, operation in item.items():
        if method != "parameters":
            print(method.upper(), path, "->", ", ".join(operation["responses"]))
"""),
    md("""
Check it with a real validator, then let a standard client tool import it.
[schemathesis](https://schemathesis.readthedocs.io) loads the document from the server,
builds a request for an operation, sends it, and checks that the answer conforms to the
document (status code, content type, headers, schema):
"""),
    code("""
from openapi_spec_validator import validate

validate(doc)
print("valid OpenAPI", doc["openapi"])
"""),
    code("""
import schemathesis
from schemathesis.checks import content_type_conformance, status_code_conformance

schema = schemathesis.openapi.from_url(f"{server.url}/_openapi/dev/shop.json")
operation = schema["/products/{category}/{sku}/price/{currency}"]["GET"]
for currency in ("GBP", "CHF"):
    case = operation.Case(
        path_parameters={"category": "tea", "sku": "T-01", "currency": currency},
        headers={"x-api-key": keys["dev"]},
    )
    response = case.call()
    case.validate_response(response, checks=[status_code_conformance, content_type_conformance])
    print(currency, response.status_code, "conforms to the document")
"""),
    code("""
rates_server.shutdown()
rates_server.server_close()
print("rates service stopped")
"""),
    STOP,
]
