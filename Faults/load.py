"""Load the scenarios put on the API while they break something: closed-loop registration
clients that keep every answer, to judge afterwards what was acknowledged and when."""
import random
import threading
import time

from harness import Client, apns_token, expect_at_most, expect_empty, log, sql_rows


class Registrations:
    """Closed-loop registration clients; each answer kept with when its request started and ended."""

    def __init__(self, base_url, credential):
        self.base_url = base_url
        self.credential = credential
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers = []            # (started, ended, status, retry_after, json_error, body)
        self.transport_errors = []
        self.registered = {}         # token -> (fields, id) for every 2xx

    def loop(self, index):
        client = Client(self.base_url, self.credential, timeout=60)
        rng = random.Random(index)
        serial = 0
        while not self.stop.is_set():
            serial += 1
            token = apns_token(5_000_000_000 + index * 10_000_000 + serial)
            fields = {"provider": "apns", "token": token, "name": f"Phone {index}-{serial}",
                      "user_alias": f"user-{rng.randrange(100)}", "language": "en", "country": "gb"}
            started = time.monotonic()
            try:
                response = client.post("/api/v1/device_tokens", {"device_token": fields})
            except Exception as error:
                with self.lock:
                    self.transport_errors.append((started, repr(error)))
                time.sleep(0.1)
                continue
            ended = time.monotonic()
            with self.lock:
                self.answers.append((started, ended, response.status, response.headers.get("retry-after"),
                                     response.is_json_error() if response.status >= 400 else None, response.body[:300]))
                if 200 <= response.status < 300:
                    self.registered[token] = (fields, (response.json or {}).get("id"))
            if response.status == 503:
                time.sleep(0.05)

    def rate(self, since, until):
        """Registrations answered 2xx per second among requests that started in [since, until)."""
        with self.lock:
            count = sum(1 for a in self.answers if since <= a[0] < until and 200 <= a[2] < 300)
        return count / (until - since)

    def finish(self, threads):
        """Stops the clients and waits for them."""
        self.stop.set()
        for thread in threads:
            thread.join(timeout=90)

    def judge(self, cut_off_allowed=0, gateway_errors=()):
        """What every fault scenario requires of the answers: none a 500 (nor any 5xx but 503 and
        `gateway_errors`, a proxy's answers for requests cut off in a process that died), every 503
        with Retry-After, every error CONTRACT §4 JSON, no 4xx (the load is valid), and at most
        `cut_off_allowed` requests cut off (a proxy's error or no answer at all). Returns the
        count of answers by status."""
        statuses = {}
        for answer in self.answers:
            statuses[answer[2]] = statuses.get(answer[2], 0) + 1
        log(f"answers by status: {dict(sorted(statuses.items()))}; no answer at all: {len(self.transport_errors)}")
        allowed = {503, *gateway_errors}
        expect_empty([(a[2], a[5]) for a in self.answers if a[2] >= 500 and a[2] not in allowed],
                     f"5xx answers other than {sorted(allowed)}")
        expect_empty([a[5] for a in self.answers if a[2] == 503 and not a[3]], "503 answers without Retry-After")
        expect_empty([(a[2], a[5]) for a in self.answers if a[2] >= 400 and not a[4]], "error answers that are not CONTRACT §4 JSON")
        expect_empty([(a[2], a[5]) for a in self.answers if 400 <= a[2] < 500], "4xx answers (the load sends only valid requests)")
        cut_off = sum(statuses.get(status, 0) for status in gateway_errors) + len(self.transport_errors)
        if cut_off_allowed:
            expect_at_most(cut_off, cut_off_allowed, "requests cut off (a proxy's error, or no answer at all)")
        else:
            expect_empty(self.transport_errors, "registrations that got no HTTP answer at all")
        return statuses

    def check_kept(self, app_id):
        """Every registration answered 2xx is in the database (sql() as the scenario set it up),
        as it was sent."""
        stored = {row[0].lower(): row for row in sql_rows(f"SELECT token, id, name, user_alias FROM devices WHERE app_id = {app_id}")}
        wrong = [(token, stored.get(token.lower())) for token, (fields, device_id) in self.registered.items()
                 if stored.get(token.lower()) is None
                 or tuple(stored[token.lower()][1:]) != (str(device_id), fields["name"], fields["user_alias"])]
        expect_empty(wrong, "registrations answered 2xx that are not in the database as sent")
