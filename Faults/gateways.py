"""What the delivery-side fault scenarios share: fake APNs, FCM and Web Push gateways run as processes with
seeded fault injection and statistics files, audiences inserted straight into the database, and
checks on what the gateways saw (duplicates, retry spacing) against the database's end state.
Standard library only; builds on harness.py.
"""
import json
import os
import time
from collections import defaultdict

import harness
from harness import FAULTS_DIR, cli, expect, expect_empty, expect_equal, log, sql, sql_rows, wait_until


# ---------------------------------------------------------------- gateways

class GatewayObservation:
    """The --stats-out and --request-log files of a fake gateway process."""

    def __init__(self, label):
        self.stats_path = os.path.join(FAULTS_DIR, f"{label}-stats.json")
        self.log_path = os.path.join(FAULTS_DIR, f"{label}-requests.tsv")
        for path in (self.stats_path, self.log_path):
            if os.path.exists(path):
                os.remove(path)

    def arguments(self, faults, seed, latency_ms):
        args = ["--stats-out", self.stats_path, "--request-log", self.log_path, "--stats-interval-ms", "200",
                "--seed", seed]
        for name, share in faults:
            args += ["--fault", f"{name}={share}"]
        if latency_ms:
            args += ["--latency-ms", latency_ms]
        return args

    def stats(self):
        """The last statistics written ({} before the first write)."""
        try:
            with open(self.stats_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def requests(self):
        """Every request logged so far, in arrival order: dicts with arrived_at (float seconds), token,
        key, outcome, status (int or None), retry_after (int or None), connection (int: the same for
        requests on one TCP connection while it is open)."""
        records = []
        try:
            with open(self.log_path) as f:
                lines = f.read().split("\n")
        except OSError:
            return records
        for line in lines[1:-1]:  # the header; a last line without its newline may be half written
            arrived_at, token, key, outcome, status, retry_after, connection = line.split("\t")
            records.append({
                "arrived_at": float(arrived_at), "token": token, "key": key, "outcome": outcome,
                "status": int(status) if status else None, "retry_after": int(retry_after) if retry_after else None,
                "connection": int(connection),
            })
        return records


class ObservedGateway:
    """What both fake gateways answer from their observation files (`self.observation`)."""

    def stats(self):
        return self.observation.stats()

    def requests(self):
        return self.observation.requests()

    def stop(self):
        """SIGTERM: the gateway writes its files a last time, then exits; returns its final statistics."""
        self.terminate(timeout=30)
        return self.stats()


class APNsGateway(ObservedGateway, harness.FakeAPNs):
    """`notifiable fake-apns` trusting the harness's key, with faults drawn from `seed` and its
    statistics and request log in FAULTS_DIR. `faults` is a list of (name, share) pairs, e.g.
    [("unavailable", 0.1), ("timeout", 0.01)] (see `notifiable fake-apns --help`)."""

    def __init__(self, faults=(), seed=1, latency_ms=0, label="fake-apns", extra_args=()):
        self.observation = GatewayObservation(label)
        super().__init__(list(self.observation.arguments(faults, seed, latency_ms)) + list(extra_args), label=label)


class FCMGateway(ObservedGateway, harness.Process):
    """`notifiable fake-fcm` with a service account of its own making (its token_uri points at the
    gateway), faults and observation files as APNsGateway; `configure(app)` points an app at it."""
    PROJECT = "faults-project"

    def __init__(self, faults=(), seed=1, latency_ms=0, label="fake-fcm"):
        self.port = harness.free_port()
        self.observation = GatewayObservation(label)
        self.cert_path = os.path.join(FAULTS_DIR, f"{label}-cert.pem")
        self.account_path = os.path.join(FAULTS_DIR, f"{label}-service-account.json")
        for path in (self.cert_path, self.account_path):
            if os.path.exists(path):
                os.remove(path)
        args = [harness.BIN, "fake-fcm", "--port", self.port, "--project", self.PROJECT,
                "--service-account-out", self.account_path, "--certificate-out", self.cert_path,
                "--log-level", "warning"] + list(self.observation.arguments(faults, seed, latency_ms))
        super().__init__(args, label)
        wait_until(lambda: (os.path.exists(self.cert_path) and os.path.exists(self.account_path)) or not self.alive(), 60,
                   f"{label} wrote its certificate and service account")
        expect(self.alive(), self.exit_report())
        self.url = f"https://127.0.0.1:{self.port}"
        with open(self.account_path) as f:
            self.client_email = json.load(f)["client_email"]

    def configure(self, app):
        cli("apps", "set-fcm", "--app", app["id"], "--service-account-file", self.account_path,
            "--endpoint", self.url, "--ca-file", self.cert_path)



class WebPushGateway(ObservedGateway, harness.Process):
    """`notifiable fake-webpush`, a browser push service taking any subscription id under /push/,
    with faults and observation files as APNsGateway. The service reaches it through
    `environment()` (its host allowed, its certificate trusted); `configure(app)` gives an app a
    VAPID key."""

    def __init__(self, faults=(), seed=1, latency_ms=0, label="fake-webpush"):
        self.port = harness.free_port()
        self.observation = GatewayObservation(label)
        self.cert_path = os.path.join(FAULTS_DIR, f"{label}-cert.pem")
        if os.path.exists(self.cert_path):
            os.remove(self.cert_path)
        args = [harness.BIN, "fake-webpush", "--port", self.port, "--certificate-out", self.cert_path,
                "--log-level", "warning"] + list(self.observation.arguments(faults, seed, latency_ms))
        super().__init__(args, label)
        wait_until(lambda: os.path.exists(self.cert_path) or not self.alive(), 60, f"{label} wrote its certificate")
        expect(self.alive(), self.exit_report())
        self.url = f"https://127.0.0.1:{self.port}"

    def environment(self):
        return {"NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1", "NOTIFIABLE_WEBPUSH_CA_FILE": self.cert_path}

    def configure(self, app):
        cli("apps", "set-webpush", "--app", app["id"], "--subject", "mailto:faults@example.com")


# ---------------------------------------------------------------- audiences and notifications

# A browser's public key for every inserted subscription: P-256's generator, a valid point (the fake
# push service does not open what it is sent, so one key serves them all).
BROWSER_KEY = ("BGsX0fLhLEJH-Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWT-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU")
BROWSER_AUTH = "AAECAwQFBgcICQoLDA0ODw"

# What a gateway's request log calls a device's token: a Web Push device's is the last part of its
# endpoint (the subscription id), the others' the token itself.
GATEWAY_TOKEN_SQL = "CASE WHEN d.provider = 'webpush' THEN regexp_replace(d.token, '^.*/', '') ELSE d.token END"

def fcm_token(n):
    """A distinct FCM registration token for each integer (the shape Android apps get)."""
    return f"fcm{n:08d}:APA91b" + "x" * 120


def insert_devices(app_id, provider, count, first=1, push_service=None):
    """Inserts `count` devices straight into the registry (registered an hour ago, so a gateway's
    410 dated now is newer than the registration); tokens are harness.apns_token(n), fcm_token(n),
    or for Web Push an endpoint `{push_service}/push/wp{n:08}` with BROWSER_KEY, for n in
    first .. first+count-1. Returns the range of n."""
    keys = "NULL"
    if provider == "apns":
        token = "lpad(to_hex(n), 64, '0')"
    elif provider == "webpush":
        token = f"'{push_service}/push/wp' || lpad(n::text, 8, '0')"
        keys = f"""'{{"p256dh": "{BROWSER_KEY}", "auth": "{BROWSER_AUTH}"}}'::jsonb"""
    else:
        token = "'fcm' || lpad(n::text, 8, '0') || ':APA91b' || repeat('x', 120)"
    sql(f"""INSERT INTO devices (app_id, provider, token, push_keys, language, registered_at)
            SELECT {app_id}, '{provider}', {token}, {keys}, 'en', now() - interval '1 hour'
            FROM generate_series({first}, {first + count - 1}) AS n""")
    return range(first, first + count)


def send_to_all(app, title="Fault scenario", message="Hello"):
    """Stores a notification to every device of the app (`notifiable notifications send --all`);
    returns its id."""
    out = cli("notifications", "send", "--app", app["id"], "--all", "--title", title, "--message", message)
    start = out.index("{")
    return int(json.loads(out[start:])["id"])


def delivery_states(notification_id):
    """{state: count} of a notification's deliveries."""
    return {state: int(count) for state, count in sql_rows(
        f"SELECT state, count(*) FROM deliveries WHERE notification_id = {notification_id} GROUP BY state")}


def fanned_out(notification_id):
    return sql(f"SELECT state FROM notifications WHERE id = {notification_id}") == "fanned_out"


def wait_settled(notification_id, targeted, timeout, what="every delivery settled"):
    """Waits until the notification is fanned out into `targeted` deliveries (None: however many
    fan-out made) and none is waiting or running; returns the final {state: count}. Logs progress
    every 10 s."""
    started = time.monotonic()
    last_log = [started]

    def settled():
        states = delivery_states(notification_id)
        if time.monotonic() - last_log[0] >= 10:
            last_log[0] = time.monotonic()
            harness.log(f"deliveries: {states}")
        open_ones = sum(states.get(s, 0) for s in ("available", "running", "retrying"))
        complete = targeted is None or sum(states.values()) == targeted
        return states if fanned_out(notification_id) and complete and open_ones == 0 else None

    return wait_until(settled, timeout, what, interval=0.5)


# ---------------------------------------------------------------- what the gateways saw

def accepted_counts(requests):
    """{token: times the gateway accepted a push to it}."""
    counts = defaultdict(int)
    for record in requests:
        if record["outcome"] == "accepted":
            counts[record["token"]] += 1
    return counts


def retry_policy_minimum(base_ms, jitter=0.5, max_delay_ms=3_600_000):
    """The shortest delay RetryPolicy allows after the k-th failed attempt (k >= 1):
    base x 2^(k-1), capped, times the smallest jitter factor (1 - jitter)."""
    def minimum(k):
        return min(base_ms / 1000 * 2 ** (k - 1), max_delay_ms / 1000) * (1 - jitter)
    return minimum


def backoff_violations(requests, minimum_delay, slack=0.002, unknown_outcomes=None):
    """Checks every token's successive arrivals at a gateway: after its k-th request, the next one
    may come no sooner than minimum_delay(k), nor sooner than a Retry-After the k-th answer gave.
    (Gaps between arrivals bound the worker's delays from below: a delay starts when the answer
    comes, after the arrival; an attempt the gateway never saw only makes later gaps longer.)
    A Retry-After binds only if its answer could have reached the worker: when a drop-connection
    fault closed the same connection between the two arrivals, the answer may have been lost with
    it (answers are flushed after the read they came in), and the worker rightly saw a lost
    connection instead. Such a retry must still keep the policy's delay.
    Each retry is named by the path that led to it, as the gateway saw the attempt before it:
    an answer with Retry-After, an answer without, a Retry-After lost with a dropped connection,
    no answer (the worker's deadline), a reset stream, a dropped connection.
    An answer with Retry-After may also have come after the worker's deadline for it (a gateway
    slow to read the request): the worker then saw no answer and recorded an attempt of unknown
    outcome. `unknown_outcomes` ({token: count}, the deliveries' own records) lets that many such
    retries per token keep only the policy's delay, named "Retry-After answered after the
    worker's deadline"; no retry may come sooner than the policy's delay.
    Returns (violations, retries checked, {path: retries})."""
    by_token = defaultdict(list)
    drops = defaultdict(list)
    for record in requests:
        if record["token"]:
            by_token[record["token"]].append(record)
        if record["outcome"] == "drop-connection":
            drops[record["connection"]].append(record["arrived_at"])

    def dropped_between(connection, start, end):
        return any(start <= at <= end for at in drops.get(connection, ()))

    unexplained_budget = dict(unknown_outcomes or {})
    violations, checked, paths = [], 0, defaultdict(int)
    for token, records in by_token.items():
        for k, (previous, following) in enumerate(zip(records, records[1:]), start=1):
            gap = following["arrived_at"] - previous["arrived_at"]
            required = minimum_delay(k)
            if previous["retry_after"] is not None:
                if gap + slack < previous["retry_after"] and dropped_between(
                        previous["connection"], previous["arrived_at"], following["arrived_at"]):
                    path = "Retry-After lost with a dropped connection"
                elif gap + slack < previous["retry_after"] and gap + slack >= required \
                        and unexplained_budget.get(token.lower(), 0) > 0:
                    unexplained_budget[token.lower()] -= 1
                    path = "Retry-After answered after the worker's deadline"
                else:
                    required = max(required, previous["retry_after"])
                    path = "answer with Retry-After"
            elif previous["outcome"] == "timeout":
                path = "no answer (deadline)"
            elif previous["outcome"] == "reset-stream":
                path = "reset stream"
            elif previous["outcome"] == "drop-connection" or previous["status"] is None:
                path = "dropped connection"
            else:
                path = "answer without Retry-After"
            paths[path] += 1
            checked += 1
            if gap + slack < required:
                violations.append(f"{token[:16]}… attempt {k + 1} came {gap * 1000:.0f} ms after attempt {k} "
                                  f"({previous['outcome']}, path: {path}), {required * 1000:.0f} ms required")
    return violations, checked, dict(paths)


def explain_duplicates(notification_id, *gateway_stats, requests=()):
    """Every push a gateway accepted more than once must be explained by the worker's own record:
    a delivery's extra accepts are at most its attempts of unknown outcome (no answer after the
    request may have left, or a lease that ran out in a worker's hands: a killed worker's batches).
    Fails naming the deliveries beyond that; returns (duplicates, unknown outcomes recorded)."""
    accepted = {}
    for stats in gateway_stats:
        for token, count in stats.get("accepted_more_than_once", {}).items():
            accepted[token.lower()] = accepted.get(token.lower(), 0) + int(count)
    rows = sql_rows(f"""SELECT q.id, lower({GATEWAY_TOKEN_SQL}), q.unknown_outcomes FROM deliveries q JOIN devices d ON d.id = q.device_id
                        WHERE q.notification_id = {notification_id}""")
    unknown = {token: (int(delivery), int(count)) for delivery, token, count in rows}
    unexplained = []
    for token, count in sorted(accepted.items()):
        delivery, outcomes = unknown.get(token, (None, 0))
        if count - 1 > outcomes:
            unexplained.append(f"delivery {delivery}: accepted {count} times, {outcomes} attempts of unknown outcome")
    if unexplained:
        # The evidence for the first few: the delivery as stored, and every arrival of its token.
        arrivals = defaultdict(list)
        for record in requests:
            arrivals[record["token"].lower()].append(record)
        for line in unexplained[:3]:
            delivery = line.split(":")[0].split()[-1]
            log(f"{line}; stored: " + sql(f"""SELECT row_to_json(q) FROM (SELECT id, state, attempts, unknown_outcomes, reason,
                                              claimed_at, sent_at, updated_at FROM deliveries WHERE id = {delivery}) q"""))
            token = next((t for t, (d, _) in unknown.items() if str(d) == delivery), None)
            for record in arrivals.get(token, []):
                log(f"    arrived {record['arrived_at']:.3f} {record['outcome']} status {record['status']} connection {record['connection']}")
    expect_empty(unexplained[:50], f"pushes accepted twice that no attempt of unknown outcome explains "
                                   f"({len(unexplained)} deliveries)")
    duplicates = sum(count - 1 for count in accepted.values())
    return duplicates, sum(count for _, count in unknown.values())


def expect_sent_once(notification_id, devices, gateway, timeout):
    """The notification ends with each of its `devices` deliveries `sent`, one per device, the
    gateway accepted a push for every device, and every push it accepted twice is explained
    (`explain_duplicates`); stops the gateway. Returns (duplicate pushes, unknown outcomes recorded)."""
    states = wait_settled(notification_id, devices, timeout)
    expect_equal(states, {"sent": devices}, "deliveries by state")
    distinct = int(sql(f"SELECT count(DISTINCT device_id) FROM deliveries WHERE notification_id = {notification_id}"))
    expect_equal(distinct, devices, "devices with a delivery")
    stats = gateway.stop()
    expect_equal(stats.get("tokens_accepted"), devices, "devices the gateway accepted a push for")
    return explain_duplicates(notification_id, stats)


def expect_exact_partition(notification_id, targeted):
    """sent + failed + dead = targeted, nothing else (no waiting, running or cancelled delivery),
    one delivery per device; returns {state: count}."""
    states = delivery_states(notification_id)
    expect(set(states) <= {"sent", "failed", "dead"},
           f"deliveries end sent, failed or dead only; found {states}")
    expect(sum(states.values()) == targeted, f"deliveries partition the {targeted} targeted devices; found {states}")
    devices = int(sql(f"SELECT count(DISTINCT device_id) FROM deliveries WHERE notification_id = {notification_id}"))
    expect(devices == targeted, f"one delivery per targeted device: {devices} devices for {targeted} deliveries")
    unexplained = int(sql(f"""SELECT count(*) FROM deliveries WHERE notification_id = {notification_id}
                              AND state IN ('failed', 'dead') AND coalesce(reason, '') = ''"""))
    expect(unexplained == 0, f"every failed or dead delivery has a reason; {unexplained} have none")
    return states


def leased(notification_id=None):
    """Deliveries still running under a lease (of one notification, or all)."""
    where = f"AND notification_id = {notification_id}" if notification_id else ""
    return int(sql(f"SELECT count(*) FROM deliveries WHERE state = 'running' {where}"))

