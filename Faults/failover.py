"""The primary PostgreSQL server dies, and a synchronous standby is promoted at another address.

Two clusters of the scenario's own, from Debian's PostgreSQL, under FAULTS_DIR: a primary with
`synchronous_standby_names = '*'`, and a standby made from it with `pg_basebackup -R`, streaming
synchronously. The API (`notifiable serve --no-workers`) and a separate `notifiable work` get one
DATABASE_URL naming both hosts, with `target_session_attrs=read-write`. Under sustained
registrations, and while a 20,000-device notification is being sent, the primary's postmaster is
killed (`kill -9`) and the standby promoted (`pg_ctl promote`); nothing is restarted and no
configuration changes. Asserted:
  - no answer is a 500 (or any 5xx but 503); every 503 carries Retry-After and a JSON error;
  - every registration answered 2xx is on the new primary, as it was sent;
  - the notification ends with every device `sent` exactly once in the database, and the pushes the
    gateway accepted twice are no more than the deliveries leased when the primary died;
  - within 10 s of the promotion requests succeed again, every request started after that
    succeeds, and registrations in the 5 s after run at no less than 0.7 of their rate before
    the kill;
  - the kept counters equal a recount.
The API also has a read pool (NOTIFIABLE_READ_DATABASE_URL, the standby first, with
`target_session_attrs=prefer-standby`): before the kill, a notification listing and `/metrics`
are answered from the standby's sessions (`application_name` notifiable-read, and no session of
the primary pool there), and `/metrics` reports the replica's lag.
"""
import os
import random
import shutil
import signal
import subprocess
import threading
import time

import harness
from harness import (Client, apns_token, http_request, expect, expect_at_least, expect_at_most, expect_empty, expect_equal, log,
                     run_scenario, scaled, sql, sql_rows, wait_until)
from gateways import APNsGateway, delivery_states, insert_devices, leased, send_to_all, wait_settled

RECOVERY_BOUND = 10.0   # seconds from the promotion to requests succeeding again
REGISTRATION_CLIENTS = 6
WORKER_ENV = {"NOTIFIABLE_LEASE_SECONDS": 12, "NOTIFIABLE_APNS_TIMEOUT_SECONDS": 5, "NOTIFIABLE_POLL_MS": 200}


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

    def base_backup_of(self, primary, settings):
        self.prepare_folder()
        self.run(["pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "notifiable", "-D", self.dir,
                  "-R", "-X", "stream", "-c", "fast"], "pg_basebackup -R")
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


class Registrations:
    """Closed-loop registration clients; each answer kept with when its request started and ended."""

    def __init__(self, base_url, credential):
        self.base_url = base_url
        self.credential = credential
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers = []            # (started, ended, status, retry_after, json_error, body)
        self.transport_errors = []
        self.registered = {}         # token -> (fields, id) for every 2xx

    def loop(self, index):
        client = Client(self.base_url, self.credential, timeout=60)
        rng = random.Random(index)
        serial = 0
        while not self.stop.is_set():
            serial += 1
            token = apns_token(5_000_000_000 + index * 10_000_000 + serial)
            fields = {"provider": "apns", "token": token, "name": f"Phone {index}-{serial}",
                      "user_alias": f"user-{rng.randrange(100)}", "language": "en", "country": "gb"}
            started = time.monotonic()
            try:
                response = client.post("/api/v1/device_tokens", {"device_token": fields})
            except Exception as error:
                with self.lock:
                    self.transport_errors.append((started, repr(error)))
                time.sleep(0.1)
                continue
            ended = time.monotonic()
            with self.lock:
                self.answers.append((started, ended, response.status, response.headers.get("retry-after"),
                                     response.is_json_error() if response.status >= 400 else None, response.body[:300]))
                if 200 <= response.status < 300:
                    self.registered[token] = (fields, (response.json or {}).get("id"))
            if response.status == 503:
                time.sleep(0.05)

    def rate(self, since, until):
        """Registrations answered 2xx per second among requests that started in [since, until)."""
        with self.lock:
            count = sum(1 for a in self.answers if since <= a[0] < until and 200 <= a[2] < 300)
        return count / (until - since)


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
    primary, standby = Cluster("failover-primary"), Cluster("failover-standby")
    primary.initdb({"synchronous_standby_names": "*", "synchronous_commit": "on", "wal_level": "replica"})
    primary.start()
    # A standby must not wait for a standby of its own once promoted.
    standby.base_backup_of(primary, {"synchronous_standby_names": ""})
    standby.start()
    try:
        wait_until(lambda: sql("SELECT sync_state FROM pg_stat_replication", primary.url("postgres")) == "sync", 60,
                   "the standby streaming synchronously")
        sql("CREATE DATABASE faults_failover", primary.url("postgres"))
        harness.DATABASE_URL = (f"postgres://notifiable@127.0.0.1:{primary.port},127.0.0.1:{standby.port}/faults_failover"
                                "?sslmode=disable&target_session_attrs=read-write")
        harness.cli("migrate")
        return run_failover(primary, standby, devices)
    finally:
        harness.stop_all()
        primary.stop()
        standby.stop()
        # The suite's own cluster is not this scenario's database: nothing is left to check there.
        harness.DATABASE_URL = None


def run_failover(primary, standby, devices):
    app = harness.create_app("Failover")
    gateway = APNsGateway(latency_ms=5)
    gateway.configure(app)
    reads = (f"postgres://notifiable@127.0.0.1:{standby.port},127.0.0.1:{primary.port}/faults_failover"
             "?sslmode=disable&target_session_attrs=prefer-standby")
    api = harness.Service(workers=False, env={"NOTIFIABLE_DATABASE_POOL_SIZE": 20, "NOTIFIABLE_READ_DATABASE_URL": reads})
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
    load.stop.set()
    for thread in threads:
        thread.join(timeout=90)
    expect(api.alive(), f"the API process after the failover: {api.exit_report()}")
    expect(worker.alive(), f"the worker process after the failover: {worker.exit_report()}")
    expect_empty(load.transport_errors, "registrations that got no HTTP answer at all")

    answers = load.answers
    statuses = {}
    for answer in answers:
        statuses[answer[2]] = statuses.get(answer[2], 0) + 1
    log(f"answers by status: {dict(sorted(statuses.items()))}")
    expect_empty([(a[2], a[5]) for a in answers if a[2] >= 500 and a[2] != 503], "5xx answers other than 503")
    expect_empty([a[5] for a in answers if a[2] == 503 and not a[3]], "503 answers without Retry-After")
    expect_empty([(a[2], a[5]) for a in answers if a[2] >= 400 and not a[4]], "error answers that are not CONTRACT §4 JSON")
    expect_empty([(a[2], a[5]) for a in answers if 400 <= a[2] < 500], "4xx answers (the load sends only valid requests)")
    after = sorted((a for a in answers if a[0] >= promoted_at and 200 <= a[2] < 300), key=lambda a: a[1])
    expect(after, "no registration succeeded after the promotion")
    recovery = after[0][1] - promoted_at
    expect_at_most(round(recovery, 2), RECOVERY_BOUND, "seconds from the promotion to the first registration answered 2xx")
    late = [(a[2], a[5]) for a in answers if a[0] >= promoted_at + RECOVERY_BOUND and not 200 <= a[2] < 300]
    expect_empty(late, f"registrations started more than {RECOVERY_BOUND:g} s after the promotion that failed")
    expect_at_least(round(rate_after / rate_before, 2), 0.7,
                    f"registration rate {RECOVERY_BOUND:g}–{RECOVERY_BOUND + 5:g} s after the promotion against before the kill")
    unavailable = statuses.get(503, 0)

    # What was acknowledged is on the new primary (sql() follows target_session_attrs there too).
    rows = sql_rows(f"SELECT token, id, name, user_alias FROM devices WHERE app_id = {registry['id']}")
    stored = {row[0].lower(): row for row in rows}
    wrong = []
    for token, (fields, device_id) in load.registered.items():
        row = stored.get(token.lower())
        if row is None or (row[1], row[2], row[3]) != (str(device_id), fields["name"], fields["user_alias"]):
            wrong.append((token, row))
    expect_empty(wrong, "registrations answered 2xx that are not on the new primary as sent")
    expect_equal(sql("SELECT pg_is_in_recovery()", standby.url("faults_failover")), "f", "the promoted standby's recovery")

    states = wait_settled(notification, devices, 300)
    expect_equal(states, {"sent": devices}, "deliveries by state")
    distinct = int(sql(f"SELECT count(DISTINCT device_id) FROM deliveries WHERE notification_id = {notification}"))
    expect_equal(distinct, devices, "devices with a delivery")
    stats = gateway.stop()
    duplicates = stats.get("duplicate_accepts", 0)
    expect_equal(stats.get("tokens_accepted"), devices, "devices the gateway accepted a push for")
    expect_at_most(duplicates, max(in_flight, 1) * 2, "pushes accepted twice vs deliveries leased at the kill (two windows)")
    counters = harness.check_counters()
    log(f"{len(load.registered)} registrations acknowledged, all on the new primary; {counters}")
    return (f"read pool on the standby (lag {lag:.2f} s); primary killed, standby promoted {promoted_at - killed_at:.1f} s later: first success {recovery:.2f} s after "
            f"the promotion, registrations at {rate_after / rate_before:.2f} of their rate before; {len(answers)} requests, "
            f"0 answered 500, {unavailable} answered 503; {len(load.registered)} registrations acknowledged, all on the new "
            f"primary; {devices} devices sent exactly once in the database, {duplicates} duplicate pushes at the gateway "
            f"({in_flight} leased at the kill); {counters}")


run_scenario(main)
