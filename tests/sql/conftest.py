"""Fixtures of the SQL tests: small hand-made databases, and a real PostgreSQL server.

How the PostgreSQL tests connect: `$RLVR_TEST_POSTGRES_DSN` if set (an admin role that may create
schemas in its database and create roles). Otherwise, on a machine where the local server runs
(CI's `.ci/setup-system.sh` starts Debian's cluster), the fixture provisions one itself through
the `postgres` OS account (`runuser`, or `sudo -n` when not root): a role `rlvr_test_admin` with
CREATEROLE, pg_signal_backend (to kill connections in a test), the right to set temp_file_limit
(PostgreSQL 15+; the backend caps its reader's temporary files) and a random password (one per
machine, kept in a private file in the temporary directory, so concurrent sessions agree), owning
a database `rlvr_test`, reached over TCP on 127.0.0.1. Without either the tests skip locally and
fail in CI (`require_service`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import require_extra, require_service
from tests.sql.sqlhelpers import shop_database

TEST_ROLE = "rlvr_test_admin"
TEST_DATABASE = "rlvr_test"


def _as_postgres_user(sql: str) -> subprocess.CompletedProcess:
    runner = (
        ["runuser", "-u", "postgres", "--"]
        if os.geteuid() == 0
        else ["sudo", "-n", "-u", "postgres"]
    )
    return subprocess.run(
        [*runner, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres"],
        input=sql,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _provision() -> tuple[str | None, str]:
    """(dsn, why-not): create the test role and database through the postgres OS account."""
    if shutil.which("pg_isready") is None or shutil.which("psql") is None:
        return None, "the PostgreSQL client tools are not installed"
    port = os.environ.get("PGPORT", "5432")
    ready = subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1", "-p", port], timeout=30)
    if ready.returncode != 0:
        return None, f"no server accepts connections on 127.0.0.1:{port} (run .ci/setup-system.sh)"
    password = _shared_password()
    script = f"""
        SELECT 'CREATE ROLE {TEST_ROLE} LOGIN CREATEROLE'
        WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{TEST_ROLE}') \\gexec
        ALTER ROLE {TEST_ROLE} LOGIN CREATEROLE PASSWORD '{password}';
        GRANT pg_signal_backend TO {TEST_ROLE};
        SELECT 'GRANT SET ON PARAMETER temp_file_limit TO {TEST_ROLE}'
        WHERE current_setting('server_version_num')::int >= 150000 \\gexec
        SELECT 'CREATE DATABASE {TEST_DATABASE} OWNER {TEST_ROLE}'
        WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{TEST_DATABASE}') \\gexec
    """
    try:
        done = _as_postgres_user(script)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot run psql as the postgres user: {exc}"
    if done.returncode != 0:
        return None, f"cannot provision a test role: {done.stderr.strip()[:300]}"
    return f"postgresql://{TEST_ROLE}:{password}@127.0.0.1:{port}/{TEST_DATABASE}", ""


def _shared_password() -> str:
    """The test role's password, the same for every test session on this machine: sessions that
    run at once (several worktrees, CI jobs) each set it, and a fresh one per session would
    lock the others out mid-run."""
    path = Path(tempfile.gettempdir()) / f"rlvr-test-postgres-{os.getuid()}.secret"
    if not path.exists():
        draft = path.with_name(f"{path.name}.{os.getpid()}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_hex(16))
        try:
            os.link(draft, path)  # atomic: the first session's password wins
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()


@pytest.fixture(scope="session")
def postgres_dsn_or_reason() -> tuple[str | None, str]:
    dsn = os.environ.get("RLVR_TEST_POSTGRES_DSN")
    if dsn:
        return dsn, ""
    require_extra("psycopg", "postgres")
    return _provision()


@pytest.fixture
def postgres_dsn(postgres_dsn_or_reason) -> str:
    dsn, why = postgres_dsn_or_reason
    require_service("PostgreSQL", dsn is not None, why)
    return dsn


@pytest.fixture
def postgres_backend(postgres_dsn):
    from rlvr.verifiers.sql.postgres import PostgresBackend

    backend = PostgresBackend(postgres_dsn)
    yield backend
    backend.close()


@pytest.fixture
def catalog() -> dict:
    return {"mini": shop_database(), "mini~1": shop_database("mini~1", extra_people=3)}
