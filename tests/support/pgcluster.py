"""A throwaway PostgreSQL server for tests: Debian's binaries, a fresh data directory, one port.

``temporary_cluster()`` runs initdb in a new directory under /tmp, starts the server as a child
process on 127.0.0.1 and a free TCP port (its unix socket inside that directory, so it never
touches /var/run/postgresql), creates one database, and yields its URL. At exit it stops the
server with ``pg_ctl stop -m immediate`` (the data is thrown away, so there is nothing to flush)
and removes the directory. Durability is off (``--no-sync``, ``fsync=off``): a crash loses
nothing we keep.

PostgreSQL refuses to run as root. When the tests run as root (CI does), initdb and pg_ctl run
as the ``postgres`` system user that Debian's package creates, through ``runuser``, and the
directory is handed to that user; otherwise they run as the current user. The same goes for the
server itself.
"""

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

PG_LIB_DIR = Path("/usr/lib/postgresql")
SERVICE_USER = "postgres"
ROLE = "bk"
START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10
POLL_INTERVAL_S = 0.1
LOG_TAIL_LINES = 30
# Another process may take the free port before the server binds it; then we try a new one.
START_ATTEMPTS = 3
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


def find_pg_bin() -> Path | None:
    """The bin directory of the newest PostgreSQL under /usr/lib/postgresql that has initdb and
    pg_ctl, or None when none is installed."""
    candidates = []
    for bin_dir in PG_LIB_DIR.glob("*/bin"):
        version = re.fullmatch(r"(\d+)(?:\.(\d+))?", bin_dir.parent.name)
        if version and (bin_dir / "initdb").is_file() and (bin_dir / "pg_ctl").is_file():
            candidates.append(((int(version[1]), int(version[2] or 0)), bin_dir))
    return max(candidates)[1] if candidates else None


def free_port() -> int:
    # Free now; the small window before the server binds it is acceptable for tests.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_tail(log_path: Path) -> str:
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no server log was written)"
    return "\n".join(lines[-LOG_TAIL_LINES:]) or "(the server log is empty)"


class PortTaken(RuntimeError):
    """The server could not bind its port."""


class PostgresCluster:
    """One data directory and the server on it; the commands run as ``run_as`` when given."""

    def __init__(self, bin_dir: Path, root: Path, run_as: str | None):
        self.bin_dir = bin_dir
        self.root = root
        self.data_dir = root / "data"
        self.log_path = root / "server.log"
        self.run_as = run_as
        self.process: subprocess.Popen | None = None

    def command(self, program: str, *args: str) -> list[str]:
        command = [str(self.bin_dir / program), *args]
        return ["runuser", "-u", self.run_as, "--", *command] if self.run_as else command

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess:
        # cwd inside our directory: the service user may not be able to read the caller's.
        return subprocess.run(
            self.command(program, *args), cwd=self.root, capture_output=True, text=True, check=False
        )

    def run_checked(self, program: str, *args: str) -> None:
        result = self.run(program, *args)
        if result.returncode != 0:
            raise RuntimeError(
                f"{program} exited with {result.returncode}:\n{result.stdout}{result.stderr}\n"
                f"server log tail:\n{log_tail(self.log_path)}"
            )

    def init(self) -> None:
        self.run_checked(
            "initdb", "-D", str(self.data_dir), "-U", ROLE, "--auth=trust",
            "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions",
        )  # fmt: skip

    def start(self, port: int) -> None:
        settings = {**SERVER_SETTINGS, "port": str(port), "unix_socket_directories": f"'{self.root}'"}
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# tests/support/pgcluster.py\n")
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())
        # The server runs as our child rather than through `pg_ctl start`, which leaves it an
        # orphan: we can see it exit during start-up, and we reap it at stop, so no defunct
        # postgres is left for PID 1 to collect.
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command("postgres", "-D", str(self.data_dir)),
                cwd=self.root, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None

    def wait_until_accepting(self, url: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                port_taken = "Address already in use" in log_tail(self.log_path)
                raise (PortTaken if port_taken else RuntimeError)(
                    f"PostgreSQL exited with {self.process.returncode} during start-up\n"
                    f"server log tail:\n{log_tail(self.log_path)}"
                )
            try:
                with psycopg.connect(url, connect_timeout=2):
                    return
            except psycopg.OperationalError as error:
                last_error = error
            time.sleep(POLL_INTERVAL_S)
        raise RuntimeError(
            f"PostgreSQL did not accept connections within {START_TIMEOUT_S} s "
            f"(last error: {last_error})\nserver log tail:\n{log_tail(self.log_path)}"
        )

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            timeout = str(STOP_TIMEOUT_S)
            self.run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", "immediate", "-w", "-t", timeout)
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            # pg_ctl could not stop it: kill the postmaster we started (its pid file names it;
            # under runuser our child is runuser, not postgres), then our child.
            pid = self.postmaster_pid()
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.process.kill()
            self.process.wait()


def make_root(run_as: str | None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="bk-pg-", dir="/tmp"))
    if run_as:
        account = pwd.getpwnam(run_as)
        os.chown(root, account.pw_uid, account.pw_gid)
        root.chmod(0o700)
    return root


def service_user() -> str | None:
    """The account to run PostgreSQL as: None (the current user) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise RuntimeError(
            f"running as root, and PostgreSQL refuses root, but there is no '{SERVICE_USER}' user "
            "to run it as (Debian's postgresql package creates one)"
        ) from None
    return SERVICE_USER


@contextmanager
def temporary_cluster(dbname: str = "buildkafka_test") -> Iterator[str]:
    """Yield ``postgresql://bk@127.0.0.1:PORT/<dbname>`` of a fresh server, removed at exit."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise RuntimeError(f"no PostgreSQL found under {PG_LIB_DIR}/*/bin (apt-get install postgresql)")
    run_as = service_user()
    root = make_root(run_as)
    cluster = PostgresCluster(bin_dir, root, run_as)
    try:
        cluster.init()
        for attempt in range(1, START_ATTEMPTS + 1):
            port = free_port()
            cluster.start(port)
            admin_url = f"postgresql://{ROLE}@127.0.0.1:{port}/postgres"
            try:
                cluster.wait_until_accepting(admin_url)
                break
            except PortTaken:
                if attempt == START_ATTEMPTS:
                    raise
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        yield f"postgresql://{ROLE}@127.0.0.1:{port}/{dbname}"
    finally:
        try:
            cluster.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)
