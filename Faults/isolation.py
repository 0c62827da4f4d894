"""One app's credentials never reach another app's objects.

Apps A and B each get devices (with tags), a plain notification, a rich one with content, and a
stateful one with users' copies, delivered through the sandbox gateways; A also gets a webhook.
Then, in random order, app B's device credentials, server credentials and a user token of B try
every operation of the OpenAPI document under /api/v1 that has an id or alias in its path (the
document is walked, so a new route is covered without touching this file) on A's objects, with
ids as numbers and as strings, plus A's ids in bodies and queries (device_token_id, user aliases,
device_ids). Asserted:
  - an attempt on A's object gets exactly what the same attempt on an id that never existed gets:
    404 for ids (never 200, never 403 where B's own object would not be 403 either), the same
    status and error code for aliases;
  - nothing B sends reaches A's devices (no delivery of B's to a device of A's);
  - every row of every table that belongs to app A is byte-for-byte what it was before.
"""
import json
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Client, Service, free_port, apns_token, create_app, expect, expect_empty, expect_equal,
                     fresh_database, log, run_scenario, scaled, sql, sql_rows, start_worker, wait_until)

NEVER = 987_654_321  # an id no table reaches in this scenario


def openapi_operations(client):
    """(method, path template) of every /api/v1 operation with a parameter in its path."""
    document = client.get("/openapi.json").json
    expect(isinstance(document, dict) and "paths" in document, "GET /openapi.json answers the OpenAPI document")
    operations = []
    for path, item in document["paths"].items():
        if not path.startswith("/api/v1/") or "{" not in path:
            continue
        for method in item:
            if method in ("get", "post", "put", "patch", "delete"):
                operations.append((method.upper(), path))
    return sorted(operations)


def app_fixture(api, app, tag, alias):
    """Devices, notifications (plain, rich with content, stateful) and a user token in `app`."""
    device = Client(api.url, app["device_credentials"])
    server = Client(api.url, app["server_credentials"])
    devices = []
    for n in range(3):
        response = device.post("/api/v1/device_tokens", {"device_token": {
            "provider": "apns", "token": apns_token(ord(tag) * 1000 + n), "name": f"{tag} phone {n}",
            "user_alias": alias, "language": "en", "country": "gb", "tags": [f"group:{tag}"]}})
        expect_equal(response.status, 200, f"registering a device of app {tag}")
        devices.append(response.json["id"])
    plain = server.post("/api/v1/notifications", {"title": f"{tag} plain", "message": "hello", "device_ids": devices})
    expect_equal(plain.status, 202, f"sending app {tag}'s plain notification")
    rich = server.post("/api/v1/notifications", {"title": f"{tag} rich", "message": "look", "rich": True, "device_ids": devices})
    expect_equal(rich.status, 202, f"sending app {tag}'s rich notification: {rich.body}")
    content = server.request("PUT", f"/api/v1/notifications/{rich.json['id']}/content", body=b'{"image": "cat"}')
    expect_equal(content.status, 201, f"uploading app {tag}'s rich content: {content.body}")
    stateful = server.post("/api/v1/notifications", {"title": f"{tag} stateful", "message": "act", "stateful": True,
                                                     "user_aliases": [alias]})
    expect_equal(stateful.status, 202, f"sending app {tag}'s stateful notification: {stateful.body}")
    token = server.post(f"/api/v1/users/{alias}/tokens", {"ttl_seconds": 3600})
    expect(token.status in (200, 201), f"minting a user token in app {tag}: {token.status} {token.body[:200]}")
    return {"devices": devices, "notifications": [plain.json["id"], rich.json["id"], stateful.json["id"]],
            "stateful": stateful.json["id"], "alias": alias, "user_token": token.json["token"]}


def app_tables():
    """Every table with an app_id column: what 'app A's data' is made of."""
    return [row[0] for row in sql_rows("""
        SELECT table_name FROM information_schema.columns
        WHERE table_schema = 'public' AND column_name = 'app_id' ORDER BY table_name""")]


def snapshot(app_id, tables):
    """A digest of every row of every app table that belongs to the app, plus the app row."""
    digests = {}
    for table in tables + ["apps"]:
        column = "id" if table == "apps" else "app_id"
        digests[table] = sql(f"SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') "
                             f"FROM {table} t WHERE {column} = {app_id}")
    return digests


class UserTokenClient(Client):
    """/api/v1/me requests carry the user's bearer token instead of a signature."""

    def __init__(self, base_url, token):
        super().__init__(base_url)
        self.token = token

    def headers(self, method, path, body):
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json; charset=utf-8"}


def body_for(method, path, device_id, rng):
    """A request body that is valid apart from whose object it names."""
    if method in ("GET", "DELETE"):
        return None
    if path.endswith("/tags"):
        return {"tags": ["hijacked"]} if method == "PUT" else {"add": ["hijacked"]}
    if path.startswith("/api/v1/device_tokens/"):
        return {"device_token": {"name": "hijacked", "user_alias": "mallory"}}
    if path.endswith("/delivered") or path.endswith("/opened"):
        return {"device_token_id": rng.choice([device_id, str(device_id)]), "user": {"alias": "mallory"}}
    if path.startswith("/api/v1/me/notifications/"):
        return {"read_state": "read", "user_action_state": "dismissed"}
    if path.endswith("/tokens"):
        return {"ttl_seconds": 60}
    if path.endswith("/content"):
        return b'{"image": "dog"}'
    return {}


def answer_key(response):
    """What an answer reveals, apart from the id it names: status and error code."""
    body = response.json
    code = body.get("error", {}).get("code") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
    return response.status, code


def main():
    fresh_database()
    app_a = create_app("Isolation A", sandbox=True)
    app_b = create_app("Isolation B", sandbox=True)
    api = Service(workers=False)
    worker = start_worker()
    a = app_fixture(api, app_a, "a", "alice-of-a")
    b = app_fixture(api, app_b, "b", "bob-of-b")

    def settled():
        # Work waiting, and changes not yet folded into counters and trends (app_hourly_stats):
        # the maintenance loop folds them every few seconds, later on a starved machine.
        return sql("SELECT count(*) FROM deliveries WHERE state NOT IN ('sent', 'failed', 'dead', 'cancelled') "
                   "UNION ALL SELECT count(*) FROM notifications WHERE state = 'fanning_out' "
                   "UNION ALL SELECT count(*) FROM notification_counter_changes "
                   "UNION ALL SELECT count(*) FROM delivery_failure_changes "
                   "UNION ALL SELECT count(*) FROM app_device_count_changes "
                   "UNION ALL SELECT count(*) FROM device_count_changes") == "0\n0\n0\n0\n0\n0"
    wait_until(settled, 120, "both apps' notifications fanned out and delivered")
    for fixture, app in ((a, app_a), (b, app_b)):
        delivered = Client(api.url, app["device_credentials"]).post(
            f"/api/v1/notifications/{fixture['notifications'][0]}/delivered", {"device_token_id": fixture["devices"][0]})
        expect_equal(delivered.status, 200, "a device reporting its own notification delivered")
    wait_until(settled, 60, "sync signals settled")
    time.sleep(1.5)  # past the sync-signal delay, so nothing of A's is still due to change
    wait_until(settled, 60, "sync signals settled")

    # A Live Activity of A's, with its channel asked for: its id is a name A chose, which B may
    # use for an activity of its own but must never reach A's through.
    a_activity = "match-of-a"
    for path, body in ((f"/api/v1/live_activities/{a_activity}/channel", {}),
                       ("/api/v1/live_activities", {"event": "update", "activity_id": a_activity, "content_state": {"n": 1}})):
        made = Client(api.url, app_a["server_credentials"]).post(path, body)
        expect(made.status in (200, 202), f"app A's Live Activity ({made.status} {made.body[:200]})")
    def channel_settled():
        # The channel made by a worker and the event's broadcast sent: nothing of A's is still due to change.
        return sql("SELECT count(*) FROM live_activities WHERE channel_state IN ('requested', 'closing') "
                   "UNION ALL SELECT count(*) FROM activity_broadcasts WHERE state IN ('available', 'running', 'retrying')") == "0\n0"
    wait_until(settled, 60, "app A's Live Activity settled")
    wait_until(channel_settled, 60, "app A's Live Activity channel made and broadcast sent")

    # A webhook of A's: an event B's requests caused in A would be a new row of A's.
    closed_port = free_port()
    webhook = Client(api.url, admin=True).post(f"/admin/apps/{app_a['id']}/webhooks",
                                               {"url": f"http://127.0.0.1:{closed_port}/hook"})
    expect_equal(webhook.status, 201, f"adding app A's webhook ({webhook.body[:200]})")
    tables = app_tables()
    before = snapshot(app_a["id"], tables)
    log(f"app A's data: {len(tables)} tables with app_id, {sum(int(v.split(':')[0]) for v in before.values())} rows")

    b_device = Client(api.url, app_b["device_credentials"])
    b_server = Client(api.url, app_b["server_credentials"])
    b_user = UserTokenClient(api.url, b["user_token"])
    operations = openapi_operations(b_server)
    expect(len(operations) >= 15, f"OpenAPI operations with a path parameter under /api/v1: found only {len(operations)}")
    rng = random.Random(int(os.environ.get("FAULTS_SEED", "8")))
    attempts = []
    rounds = scaled(6, 2)
    for _ in range(rounds):
        for method, template in operations:
            if template.endswith("{activity_id}/channel"):
                continue  # makes the caller's own activity under the name it gives: tried below
            callers = [("user token", b_user)] if template.startswith("/api/v1/me/") else \
                      [("device credentials", b_device), ("server credentials", b_server)]
            for role, client in callers:
                if "{alias}" in template:
                    targets = [("A's alias", a["alias"]), ("an alias never seen", f"nobody-{rng.randrange(10**9)}")]
                elif "{activity_id}" in template:
                    targets = [("A's activity", a_activity), ("an activity id never used", "never-an-activity")]
                elif template.startswith("/api/v1/device_tokens/"):
                    targets = [("A's device", rng.choice(a["devices"])), ("a device id never used", NEVER)]
                else:
                    targets = [("A's notification", rng.choice(a["notifications"] if "/me/" not in template else [a["stateful"]])),
                               ("a notification id never used", NEVER)]
                attempts.append((method, template, role, client, targets))
    rng.shuffle(attempts)

    leaks = []
    not_404 = []
    tried = 0
    for method, template, role, client, targets in attempts:
        answers = []
        # Only the path names A's object here; A's ids in bodies and queries are tried below.
        device_in_body = rng.choice(b["devices"])
        body = body_for(method, template, device_in_body, rng)
        for what, value in targets:
            path = re.sub(r"\{[a-z_]+\}", str(value), template)
            if template.endswith("/content") and method == "GET":
                path += f"?device_token_id={device_in_body}"
            if template.startswith("/api/v1/me/") and method == "DELETE":
                path += f"?device_token_id={device_in_body}"
            response = client.request(method, path, body=body)
            tried += 1
            answers.append((what, path, response))
            expect(response.status < 500, f"{method} {path} as B's {role}: a {response.status}: {response.body[:300]}")
        (what_a, path_a, on_a), (what_never, path_never, on_never) = answers
        if answer_key(on_a) != answer_key(on_never):
            leaks.append(f"{method} {template} as B's {role}: {what_a} answers {answer_key(on_a)}, "
                         f"{what_never} answers {answer_key(on_never)} ({on_a.body[:160]})")
        if "{alias}" not in template and on_a.status != 404 and on_a.status != 403:
            not_404.append(f"{method} {path_a} as B's {role}: {on_a.status} {on_a.body[:160]}")
        if on_a.status == 403:
            # The role may not use this operation at all: it must be refused the same for B's own object.
            own_id = b["devices"][0] if template.startswith("/api/v1/device_tokens/") else b["notifications"][0]
            own = client.request(method, re.sub(r"\{[a-z_]+\}", str(own_id), template), body=body)
            if own.status != 403:
                not_404.append(f"{method} {path_a} as B's {role}: 403 on A's object, but {own.status} on B's own")

    # Ids and aliases of A's in bodies and queries of B's own operations.
    body_attempts = [
        ("GET", f"/api/v1/device_tokens?user_alias={a['alias']}", None, b_server),
        ("GET", f"/api/v1/device_tokens.json?user[alias]={a['alias']}", None, b_device),
        ("POST", f"/api/v1/notifications/{b['notifications'][0]}/delivered", {"device_token_id": a["devices"][0]}, b_device),
        ("POST", f"/api/v1/notifications/{b['notifications'][0]}/opened", {"device_token_id": str(a["devices"][1]), "user": {"alias": a["alias"]}}, b_server),
        ("GET", f"/api/v1/notifications/{b['notifications'][1]}/content?device_token_id={a['devices'][0]}", None, b_device),
        ("GET", f"/api/v1/users/{a['alias']}/notifications", None, b_server),
    ]
    for method, path, body, client in body_attempts:
        response = client.request(method, path, body=body)
        tried += 1
        expect(response.status < 500, f"{method} {path} as B: a {response.status}")
        if "user_alias=" in path or "user[alias]" in path or "/users/" in path:
            items = response.json if isinstance(response.json, list) else (response.json or {}).get("data")
            if response.status != 200 or items != []:
                not_404.append(f"{method} {path} as B: expected 200 with nothing, found {response.status} {response.body[:160]}")
        elif response.status != 404:
            not_404.append(f"{method} {path} as B: expected 404, found {response.status} {response.body[:160]}")
    # A user's own copy, with A's device named as the acting device: answered as for a device
    # that never existed (the parameter is refused, whoever's it is).
    for method, query_or_body in (("DELETE", "query"), ("PATCH", "body")):
        answers = []
        for device_id in (a["devices"][0], NEVER):
            path = f"/api/v1/me/notifications/{b['stateful']}"
            body = {"read_state": "read", "device_token_id": device_id} if query_or_body == "body" else None
            if query_or_body == "query":
                path += f"?device_token_id={device_id}"
            answers.append(b_user.request(method, path, body=body))
            tried += 1
        if answer_key(answers[0]) != answer_key(answers[1]):
            leaks.append(f"{method} /api/v1/me/notifications/:id naming A's device in its {query_or_body}: "
                         f"{answer_key(answers[0])}, for a device never used {answer_key(answers[1])}")
    # B asking for a channel under A's activity's name gets a channel of its own activity, and
    # reads back its own: A's activity and channel are untouched (the snapshot below).
    own = b_server.post(f"/api/v1/live_activities/{a_activity}/channel", {})
    read = b_server.request("GET", f"/api/v1/live_activities/{a_activity}")
    tried += 2
    expect(own.status == 202 and read.status == 200 and (read.json or {}).get("notification_id") not in a["notifications"],
           f"B's own activity under A's activity's name: {own.status} {read.status} {read.body[:200]}")
    sent = b_server.post("/api/v1/notifications", {"title": "B to A", "message": "x", "device_ids": a["devices"]})
    sent_alias = b_server.post("/api/v1/notifications", {"title": "B to A's user", "message": "x", "user_aliases": [a["alias"]]})
    tried += 2
    expect(sent.status in (202, 404, 422), f"B sending to A's device ids: {sent.status} {sent.body[:200]}")
    expect(sent_alias.status in (202, 422), f"B sending to A's user alias: {sent_alias.status} {sent_alias.body[:200]}")
    wait_until(settled, 60, "B's notifications settled")

    expect_empty(leaks, "answers on A's objects that differ from answers on objects that never existed")
    expect_empty(not_404, "cross-app attempts not answered 404")
    crossing = sql_rows(f"""SELECT d.id, d.device_id FROM deliveries d JOIN devices v ON v.id = d.device_id
                            WHERE d.app_id <> v.app_id""")
    expect_empty(crossing, "deliveries of one app to another app's device")
    after = snapshot(app_a["id"], tables)
    changed = [table for table in before if before[table] != after[table]]
    expect_empty(changed, "tables where app A's rows changed during B's attempts")
    worker.terminate()
    return (f"{tried} cross-app requests over {len(operations)} operations x {rounds} rounds, all 404 or answered as for "
            f"an id never used; app A's rows in {len(tables) + 1} tables unchanged")


run_scenario(main)
