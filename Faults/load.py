"""Load the scenarios put on the API while they break something: closed-loop registration
clients that keep every answer, to judge afterwards what was acknowledged and when."""
import random
import threading
import time

from harness import Client, apns_token


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
