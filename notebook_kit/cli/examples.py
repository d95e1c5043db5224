"""``notebook-kit example add|list|remove|postman`` and ``notebook-kit check``: the
examples of definitions, running all of an application's examples (docs/examples.md), and
adding them to a Postman collection as tests (docs/guide/openapi.md).

``check`` prints one line per failing example and exits 1 when one fails; when all pass
it prints one summary line and exits 0.
"""

from __future__ import annotations

import json

import click

from ..domain.examples import parse_field, parse_pair
from .output import STAGES, echo_json, echo_table, read_file, workspace_of

__all__ = ["check", "example"]


@click.group()
def example() -> None:
    """Saved examples of definitions: a request and what its answer must hold."""


@example.command(name="add")
@click.argument("app")
@click.argument("api_id")
@click.argument("name")
@click.option(
    "--path-param",
    "path_params",
    multiple=True,
    metavar="NAME=VALUE",
    help="A path parameter of the request; repeatable.",
)
@click.option("--query", default="", help="Query string, such as 'a=1&b=2'.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="A request header; repeatable.",
)
@click.option("--body", default=None, help="Request body text.")
@click.option(
    "--body-file",
    default=None,
    type=click.Path(dir_okay=False),
    help="File holding the request body.",
)
@click.option("--status", default="200", show_default=True, help="The expected status.")
@click.option(
    "--json-field",
    "fields",
    multiple=True,
    metavar="PATH=VALUE",
    help="A JSON field the answer must hold (PATH like items.0.name; VALUE as JSON, "
    "else text); repeatable.",
)
@click.option("--max-ms", default=None, help="The longest the run may take, in ms.")
@click.option("--replace", is_flag=True, help="Overwrite an example of that name.")
@click.pass_context
def add(
    ctx: click.Context,
    app: str,
    api_id: str,
    name: str,
    path_params: tuple[str, ...],
    query: str,
    headers: tuple[str, ...],
    body: str | None,
    body_file: str | None,
    status: str,
    fields: tuple[str, ...],
    max_ms: str | None,
    replace: bool,
) -> None:
    """Save an example NAME of definition API_ID of APP."""
    if body is not None and body_file is not None:
        raise click.UsageError("give --body or --body-file, not both")
    request = {
        "path_parameters": dict(parse_pair(p, "=", "--path-param") for p in path_params),
        "query": query,
        "headers": dict(parse_pair(h, ":", "--header") for h in headers),
        "body": body if body is not None else read_file(body_file, "body") or "",
    }
    expect = {"status": status, "json": dict(parse_field(f) for f in fields), "max_ms": max_ms}
    saved = workspace_of(ctx).add_example(
        app, api_id, name, request=request, expect=expect, replace=replace
    )
    count = len(saved.expect.json)
    click.echo(
        f"saved example {saved.key} of {app}: expects {saved.expect.status}"
        + (f" and {count} JSON field{'s' if count != 1 else ''}" if count else "")
        + (f" within {saved.expect.max_ms:g} ms" if saved.expect.max_ms is not None else "")
    )


@example.command(name="list")
@click.argument("app")
@click.option("--api-id", default=None, help="Only this definition's examples.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def list_(ctx: click.Context, app: str, api_id: str | None, as_json: bool) -> None:
    """List APP's examples."""
    found = workspace_of(ctx).examples(app, api_id)
    if as_json:
        echo_json([e.to_dict() for e in found])
        return
    rows = [
        {
            "api_id": e.api_id,
            "name": e.name,
            "status": e.expect.status,
            "json": ", ".join(f"{p}={json.dumps(v)}" for p, v in e.expect.json.items()),
            "max_ms": e.expect.max_ms,
        }
        for e in found
    ]
    echo_table(rows, ["api_id", "name", "status", "json", "max_ms"])


@example.command(name="remove")
@click.argument("app")
@click.argument("api_id")
@click.argument("name")
@click.pass_context
def remove(ctx: click.Context, app: str, api_id: str, name: str) -> None:
    """Remove example NAME of definition API_ID of APP."""
    workspace_of(ctx).remove_example(app, api_id, name)
    click.echo(f"removed example {api_id}/{name} of {app}")


@example.command(name="postman")
@click.argument("app")
@click.argument("collection", type=click.Path(dir_okay=False))
@click.option("--stage", required=True, type=STAGES, help="The stage whose document was converted.")
@click.option(
    "--output",
    "-o",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write here (default: rewrite COLLECTION).",
)
@click.pass_context
def postman(ctx: click.Context, app: str, collection: str, stage: str, output: str | None) -> None:
    """Add APP's examples to COLLECTION (converted from APP's OpenAPI document by
    openapi-to-postmanv2) as requests with tests, in a folder 'Examples': newman runs them."""
    from ..workspace.transfer import write_json

    text = read_file(collection, "collection")
    try:
        loaded = json.loads(text or "")
    except ValueError as exc:
        raise click.ClickException(f"{collection} is not JSON: {exc}") from None
    tested, missing = workspace_of(ctx).postman_examples(app, stage, loaded)
    target = write_json(output or collection, tested)
    count = len(tested["item"][-1]["item"])
    click.echo(f"added {count} example{'' if count == 1 else 's'} of {app} to {target} as tests")
    if missing:
        click.echo("left out (their operation is not in the collection): " + ", ".join(missing))


@click.command()
@click.argument("app")
@click.option(
    "--stage", type=STAGES, default=None, help="Run on what the stage serves (default: saved)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def check(ctx: click.Context, app: str, stage: str | None, as_json: bool) -> None:
    """Run APP's examples, each in a fresh sandboxed process within its time limit;
    exit 1 when one fails."""
    report = workspace_of(ctx).check(app, stage)
    if as_json:
        echo_json(report.to_dict())
    elif report.passed:
        click.echo(report.summary())
    else:
        for line in report.lines():
            click.echo(line)
    ctx.exit(0 if report.passed else 1)
