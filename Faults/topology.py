"""The deployment of deploy/ as `scripts/topology` starts it, for the scenarios that run on it:
etcd, two Patroni nodes, HAProxy, PgBouncer, API processes and workers, in a folder of the
scenario's own. Its service settings become the harness's (its database URL through PgBouncer,
its master key and admin token), so `harness.cli`, `harness.sql` and `harness.create_app` work
on it."""
import json
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import harness
from harness import expect, log, wait_until

SCRIPT = os.path.join(harness.REPO, "scripts", "topology")


def _ports_free(base, count=100):
    for port in range(base, base + count):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def process_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


class Topology:
    def __init__(self, api=3, workers=2):
        self.dir = os.path.join(harness.FAULTS_DIR, "topology")
        self.base = next(base for base in random.Random().sample(range(20_000, 40_000, 100), 50) if _ports_free(base))
        self.env = dict(os.environ, NOTIFIABLE_TOPOLOGY_DIR=self.dir, NOTIFIABLE_TOPOLOGY_PORT_BASE=str(self.base),
                        NOTIFIABLE_BIN=harness.BIN, TOPOLOGY_API=str(api), TOPOLOGY_WORKERS=str(workers))
        self.patroni_ports = {1: self.base + 21, 2: self.base + 22}
        self.api_url = f"http://127.0.0.1:{self.base + 80}"
        self.api_ports = [self.base + 80 + n for n in range(1, api + 1)]
        self.settings = {}

    def script(self, *args, timeout=300):
        started = time.monotonic()
        result = subprocess.run([SCRIPT, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        expect(result.returncode == 0, f"scripts/topology {' '.join(args)} exited {result.returncode}:\n"
                                       f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return time.monotonic() - started

    def up(self):
        """Starts it and takes over its settings; the seconds `up` took."""
        seconds = self.script("up", timeout=600)
        with open(os.path.join(self.dir, "notifiable.env")) as f:
            for line in f:
                if line.startswith("export "):
                    name, _, value = line[len("export "):].strip().partition("=")
                    self.settings[name] = shlex.split(value)[0] if value else ""
        harness.DATABASE_URL = self.settings["DATABASE_URL"]
        harness.MASTER_KEY = self.settings["NOTIFIABLE_MASTER_KEY"]
        harness.ADMIN_TOKEN = self.settings["NOTIFIABLE_ADMIN_TOKEN"]
        for name in ("NOTIFIABLE_DATABASE_POOL_MODE", "NOTIFIABLE_SESSION_DATABASE_URL"):
            os.environ[name] = self.settings[name]
        log(f"topology up in {seconds:.0f} s (ports from {self.base}): {self.describe()}")
        return seconds

    def down(self):
        """Stops everything; the seconds `down` took. Nothing of it may be left running."""
        harness.DATABASE_URL = None
        # Its logs outlive it, beside the scenario's own (scripts/test-faults keeps them with FAULTS_KEEP=1).
        logs = os.path.join(self.dir, "logs")
        if os.path.isdir(logs):
            shutil.copytree(logs, os.path.join(harness.FAULTS_DIR, "topology-logs"), dirs_exist_ok=True)
        # The service's processes do not name the folder in their command lines: known by pid.
        service = self.service_pids() if os.path.isdir(os.path.join(self.dir, "pids")) else {}
        seconds = self.script("down", timeout=300)
        left = subprocess.run(["pgrep", "-af", self.dir], capture_output=True, text=True).stdout.strip()
        left += "".join(f"\n{name} (pid {pid})" for name, pid in service.items() if process_alive(pid))
        expect(not left.strip(), f"processes left running after scripts/topology down:\n{left}")
        return seconds

    def start(self, name):
        self.script("start", name)

    def pid(self, name):
        with open(os.path.join(self.dir, "pids", f"{name}.pid")) as f:
            return int(f.read().strip())

    def service_pids(self):
        """{api1: pid, …, work1: pid, …}: the service's processes, to show none was restarted."""
        names = sorted(n[:-4] for n in os.listdir(os.path.join(self.dir, "pids")) if n.endswith(".pid")
                       and (n.startswith("api") or n.startswith("work")))
        return {name: self.pid(name) for name in names}

    def patroni(self, node, path):
        """The status Patroni's REST API on `node` answers `path` with (0 when it does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.patroni_ports[node]}{path}", timeout=2) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return 0

    def leader(self):
        """1 or 2: the node Patroni leads with now; None while neither does."""
        return next((node for node in (1, 2) if self.patroni(node, "/primary") == 200), None)

    def wait_synchronous_standby(self, node, timeout):
        wait_until(lambda: self.patroni(node, "/sync") == 200, timeout, f"pg{node} streaming as the synchronous standby")

    def postmaster_pid(self, node):
        with open(os.path.join(self.dir, "data", f"pg{node}", "postmaster.pid")) as f:
            return int(f.readline())

    def kill_postmaster(self, node):
        """kill -9 of the node's PostgreSQL only; Patroni stays."""
        os.kill(self.postmaster_pid(node), signal.SIGKILL)

    def kill_node(self, node):
        """kill -9 of the node's Patroni and its PostgreSQL: the machine is gone."""
        postmaster = self.postmaster_pid(node)
        patroni = self.pid(f"patroni-pg{node}")
        for target in (lambda: os.killpg(patroni, signal.SIGKILL), lambda: os.kill(postmaster, signal.SIGKILL)):
            try:
                target()
            except ProcessLookupError:
                pass
        # Its PostgreSQL children (backends, the WAL sender) die with the postmaster.
        wait_until(lambda: subprocess.run(["pgrep", "-f", os.path.join(self.dir, "data", f"pg{node}")],
                                          capture_output=True).returncode != 0, 30, f"pg{node}'s processes gone")

    def error_lines(self, limit=20):
        """The service processes' log lines at level error or above, for a failure's message."""
        lines = []
        logs = os.path.join(self.dir, "logs")
        for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
            if name.startswith(("api", "work")):
                with open(os.path.join(logs, name), errors="replace") as f:
                    lines += [f"{name}: {line.rstrip()}" for line in f if " error " in line or " critical " in line]
        return "\n".join(lines[-limit:]) or "(none)"

    def describe(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.patroni_ports[1]}/cluster", timeout=2) as response:
                members = json.load(response).get("members", [])
            return ", ".join(f"{m['name']} {m['role']} {m.get('state', '')}".strip() for m in members)
        except OSError as error:
            return f"Patroni does not answer ({error})"
