"""Gateway chaos: a 50,000-device notification, a third each to APNs, FCM and browsers (Web Push),
through fake gateways that answer 20% of requests 503 (half of them with Retry-After: 1), reset 5%
(4.9% RST_STREAM, 0.1% the whole TCP connection, which also fails every other request in flight
on it), call 2% of tokens dead (APNs 410 Unregistered, FCM 404 UNREGISTERED, a push service's 410)
and never answer 1%.

End state demanded:
- the final states partition the audience exactly: sent + failed + dead = targeted, one delivery
  per device, nothing waiting, running or cancelled, every failed or dead one with its reason;
- every device the gateways called dead is invalidated in the database with the gateway's reason,
  its delivery failed with it, and no other device is invalidated or failed;
- every sent delivery's token was accepted by its gateway; every dead one used all its attempts;
- every retry honoured its backoff: a token's successive arrivals at a gateway are no closer than
  the retry policy's shortest delay for that attempt (base x 2^(k-1) x (1 - jitter)), nor closer
  than the Retry-After the previous answer gave, unless the worker cannot have had that answer:
  its connection was dropped before the retry, or the gateway answered after the worker's own
  deadline, which the worker records as an attempt of unknown outcome (then only the policy's
  delay binds). Each retry is counted by the path that led to it, and the RESULT names them;
- every push a gateway accepted twice is explained by its delivery's attempts of unknown outcome.

The retry policy is shortened through configuration to keep the run short: base delay 100 ms
(NOTIFIABLE_RETRY_BASE_MS), 8 attempts, a 2 s request deadline and a 10 s lease.
"""
import time

import harness
from harness import expect, expect_empty, expect_equal, log, run_scenario, scaled, sql, sql_rows
from gateways import (GATEWAY_TOKEN_SQL, APNsGateway, FCMGateway, WebPushGateway, accepted_counts, backoff_violations,
                      expect_exact_partition, explain_duplicates, insert_devices, retry_policy_minimum, send_to_all, wait_settled)

FAULTS = [
    ("unavailable", 0.10),
    ("unavailable:1", 0.10),
    ("reset-stream", 0.049),
    ("drop-connection", 0.001),
    ("unregistered", 0.02),
    ("timeout", 0.01),
]
RETRY_BASE_MS, MAX_ATTEMPTS = 100, 8
# With a CPU hog beside the processes (FAULTS_STARVE=1) the request deadline, the lease and the
# time to settle grow threefold: a 2 s deadline on a starved gateway turns most answers into
# timeouts, and the run into a storm of retries that says nothing more.
SLOWER = harness.when_starved(3)
WORKER_ENV = {
    "NOTIFIABLE_RETRY_BASE_MS": RETRY_BASE_MS,
    "NOTIFIABLE_MAX_ATTEMPTS": MAX_ATTEMPTS,
    "NOTIFIABLE_APNS_TIMEOUT_SECONDS": int(2 * SLOWER),
    "NOTIFIABLE_LEASE_SECONDS": int(10 * SLOWER),
    "NOTIFIABLE_POLL_MS": 100,
    "NOTIFIABLE_WORKER_LANES": 4,
    "NOTIFIABLE_WORKER_BATCH_SIZE": 200,
}


def main():
    targeted = scaled(50_000, 1_000)
    apns_devices = targeted // 3
    fcm_devices = targeted // 3
    web_devices = targeted - apns_devices - fcm_devices
    harness.fresh_database()
    app = harness.create_app("Chaos")
    apns = APNsGateway(faults=FAULTS, seed=20261122)
    fcm = FCMGateway(faults=FAULTS, seed=20261123)
    web = WebPushGateway(faults=FAULTS, seed=20261128)
    gateways = {"APNs": apns, "FCM": fcm, "Web Push": web}
    for gateway in gateways.values():
        gateway.configure(app)
    insert_devices(app["id"], "apns", apns_devices)
    insert_devices(app["id"], "fcm", fcm_devices, first=apns_devices + 1)
    insert_devices(app["id"], "webpush", web_devices, first=apns_devices + fcm_devices + 1, push_service=web.url)

    worker = harness.start_worker({**WORKER_ENV, **web.environment()})
    started = time.monotonic()
    notification = send_to_all(app)
    log(f"notification {notification} to {apns_devices} APNs, {fcm_devices} FCM and {web_devices} Web Push devices")
    wait_settled(notification, targeted, 900 * SLOWER)
    seconds = time.monotonic() - started
    expect(worker.alive(), worker.exit_report())
    states = expect_exact_partition(notification, targeted)
    worker.terminate()
    stats = {name: gateway.stop() for name, gateway in gateways.items()}
    requests_by_gateway = {name: gateway.requests() for name, gateway in gateways.items()}
    all_requests = [record for records in requests_by_gateway.values() for record in records]

    # Dead tokens: the devices the gateways called dead are invalidated and failed, unless the answer was
    # lost with a dropped connection (the worker then tried again: the token has a later request).
    called_dead, last_request = set(), {}
    for record in all_requests:
        if record["outcome"] == "unregistered":
            called_dead.add(record["token"])
        last_request[record["token"]] = record
    dead_tokens = {token for token in called_dead if last_request[token]["outcome"] == "unregistered"}
    answer_lost = called_dead - dead_tokens
    # Tokens as the gateways log them: APNs ones lower-case (insert_devices makes them so), FCM ones as
    # stored, Web Push ones the subscription id at the end of the endpoint.
    rows = sql_rows(f"""SELECT {GATEWAY_TOKEN_SQL}, q.state, coalesce(q.reason, ''), d.invalidated_at IS NOT NULL,
                               coalesce(d.invalidation_reason, ''), q.attempts, d.provider
                        FROM deliveries q JOIN devices d ON d.id = q.device_id
                        WHERE q.notification_id = {notification}""")
    by_token = {row[0]: row for row in rows}
    invalidated = {token for token, row in by_token.items() if row[3] == "t"}
    failed = {token for token, row in by_token.items() if row[1] == "failed"}
    expect_empty(sorted(dead_tokens - invalidated)[:50], "devices a gateway called dead but not invalidated")
    expect_empty(sorted(invalidated - dead_tokens)[:50], "devices invalidated that no gateway called dead")
    expect_equal(failed, dead_tokens, "failed deliveries are exactly those to dead tokens")
    wrong_reason = [(token, by_token[token][2], by_token[token][4]) for token in failed
                    if not (by_token[token][2].startswith(("Unregistered", "UNREGISTERED", "subscription_gone"))
                            and by_token[token][4] == by_token[token][2])]
    expect_empty(wrong_reason, "failed deliveries and invalidations carrying the gateway's reason")

    # Sent ones were accepted; dead ones used every attempt.
    accepted = set(accepted_counts(all_requests))
    sent = {token for token, row in by_token.items() if row[1] == "sent"}
    expect_empty(sorted(sent - accepted)[:50], "sent deliveries whose gateway never accepted them")
    dead = {token: row for token, row in by_token.items() if row[1] == "dead"}
    expect_empty([(t, r[5], r[2]) for t, r in dead.items() if int(r[5]) != MAX_ATTEMPTS or "gave up" not in r[2]],
                 f"dead deliveries that did not use all {MAX_ATTEMPTS} attempts")

    # Every retry honoured its backoff.
    minimum = retry_policy_minimum(RETRY_BASE_MS)
    unknown_by_token = {row[0].lower(): int(row[1]) for row in sql_rows(
        f"""SELECT {GATEWAY_TOKEN_SQL}, q.unknown_outcomes FROM deliveries q JOIN devices d ON d.id = q.device_id
            WHERE q.notification_id = {notification} AND q.unknown_outcomes > 0""")}
    paths, checked = {}, 0
    for name, records in requests_by_gateway.items():
        violations, gateway_checked, gateway_paths = backoff_violations(records, minimum, unknown_outcomes=unknown_by_token)
        expect_empty(violations, f"{name} retries sooner than the retry policy or Retry-After allows")
        expect(gateway_checked > 0, f"retries happened at {name}")
        expect(gateway_paths.get("answer with Retry-After", 0) > 0, f"{name}'s Retry-After answers were followed by retries")
        checked += gateway_checked
        for path, count in gateway_paths.items():
            paths[path] = paths.get(path, 0) + count
    log(f"retries by path: {dict(sorted(paths.items()))}")

    requests = len(all_requests)
    duplicates, unknown = explain_duplicates(notification, *stats.values())
    outcomes = {}
    for gateway_stats in stats.values():
        for outcome, count in gateway_stats.get("outcomes", {}).items():
            outcomes[outcome] = outcomes.get(outcome, 0) + count
    log(f"gateway outcomes: {outcomes}")
    expect_empty(sorted(answer_lost & invalidated)[:50], "devices invalidated although tried again after the 410")
    expect(len(answer_lost) <= outcomes.get("drop-connection", 0) * WORKER_ENV["NOTIFIABLE_WORKER_BATCH_SIZE"] * 4,
           f"{len(answer_lost)} dead-token answers lost: no more than the connection drops can explain")
    return (f"{targeted} devices in {seconds:.0f} s: sent {states.get('sent', 0)} + failed {states.get('failed', 0)} "
            f"+ dead {states.get('dead', 0)} = {targeted}; {len(dead_tokens)} dead tokens invalidated "
            f"({len(answer_lost)} more 410s lost with dropped connections); "
            f"{requests} requests to 3 gateways, {checked} retries checked against the backoff, 0 too early "
            f"(by path: {', '.join(f'{count} after {path}' for path, count in sorted(paths.items()))}); {duplicates} duplicate pushes, each explained by its delivery's "
            f"attempts of unknown outcome ({unknown} recorded)")


run_scenario(main)
