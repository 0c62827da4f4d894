"""Many processes, one service: the deployment of deploy/ (`scripts/topology`) with one API
process and one worker, then with three API processes behind HAProxy and two workers, under the
same load: closed-loop registrations through HAProxy and a broadcast. In the larger one an API
process and a worker are killed (kill -9) mid-run and started again. Then a client spreads
notifications over the three API processes against a send limit they keep together.

Asserted, in both:
  - every `sent` event of the broadcast reaches the app's webhook (signed, in batches in the order
    of their event ids), whichever worker sends it, at least once; a batch sent twice only when
    a worker died holding it;
  - no answer is a 500; the only 5xx are HAProxy's 502 for requests cut off in the killed process
    (no more than the clients, one request each) and 503 with Retry-After;
  - every registration answered 2xx is in the database as sent;
  - the broadcast ends with every device `sent` exactly once in the database, every duplicate push
    explained by an attempt of unknown outcome;
and that the three API processes together admit the configured send rate within 10 %. Figures:
registrations per second and their p99, pushes per second, for each.
"""
import hashlib
import hmac
import http.server
import json
import os
import statistics
import threading
import time

import harness
from harness import Client, expect, expect_equal, log, run_scenario, scaled, sql
from gateways import APNsGateway, expect_sent_once, insert_devices, send_to_all
from load import Registrations
from topology import Topology

REGISTRATION_CLIENTS = 8
LOAD_SECONDS = 20
SEND_LIMIT_PER_SECOND = 5        # per credential, shared by the API processes
SEND_LIMIT_SECONDS = 20
SEND_CLIENTS = 6


def main():
    small = phase(api=1, workers=1, kill=False)
    large = phase(api=3, workers=2, kill=True)
    return (f"1 API + 1 worker: {small['registrations']:.0f} registrations/s (p99 {small['p99'] * 1000:.0f} ms), "
            f"{small['pushes']:.0f} pushes/s; 3 API + 2 workers with api2 and work1 killed and restarted: "
            f"{large['registrations']:.0f} registrations/s (p99 {large['p99'] * 1000:.0f} ms), {large['pushes']:.0f} pushes/s, "
            f"{large['cut_off']} requests cut off by the kill; send limit {SEND_LIMIT_PER_SECOND}/s across 3 API processes "
            f"admitted {large['admitted']} of {large['allowed']:.0f} allowed in {SEND_LIMIT_SECONDS} s; "
            f"every registration kept and every device sent exactly once in both ({small['duplicates']} and "
            f"{large['duplicates']} duplicate pushes, each explained); every sent event at the webhook in order in both "
            f"({large['resent_batches']} batches sent again after the kill)")


def phase(api, workers, kill):
    topology = Topology(api=api, workers=workers)
    topology.env["NOTIFIABLE_RATE_LIMIT_SENDS"] = f"{SEND_LIMIT_PER_SECOND}/s"
    topology.env["NOTIFIABLE_API_BEAT_SECONDS"] = "1"
    try:
        topology.up()
        figures = run(topology, kill)
        if kill:
            figures.update(send_limit(topology, api))
        return figures
    finally:
        harness.stop_all()
        topology.down()


class WebhookReceiver:
    """An app's webhook endpoint: checks each batch's signature and keeps its event ids in the
    order the batches came."""

    def __init__(self):
        self.batches = []          # (batch id, [event ids])
        self.bad_signatures = 0
        self.lock = threading.Lock()
        self.secret = None
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                parts = dict(p.split("=", 1) for p in self.headers.get("X-Notifiable-Signature", "").split(",") if "=" in p)
                expected = hmac.new(receiver.secret.encode(), f"{parts.get('t', '')}.".encode() + body, hashlib.sha256).hexdigest()
                with receiver.lock:
                    if not hmac.compare_digest(expected, parts.get("sha256", "")):
                        receiver.bad_signatures += 1
                    receiver.batches.append((self.headers.get("X-Notifiable-Batch-Id"),
                                             [e["event_id"] for e in json.loads(body)["events"]]))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def event_ids(self):
        with self.lock:
            return [event for _, events in self.batches for event in events]

    def check(self, expected_events, kill):
        """Every expected event came, signed, batches in event-id order; a batch came twice only
        after a killed worker. Returns the number of batches sent twice."""
        with self.lock:
            batches = list(self.batches)
        expect_equal(self.bad_signatures, 0, "webhook batches with a wrong signature")
        seen = {event for _, events in batches for event in events}
        expect_equal(len(seen), expected_events, "distinct sent events the webhook received")
        repeated = len(batches) - len({batch for batch, _ in batches})
        expect(repeated == 0 or kill, f"{repeated} webhook batches sent twice with no worker killed")
        first_time = {}
        for batch, events in batches:
            first_time.setdefault(batch, events)
        order = [events[0] for events in first_time.values()]
        expect(order == sorted(order), "webhook batches came in the order of their event ids")
        return repeated

    def stop(self):
        self.server.shutdown()


def run(topology, kill):
    devices = scaled(20_000, 400)
    label = f"{len(topology.api_ports)} API"
    app = harness.create_app(f"Scale {label}")
    gateway = APNsGateway(latency_ms=2)
    gateway.configure(app)
    registry = harness.create_app(f"Scale {label} registrations")
    insert_devices(app["id"], "apns", devices)
    # Each worker listens for work over the session-pooled database: a LISTEN each on the leader.
    workers = len([name for name in topology.service_pids() if name.startswith("work")])
    harness.wait_until(lambda: int(sql("SELECT count(*) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'")) >= workers, 60,
                       f"{workers} workers listening for work through PgBouncer's session pool")
    receiver = WebhookReceiver()
    hook = json.loads(harness.cli("apps", "webhooks", "add", "--app", app["id"], "--url", receiver.url, "--event", "sent", "--json"))
    receiver.secret = hook["secret"]

    load = Registrations(topology.api_url, registry["device_credentials"])
    started = time.monotonic()
    threads = harness.in_threads(REGISTRATION_CLIENTS, load.loop)
    notification = send_to_all(app)
    if kill:
        time.sleep(LOAD_SECONDS / 3)
        killed = {name: topology.pid(name) for name in ("api2", "work1")}
        for name, pid in killed.items():
            os.kill(pid, 9)
        log(f"kill -9 of {', '.join(killed)}")
        time.sleep(3)
        for name in killed:
            topology.start(name)
    time.sleep(max(0.0, started + LOAD_SECONDS - time.monotonic()))
    load.finish(threads)
    ended = time.monotonic()
    duplicates, _ = expect_sent_once(notification, devices, gateway, 600)
    sent_at = float(sql(f"SELECT extract(epoch FROM max(sent_at) - min(sent_at)) FROM deliveries WHERE notification_id = {notification}"))

    answers = load.answers
    # A request under way in the killed process is cut off: HAProxy's 502, or no answer; one per client at most.
    statuses = load.judge(cut_off_allowed=REGISTRATION_CLIENTS if kill else 0, gateway_errors=(502,) if kill else ())
    cut_off = statuses.get(502, 0) + len(load.transport_errors)
    if load.transport_errors:
        log(f"{label}: cut off without an answer: {load.transport_errors[:4]}")
    load.check_kept(registry["id"])

    harness.wait_until(lambda: len(set(receiver.event_ids())) >= devices, 300, "every sent event at the webhook")
    resent_batches = receiver.check(devices, kill)
    receiver.stop()
    log(f"{label}: the webhook received all {devices} sent events in {len(receiver.batches)} batches, {resent_batches} sent again")

    ok = sorted(a[1] - a[0] for a in answers if 200 <= a[2] < 300)
    p99 = ok[int(len(ok) * 0.99) - 1] if ok else float("nan")
    figures = {"registrations": len(ok) / (ended - started), "p99": p99, "pushes": devices / max(sent_at, 0.001),
               "duplicates": duplicates, "cut_off": cut_off, "resent_batches": resent_batches}
    log(f"{label}: {figures['registrations']:.0f} registrations/s, p99 {p99 * 1000:.0f} ms (median "
        f"{statistics.median(ok) * 1000:.0f} ms); {figures['pushes']:.0f} pushes/s; {duplicates} duplicate pushes")
    return figures


def send_limit(topology, api_count):
    """Clients spread notifications over every API process (HAProxy's round robin) faster than the
    limit; the processes together admit the limit: its burst plus its rate over the window."""
    app = harness.create_app("Scale send limit")
    # Every process counts the others live (a beat a second) before the window opens.
    harness.wait_until(lambda: int(sql("SELECT count(*) FROM api_processes WHERE seen_at > now() - interval '3 seconds'")) == api_count,
                       60, f"{api_count} API processes beating")
    time.sleep(2)
    admitted = []
    refused = []
    lock = threading.Lock()
    stop = threading.Event()

    def loop(index):
        client = Client(topology.api_url, app["server_credentials"])
        serial = 0
        while not stop.is_set():
            serial += 1
            response = client.post("/api/v1/notifications", {"message": f"limited {index}-{serial}", "user_aliases": ["nobody"]})
            with lock:
                (admitted if response.status == 202 else refused).append(response.status)
            if response.status == 429:
                time.sleep(0.05)

    started = time.monotonic()
    threads = [threading.Thread(target=loop, args=(n,), daemon=True) for n in range(SEND_CLIENTS)]
    for thread in threads:
        thread.start()
    time.sleep(SEND_LIMIT_SECONDS)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    window = time.monotonic() - started
    allowed = SEND_LIMIT_PER_SECOND * (1 + window)   # a full bucket (one second's worth), then the rate
    expect(set(refused) <= {429}, f"refusals other than 429: {sorted(set(refused))}")
    expect(abs(len(admitted) - allowed) <= 0.1 * allowed,
           f"{len(admitted)} notifications admitted in {window:.1f} s by {api_count} API processes sharing "
           f"{SEND_LIMIT_PER_SECOND}/s; {allowed:.0f} allowed, within 10 %")
    log(f"send limit: {len(admitted)} admitted, {len(refused)} refused in {window:.1f} s ({allowed:.0f} allowed)")
    return {"admitted": len(admitted), "allowed": allowed}


run_scenario(main)
