"""PostgreSQL goes away under load, twice, and comes back.

Several clients register devices (signed POST /api/v1/device_tokens) and a backend sends
notifications to them (POST /api/v1/notifications) while a worker delivers to a fake APNs
gateway. Meanwhile PostgreSQL is restarted with `pg_ctl restart -m immediate` (a crash: no
checkpoint, recovery from WAL), and later stopped the same way, kept away for a few seconds, and
started again. Asserted:
  - the API process and the worker process stay up;
  - no answer is a 500 (or any 5xx but 503); every 503 carries Retry-After and a JSON error;
    while the database is away for seconds, answers are 503 (some are counted);
  - within 5 s of the database accepting connections again requests succeed, and every request
    started later than that succeeds (the recovery time is measured);
  - every registration that got a 2xx is in the database with its fields and its id;
  - every notification that got 202 is fanned out to exactly the devices it named, and every
    delivery in the database ends `sent`: none lost, none stuck leased.
"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (Client, FakeAPNs, Service, apns_token, create_app, expect, expect_at_most, expect_empty,
                     expect_equal, expect_at_least, fresh_database, log, pg_accepts_connections, pg_restart, pg_start,
                     pg_stop, run_scenario, scaled, sql, sql_rows, start_worker, wait_until)

REGISTRATION_CLIENTS = 6
# Timing bounds double with a CPU hog beside the processes (FAULTS_STARVE=1).
SLOWER = harness.when_starved(2)
RECOVERY_BOUND = 5.0 * SLOWER  # seconds after the database accepts connections again
LONG_OUTAGE = 3.0     # seconds the database stays stopped in the second fault


class Load:
    """Registrations and sends, each answer recorded with when its request started and ended."""

    def __init__(self, base_url, device_credential, server_credential):
        self.base_url = base_url
        self.device_credential = device_credential
        self.server_credential = server_credential
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers = []        # (kind, started, ended, status, retry_after, json_error, body)
        self.transport_errors = []  # (kind, started, ended, error)
        self.registered = {}     # token -> (fields, id) for every 2xx registration
        self.device_ids = []     # ids of devices registered with a 2xx
        self.notifications = {}  # id -> set of device ids named, for every 202
        self.arrivals = []       # the threads of arrivals_loop's one-off registrations

    def record(self, kind, started, response):
        ended = time.monotonic()
        with self.lock:
            self.answers.append((kind, started, ended, response.status, response.headers.get("retry-after"),
                                 response.is_json_error() if response.status >= 400 else None, response.body[:300]))

    def register_loop(self, index):
        client = Client(self.base_url, self.device_credential, timeout=60)
        rng = random.Random(index)
        serial = 0
        while not self.stop.is_set():
            serial += 1
            status = self.register_once(client, rng, index * 10_000_000 + serial, index)
            if status is None or status == 503:
                time.sleep(0.05)  # a client honouring Retry-After would wait longer; this one keeps the pressure on

    def arrivals_loop(self):
        """A new registration every 200 ms, each on a connection and thread of its own, whatever
        the others are waiting for: the closed-loop clients above can all be waiting at once on
        requests begun before an outage, and then none of them asks anything while it lasts."""
        rng = random.Random(99)
        serial = 0
        while not self.stop.is_set():
            serial += 1
            client = Client(self.base_url, self.device_credential, timeout=60)
            thread = threading.Thread(target=self.arrive, args=(client, rng, 900_000_000 + serial), daemon=True)
            thread.start()
            self.arrivals.append(thread)
            time.sleep(0.2)

    def arrive(self, client, rng, number):
        self.register_once(client, rng, number, "arrival")
        client.close()

    def register_once(self, client, rng, number, who):
        """One registration, recorded; its status, or None when the service gave no answer."""
        token = apns_token(number)
        with self.lock:
            fields = {"provider": "apns", "token": token, "name": f"Phone {who}-{number}",
                      "user_alias": f"user-{who}-{rng.randrange(50)}", "language": rng.choice(["en", "fr", "de"]),
                      "country": rng.choice(["gb", "fr", "de"])}
        started = time.monotonic()
        try:
            response = client.post("/api/v1/device_tokens", {"device_token": fields})
        except Exception as error:  # the service itself unreachable: counted, and the scenario fails
            with self.lock:
                self.transport_errors.append(("register", started, time.monotonic(), repr(error)))
            return None
        self.record("register", started, response)
        if 200 <= response.status < 300:
            device_id = (response.json or {}).get("id")
            with self.lock:
                self.registered[token] = (fields, device_id)
                self.device_ids.append(device_id)
        return response.status

    def send_loop(self, index):
        client = Client(self.base_url, self.server_credential, timeout=60)
        rng = random.Random(1000 + index)
        sent = 0
        while not self.stop.is_set():
            with self.lock:
                known = list(self.device_ids[-2000:])
            if len(known) < 5:
                time.sleep(0.05)
                continue
            targets = sorted(set(rng.sample(known, min(20, len(known)))))
            # Each send differs, as a backend's do: the service refuses a server request it has seen.
            sent += 1
            body = {"title": "Fault", "message": f"under restart {index} #{sent}", "device_ids": targets}
            started = time.monotonic()
            try:
                response = client.post("/api/v1/notifications", body)
            except Exception as error:
                with self.lock:
                    self.transport_errors.append(("send", started, time.monotonic(), repr(error)))
                time.sleep(0.05)
                continue
            self.record("send", started, response)
            if response.status == 202:
                with self.lock:
                    self.notifications[response.json["id"]] = set(targets)
            time.sleep(0.1)


def outage_figures(load, name, went_down, came_back, until):
    """503s answered while the database was away, and the recovery time after it came back:
    from `came_back` to the end of the first 2xx of a request started after it."""
    with load.lock:
        answers = list(load.answers)
    during = [a for a in answers if went_down <= a[1] <= came_back]
    unavailable = sum(1 for a in during if a[3] == 503)
    after = sorted((a for a in answers if a[1] >= came_back and 200 <= a[3] < 300), key=lambda a: a[2])
    expect(after, f"{name}: no request succeeded after the database came back")
    recovery = after[0][2] - came_back
    late_failures = [a for a in answers if came_back + RECOVERY_BOUND <= a[1] and a[2] < until and not 200 <= a[3] < 300]
    expect_empty([(a[0], a[3], a[6]) for a in late_failures],
                 f"{name}: requests started more than {RECOVERY_BOUND:g} s after the database came back that failed")
    expect_at_most(round(recovery, 2), RECOVERY_BOUND, f"{name}: seconds from the database accepting connections to the first success")
    log(f"{name}: {unavailable} answers of 503 while away, first success {recovery:.2f} s after the database was back")
    return unavailable, recovery


def expect_running(when, *processes):
    """Each process still runs; said as soon as one does not, with how it ended and when."""
    for process in processes:
        expect(process.alive(), f"{when}: {process.exit_report()}")


def main():
    fresh_database()
    app = create_app("PG restart")
    gateway = FakeAPNs()
    gateway.configure(app)
    api = Service(workers=False, env={"NOTIFIABLE_DATABASE_POOL_SIZE": 20})
    # A short lease, so that a delivery whose worker lost its database connection mid-batch is
    # claimed again within the scenario rather than after the default lease.
    worker = start_worker(env={"NOTIFIABLE_LEASE_SECONDS": 40, "NOTIFIABLE_APNS_TIMEOUT_SECONDS": 15,
                               "NOTIFIABLE_POLL_MS": 200})

    load = Load(api.url, app["device_credentials"], app["server_credentials"])
    threads = [threading.Thread(target=load.register_loop, args=(i,), daemon=True) for i in range(REGISTRATION_CLIENTS)]
    threads += [threading.Thread(target=load.send_loop, args=(i,), daemon=True) for i in range(2)]
    threads += [threading.Thread(target=load.arrivals_loop, daemon=True)]
    for thread in threads:
        thread.start()
    steady = max(2.0, 4.0 * min(1.0, scaled(100) / 100))

    time.sleep(steady)
    log("fault 1: pg_ctl restart -m immediate")
    down_1 = time.monotonic()
    pg_restart("immediate")
    up_1 = time.monotonic()
    log(f"fault 1: the database accepts connections again after {up_1 - down_1:.2f} s")
    time.sleep(steady + RECOVERY_BOUND)
    expect_running("after fault 1", api, worker)

    log(f"fault 2: pg_ctl stop -m immediate, {LONG_OUTAGE:g} s away, then start")
    down_2 = time.monotonic()
    pg_stop("immediate")
    time.sleep(LONG_OUTAGE)
    expect(not pg_accepts_connections(), "the database still accepted connections after pg_ctl stop")
    pg_start()
    up_2 = time.monotonic()
    log(f"fault 2: the database accepts connections again after {up_2 - down_2:.2f} s")
    time.sleep(steady + RECOVERY_BOUND)
    expect_running("after fault 2", api, worker)

    load.stop.set()
    for thread in threads + load.arrivals:
        thread.join(timeout=90)
    expect(not any(t.is_alive() for t in threads + load.arrivals), "load clients still waiting for answers 90 s after the load stopped")

    expect_running("after the load", api, worker)
    expect_empty(load.transport_errors, "requests that got no HTTP answer at all (the service must stay up)")

    answers = load.answers
    statuses = {}
    for answer in answers:
        statuses[answer[3]] = statuses.get(answer[3], 0) + 1
    log(f"answers by status: {dict(sorted(statuses.items()))}")
    expect_empty([(a[0], a[3], a[6]) for a in answers if a[3] >= 500 and a[3] != 503], "5xx answers other than 503")
    expect_empty([(a[0], a[6]) for a in answers if a[3] == 503 and not a[4]], "503 answers without Retry-After")
    expect_empty([(a[0], a[3], a[6]) for a in answers if a[3] >= 400 and not a[5]], "error answers that are not CONTRACT §4 JSON")
    expect_empty([(a[0], a[3], a[6]) for a in answers if 400 <= a[3] < 500], "4xx answers (the load sends only valid requests)")

    unavailable_1, recovery_1 = outage_figures(load, "fault 1 (restart)", down_1, up_1, down_2)
    unavailable_2, recovery_2 = outage_figures(load, "fault 2 (stopped 3 s)", down_2, up_2, float("inf"))
    expect_at_least(unavailable_2, 1, f"503 answers while the database was stopped for {LONG_OUTAGE:g} s")
    slowest = max(a[2] - a[1] for a in answers)

    # Every acknowledged registration is in the database, as it was sent.
    rows = sql_rows(f"SELECT token, id, provider, name, user_alias, language, country FROM devices WHERE app_id = {app['id']}")
    stored = {row[0].lower(): row for row in rows}
    wrong = []
    for token, (fields, device_id) in load.registered.items():
        row = stored.get(token.lower())
        if row is None:
            wrong.append((token, "missing"))
            continue
        found = (row[1], row[2], row[3], row[4], row[5], row[6])
        wanted = (str(device_id), fields["provider"], fields["name"], fields["user_alias"], fields["language"], fields["country"])
        if found != wanted:
            wrong.append((token, f"expected {wanted}, found {found}"))
    expect_empty(wrong, "registrations answered 2xx that are not in the database as sent")
    log(f"{len(load.registered)} registrations answered 2xx, all in the database ({len(rows)} rows in all)")

    # Every accepted notification is fanned out to exactly its devices, and everything is sent.
    def settled():
        return sql(f"""SELECT count(*) FROM deliveries WHERE app_id = {app['id']} AND state NOT IN ('sent', 'failed', 'dead', 'cancelled')
                       UNION ALL SELECT count(*) FROM notifications WHERE app_id = {app['id']} AND state = 'fanning_out'""") == "0\n0"
    wait_until(settled, 180, "every delivery settled and every notification fanned out after the faults")
    counts = {}
    for notification_id, device_id in sql_rows(f"SELECT notification_id, device_id FROM deliveries WHERE app_id = {app['id']}"):
        counts.setdefault(int(notification_id), set()).add(int(device_id))
    mismatched = [(nid, sorted(devices), sorted(counts.get(nid, set())))
                  for nid, devices in load.notifications.items() if counts.get(nid, set()) != devices]
    expect_empty(mismatched, "notifications answered 202 whose deliveries are not exactly the devices they named")
    by_state = dict(sql_rows(f"SELECT state, count(*) FROM deliveries WHERE app_id = {app['id']} GROUP BY state"))
    expect_equal(sorted(by_state), ["sent"], "delivery states after the faults")
    deliveries = int(by_state["sent"])
    expected_deliveries = sum(len(devices) for devices in load.notifications.values())
    expect_at_least(deliveries, expected_deliveries, "deliveries sent")
    log(f"{len(load.notifications)} notifications answered 202, {deliveries} deliveries, all sent")

    return (f"{len(answers)} requests, 0 answered 500, 503s while away: {unavailable_1} (restart) + {unavailable_2} "
            f"(stopped {LONG_OUTAGE:g} s), recovery {recovery_1:.2f} s / {recovery_2:.2f} s after the database was back, "
            f"slowest answer {slowest:.1f} s; {len(load.registered)} registrations and {len(load.notifications)} "
            f"notifications ({deliveries} deliveries) acknowledged, all in the database and sent")


run_scenario(main)
