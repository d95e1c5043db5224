"""A real PostgreSQL server for the tests, from Debian's packages, in a temp directory.

``PostgresServer`` runs ``initdb`` and ``pg_ctl start`` on a free loopback port (and can
``stop``/``start`` again, for outage tests). ``postgres_url`` (session-scoped) yields a
SQLAlchemy URL of one shared server; ``postgres_server`` is that server itself, and
``fresh_database`` creates an empty store on it (a schema of its own: much faster than a
database) and returns its plain ``postgresql://`` URL (what the store takes). The
server is stopped and its directory removed at the end of the session. PostgreSQL
refuses to run as root, so as root the server runs as the ``postgres`` system user
(``runuser``). The tests using it are skipped, with the reason, only where no
PostgreSQL binaries exist or the server cannot start.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "fresh_database", "postgres_server", "postgres_url"]


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


class PostgresServer:
    """One PostgreSQL server in a temp directory; ``pytest.skip`` where none can run."""

    def __init__(self) -> None:
        bin_dir = _bin_dir()
        if bin_dir is None:
            pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
        self.bin_dir = bin_dir
        owner = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root and there is no 'postgres' user to run the server")
        self.data = tempfile.mkdtemp(prefix="notebook-kit-pg-")
        if owner is not None:
            os.chown(self.data, owner.pw_uid, owner.pw_gid)
        self.port = _free_port()
        self.pgdata = os.path.join(self.data, "data")
        self.log = os.path.join(self.data, "server.log")
        self._names = itertools.count(1)
        init = self._run(
            [f"{bin_dir}/initdb", "-D", self.pgdata, "-U", "postgres", "-A", "trust", "--no-sync"]
        )
        if init.returncode != 0:
            shutil.rmtree(self.data, ignore_errors=True)
            pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
        started = self.start()
        if started:
            shutil.rmtree(self.data, ignore_errors=True)
            pytest.skip(f"PostgreSQL did not start: {started}")

    def _run(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            _as_server_user(command), capture_output=True, text=True, timeout=60, cwd=self.data
        )

    @property
    def url(self) -> str:
        """The plain URL of the ``postgres`` database (the server's superuser, no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> str:
        """Start the server and wait until it accepts connections; "" or why it failed."""
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"
        pg_ctl = [f"{self.bin_dir}/pg_ctl", "-D", self.pgdata, "-l", self.log, "-o", options]
        done = self._run([*pg_ctl, "-w", "start"])
        if done.returncode == 0:
            return ""
        detail = Path(self.log).read_text()[-300:] if os.path.exists(self.log) else done.stderr
        return detail.strip() or "pg_ctl start failed"

    def stop(self, mode: str = "fast") -> None:
        self._run([f"{self.bin_dir}/pg_ctl", "-D", self.pgdata, "-m", mode, "-w", "stop"])

    def create_database(self) -> str:
        """A new, empty database; its plain ``postgresql://`` URL."""
        import psycopg

        name = f"nk_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def create_schema(self) -> str:
        """A new, empty schema in one shared database (much faster to make than a
        database): the URL of that database with the schema as its search path."""
        import psycopg

        name = f"nk_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return f"{self.url}?options=-csearch_path%3D{name}"

    def add_password_role(self, role: str, password: str) -> None:
        """A login role that must give ``password`` (every other login is trusted)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        hba = Path(self.pgdata) / "pg_hba.conf"
        rule = f"host all {role} 127.0.0.1/32 scram-sha-256\n"
        self._run(["sh", "-c", f"printf '%s' '{rule}' | cat - {hba} > {hba}.new"])
        self._run(["mv", f"{hba}.new", str(hba)])
        self._run([f"{self.bin_dir}/pg_ctl", "-D", self.pgdata, "reload"])

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.data, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's shared PostgreSQL server."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """``postgresql+psycopg://postgres@127.0.0.1:<port>/postgres`` of the shared server."""
    return postgres_server.url.replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture
def fresh_database(postgres_server: PostgresServer) -> str:
    """The plain URL of a new, empty store on the shared server (a schema of its own)."""
    return postgres_server.create_schema()
