"""What every fault scenario shares: its own database, the `notifiable` processes it runs,
APIAuth-signed requests, and assertions that say what was expected and what was found.

A scenario is `Faults/<name>.py`, run by scripts/test-faults as `python3 Faults/<name>.py` with
NOTIFIABLE_BIN, PG_BIN, PGDATA, PGPORT, FAULTS_DIR and FAULTS_SCALE in its environment. It ends
with `run_scenario(main)`: `main()` returns its figures as one line, printed last as
`RESULT <name>: <figures>`; exit status 0 means every assertion held. Standard library only.
"""
import base64
import datetime
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = os.path.splitext(os.path.basename(sys.argv[0]))[0]
BIN = os.environ.get("NOTIFIABLE_BIN", "")
PG_BIN = os.environ.get("PG_BIN", "")
PGDATA = os.environ.get("PGDATA", "")
PGPORT = int(os.environ.get("PGPORT", "5432"))
FAULTS_DIR = os.environ.get("FAULTS_DIR") or f"/tmp/notifiable-faults-{NAME}"
SCALE = float(os.environ.get("FAULTS_SCALE", "1"))
# FAULTS_STARVE=1: a CPU hog runs beside the scenario (scripts/lib/starve.sh).
STARVED = os.environ.get("FAULTS_STARVE") == "1"
MIGRATIONS = os.path.join(REPO, "Migrations")
CONTENT_TYPE = "application/json; charset=utf-8"
ADMIN_TOKEN = "faults-admin-token-" + base64.b16encode(os.urandom(8)).decode().lower()
MASTER_KEY = base64.b64encode(os.urandom(32)).decode()
# Same cluster options as scripts/lib/postgres.sh's pg_start, for starting it again after a stop.
PG_OPTIONS = os.environ.get(
    "PG_OPTIONS",
    f"-p {PGPORT} -k {PGDATA} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off",
)

os.makedirs(FAULTS_DIR, exist_ok=True)


# ---------------------------------------------------------------- failures and assertions

class ScenarioFailure(AssertionError):
    """An end state that differs from the one the scenario demands."""


def expect(condition, what):
    if not condition:
        raise ScenarioFailure(what)


def expect_equal(found, expected, what):
    if found != expected:
        raise ScenarioFailure(f"{what}: expected {expected!r}, found {found!r}")


def expect_at_most(found, limit, what):
    if found > limit:
        raise ScenarioFailure(f"{what}: expected at most {limit!r}, found {found!r}")


def expect_at_least(found, minimum, what):
    if found < minimum:
        raise ScenarioFailure(f"{what}: expected at least {minimum!r}, found {found!r}")


def expect_empty(items, what, show=10):
    items = list(items)
    if items:
        shown = ", ".join(repr(item) for item in items[:show])
        more = f" (and {len(items) - show} more)" if len(items) > show else ""
        raise ScenarioFailure(f"{what}: expected none, found {len(items)}: {shown}{more}")


def scaled(full, minimum=1):
    """`full` (the size the issue names) times FAULTS_SCALE, never below `minimum`."""
    return max(minimum, int(round(full * SCALE)))


def wait_until(condition, timeout, what=None, interval=0.1):
    """Polls `condition` until it is truthy and returns its value. After `timeout` seconds it
    fails the scenario with `what` when given, else returns the last (falsy) value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            break
        time.sleep(interval)
    if not value and what:
        raise ScenarioFailure(f"{what}: not within {timeout:g} s")
    return value


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------- machine

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_open_file_limit(wanted=65536):
    """Raises this process's open-file limit (inherited by what it starts) as far as allowed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_kib(pid):
    """Resident set size of a process, in KiB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# ---------------------------------------------------------------- PostgreSQL

DATABASE_URL = None


def _as_cluster_owner(args):
    # initdb, postgres and pg_ctl refuse to run as root; the cluster belongs to postgres then.
    return ["runuser", "-u", "postgres", "--"] + args if os.geteuid() == 0 else args


def database_url(name):
    return f"postgres://notifiable@127.0.0.1:{PGPORT}/{name}?sslmode=disable"


def fresh_database(name=None):
    """Drops and creates this scenario's database, migrates it, and returns its URL (also kept
    as the default for sql() and the processes started here)."""
    global DATABASE_URL
    name = name or f"faults_{NAME}"
    psql = os.path.join(PG_BIN, "psql")
    admin = database_url("postgres")
    subprocess.run([psql, admin, "-qc", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'], check=True, capture_output=True)
    subprocess.run([psql, admin, "-qc", f'CREATE DATABASE "{name}"'], check=True, capture_output=True)
    DATABASE_URL = database_url(name)
    cli("migrate")
    return DATABASE_URL


def sql(query, url=None):
    """Runs SQL through psql; returns its output (unaligned, tuples only) stripped."""
    result = subprocess.run(
        [os.path.join(PG_BIN, "psql"), url or DATABASE_URL, "-X", "-v", "ON_ERROR_STOP=1", "-tAc", query],
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise ScenarioFailure(f"SQL failed: {query.strip()[:300]}\n{result.stderr.strip()}")
    return result.stdout.strip()


def sql_value(query, url=None):
    text = sql(query, url)
    return int(text) if text.lstrip("-").isdigit() else text


def sql_rows(query, url=None):
    """Rows as lists of strings (fields split on a unit separator, so '|' in data is safe)."""
    result = subprocess.run(
        [os.path.join(PG_BIN, "psql"), url or DATABASE_URL, "-X", "-v", "ON_ERROR_STOP=1", "-tA", "-F", "\x1f", "-c", query],
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise ScenarioFailure(f"SQL failed: {query.strip()[:300]}\n{result.stderr.strip()}")
    return [line.split("\x1f") for line in result.stdout.splitlines() if line]


def pg_ctl(*args, timeout=120):
    command = _as_cluster_owner([os.path.join(PG_BIN, "pg_ctl"), "-D", PGDATA] + list(args))
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def pg_accepts_connections():
    try:
        with socket.create_connection(("127.0.0.1", PGPORT), timeout=0.5):
            pass
    except OSError:
        return False
    result = subprocess.run([os.path.join(PG_BIN, "pg_isready"), "-h", "127.0.0.1", "-p", str(PGPORT), "-t", "1"],
                            capture_output=True)
    return result.returncode == 0


def pg_stop(mode="immediate"):
    """Stops the cluster (`immediate`: a crash, no checkpoint; the next start recovers from WAL)."""
    result = pg_ctl("stop", "-m", mode, "-w", "-t", "60")
    expect(result.returncode == 0, f"pg_ctl stop -m {mode} failed: {result.stderr.strip()}")


def pg_start():
    result = pg_ctl("start", "-w", "-t", "120", "-l", os.path.join(PGDATA, "server.log"), "-o", PG_OPTIONS)
    expect(result.returncode == 0, f"pg_ctl start failed: {result.stderr.strip()}")


def pg_restart(mode="immediate"):
    result = pg_ctl("restart", "-m", mode, "-w", "-t", "120", "-l", os.path.join(PGDATA, "server.log"), "-o", PG_OPTIONS)
    expect(result.returncode == 0, f"pg_ctl restart -m {mode} failed: {result.stderr.strip()}")


# ---------------------------------------------------------------- notifiable processes

def service_environment(extra=None):
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": DATABASE_URL or "",
        "NOTIFIABLE_MASTER_KEY": MASTER_KEY,
        "NOTIFIABLE_ADMIN_TOKEN": ADMIN_TOKEN,
        "NOTIFIABLE_MIGRATIONS_DIR": MIGRATIONS,
        "LOG_LEVEL": "warning",
    })
    env.update({key: str(value) for key, value in (extra or {}).items()})
    return env


def cli(*args, env=None, check=True, timeout=600):
    """Runs a short `notifiable` command; returns its standard output."""
    result = subprocess.run([BIN] + [str(a) for a in args], env=service_environment(env), capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise ScenarioFailure(f"notifiable {' '.join(map(str, args))} exited {result.returncode}:\n"
                              f"{result.stdout.strip()}\n{result.stderr.strip()}")
    return result.stdout


def create_app(name, sandbox=False):
    """Creates an app; returns `notifiable apps create --json`'s object."""
    args = ["apps", "create", "--name", name, "--json"] + (["--sandbox"] if sandbox else [])
    return json.loads(cli(*args))


class Process:
    """A process this scenario started (any command), logging to FAULTS_DIR/<label>.log. Every
    one is stopped when the scenario ends, however it ends."""
    running = []
    _labels = {}

    def __init__(self, args, label, env=None):
        count = Process._labels.get(label, 0)
        Process._labels[label] = count + 1
        self.label = label if count == 0 else f"{label}-{count}"
        self.args = [str(a) for a in args]
        self.log_path = os.path.join(FAULTS_DIR, f"{self.label}.log")
        self._log = open(self.log_path, "ab")
        self.popen = subprocess.Popen(self.args, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        self.pid = self.popen.pid
        Process.running.append(self)
        if os.environ.get("FAULTS_PIDS"):  # scripts/test-faults stops whatever a killed scenario left
            with open(os.environ["FAULTS_PIDS"], "a") as f:
                f.write(f"{self.pid}\n")

    def alive(self):
        return self.popen.poll() is None

    @property
    def returncode(self):
        return self.popen.poll()

    def signal(self, number):
        if self.alive():
            self.popen.send_signal(number)

    def kill9(self):
        self.signal(signal.SIGKILL)
        self.popen.wait()

    def wait(self, timeout):
        """Waits for exit; returns the exit status, or None if it still runs after `timeout`."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self, timeout=30):
        """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit status."""
        if self.alive():
            self.popen.terminate()
            if self.wait(timeout) is None:
                self.kill9()
        self._log.close()
        return self.popen.returncode

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, lines=30):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def exit_report(self):
        """How the process ended and, for a crash, why: the runtime's fatal-error line and the
        crashed thread's first frames from Swift's backtrace, which the log's tail (registers,
        loaded images) does not show."""
        status = self.returncode
        if status is None:
            return f"{self.label} is still running"
        if status < 0:
            try:
                how = f"killed by {signal.Signals(-status).name}"
            except ValueError:
                how = f"killed by signal {-status}"
        else:
            how = f"exited with status {status}"
        lines = self.log_text().splitlines()
        why = [line for line in lines if "Fatal error" in line or "*** Program crashed" in line]
        for index, line in enumerate(lines):
            if re.search(r'^Thread \d+ .*crashed:', line):
                frames = lines[index:index + 24]
                why += frames[:next((i for i, f in enumerate(frames) if f.startswith("Registers:")), len(frames))]
                break
        if not why:
            why = lines[-30:]
        return f"{self.label} {how}:\n" + "\n".join(why)


class Service(Process):
    """`notifiable serve` (API, and workers unless `workers=False`) on a port of its own."""

    def __init__(self, workers=False, env=None, label="serve", port=None, ready_timeout=60):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [BIN, "serve", "--port", self.port, "--no-migrate"] + ([] if workers else ["--no-workers"])
        super().__init__(args, label, service_environment(env))
        if ready_timeout:
            self.wait_ready(ready_timeout)

    def wait_ready(self, timeout=60):
        def ready():
            expect(self.alive(), f"not ready: {self.exit_report()}")
            try:
                return http_request("GET", self.url + "/health/ready", timeout=2).status == 200
            except OSError:
                return False
        wait_until(ready, timeout, f"{self.label} on port {self.port} ready (/health/ready 200)")


def start_worker(env=None, label="work"):
    """`notifiable work`: fan-out and delivery workers, no API."""
    return Process([BIN, "work", "--no-migrate"], label, service_environment(env))


def stop_all():
    for process in reversed(Process.running):
        try:
            process.terminate(timeout=10)
        except Exception:  # a failure to stop one must not keep the others running
            pass


# ---------------------------------------------------------------- HTTP and APIAuth

class Response:
    def __init__(self, status, headers, body, seconds):
        self.status = status
        self.headers = headers  # lower-cased names
        self.body = body
        self.seconds = seconds

    @property
    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def is_json_error(self):
        """Whether the body has CONTRACT §4's shape: {"error": {"code": str, "message": str, …}}."""
        body = self.json
        error = body.get("error") if isinstance(body, dict) else None
        return (isinstance(error, dict) and isinstance(error.get("code"), str) and isinstance(error.get("message"), str)
                and self.headers.get("content-type", "").startswith("application/json"))

    def __repr__(self):
        return f"<HTTP {self.status} {self.body[:200]!r}>"


def when_starved(factor):
    """The factor a scenario's timing bounds grow by in starved mode (1 otherwise). Each scenario
    states its own; correctness assertions never use it."""
    return float(factor) if STARVED else 1.0


def http_date(now=None):
    return email.utils.formatdate(now if now is not None else time.time(), usegmt=True)


_last_signed = {}
_last_signed_lock = threading.Lock()


def signing_time(key):
    """When a client signs a request: now, unless it signed the very same request (credential,
    method, path, body) at this second or later — then a second before that. A backend signs each
    send as it makes it; two sends of one request within a second would sign alike, and the service
    refuses a server request it has seen (replayed_request), so a scenario's repeated probes stand
    for sends at distinct moments."""
    now = int(time.time())
    with _last_signed_lock:
        last = _last_signed.get(key)
        when = now if last is None else min(now, last - 1)
        _last_signed[key] = when
    return when


def signed_headers(method, path, body, access_id, secret_key, content_type=CONTENT_TYPE, date=None,
                   algorithm="sha1", content_md5=False):
    """CONTRACT §2 and §6: HMAC over `METHOD,content_type,content_hash,path,date`, path without query.
    A POST, PUT or PATCH covers its body as the api_auth gem does (X-Authorization-Content-SHA256,
    or Content-MD5 with `content_md5`), which server credentials must and any credential may."""
    date = date or http_date()
    hash_header, content_hash = None, ""
    if content_md5:
        hash_header, content_hash = "Content-MD5", base64.b64encode(hashlib.md5(body).digest()).decode()
    elif method.upper() in ("POST", "PUT", "PATCH"):
        hash_header = "X-Authorization-Content-SHA256"
        content_hash = base64.b64encode(hashlib.sha256(body or b"").digest()).decode()
    canonical = ",".join([method.upper(), content_type, content_hash, path.split("?", 1)[0], date])
    digest = hashlib.sha1 if algorithm == "sha1" else hashlib.sha256
    signature = base64.b64encode(hmac.new(secret_key.encode(), canonical.encode(), digest).digest()).decode()
    scheme = "APIAuth" if algorithm == "sha1" else "APIAuth-HMAC-SHA256"
    headers = {"Date": date, "Content-Type": content_type, "Authorization": f"{scheme} {access_id}:{signature}"}
    if hash_header:
        headers[hash_header] = content_hash
    return headers


def http_request(method, url, body=None, headers=None, timeout=30, connection=None):
    """One request; `connection` (an http.client.HTTPConnection) is reused when given."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    rest = url.split("://", 1)[1]
    hostport, _, path = rest.partition("/")
    path = "/" + path
    own = connection is None
    if own:
        host, _, port = hostport.partition(":")
        connection = http.client.HTTPConnection(host, int(port or 80), timeout=timeout)
    started = time.monotonic()
    try:
        connection.request(method, path, body=body, headers=headers or {})
        answer = connection.getresponse()
        data = answer.read()
        return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, data.decode("utf-8", "replace"),
                        time.monotonic() - started)
    finally:
        if own:
            connection.close()


class Client:
    """Signed requests to one service as one credential (`{"access_id", "secret_key"}`), or as
    the admin (`admin=True`), over one kept-alive connection (one Client per thread)."""

    def __init__(self, base_url, credential=None, admin=False, timeout=30):
        self.base_url = base_url.rstrip("/")
        self.credential = credential
        self.admin = admin
        self.timeout = timeout
        self._connection = None

    def _connect(self):
        if self._connection is None:
            host, _, port = self.base_url.split("://", 1)[1].partition(":")
            self._connection = http.client.HTTPConnection(host, int(port), timeout=self.timeout)
        return self._connection

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def headers(self, method, path, body):
        if self.admin:
            return {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": CONTENT_TYPE}
        if self.credential is None:
            return {"Content-Type": CONTENT_TYPE}
        key = (self.credential["access_id"], method, path, hashlib.sha256(body or b"").hexdigest())
        return signed_headers(method, path, body, self.credential["access_id"], self.credential["secret_key"],
                              date=http_date(signing_time(key)))

    def request(self, method, path, body=None, headers=None):
        """Sends and returns a Response; connection failures raise OSError (http.client's too)."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        all_headers = self.headers(method, path, body or b"")
        all_headers.update(headers or {})
        try:
            return http_request(method, self.base_url + path, body, all_headers, self.timeout, self._connect())
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)


# ---------------------------------------------------------------- fake APNs

class FakeAPNs(Process):
    """`notifiable fake-apns` trusting a fresh ES256 key (made with openssl), with `configure(app)`
    pointing an app's APNs settings at it. `extra_args` go to the command (e.g. --failure-rate)."""
    TEAM, KEY_ID, TOPIC = "FAULTTEAM1", "FAULTKEY01", "com.example.faults"

    def __init__(self, extra_args=(), label="fake-apns"):
        self.port = free_port()
        self.key_path = os.path.join(FAULTS_DIR, f"{label}-key.p8")
        public_path = os.path.join(FAULTS_DIR, f"{label}-key.pub.pem")
        self.cert_path = os.path.join(FAULTS_DIR, f"{label}-cert.pem")
        for path in (self.cert_path,):
            if os.path.exists(path):
                os.remove(path)
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                        self.key_path], check=True, capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", self.key_path, "-pubout", "-out", public_path], check=True,
                       capture_output=True)
        args = [BIN, "fake-apns", "--port", self.port, "--trust", f"{self.TEAM}:{self.KEY_ID}:{public_path}",
                "--certificate-out", self.cert_path, "--topic", self.TOPIC, "--log-level", "warning"] + list(extra_args)
        super().__init__(args, label)
        wait_until(lambda: os.path.exists(self.cert_path) or not self.alive(), 60, f"{label} wrote its certificate")
        expect(self.alive(), self.exit_report())
        self.url = f"https://127.0.0.1:{self.port}"

    def configure(self, app):
        cli("apps", "set-apns", "--app", app["id"], "--key-id", self.KEY_ID, "--team-id", self.TEAM,
            "--bundle-id", self.TOPIC, "--key-file", self.key_path, "--environment", "sandbox",
            "--endpoint", self.url, "--ca-file", self.cert_path)


def apns_token(n):
    """A distinct 64-hex-digit APNs token for each integer."""
    return f"{n:064x}"


# ---------------------------------------------------------------- running a scenario

def _stop_on_signal(number, _frame):
    raise SystemExit(128 + number)


def run_scenario(main):
    """Runs `main()`, prints `RESULT <name>: <figures>` and exits 0; on a failed expectation or
    any error prints why with the tails of the started processes' logs and exits 1. Stops
    every started process either way (also on SIGTERM/SIGINT from scripts/test-faults)."""
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
    started = time.monotonic()
    status = 1
    try:
        figures = main()
        status = 0
    except ScenarioFailure as failure:
        print(f"\nFAILED {NAME}: {failure}", flush=True)
        figures = f"FAILED: {str(failure).splitlines()[0][:200]}"
    except BaseException as error:  # noqa: B036 - a crash of the scenario is a failure too
        traceback.print_exc()
        figures = f"ERROR: {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    if status != 0:
        for process in Process.running:
            print(f"\n--- last lines of {process.label} ({process.log_path}) ---\n{process.log_tail()}", flush=True)
    stop_all()
    if status == 0 and DATABASE_URL and pg_accepts_connections():
        try:
            figures += f"; {check_counters()}"
        except ScenarioFailure as failure:
            print(f"\nFAILED {NAME}: {failure}", flush=True)
            figures, status = f"FAILED: {str(failure).splitlines()[0][:200]}", 1
    log(f"{NAME} took {time.monotonic() - started:.0f} s")
    print(f"RESULT {NAME}: {figures}", flush=True)
    sys.exit(status)


# Every notification's kept counters (folded totals plus changes not folded yet) beside a recount
# of its deliveries, in one statement so both come from one snapshot; rows that differ.
COUNTER_MISMATCHES = """
WITH kept AS (
    SELECT notification_id, sum(pending) AS pending, sum(retrying) AS retrying, sum(sent) AS sent, sum(failed) AS failed,
           sum(dead) AS dead, sum(cancelled) AS cancelled, sum(delivered) AS delivered, sum(opened) AS opened
    FROM (SELECT notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened FROM notification_counters
          UNION ALL
          SELECT notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened FROM notification_counter_changes) AS k
    WHERE notification_id IN (SELECT id FROM notifications)
    GROUP BY notification_id
), counted AS (
    SELECT notification_id,
           count(*) FILTER (WHERE state IN ('available', 'running')) AS pending, count(*) FILTER (WHERE state = 'retrying') AS retrying,
           count(*) FILTER (WHERE state = 'sent') AS sent, count(*) FILTER (WHERE state = 'failed') AS failed,
           count(*) FILTER (WHERE state = 'dead') AS dead, count(*) FILTER (WHERE state = 'cancelled') AS cancelled,
           count(delivered_at) AS delivered, count(opened_at) AS opened
    FROM deliveries WHERE kind <> 'sync' GROUP BY notification_id
), compared AS (
    SELECT n.id,
           ARRAY[k.pending, k.retrying, k.sent, k.failed, k.dead, k.cancelled, k.delivered, k.opened]::int8[] AS kept,
           ARRAY[c.pending, c.retrying, c.sent, c.failed, c.dead, c.cancelled, c.delivered, c.opened]::int8[] AS counted
    FROM notifications n LEFT JOIN kept k ON k.notification_id = n.id LEFT JOIN counted c ON c.notification_id = n.id
)
SELECT (SELECT count(*) FROM notifications), id, kept::text, counted::text FROM compared
WHERE coalesce(kept, ARRAY[0,0,0,0,0,0,0,0]::int8[]) <> coalesce(counted, ARRAY[0,0,0,0,0,0,0,0]::int8[])
UNION ALL SELECT (SELECT count(*) FROM notifications), NULL, NULL, NULL
"""


def check_counters():
    """Fails when any notification's kept counters differ from a recount of its deliveries;
    otherwise says how many were checked."""
    rows = sql_rows(COUNTER_MISMATCHES)
    checked = int(next(row for row in rows if not row[1])[0])
    mismatches = [row for row in rows if row[1]]
    if mismatches:
        shown = "; ".join(f"notification {row[1]}: kept {row[2]}, recounted {row[3]}" for row in mismatches[:5])
        raise ScenarioFailure(f"kept counters differ from a recount (pending, retrying, sent, failed, dead, cancelled, "
                              f"delivered, opened) for {len(mismatches)} of {checked} notifications: {shown}")
    return f"counters exact for {checked} notifications"


def in_threads(count, target, *args):
    """Starts `count` daemon threads running `target(index, *args)`; returns them."""
    threads = [threading.Thread(target=target, args=(index,) + args, daemon=True) for index in range(count)]
    for thread in threads:
        thread.start()
    return threads


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)
