"""A full disk under the store: every CLI write answers one line, ``notebook-kit: the
store's disk is full``, exits 1 and changes nothing (was a 42-line traceback ending in
``cannot rollback - no transaction is active``). A real tmpfs, filled up, in a mount
namespace of the test's own (``support.full_disk``)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from support.full_disk import run_on_a_small_disk

NK = f"{shlex.quote(sys.executable)} -m notebook_kit"
LINE = "notebook-kit: the store's disk is full"

WRITES = [
    "create shop item --label Item --method GET --resource item --action-file $DISK/big.py",
    "deploy restapi_sample --stage dev",
    "settings set request_timeout 30",
    "keys --rotate dev",
    "undeploy restapi_sample --stage prod",
]


def test_every_cli_write_on_a_full_disk_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    script = f"""
export NOTEBOOK_KIT_HOME=$DISK/ws
mkdir -p "$NOTEBOOK_KIT_HOME"
{NK} sample > /dev/null || exit 90
{NK} keys > $DISK/keys-before
{NK} deployments --json > $DISK/deployments-before
printf 'res.body = "%s"\\n' "$(head -c 300000 /dev/zero | tr '\\0' x)" > $DISK/big.py
fill 40960
for command in {" ".join(shlex.quote(c) for c in WRITES)}; do
  eval "{NK} $command" > /dev/null 2> {tmp_path}/err  # not on the full disk
  echo "exit $? $(wc -l < {tmp_path}/err) $(head -c 300 {tmp_path}/err)"
done
rm $DISK/filler
{NK} list --json | grep -c '"shop"' || true
{NK} keys | diff - $DISK/keys-before > /dev/null && echo "keys unchanged"
{NK} deployments --json | diff - $DISK/deployments-before > /dev/null \
  && echo "deployments unchanged"
{NK} settings get request_timeout
"""
    done = run_on_a_small_disk(script, tmp_path / "disk")
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[: len(WRITES)] == [f"exit 1 1 {LINE}"] * len(WRITES), done.stdout + done.stderr
    assert lines[len(WRITES) :] == ["0", "keys unchanged", "deployments unchanged", "60.0"]
