"""Device import benchmark: generates a CSV of ROWS devices and times `notifiable devices import`
into a fresh app, then checks the row count in the database.

  NOTIFIABLE_BIN=… DATABASE_URL=… NOTIFIABLE_MASTER_KEY=… python3 Benchmarks/import_bench.py

ROWS (default 1,000,000), BENCH_DIR (default /tmp/notifiable-import-bench), BATCH_SIZE (default 1000).
A tenth of the rows repeat an earlier row's token for another user, half within the same batch
and half from an earlier batch, so reassignments are part of the load, not only inserts.
"""
import json
import os
import subprocess
import sys
import time

BIN = os.environ["NOTIFIABLE_BIN"]
ROWS = int(os.environ.get("ROWS", "1000000"))
WORK = os.environ.get("BENCH_DIR", "/tmp/notifiable-import-bench")
BATCH = os.environ.get("BATCH_SIZE", "1000")


def generate(path):
    languages = ["en", "fr", "de", "es", "it", "ja"]
    countries = ["gb", "fr", "de", "es", "it", "jp"]

    def device(j):
        """Row j's own provider and token: every fourth an FCM token, the rest APNs."""
        return ("fcm", f"fcm-{j:060x}") if j % 4 == 0 else ("apns", f"{j:064x}")

    with open(path, "w") as out:
        out.write("token,provider,user_alias,language,country,custom_properties\n")
        for i in range(ROWS):
            if i % 20 == 9:  # row i-5's device (same batch) for another user
                (provider, token), alias = device(i - 5), f"user-{i}"
            elif i % 20 == 19 and i > 5001:  # row i-5001's device (an earlier batch) for another user
                (provider, token), alias = device(i - 5001), f"user-{i}"
            else:
                (provider, token), alias = device(i), f"user-{i // 3}"
            custom = '"{""plan"":""pro"",""n"":' + str(i) + '}"' if i % 2 else ""
            out.write(f"{token},{provider},{alias},{languages[i % 6]},{countries[i % 6]},{custom}\n")


def main():
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, f"devices-{ROWS}.csv")
    if not os.path.exists(path):
        started = time.time()
        generate(path)
        print(f"generated {path} ({os.path.getsize(path) / 1e6:.0f} MB) in {time.time() - started:.1f} s")
    created = subprocess.run([BIN, "apps", "create", "--name", "import-bench", "--json"], check=True, capture_output=True, text=True)
    app = str(json.loads(created.stdout)["id"])
    started = time.time()
    run = subprocess.run([BIN, "devices", "import", "--app", app, path, "--batch-size", BATCH, "--restart"], capture_output=True, text=True)
    seconds = time.time() - started
    print(run.stdout)
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
        sys.exit(run.returncode)
    print(f"import of {ROWS} rows: {seconds:.1f} s wall, {ROWS / seconds:.0f} rows/s (app {app})")


if __name__ == "__main__":
    main()
