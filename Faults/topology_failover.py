"""The database fails over by itself, in the deployment of deploy/ (`scripts/topology`): etcd,
two PostgreSQL nodes under Patroni with synchronous replication, HAProxy leading to the Patroni
leader, PgBouncer in transaction pooling in front of it, three `notifiable serve --no-workers`
behind HAProxy and two `notifiable work`.

Under registrations through HAProxy and while a broadcast is being sent, three rounds:
  1. kill -9 of the leader's postmaster (Patroni lives and restarts it, or hands over);
  2. kill -9 of the whole leader node, Patroni and PostgreSQL: Patroni promotes the standby once
     the leader lock expires; then the old node is started again and rejoins as the standby
     (pg_rewind through Patroni);
  3. the same again, back to the first node.
Nobody runs a command during a round, and no service process is restarted. Asserted:
  - no answer is a 500 (or any 5xx but 503); every 503 carries Retry-After and a JSON error;
  - after each kill, requests succeed again within 15 s, and every registration started 15 s
    after the kill or later succeeds;
  - every registration answered 2xx is in the database afterwards, as it was sent;
  - the broadcast ends with every device `sent` exactly once in the database, and every push the
    gateway accepted twice is explained by its delivery's attempts of unknown outcome;
  - the five service processes are the ones started at the beginning, all alive;
  - `scripts/topology down` leaves nothing running.
"""
import time

import harness
from harness import expect, expect_at_most, expect_empty, expect_equal, log, run_scenario, scaled, sql, wait_until
from gateways import APNsGateway, delivery_states, expect_sent_once, insert_devices, send_to_all
from load import Registrations
from topology import Topology, process_alive

# Timing bounds double with a CPU hog beside the processes (FAULTS_STARVE=1).
SLOWER = harness.when_starved(2)
WRITES_BACK = 15.0 * SLOWER   # seconds from a kill to registrations succeeding again
REGISTRATION_CLIENTS = 6


def main():
    topology = Topology(api=3, workers=2)
    try:
        up_seconds = topology.up()
        expect_at_most(round(up_seconds), 120 * SLOWER, "seconds scripts/topology up took")
        return run(topology) + f"; up in {up_seconds:.0f} s"
    finally:
        harness.stop_all()
        down_seconds = topology.down()
        log(f"scripts/topology down took {down_seconds:.0f} s and left nothing running")


def run(topology):
    devices = scaled(20_000, 400)
    processes = topology.service_pids()
    app = harness.create_app("Topology failover")
    gateway = APNsGateway(latency_ms=5)
    gateway.configure(app)
    registry = harness.create_app("Topology registrations")
    load = Registrations(topology.api_url, registry["device_credentials"])
    threads = harness.in_threads(REGISTRATION_CLIENTS, load.loop)
    insert_devices(app["id"], "apns", devices)
    notification = send_to_all(app)
    log(f"notification {notification} to {devices} devices; {REGISTRATION_CLIENTS} clients registering through HAProxy")
    wait_until(lambda: delivery_states(notification).get("sent", 0) >= devices // 10, 300, "a tenth of the pushes sent")

    rounds = []
    leader = topology.leader()
    expect(leader, f"a leader before the first round: {topology.describe()}")
    rounds.append(kill_round(topology, load, "postmaster", leader, topology.kill_postmaster))
    for _ in range(2):
        leader = topology.leader()
        expect(leader, f"a leader before the round: {topology.describe()}")
        rounds.append(kill_round(topology, load, "node", leader, topology.kill_node))
        # The old leader comes back and follows the new one.
        started = time.monotonic()
        topology.start(f"pg{leader}")
        topology.wait_synchronous_standby(leader, 120 * SLOWER)
        log(f"pg{leader} rejoined as the synchronous standby in {time.monotonic() - started:.1f} s: {topology.describe()}")

    time.sleep(2)
    load.finish(threads)
    try:
        statuses = load.judge()
    except harness.ScenarioFailure:
        log(f"the service's errors:\n{topology.error_lines()}")
        raise
    answers = load.answers
    ends = [killed_at for _, _, killed_at in rounds[1:]] + [float("inf")]
    for (what, node, killed_at), until in zip(rounds, ends):
        after = sorted((a for a in answers if a[0] >= killed_at and 200 <= a[2] < 300), key=lambda a: a[1])
        expect(after, f"no registration succeeded after the {what} kill of pg{node}")
        # Up to the next round's kill: a request still under way then is that round's.
        late = [(a[2], a[5]) for a in answers if killed_at + WRITES_BACK <= a[0] and a[1] < until and not 200 <= a[2] < 300]
        expect_empty(late, f"registrations started {WRITES_BACK:g} s or more after the {what} kill of pg{node} that failed")

    load.check_kept(registry["id"])

    duplicates, unknown = expect_sent_once(notification, devices, gateway, 600)
    counters = harness.check_counters()
    now = topology.service_pids()
    expect_equal(now, processes, "the service's processes (none restarted)")
    dead = [name for name, pid in now.items() if not process_alive(pid)]
    expect_empty(dead, "service processes that died")

    figures = "; ".join(f"{what} kill of pg{node}: first success {first:.1f} s after" for what, node, _, first in
                        [(w, n, k, first_success(answers, k)) for w, n, k in rounds])
    return (f"{figures}; {len(answers)} requests, {statuses.get(503, 0)} answered 503, none 500; "
            f"{len(load.registered)} registrations acknowledged, all kept; {devices} devices sent exactly once in the database, "
            f"{duplicates} duplicate pushes, each explained by attempts of unknown outcome ({unknown}); {counters}; "
            f"the {len(processes)} service processes never restarted")


def kill_round(topology, load, what, node, kill):
    """Kills `node` (its postmaster or all of it) and waits until registrations succeed and a
    leader is back; (what, node, when it was killed)."""
    log(f"kill -9 of pg{node}'s {'postmaster' if what == 'postmaster' else 'Patroni and PostgreSQL'}: {topology.describe()}")
    killed_at = time.monotonic()
    kill(node)
    wait_until(lambda: first_success(load.answers, killed_at) is not None, WRITES_BACK + 30,
               f"a registration answered 2xx after the {what} kill of pg{node}")
    wait_until(topology.leader, 60, "a leader again")
    log(f"after the {what} kill of pg{node}: first success {first_success(load.answers, killed_at):.1f} s later; "
        f"leader pg{topology.leader()}; {topology.describe()}")
    # Past the bound, so that the registrations that must succeed are in the record.
    time.sleep(max(0.0, killed_at + WRITES_BACK + 3 - time.monotonic()))
    return (what, node, killed_at)


def first_success(answers, since):
    """Seconds from `since` (a kill) to the end of the first registration answered 2xx once the
    outage was seen: started after the first failure that followed the kill (a request already
    committing at the kill may still succeed a moment after it). None before any such success."""
    answers = list(answers)
    failures = [a[0] for a in answers if a[0] >= since and not 200 <= a[2] < 300]
    seen = min(failures) if failures else since
    ends = [a[1] for a in answers if a[0] >= seen and 200 <= a[2] < 300]
    return min(ends) - since if ends else None


run_scenario(main)
