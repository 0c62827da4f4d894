"""SIGTERM under load: `notifiable serve` (API and workers in one process) takes signed device
registrations from 8 clients while it delivers a 20,000-device notification through a fake APNs
gateway that answers after 300 ms; a few registrations are mid-body when SIGTERM comes.

End state demanded:
- the process exits 0 within 30 s of SIGTERM;
- registrations whose body was still arriving at SIGTERM are answered 2xx and stored;
- no answer is a 5xx; every registration answered 2xx is in the database;
- right after exit no delivery is left leased (state running): the batches in flight were
  completed or released, not left for the 60 s lease to run out;
- a worker started afterwards finishes the notification: every device sent exactly once in the
  database, and the gateway accepted exactly one push per device (no duplicates).
"""
import http.client
import json
import signal
import threading
import time

import harness
from harness import (expect, expect_at_most, expect_empty, expect_equal, log, run_scenario, scaled,
                     signed_headers, sql, wait_until)
from gateways import APNsGateway, delivery_states, insert_devices, leased, wait_settled

CLIENTS = 8
SLOW_REQUESTS = 4


def registration_body(token):
    return json.dumps({"device_token": {"provider": "apns", "token": token, "language": "en"}}).encode()


class RegistrationLoad:
    """Clients registering new devices as fast as the service answers, until told to stop."""

    def __init__(self, url, credential):
        self.url = url
        self.credential = credential
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answered = {}  # token -> status
        self.errors = []  # (seconds since start, error) of requests that got no answer
        self.started = time.monotonic()
        self.threads = harness.in_threads(CLIENTS, self.run)

    def run(self, index):
        client = harness.Client(self.url, self.credential, timeout=30)
        n = 0
        while not self.stop.is_set():
            n += 1
            token = f"{(index + 1) << 40 | n:064x}"
            body = registration_body(token)
            try:
                answer = client.post("/api/v1/device_tokens", body)
            except (OSError, http.client.HTTPException) as error:
                with self.lock:
                    self.errors.append((time.monotonic() - self.started, repr(error)))
                time.sleep(0.05)
                continue
            with self.lock:
                self.answered[token] = answer.status

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)


def start_slow_registration(port, credential, token):
    """On a connection the service has taken (a first request on it was answered: a connection
    still waiting to be accepted at SIGTERM is reset by the kernel, as for any server), sends a
    registration's head and half its body; returns the connection and the rest."""
    body = registration_body(token)
    path = "/api/v1/device_tokens"
    headers = signed_headers("POST", path, body, credential["access_id"], credential["secret_key"])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/health/live")
    ready = connection.getresponse()
    ready.read()
    expect(ready.status == 200, f"GET /health/live before a slow registration: {ready.status}")
    connection.putrequest("POST", path)
    for name, value in headers.items():
        connection.putheader(name, value)
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders()
    half = len(body) // 2
    connection.send(body[:half])
    return connection, body[half:]


def main():
    devices = scaled(20_000, 1_000)
    harness.fresh_database()
    app = harness.create_app("SIGTERM")
    gateway = APNsGateway(latency_ms=300)
    gateway.configure(app)
    insert_devices(app["id"], "apns", devices)

    service = harness.Service(workers=True, env={"NOTIFIABLE_POLL_MS": 100})
    server = harness.Client(service.url, app["server_credentials"])
    answer = server.post("/api/v1/notifications", {"title": "Drain", "message": "Hello", "all": True})
    expect_equal(answer.status, 202, f"POST /api/v1/notifications: {answer.body}")
    notification = int(answer.json["id"])
    load = RegistrationLoad(service.url, app["device_credentials"])
    wait_until(lambda: delivery_states(notification).get("sent", 0) >= devices // 5, 300, "a fifth of the pushes sent")
    expect(len(load.answered) > 0, "registrations were answered before SIGTERM")

    slow = [start_slow_registration(service.port, app["device_credentials"], f"{0xABC << 40 | n:064x}")
            for n in range(SLOW_REQUESTS)]
    time.sleep(0.2)
    running_at_signal = leased(notification)
    signalled = time.monotonic()
    service.signal(signal.SIGTERM)
    time.sleep(0.3)
    slow_statuses = []
    for connection, rest in slow:
        try:
            connection.send(rest)
            response = connection.getresponse()
            slow_statuses.append(response.status)
            response.read()
        except (OSError, http.client.HTTPException) as error:
            slow_statuses.append(repr(error))
        finally:
            connection.close()
    status = service.wait(30)
    exit_seconds = time.monotonic() - signalled
    load.finish()
    expect(status is not None, f"serve still running {exit_seconds:.0f} s after SIGTERM")
    expect_equal(status, 0, "serve's exit status after SIGTERM")
    left_leased = leased(notification)
    states_at_exit = delivery_states(notification)
    log(f"serve exited {status} {exit_seconds:.1f} s after SIGTERM; {running_at_signal} deliveries were running at "
        f"SIGTERM, {left_leased} left leased; deliveries {states_at_exit}")
    expect_equal(left_leased, 0, "deliveries left leased after serve exited")
    expect_equal(slow_statuses, [200] * SLOW_REQUESTS, "registrations mid-body at SIGTERM")

    # Every 2xx is durable; nothing answered 5xx.
    answered = dict(load.answered)
    server_errors = {token: code for token, code in answered.items() if code >= 500}
    expect_empty(server_errors.items(), "registrations answered 5xx")
    registered = set(sql(f"SELECT lower(token) FROM devices WHERE app_id = {app['id']}").split())
    ok = {token for token, code in answered.items() if 200 <= code < 300}
    expect_empty(sorted(ok - registered)[:20], "registrations answered 2xx but not in the database")
    slow_tokens = {f"{0xABC << 40 | n:064x}" for n in range(SLOW_REQUESTS)}
    expect_empty(sorted(slow_tokens - registered), "mid-body registrations not in the database")
    early_errors = [e for e in load.errors if e[0] < signalled - load.started]
    expect_empty(early_errors, "registrations that got no answer before SIGTERM")

    # A worker finishes the rest, exactly once. The audience is every device, registrations made while
    # the notification fanned out included.
    worker = harness.start_worker({"NOTIFIABLE_POLL_MS": 100})
    states = wait_settled(notification, None, 300)
    expect(worker.alive(), worker.exit_report())
    targeted = sum(states.values())
    expect(targeted >= devices, f"every device inserted before the notification is targeted: {targeted} deliveries")
    expect_equal(states, {"sent": targeted}, "deliveries by state after the restart")
    worker.terminate()
    stats = gateway.stop()
    expect_equal(stats.get("tokens_accepted"), targeted, "devices the gateway accepted a push for")
    expect_at_most(stats.get("duplicate_accepts", 0), 0, "pushes the gateway accepted twice")
    return (f"exit 0 in {exit_seconds:.1f} s after SIGTERM with {running_at_signal} deliveries running, 0 left leased; "
            f"{len(ok)} registrations 2xx (all stored, {SLOW_REQUESTS} mid-body at SIGTERM), 0 5xx; "
            f"{targeted} devices sent exactly once after restart, 0 duplicate pushes")


run_scenario(main)
