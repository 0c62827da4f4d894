"""Delivery benchmark driver, run by scripts/bench (which builds, and starts PostgreSQL).

Measures on this machine, in one run:
  1. the fake APNs gateway's ceiling with h2load (1 and 4 connections), the baseline;
  2. fan-out of DEVICES devices by a fan-out-only worker process;
  3. sustained sends per second by one worker process to the same gateway, and the
     claim-to-sent latency of each delivery (p50/p99), from the database's own timestamps;
and prints the ratio of the worker's rate to the gateway's ceiling.
"""
import base64
import json
import os
import re
import socket
import subprocess
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

BIN = os.environ["NOTIFIABLE_BIN"]
WORK = os.environ["BENCH_DIR"]
PSQL = os.path.join(os.environ["PG_BIN"], "psql")
DATABASE_URL = os.environ["DATABASE_URL"]
DEVICES = int(os.environ.get("DEVICES", "100000"))
H2LOAD_REQUESTS = int(os.environ.get("H2LOAD_REQUESTS", "200000"))
TEAM, KEY, TOPIC = "BENCHTEAM1", "BENCHKEY01", "com.example.bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sql(query):
    out = subprocess.run([PSQL, DATABASE_URL, "-tAc", query], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(private_key):
    header = b64url(json.dumps({"alg": "ES256", "kid": KEY}, separators=(",", ":")).encode())
    claims = b64url(json.dumps({"iss": TEAM, "iat": int(time.time())}, separators=(",", ":")).encode())
    signing_input = f"{header}.{claims}".encode()
    r, s = decode_dss_signature(private_key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    return f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def wait_until(condition, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


def start(args, env_extra=None, log=None):
    env = dict(os.environ, LOG_LEVEL="error", NOTIFIABLE_MIGRATIONS_DIR=os.path.abspath("Migrations"))
    env.update(env_extra or {})
    return subprocess.Popen([BIN] + args, env=env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT)


def h2load(port, token, bearer, connections, streams=100):
    payload = os.path.join(WORK, "payload.json")
    with open(payload, "w") as f:
        f.write('{"aps":{"alert":{"title":"Bench","body":"Hello"}},"n_id":1}')
    out = subprocess.run(
        ["h2load", "-n", str(H2LOAD_REQUESTS), "-c", str(connections), "-m", str(streams), "-d", payload,
         "-H", f"authorization: bearer {bearer}", "-H", f"apns-topic: {TOPIC}", "-H", "apns-push-type: alert",
         f"https://127.0.0.1:{port}/3/device/{token}"],
        capture_output=True, text=True, check=True,
    ).stdout
    rate = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))
    succeeded = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out).group(1))
    if succeeded != H2LOAD_REQUESTS:
        sys.exit(f"h2load: only {succeeded} of {H2LOAD_REQUESTS} requests succeeded:\n{out}")
    return rate


def main():
    key = ec.generate_private_key(ec.SECP256R1())
    key_path = os.path.join(WORK, "apns.p8")
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public_path = os.path.join(WORK, "apns.pub.pem")
    with open(public_path, "wb") as f:
        f.write(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))

    gateway_port = free_port()
    cert_path = os.path.join(WORK, "gateway.pem")
    gateway = start(["fake-apns", "--port", str(gateway_port), "--trust", f"{TEAM}:{KEY}:{public_path}",
                     "--certificate-out", cert_path, "--topic", TOPIC])
    if not wait_until(lambda: os.path.exists(cert_path), 30):
        sys.exit("the fake APNs gateway did not start")
    time.sleep(0.5)
    processes = [gateway]
    try:
        token = "ab" * 32
        print("== Gateway ceiling (h2load, TLS + HTTP/2, same machine)")
        ceiling_1 = h2load(gateway_port, token, jwt(key), connections=1)
        print(f"h2load, 1 connection x 100 streams: {ceiling_1:,.0f} req/s")
        ceiling_4 = h2load(gateway_port, token, jwt(key), connections=4)
        print(f"h2load, 4 connections x 100 streams: {ceiling_4:,.0f} req/s")

        subprocess.run([BIN, "migrate"], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, NOTIFIABLE_MIGRATIONS_DIR=os.path.abspath("Migrations")))
        app = json.loads(subprocess.run([BIN, "apps", "create", "--name", "Bench", "--json"], check=True,
                                        capture_output=True, text=True,
                                        env=dict(os.environ, NOTIFIABLE_MIGRATIONS_DIR=os.path.abspath("Migrations"))).stdout)
        app_id = app["id"]
        subprocess.run([BIN, "apps", "set-apns", "--app", str(app_id), "--key-id", KEY, "--team-id", TEAM,
                        "--bundle-id", TOPIC, "--key-file", key_path, "--environment", "sandbox",
                        "--endpoint", f"https://127.0.0.1:{gateway_port}", "--ca-file", cert_path],
                       check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, NOTIFIABLE_MIGRATIONS_DIR=os.path.abspath("Migrations")))
        sql(f"""INSERT INTO devices (app_id, provider, token, language)
                SELECT {app_id}, 'apns', lpad(to_hex(n), 64, '0'), CASE WHEN n % 2 = 0 THEN 'en' ELSE 'fr' END
                FROM generate_series(1, {DEVICES}) AS n""")

        api_port = free_port()
        api = start(["serve", "--no-workers", "--no-migrate", "--port", str(api_port)])
        processes.append(api)
        wait_until(lambda: subprocess.run(["curl", "-sf", f"http://127.0.0.1:{api_port}/health/ready"],
                                          capture_output=True).returncode == 0, 30)
        body = json.dumps({"title": "Bench", "message": "Hello", "localized": {"fr": {"message": "Bonjour"}}, "all": True})
        sent = subprocess.run([BIN, "call", "POST", "/api/v1/notifications", "--data", body, "--url", f"http://127.0.0.1:{api_port}",
                               "--access-id", app["server_credentials"]["access_id"],
                               "--secret-key", app["server_credentials"]["secret_key"]],
                              check=True, capture_output=True, text=True).stdout
        notification_id = json.loads(sent.split("\n", 1)[1])["id"]

        print(f"\n== Fan-out of {DEVICES:,} devices (one fan-out-only worker process)")
        started = time.monotonic()
        fanout = start(["work", "--no-migrate"], {"NOTIFIABLE_WORKER_LANES": "0"})
        processes.append(fanout)
        wait_until(lambda: sql(f"SELECT state FROM notifications WHERE id = {notification_id}") == "fanned_out", 600, 0.02)
        fanout_seconds = time.monotonic() - started
        fanout.terminate(); fanout.wait()
        print(f"fan-out: {fanout_seconds:.2f} s ({DEVICES / fanout_seconds:,.0f} devices/s)")

        print(f"\n== Sending {DEVICES:,} deliveries (one worker process: 4 lanes x 200)")
        started = time.monotonic()
        worker = start(["work", "--no-migrate"])
        processes.append(worker)
        wait_until(lambda: sql(f"SELECT count(*) FROM deliveries WHERE notification_id = {notification_id} AND state = 'sent'") == str(DEVICES), 1800, 0.05)
        send_seconds = time.monotonic() - started
        worker.terminate(); worker.wait()
        rate = DEVICES / send_seconds
        first, last, p50, p99 = sql(f"""
            SELECT extract(epoch FROM min(claimed_at)), extract(epoch FROM max(sent_at)),
                   round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - claimed_at))::numeric, 1),
                   round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - claimed_at))::numeric, 1)
            FROM deliveries WHERE notification_id = {notification_id}""").split("|")
        steady = DEVICES / (float(last) - float(first))
        print(f"sent: {send_seconds:.2f} s from worker start, {rate:,.0f} sends/s")
        print(f"first claim to last send: {float(last) - float(first):.2f} s, {steady:,.0f} sends/s")
        print(f"claim-to-sent latency: p50 {p50} ms, p99 {p99} ms")
        print(f"\nratio worker/gateway ceiling (1 connection): {steady / ceiling_1:.2f}")
        print(f"ratio worker/gateway ceiling (4 connections): {steady / ceiling_4:.2f}")
    finally:
        for process in processes:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()
