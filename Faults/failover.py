"""The primary PostgreSQL server dies, and a synchronous standby is promoted at another address,
set up as the README's *A primary and a standby* says, word for word.

Two clusters of the scenario's own, from Debian's PostgreSQL, under FAULTS_DIR: db1, the primary,
with the README's primary settings, and db2 made from it with the README's `pg_basebackup -R`
command (its application name) and the README's standby settings, streaming synchronously. The API
(`notifiable serve --no-workers`) and a separate `notifiable work` get one DATABASE_URL naming both
hosts, with `target_session_attrs=read-write`. Under sustained registrations, and while a
20,000-device notification is being sent, the primary's postmaster is killed (`kill -9`) and the
standby promoted (`pg_ctl promote`); nothing is restarted and no configuration changes. Asserted:
  - no answer is a 500 (or any 5xx but 503); every 503 carries Retry-After and a JSON error;
  - every registration answered 2xx is on the new primary, as it was sent;
  - the notification ends with every device `sent` exactly once in the database, and the pushes the
    gateway accepted twice are no more than the deliveries leased when the primary died plus the
    attempts the worker recorded with an unknown outcome;
  - within 10 s of the promotion requests succeed again, every request started after that
    succeeds, and registrations in the 5 s after run at no less than 0.7 of their rate before
    the kill;
  - the kept counters equal a recount.
The API also has a read pool (NOTIFIABLE_READ_DATABASE_URL, the standby first, with
`target_session_attrs=prefer-standby`): before the kill, a notification listing and `/metrics`
are answered from the standby's sessions (`application_name` notifiable-read, and no session of
the primary pool there), and `/metrics` reports the replica's lag.

Then the README's way back: db1 is made db2's standby with the README's second base backup and
named synchronous with the README's statements; it streams `sync` and a registration commits. Last,
that standby is stopped while db2 lives, so every commit waits for it: a registration is answered
503 `request_deadline_exceeded` within the request deadline, and the API and the worker, sent
SIGTERM, exit within their drain time.
"""
import os
import re
import shutil
import signal
import subprocess
import time

import harness
from harness import (Client, apns_token, http_request, expect, expect_at_least, expect_at_most, expect_empty, expect_equal, log,
                     run_scenario, scaled, sql, sql_rows, wait_until)
from gateways import APNsGateway, delivery_states, expect_sent_once, insert_devices, leased, send_to_all
from load import Registrations

# Timing bounds double with a CPU hog beside the processes (FAULTS_STARVE=1).
SLOWER = harness.when_starved(2)
RECOVERY_BOUND = 10.0 * SLOWER   # seconds from the promotion to requests succeeding again
REGISTRATION_CLIENTS = 6
REQUEST_DEADLINE, DRAIN = 5, 8   # seconds; shorter than the defaults (15, 25) to keep the run short
SHUTDOWN_SLACK = 3.0 * SLOWER    # seconds a process may take beyond its drain time and backstop (5 s) to exit
WORKER_ENV = {"NOTIFIABLE_LEASE_SECONDS": 12, "NOTIFIABLE_APNS_TIMEOUT_SECONDS": 5, "NOTIFIABLE_POLL_MS": 200,
              "NOTIFIABLE_DRAIN_SECONDS": DRAIN}
API_ENV = {"NOTIFIABLE_DATABASE_POOL_SIZE": 20, "NOTIFIABLE_REQUEST_DEADLINE_SECONDS": REQUEST_DEADLINE,
           "NOTIFIABLE_DRAIN_SECONDS": DRAIN}


class Recipe:
    """The README's *A primary and a standby*, as an operator copies it: the primary's and the
    standby's postgresql.conf lines, the application names its `pg_basebackup -d` commands give
    (the first makes db2, the second makes db1 again after a failover), and the SQL that names the
    rejoined standby synchronous."""

    def __init__(self, path=os.path.join(harness.REPO, "README.md")):
        with open(path) as f:
            text = f.read()
        start = text.index("### A primary and a standby")
        section = text[start:text.index("\n## ", start)]
        blocks = re.findall(r"```\n(.*?)```", section, re.S)
        self.settings = {}
        self.backup_names = []
        self.rejoin_sql = []
        for block in blocks:
            first = block.splitlines()[0]
            role = re.match(r"# postgresql\.conf of the (primary|standby)\b", first)
            if role:
                self.settings[role.group(1)] = self.conf_lines(block)
            for name in re.findall(r"pg_basebackup .*-d 'application_name=(\w+)'", block):
                self.backup_names.append(name)
            if "ALTER SYSTEM" in block:
                self.rejoin_sql = [line.strip() for line in block.splitlines()
                                   if line.strip() and not line.strip().startswith("--")]
        expect(set(self.settings) == {"primary", "standby"}, f"the README gives primary and standby settings: {self.settings}")
        expect(len(self.backup_names) == 2, f"the README gives two base backups with application names: {self.backup_names}")
        expect(self.rejoin_sql, "the README gives the SQL that names a rejoined standby")

    @staticmethod
    def conf_lines(block):
        """`name = value` lines of a postgresql.conf block, comments dropped, values unquoted."""
        settings = {}
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip() if not line.strip().startswith("#") else ""
            match = re.match(r"(\w+)\s*=\s*(.*)$", line)
            if match:
                value = match.group(2).strip()
                settings[match.group(1)] = value[1:-1] if value.startswith("'") and value.endswith("'") else value
        return settings


class Cluster:
    """A PostgreSQL cluster of this scenario's own, on a port of its own."""

    def __init__(self, name):
        self.dir = os.path.join(harness.FAULTS_DIR, name)
        self.port = harness.free_port()

    def owned(self, args):
        """A PostgreSQL program (or a command given by its full path), as the clusters' owner."""
        return harness._as_cluster_owner([os.path.join(harness.PG_BIN, args[0])] + args[1:])

    def prepare_folder(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        os.chmod(self.dir, 0o700)

    def run(self, args, what):
        result = subprocess.run(self.owned(args), capture_output=True, text=True, timeout=300)
        expect(result.returncode == 0, f"{what}: {result.stdout.strip()} {result.stderr.strip()}")

    def initdb(self, settings):
        self.prepare_folder()
        self.run(["initdb", "-D", self.dir, "-U", "notifiable", "-A", "trust", "-E", "UTF8", "--locale=C"], "initdb")
        self.append_settings(settings)

    def base_backup_of(self, primary, application_name, settings):
        self.prepare_folder()
        self.run(["pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "notifiable", "-D", self.dir,
                  "-R", "-X", "stream", "-c", "fast", "-d", f"application_name={application_name}"], "pg_basebackup -R")
        self.append_settings(settings)

    def append_settings(self, settings):
        lines = "".join(f"{key} = '{value}'\n" for key, value in settings.items())
        self.run(["/bin/sh", "-c", f"printf %s \"$0\" >> {self.dir}/postgresql.auto.conf", lines], "settings")

    def start(self):
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off"
        self.run(["pg_ctl", "-D", self.dir, "-l", f"{self.dir}/server.log", "-w", "-t", "60", "-o", options, "start"],
                 f"start the cluster in {self.dir}")

    def stop(self):
        subprocess.run(self.owned(["pg_ctl", "-D", self.dir, "-m", "immediate", "-w", "stop"]), capture_output=True)

    def kill9(self):
        with open(os.path.join(self.dir, "postmaster.pid")) as f:
            postmaster = int(f.readline())
        os.kill(postmaster, signal.SIGKILL)
        return postmaster

    def promote(self):
        self.run(["pg_ctl", "-D", self.dir, "-w", "-t", "60", "promote"], "pg_ctl promote")

    def url(self, database):
        return f"postgres://notifiable@127.0.0.1:{self.port}/{database}?sslmode=disable"


def check_read_pool(api, app, standby):
    """A listing and /metrics are read on the standby, by the read pool's sessions; the lag it
    reports, in seconds."""
    listing = Client(api.url, app["server_credentials"]).get("/api/v1/notifications")
    expect_equal(listing.status, 200, f"the notification listing: {listing.body[:200]}")
    metrics = http_request("GET", api.url + "/metrics")
    expect_equal(metrics.status, 200, "GET /metrics")
    text = metrics.body if isinstance(metrics.body, str) else metrics.body.decode()
    lines = [line for line in text.splitlines() if line.startswith("notifiable_database_replica_lag_seconds")]
    expect(lines, "/metrics has no notifiable_database_replica_lag_seconds")
    lag = float(lines[0].split()[-1])
    expect_at_most(lag, 5, "the replica lag /metrics reports, in seconds")
    on_standby = dict(sql_rows("SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = 'faults_failover' "
                               "GROUP BY application_name", standby.url("postgres")))
    expect_at_least(int(on_standby.get("notifiable-read", 0)), 1, f"read pool sessions on the standby ({on_standby})")
    expect_equal(int(on_standby.get("notifiable", 0)), 0, f"primary pool sessions on the standby ({on_standby})")
    log(f"read pool: listing and /metrics read on the standby ({on_standby}); replica lag {lag:.2f} s")
    return lag


def main():
    devices = scaled(20_000, 400)
    recipe = Recipe()
    primary, standby = Cluster("failover-db1"), Cluster("failover-db2")
    primary.initdb(recipe.settings["primary"])
    primary.start()
    standby.base_backup_of(primary, recipe.backup_names[0], recipe.settings["standby"])
    standby.start()
    try:
        wait_until(lambda: sql("SELECT sync_state FROM pg_stat_replication", primary.url("postgres")) == "sync", 60,
                   "the standby streaming synchronously, as the README's settings name it")
        sql("CREATE DATABASE faults_failover", primary.url("postgres"))
        harness.DATABASE_URL = (f"postgres://notifiable@127.0.0.1:{primary.port},127.0.0.1:{standby.port}/faults_failover"
                                "?sslmode=disable&target_session_attrs=read-write")
        harness.cli("migrate")
        return run_failover(recipe, primary, standby, devices)
    finally:
        harness.stop_all()
        primary.stop()
        standby.stop()
        # The suite's own cluster is not this scenario's database: nothing is left to check there.
        harness.DATABASE_URL = None


def run_failover(recipe, primary, standby, devices):
    app = harness.create_app("Failover")
    gateway = APNsGateway(latency_ms=5)
    gateway.configure(app)
    reads = (f"postgres://notifiable@127.0.0.1:{standby.port},127.0.0.1:{primary.port}/faults_failover"
             "?sslmode=disable&target_session_attrs=prefer-standby")
    api = harness.Service(workers=False, env=dict(API_ENV, NOTIFIABLE_READ_DATABASE_URL=reads))
    worker = harness.start_worker(WORKER_ENV)

    # Registrations go to an app of their own, so that the broadcast's audience stays the devices inserted for it.
    registry = harness.create_app("Failover registrations")
    load = Registrations(api.url, registry["device_credentials"])
    threads = harness.in_threads(REGISTRATION_CLIENTS, load.loop)
    insert_devices(app["id"], "apns", devices)
    notification = send_to_all(app)
    log(f"notification {notification} to {devices} devices; {REGISTRATION_CLIENTS} clients registering")
    wait_until(lambda: delivery_states(notification).get("sent", 0) >= devices // 4 or not worker.alive(), 300,
               "a quarter of the pushes sent")
    expect(worker.alive(), f"the worker ended by itself: {worker.exit_report()}")

    lag = check_read_pool(api, app, standby)

    before_start = time.monotonic()
    time.sleep(3)
    killed_at = time.monotonic()
    rate_before = load.rate(before_start, killed_at)
    in_flight = leased(notification)
    primary.kill9()
    log(f"kill -9 of the primary's postmaster; {in_flight} deliveries were leased, "
        f"{rate_before:.0f} registrations/s before")
    time.sleep(1)
    standby.promote()
    promoted_at = time.monotonic()
    log(f"the standby on port {standby.port} is promoted ({promoted_at - killed_at:.1f} s after the kill)")
    time.sleep(RECOVERY_BOUND + 5)
    rate_after = load.rate(promoted_at + RECOVERY_BOUND, promoted_at + RECOVERY_BOUND + 5)
    load.finish(threads)
    expect(api.alive(), f"the API process after the failover: {api.exit_report()}")
    expect(worker.alive(), f"the worker process after the failover: {worker.exit_report()}")
    statuses = load.judge()
    answers = load.answers
    after = sorted((a for a in answers if a[0] >= promoted_at and 200 <= a[2] < 300), key=lambda a: a[1])
    expect(after, "no registration succeeded after the promotion")
    recovery = after[0][1] - promoted_at
    expect_at_most(round(recovery, 2), RECOVERY_BOUND, "seconds from the promotion to the first registration answered 2xx")
    late = [(a[2], a[5]) for a in answers if a[0] >= promoted_at + RECOVERY_BOUND and not 200 <= a[2] < 300]
    expect_empty(late, f"registrations started more than {RECOVERY_BOUND:g} s after the promotion that failed")
    expect_at_least(round(rate_after / rate_before, 2), 0.7 / SLOWER,
                    f"registration rate {RECOVERY_BOUND:g}–{RECOVERY_BOUND + 5:g} s after the promotion against before the kill")
    unavailable = statuses.get(503, 0)

    # What was acknowledged is on the new primary (sql() follows target_session_attrs there too).
    load.check_kept(registry["id"])
    expect_equal(sql("SELECT pg_is_in_recovery()", standby.url("faults_failover")), "f", "the promoted standby's recovery")

    duplicates, unknown = expect_sent_once(notification, devices, gateway, 300)
    counters = harness.check_counters()
    log(f"{len(load.registered)} registrations acknowledged, all on the new primary; {counters}")
    rejoined = rejoin(recipe, primary, standby, api, registry)
    hung = lose_synchronous_standby(primary, api, worker, registry)
    return (f"read pool on the standby (lag {lag:.2f} s); primary killed, standby promoted {promoted_at - killed_at:.1f} s later: first success {recovery:.2f} s after "
            f"the promotion, registrations at {rate_after / rate_before:.2f} of their rate before; {len(answers)} requests, "
            f"0 answered 500, {unavailable} answered 503; {len(load.registered)} registrations acknowledged, all on the new "
            f"primary; {devices} devices sent exactly once in the database, {duplicates} duplicate pushes at the gateway "
            f"({in_flight} leased at the kill), each explained by its delivery's attempts of unknown outcome ({unknown}); {counters}; {rejoined}; {hung}")


def register_one(api, registry, serial):
    client = Client(api.url, registry["device_credentials"], timeout=60)
    fields = {"provider": "apns", "token": apns_token(7_000_000_000 + serial), "name": f"After {serial}"}
    started = time.monotonic()
    try:
        return client.post("/api/v1/device_tokens", {"device_token": fields}), time.monotonic() - started
    finally:
        client.close()


def rejoin(recipe, old_primary, new_primary, api, registry):
    """The README's way back: the old primary made the new one's standby and named synchronous."""
    name = recipe.backup_names[1]
    old_primary.stop()
    old_primary.base_backup_of(new_primary, name, recipe.settings["standby"])
    old_primary.start()
    for statement in recipe.rejoin_sql:
        sql(statement, new_primary.url("postgres"))
    wait_until(lambda: sql("SELECT application_name || ' ' || sync_state FROM pg_stat_replication",
                           new_primary.url("postgres")) == f"{name} sync", 60,
               f"{name} rejoined as the promoted server's synchronous standby, as the README says")
    answer, seconds = register_one(api, registry, 1)
    expect(200 <= answer.status < 300, f"a registration with the rejoined synchronous standby: {answer}")
    log(f"{name} rejoined as a synchronous standby by the README's commands; a registration committed in {seconds:.2f} s")
    return f"{name} rejoined synchronous by the README's commands"


def lose_synchronous_standby(primary, api, worker, registry):
    """The synchronous standby stops while its primary lives: every commit waits for it. A request
    is answered 503 at its deadline, and SIGTERM still stops both processes within their drain."""
    primary.stop()
    answer, seconds = register_one(api, registry, 2)
    expect_equal(answer.status, 503, f"a registration whose commit waits for a lost standby: {answer}")
    expect_equal((answer.json or {}).get("error", {}).get("code"), "request_deadline_exceeded", "its error code")
    expect(answer.headers.get("retry-after"), "its Retry-After")
    expect_at_most(round(seconds, 2), REQUEST_DEADLINE + 1.5 * SLOWER, "seconds to the 503 of a request whose commit hangs")
    started = time.monotonic()
    for process in (api, worker):
        process.signal(signal.SIGTERM)
    bound = DRAIN + 5 + SHUTDOWN_SLACK
    exits = {}
    for process in (api, worker):
        status = process.wait(max(0.1, started + bound + 5 - time.monotonic()))
        exits[process.label] = (status, time.monotonic() - started)
    log(f"commits hanging: 503 after {seconds:.2f} s; after SIGTERM: " +
        ", ".join(f"{label} exited {status} in {took:.1f} s" for label, (status, took) in exits.items()))
    for label, (status, took) in exits.items():
        expect(status is not None, f"{label} still running {bound + 5:.0f} s after SIGTERM with its commits hanging")
        expect_at_most(round(took, 1), bound, f"seconds {label} took to exit after SIGTERM with its commits hanging")
    return (f"standby lost: a registration answered 503 after {seconds:.1f} s (deadline {REQUEST_DEADLINE} s), "
            + ", ".join(f"{label} exited {status} {took:.1f} s after SIGTERM" for label, (status, took) in exits.items())
            + f" (drain {DRAIN} s)")


run_scenario(main)
