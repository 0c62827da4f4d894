"""Misconfiguration: two apps send through the same fake APNs gateway at the same time; app A's
signing key has been revoked (the gateway no longer trusts it and answers 403
InvalidProviderToken), app B's is fine.

End state demanded:
- app A stops sending within a few requests: the gateway saw at most MAX_REFUSED requests signed
  with A's key (counted per signing key at the gateway), however large A's notification;
- every delivery of app A is dead with reason InvalidProviderToken, none sent;
- app B's notification is fully sent, and B's key saw no refusal;
- an operator sees why: `notifiable apps show` and GET /admin/apps/:id show A's APNs settings
  with misconfiguration InvalidProviderToken (B's with none), and GET /admin/deliveries/dead
  lists A's deliveries with that reason.
"""
import json
import os
import subprocess
import time

import harness
from harness import (FAULTS_DIR, cli, expect, expect_at_most, expect_equal, log, run_scenario, scaled, sql,
                     wait_until)
from gateways import APNsGateway, insert_devices, send_to_all, wait_settled

# One probe per worker process, and slack for a second worker or a settings re-read.
MAX_REFUSED = 3
REVOKED_KEY_ID = "REVOKED001"


def configure_revoked(app, gateway):
    """Points app A at the gateway with a key the gateway does not trust (as after a revocation)."""
    key_path = os.path.join(FAULTS_DIR, "revoked-key.p8")
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key_path],
                   check=True, capture_output=True)
    cli("apps", "set-apns", "--app", app["id"], "--key-id", REVOKED_KEY_ID, "--team-id", gateway.TEAM,
        "--bundle-id", gateway.TOPIC, "--key-file", key_path, "--environment", "sandbox",
        "--endpoint", gateway.url, "--ca-file", gateway.cert_path)


def main():
    per_app = scaled(5_000, 500)
    harness.fresh_database()
    revoked = harness.create_app("Revoked key")
    healthy = harness.create_app("Healthy")
    gateway = APNsGateway(latency_ms=5)
    configure_revoked(revoked, gateway)
    gateway.configure(healthy)
    insert_devices(revoked["id"], "apns", per_app)
    insert_devices(healthy["id"], "apns", per_app, first=per_app + 1)

    worker = harness.start_worker({"NOTIFIABLE_POLL_MS": 100})
    started = time.monotonic()
    revoked_notification = send_to_all(revoked)
    healthy_notification = send_to_all(healthy)
    revoked_states = wait_settled(revoked_notification, per_app, 300, "app A's deliveries settled")
    healthy_states = wait_settled(healthy_notification, per_app, 300, "app B's deliveries settled")
    seconds = time.monotonic() - started
    expect(worker.alive(), worker.exit_report())

    expect_equal(healthy_states, {"sent": per_app}, "app B's deliveries by state")
    expect_equal(revoked_states, {"dead": per_app}, "app A's deliveries by state")
    reasons = sql(f"""SELECT string_agg(DISTINCT reason, ' | ') FROM deliveries
                      WHERE notification_id = {revoked_notification}""")
    expect_equal(reasons, "InvalidProviderToken", "reasons of app A's dead deliveries")

    # What the gateway saw, per signing key.
    wait_until(lambda: gateway.stats().get("requests", 0) >= per_app, 10)
    stats = gateway.stop()
    keys = stats.get("keys", {})
    revoked_key = f"{gateway.TEAM}:{REVOKED_KEY_ID}"
    healthy_key = f"{gateway.TEAM}:{gateway.KEY_ID}"
    refused = keys.get(revoked_key, {})
    expect_equal(set(refused), {"InvalidProviderToken"}, f"outcomes of requests signed with A's key {revoked_key}")
    refused_count = refused["InvalidProviderToken"]
    expect_at_most(refused_count, MAX_REFUSED, "requests app A sent before it stopped")
    expect_equal(keys.get(healthy_key, {}).get("accepted"), per_app, "app B's pushes accepted")
    expect_equal(set(keys.get(healthy_key, {})), {"accepted"}, "outcomes of requests signed with B's key")

    # An operator sees why: the CLI, the admin API, the dead-delivery listing.
    shown = json.loads(cli("apps", "show", "--app", revoked["id"]))
    expect_equal(shown.get("apns", {}).get("misconfiguration"), "InvalidProviderToken",
                 "`notifiable apps show` of app A: apns.misconfiguration")
    shown_healthy = json.loads(cli("apps", "show", "--app", healthy["id"]))
    expect_equal(shown_healthy.get("apns", {}).get("misconfiguration"), None,
                 "`notifiable apps show` of app B: apns.misconfiguration")
    api = harness.Service(workers=False)
    admin = harness.Client(api.url, admin=True)
    answer = admin.get(f"/admin/apps/{revoked['id']}")
    expect_equal(answer.status, 200, "GET /admin/apps/:id status")
    expect_equal((answer.json.get("apns") or {}).get("misconfiguration"), "InvalidProviderToken",
                 "GET /admin/apps/:id of app A: apns.misconfiguration")
    dead = admin.get(f"/admin/deliveries/dead?app_id={revoked['id']}&limit=5")
    expect_equal(dead.status, 200, "GET /admin/deliveries/dead status")
    listed = dead.json.get("data", [])
    expect(len(listed) == 5 and all(d.get("reason") == "InvalidProviderToken" for d in listed),
           f"GET /admin/deliveries/dead lists app A's deliveries with the reason: {listed[:2]}")
    healthy_dead = admin.get(f"/admin/deliveries/dead?app_id={healthy['id']}")
    expect_equal(healthy_dead.json.get("data"), [], "app B's dead deliveries")
    log(f"gateway keys: {keys}")
    return (f"app A (revoked key) stopped after {refused_count} refused request(s), {per_app} deliveries dead "
            f"with InvalidProviderToken and shown misconfigured; app B sent {per_app}/{per_app} in {seconds:.0f} s")


run_scenario(main)
