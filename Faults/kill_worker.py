"""kill -9 of the worker mid-way through a 20,000-device notification, twice, then a restart.

End state demanded: every device has exactly one delivery and it is `sent`; the fake APNs gateway
accepted a push for every device; the pushes it accepted more than once (the price of a worker
dying between the gateway's 200 and recording it) number no more than the deliveries leased at
the moments of the kills, and no more than two in-flight windows (per kill: each lane's batch being
sent and the previous one being recorded, 2 x lanes x batch size).
"""
import time

import harness
from harness import expect, expect_at_most, expect_equal, log, run_scenario, scaled, sql, wait_until
from gateways import APNsGateway, delivery_states, explain_duplicates, insert_devices, leased, send_to_all, wait_settled

LANES, BATCH = 4, 200
WORKER_ENV = {
    "NOTIFIABLE_WORKER_LANES": LANES,
    "NOTIFIABLE_WORKER_BATCH_SIZE": BATCH,
    # A dead worker's claims come back after the lease; short, so the scenario takes seconds.
    "NOTIFIABLE_LEASE_SECONDS": 5,
    "NOTIFIABLE_APNS_TIMEOUT_SECONDS": 2,
    "NOTIFIABLE_POLL_MS": 100,
}


def sent_count(notification_id):
    return delivery_states(notification_id).get("sent", 0)


def main():
    devices = scaled(20_000, 400)
    harness.fresh_database()
    app = harness.create_app("Kill the worker")
    # Latency keeps pushes in flight at the gateway, so that a kill lands between its 200 and the record.
    gateway = APNsGateway(latency_ms=20)
    gateway.configure(app)
    insert_devices(app["id"], "apns", devices)
    notification = send_to_all(app)
    log(f"notification {notification} to {devices} devices")

    started = time.monotonic()
    leased_at_kills = []
    for kill, share in enumerate((0.25, 0.6), start=1):
        worker = harness.start_worker(WORKER_ENV, label=f"work-{kill}")
        threshold = int(devices * share)
        wait_until(lambda: sent_count(notification) >= threshold or not worker.alive(), 300,
                   f"worker {kill} sent {threshold} pushes")
        expect(worker.alive(), f"worker {kill} ended by itself: {worker.exit_report()}")
        worker.kill9()
        in_flight = leased(notification)
        leased_at_kills.append(in_flight)
        log(f"kill -9 of worker {kill} at {sent_count(notification)} sent; {in_flight} deliveries left leased")

    final_worker = harness.start_worker(WORKER_ENV, label="work-final")
    states = wait_settled(notification, devices, 300)
    seconds = time.monotonic() - started
    expect(final_worker.alive(), final_worker.exit_report())
    expect_equal(states, {"sent": devices}, "deliveries by state")
    distinct = int(sql(f"SELECT count(DISTINCT device_id) FROM deliveries WHERE notification_id = {notification}"))
    expect_equal(distinct, devices, "devices with a delivery")
    never_sent = int(sql(f"SELECT count(*) FROM deliveries WHERE notification_id = {notification} AND sent_at IS NULL"))
    expect_equal(never_sent, 0, "sent deliveries without sent_at")
    expect(sum(leased_at_kills) > 0, f"the kills landed mid-batch (deliveries leased at the kills: {leased_at_kills})")

    stats = gateway.stop()
    expect_equal(stats.get("tokens_accepted"), devices, "devices the gateway accepted a push for")
    duplicates, unknown = explain_duplicates(notification, stats, requests=gateway.requests())
    window = 2 * LANES * BATCH
    expect_at_most(duplicates, sum(leased_at_kills), "pushes accepted twice vs deliveries leased at the kills")
    expect_at_most(duplicates, 2 * window, "pushes accepted twice vs two in-flight windows")
    rescued = int(sql(f"SELECT count(*) FROM deliveries WHERE notification_id = {notification} AND attempts > 1"))
    log(f"gateway: {stats.get('requests')} requests, {stats.get('accepted')} accepted, {duplicates} duplicates; "
        f"{rescued} deliveries claimed more than once, {unknown} attempts of unknown outcome")
    return (f"{devices} devices sent exactly once in the database after 2 kills in {seconds:.0f} s; "
            f"{duplicates} duplicate pushes at the gateway (bound: leased at kills {sum(leased_at_kills)}, "
            f"window 2x{LANES}x{BATCH} per kill), each explained by its delivery's {unknown} attempts of unknown outcome; "
            f"{rescued} deliveries re-claimed after lease expiry")


run_scenario(main)
