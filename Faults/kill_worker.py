"""kill -9 of the worker mid-way through a 20,000-device notification, twice, then a restart.

End state demanded: every device has exactly one delivery and it is `sent`; the fake APNs gateway
accepted a push for every device; every push it accepted more than once is explained by its own
delivery's attempts of unknown outcome (a lease rescued from a killed worker, a deadline passed
on the wire), so the duplicates number no more than the deliveries leased at the kills plus the
attempts the workers recorded as of unknown outcome. The RESULT gives duplicates per killed worker.
"""
import time

import harness
from harness import expect, expect_equal, log, run_scenario, scaled, sql, wait_until
from gateways import APNsGateway, delivery_states, explain_duplicates, insert_devices, leased, send_to_all, wait_settled

LANES, BATCH = 4, 200
# With a CPU hog beside the processes (FAULTS_STARVE=1) the lease and the request deadline grow
# threefold: a 2 s deadline on a starved worker times out pushes the gateway took, and the run
# measures timeouts rather than kills.
SLOWER = harness.when_starved(3)
WORKER_ENV = {
    "NOTIFIABLE_WORKER_LANES": LANES,
    "NOTIFIABLE_WORKER_BATCH_SIZE": BATCH,
    # A dead worker's claims come back after the lease; short, so the scenario takes seconds.
    "NOTIFIABLE_LEASE_SECONDS": int(5 * SLOWER),
    "NOTIFIABLE_APNS_TIMEOUT_SECONDS": int(2 * SLOWER),
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
    rescued = int(sql(f"SELECT count(*) FROM deliveries WHERE notification_id = {notification} AND attempts > 1"))
    log(f"gateway: {stats.get('requests')} requests, {stats.get('accepted')} accepted, {duplicates} duplicates; "
        f"{rescued} deliveries claimed more than once, {unknown} attempts of unknown outcome")
    kills = len(leased_at_kills)
    return (f"{devices} devices sent exactly once in the database after {kills} kills in {seconds:.0f} s; "
            f"{duplicates} duplicate pushes at the gateway ({duplicates / kills:.0f} per killed worker; "
            f"{sum(leased_at_kills)} leased at the kills), each explained by its delivery's attempts of unknown "
            f"outcome ({unknown} recorded); {rescued} deliveries claimed more than once")


run_scenario(main)
