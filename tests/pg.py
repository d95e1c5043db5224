"""A real PostgreSQL server for the tests, from Debian's packages, in a temp directory.

``postgres_url`` (session-scoped) runs ``initdb`` and ``pg_ctl start`` on a free loopback
port and yields a SQLAlchemy URL; the server is stopped and its directory removed at the
end of the session. PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` system user (``runuser``). The tests using it are skipped, with the reason,
only where no PostgreSQL binaries exist or the server cannot start.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["postgres_url"]


def _bin_dir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """``postgresql+psycopg://postgres@127.0.0.1:<port>/postgres`` of a fresh server."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server")
    data = tempfile.mkdtemp(prefix="notebook-kit-pg-")
    if os.geteuid() == 0:
        os.chown(data, owner.pw_uid, owner.pw_gid)
    port = _free_port()
    pgdata = os.path.join(data, "data")
    log = os.path.join(data, "server.log")
    run = dict(capture_output=True, text=True, timeout=60, cwd=data)
    init = subprocess.run(
        _as_server_user(
            [f"{bin_dir}/initdb", "-D", pgdata, "-U", "postgres", "-A", "trust", "--no-sync"]
        ),
        **run,
    )
    if init.returncode != 0:
        shutil.rmtree(data, ignore_errors=True)
        pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = subprocess.run(
        _as_server_user(
            [f"{bin_dir}/pg_ctl", "-D", pgdata, "-l", log, "-o", options, "-w", "start"]
        ),
        **run,
    )
    if start.returncode != 0:
        detail = Path(log).read_text()[-300:] if os.path.exists(log) else start.stderr
        shutil.rmtree(data, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start: {detail.strip()}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([f"{bin_dir}/pg_ctl", "-D", pgdata, "-m", "immediate", "-w", "stop"]),
            **run,
        )
        shutil.rmtree(data, ignore_errors=True)
