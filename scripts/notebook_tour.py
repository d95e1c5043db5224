"""The cells of ``notebooks/03-teaching-tour.ipynb``."""

from __future__ import annotations

from notebook_cells import SERVE, START, STOP, code, md

TEACHING = [
    md("""
# A teaching tour: resources, stages, CORS and keys

Four ideas behind a published REST API, each shown with a live call against a server
running in this kernel:

1. **resource counting**: what a deployment costs,
2. **dev vs prod**: a deployment is a *snapshot*; editing changes nothing live,
3. **CORS preflight**: what a browser asks before calling from another site,
4. **authentication failures**: what a caller without the right key gets.
"""),
    START,
    SERVE,
    code('''
import time

from notebook_kit.domain.sample import EMPLOYEE_TABLE, EMPLOYEES, sample_definitions

with ws.database.transaction() as db:  # the data the employee lookup reads
    db.execute(EMPLOYEE_TABLE)
    db.executemany("INSERT INTO employee (id, name, age) VALUES (?, ?, ?)", EMPLOYEES)

SAMPLE = {d.id: d for d in sample_definitions()}


def add(api_id):
    """Save one of the sample's definitions into this workspace."""
    d = SAMPLE[api_id]
    ws.create(
        d.app, d.id, label=d.label, method=d.method, resource=d.resource, action=d.action,
        content_type=d.content_type, requires_auth=d.requires_auth, functions=d.functions,
        constants=d.constants,
    )


def wait_live(stage, path, status_not=404):
    """The server swaps in new deployments within a second: wait for it."""
    for _ in range(50):
        r = http.options(f"/{stage}/restapi_sample/{path}")
        if r.status_code != status_not:
            return
        time.sleep(0.1)


print("helpers ready:", sorted(SAMPLE))
'''),
    md("""
## 1. Resource counting

Each path segment of a deployed definition counts as one resource; the method does **not**
count; the root counts once in the stage's total.

Deploy the employee lookup, `GET employee/{id}` (with its `OPTIONS` preflight, which adds
no resource: same path, another method). The tree is `/restapi_sample`, `/employee`, `/{id}`:
3 resources for the API, **4** with the root.
"""),
    code("""
add("employee")
add("employee-preflight")
ws.deploy("restapi_sample", "dev")
print("\\n".join(ws.resource_tree("dev")))
ws.resources()["dev"]
"""),
    md("Now add `POST calculator`: one more segment, so the total becomes **5**."),
    code("""
add("calculator")
add("calculator-preflight")
ws.deploy("restapi_sample", "dev")
print("\\n".join(ws.resource_tree("dev")))
ws.resources()["dev"]
"""),
    md("Nothing is deployed to prod yet, so prod counts only its root:"),
    code("ws.resources_frame()"),
    md("""
## 2. dev and prod are snapshots

Deploying copies the saved definitions into a **snapshot** for one stage. Deploy to prod
too, then change the saved calculator so that it answers in words: until you deploy again,
both stages keep the old behaviour.
"""),
    code("""
ws.deploy("restapi_sample", "prod")
wait_live("dev", "calculator")
wait_live("prod", "calculator")


def calculate(stage):
    r = http.post(
        f"/{stage}/restapi_sample/calculator",
        json={"arg1": 40, "arg2": 2, "operation": "plus"},
        headers={"x-api-key": keys[stage]},
    )
    return r.status_code, r.text


print("dev :", calculate("dev"))
print("prod:", calculate("prod"))
"""),
    code("""
new_action = SAMPLE["calculator"].action.replace(
    "res.body = calculate(arg1, arg2, operation)",
    'res.body = "the answer is " + calculate(arg1, arg2, operation)',
)
ws.edit("restapi_sample", "calculator", action=new_action)
print("saved, tested in-process:", ws.invoke(
    "restapi_sample", "calculator", body='{"arg1": 40, "arg2": 2, "operation": "plus"}'
).text)
print("dev :", calculate("dev"))
print("prod:", calculate("prod"))
ws.definitions_frame("restapi_sample")[["id", "dev", "prod"]]
"""),
    md("""
`changed` means: saved differs from what the stage serves. Deploy to **dev** only: dev
answers the new way, prod still the old way, until a release deploy.
"""),
    code("""
ws.deploy("restapi_sample", "dev")
for _ in range(50):  # live within a second
    if calculate("dev")[1] != "42":
        break
    time.sleep(0.1)
print("dev :", calculate("dev"))
print("prod:", calculate("prod"))
"""),
    md("""
## 3. CORS preflight

A page on another site (another *origin*) that calls the calculator with `fetch` sends an
`x-api-key` header. That makes the call "not simple", so the browser first asks with an
`OPTIONS` request whether the real call is allowed. The sample deploys an `OPTIONS`
definition on each resource that answers:
"""),
    code("""
r = http.options(
    "/dev/restapi_sample/calculator",
    headers={
        "Origin": "https://page.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-api-key",
    },
)
print(r.status_code, repr(r.text))
{k: v for k, v in r.headers.items() if k.startswith("access-control-")}
"""),
    md("""
- `Access-Control-Allow-Origin: *`: any page may read the answer,
- `Access-Control-Allow-Methods`: the methods it may use,
- `Access-Control-Allow-Headers: origin,x-api-key`: the headers it may send. `Content-Type:
  application/json` is **not** in the list, so a page sends its JSON body as `text/plain`
  (a "simple" content type that needs no permission); the calculator reads the body the same.

The preflight needs no key (its definition does not require authentication): a browser
never sends custom headers on a preflight. The real call carries `Access-Control-Allow-Origin`
too (the actions set it), so the page can read the result:
"""),
    code("""
r = http.post(
    "/dev/restapi_sample/calculator",
    content='{"arg1": 1.5, "arg2": 1, "operation": "minus"}',
    headers={"x-api-key": keys["dev"], "Content-Type": "text/plain", "Origin": "https://page.example"},
)
print(r.status_code, repr(r.text), r.headers["access-control-allow-origin"])
"""),
    md("""
## 4. Authentication failures

A definition that requires authentication wants the **stage's** key in `x-api-key`. There is
one key per stage: the dev key opens `/dev/` URLs only. Every refusal is a **403** with a
JSON message, and carries `Access-Control-Allow-Origin: *` so a page in a browser can show
the real reason instead of an opaque network error.
"""),
    code("""
url = "/prod/restapi_sample/employee/E003"
for label, headers in [
    ("no key", {}),
    ("the dev key on prod", {"x-api-key": keys["dev"]}),
    ("a made-up key", {"x-api-key": "A" * 40}),
    ("the prod key", {"x-api-key": keys["prod"]}),
]:
    r = http.get(url, headers=headers)
    origin = r.headers.get("access-control-allow-origin")
    print(f"{label:20} -> {r.status_code} {r.text}  (allow-origin: {origin})")
"""),
    md("""
Rotating a key (`ws.rotate_key("prod")`, or the studio's Server panel) invalidates the old
one at once on every server of the workspace:
"""),
    code("""
old = keys["prod"]
keys["prod"] = ws.rotate_key("prod")
for _ in range(50):
    if http.get(url, headers={"x-api-key": old}).status_code == 403:
        break
    time.sleep(0.1)
print("old key:", http.get(url, headers={"x-api-key": old}).status_code)
print("new key:", http.get(url, headers={"x-api-key": keys["prod"]}).status_code)
"""),
    STOP,
]
