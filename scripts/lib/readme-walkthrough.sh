#!/usr/bin/env bash
# Runs the README's walkthrough exactly as written (the commands between its walkthrough
# markers) against `scripts/run` on a data folder and ports of its own, checks that the push
# was recorded and the counters moved, then drives headless Chromium through the dashboard of
# the same server as an operator would (sign in, add an editor, search, compose and send, watch
# the send complete), photographing each page at 1400 and 400 px under .build/screenshots/console/
# and checking the numbers they show. Called by scripts/test.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/postgres.sh

work=$(mktemp -d /tmp/notifiable-walkthrough.XXXXXX)
chmod 755 "$work"
port=$(pg_free_port)
pg_port=$(pg_free_port)

# scripts/run in a process group of its own, so that one signal reaches it and its server.
NOTIFIABLE_DATA_DIR="$work/data" PORT=$port NOTIFIABLE_PG_PORT=$pg_port LOG_LEVEL=warning \
  setsid scripts/run >"$work/run.log" 2>&1 &
run_pid=$!
cleanup() {
  kill -INT -- "-$run_pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$run_pid" 2>/dev/null || true
  [ -f "$work/data/pg/postmaster.pid" ] && pg_stop "$work/data/pg"
  rm -rf "$work"
}
trap cleanup EXIT

ready() {
  python3 - "$port" <<'PY'
import sys, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health/ready", timeout=2)
except Exception:
    sys.exit(1)
PY
}
for _ in $(seq 1 1200); do
  ready && [ -f "$work/data/demo.env" ] && break
  kill -0 "$run_pid" 2>/dev/null || { cat "$work/run.log"; echo "scripts/run stopped before serving" >&2; exit 1; }
  sleep 0.5
done
ready || { cat "$work/run.log"; echo "scripts/run did not serve within 10 minutes" >&2; exit 1; }

# The README's commands, with its .data/ pointing at this run's data folder.
sed -n '/<!-- walkthrough:start -->/,/<!-- walkthrough:end -->/p' README.md \
  | sed '/^```/d; /^<!--/d' | sed "s#\.data/#$work/data/#g" >"$work/walkthrough.sh"
[ -s "$work/walkthrough.sh" ] || { echo "README.md has no walkthrough block" >&2; exit 1; }
# What the dashboard check needs to know afterwards.
echo 'echo "$DEMO_APP_ID $N_ID $DEVICE_ID $NOTIFIABLE_ADMIN_TOKEN" >"'"$work"'/ids"' >>"$work/walkthrough.sh"

if ! bash -euo pipefail "$work/walkthrough.sh" >"$work/out.txt" 2>&1; then
  cat "$work/out.txt"; echo "--- server log"; tail -n 40 "$work/run.log"
  echo "The README walkthrough failed." >&2
  exit 1
fi
for expected in '"n_id"' '"title":"Bonjour"' '"sent":1' '"delivered":1' '"opened":1'; do
  grep -q "$expected" "$work/out.txt" || { cat "$work/out.txt"; echo "The walkthrough's output lacks $expected" >&2; exit 1; }
done
echo "README walkthrough: every command worked; the push was recorded and the counters moved."

read -r app_id notification_id device_id admin_token <"$work/ids"
token=$(printf 'ab%.0s' {1..32})
pages=$(cat <<JSON
[{"name": "apps", "path": "/dashboard", "expect": ["Demo", "sandbox"]},
 {"name": "app-notifications", "path": "/dashboard/apps/$app_id", "expect": ["Hello", "opened 1", "100.0 %"]},
 {"name": "notification", "path": "/dashboard/apps/$app_id/notifications/$notification_id", "expect": ["Bonjour", "Sent<b>1</b>", "Opened<b>1</b>", "<svg"]},
 {"name": "device", "path": "/dashboard/apps/$app_id/devices/$device_id", "expect": ["$token", "alice", "<td data-label=\\"What\\">registered</td>"]},
 {"name": "queue", "path": "/dashboard/queue", "expect": ["sent<b>1</b>", "No dead deliveries."]}]
JSON
)
flow=$(printf '{"app_id": %s, "user_alias": "alice", "token": "%s"}' "$app_id" "$token")
echo "==> The console in headless Chromium (screenshots at 1400 and 400 px in .build/screenshots/console/)"
rm -rf .build/screenshots/console
/usr/bin/python3 scripts/lib/dashboard_browser_check.py "http://127.0.0.1:$port" "$admin_token" "$PWD/.build/screenshots/console" "$pages" "$flow"
