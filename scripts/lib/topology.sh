# scripts/topology's work, also sourced by the fault scenarios' harness through that script.
# Expects scripts/lib/postgres.sh and scripts/lib/packages.sh to be sourced first.

TOPOLOGY_DIR=${NOTIFIABLE_TOPOLOGY_DIR:-$PWD/.topology}
TOPOLOGY_PORT_BASE=${NOTIFIABLE_TOPOLOGY_PORT_BASE:-47000}
TOPOLOGY_API=${TOPOLOGY_API:-3}
TOPOLOGY_WORKERS=${TOPOLOGY_WORKERS:-2}

# Ports, all on 127.0.0.1.
topology_ports() {
  local b=$TOPOLOGY_PORT_BASE
  ETCD_PORT=$((b + 1))
  ETCD_PEER_PORT=$((b + 2))
  PG_PORTS=($((b + 11)) $((b + 12)))
  PATRONI_PORTS=($((b + 21)) $((b + 22)))
  PRIMARY_PORT=$((b + 30))
  PGBOUNCER_PORT=$((b + 40))
  API_PORT=$((b + 80))
  STATS_PORT=$((b + 90))
  API_PORTS=()
  local n
  for n in $(seq 1 "$TOPOLOGY_API"); do API_PORTS+=($((b + 80 + n))); done
  WORKER_METRICS_PORTS=()
  for n in $(seq 1 "$TOPOLOGY_WORKERS"); do WORKER_METRICS_PORTS+=($((b + 90 + n))); done
}

# Debian's packages, installed when missing (scripts/lib/packages.sh: their own services are
# not started; this topology runs its own, on its own ports).
topology_install() {
  local missing=""
  [ -x /usr/bin/etcd ] || missing="$missing etcd-server"
  [ -x /usr/bin/etcdctl ] || missing="$missing etcd-client"
  [ -x /usr/bin/patroni ] || missing="$missing patroni"
  [ -x /usr/sbin/pgbouncer ] || missing="$missing pgbouncer"
  [ -x /usr/sbin/haproxy ] || missing="$missing haproxy"
  command -v curl >/dev/null || missing="$missing curl"
  [ -z "$missing" ] || install_packages $missing
}

# The prefix that runs a command as the owner of the database side (etcd, Patroni and PostgreSQL,
# PgBouncer): PostgreSQL and PgBouncer refuse to run as root.
AS_OWNER=()
[ "$(id -u)" -eq 0 ] && AS_OWNER=(runuser -u postgres --)

# topology_start NAME COMMAND...: runs COMMAND in the background in a session of its own, its
# output in logs/NAME.log, its pid in pids/NAME.pid and the command in pids/NAME.cmd (for
# `scripts/topology start NAME` after it was stopped or killed).
topology_start() {
  local name=$1
  shift
  printf '%q ' "$@" >"$TOPOLOGY_DIR/pids/$name.cmd"
  setsid "$@" >>"$TOPOLOGY_DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$TOPOLOGY_DIR/pids/$name.pid"
}

# Starts a component again as it was first started (a Patroni node that was killed rejoins as a
# standby; an API process or worker comes back).
topology_restart() {
  local name=$1
  [ -f "$TOPOLOGY_DIR/pids/$name.cmd" ] || { echo "topology: no component named $name in $TOPOLOGY_DIR" >&2; return 1; }
  if topology_alive "$name"; then
    echo "topology: $name is running (pid $(topology_pid "$name"))" >&2
    return 1
  fi
  eval "topology_start $name $(cat "$TOPOLOGY_DIR/pids/$name.cmd")"
  echo "==> $name started (pid $(topology_pid "$name"))"
}

topology_pid() {
  local file="$TOPOLOGY_DIR/pids/$1.pid"
  [ -f "$file" ] && cat "$file"
}

topology_alive() {
  local pid
  pid=$(topology_pid "$1") || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# topology_wait WHAT SECONDS COMMAND...: until COMMAND succeeds, or fails naming WHAT.
topology_wait() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "topology: $what did not happen within $seconds s; logs in $TOPOLOGY_DIR/logs (scripts/topology down stops what did start)" >&2
      return 1
    fi
    sleep 0.5
  done
}

# Fills in deploy/FILE's ${…} placeholders from the environment into DEST; a placeholder left
# unfilled is an error, so the copy in deploy/ and this script cannot drift apart unnoticed.
topology_render() {
  local template=$1 dest=$2
  python3 - "$template" "$dest" <<'PY'
import os, re, sys
template, dest = sys.argv[1], sys.argv[2]
text = open(template).read()
placeholder = re.compile(r"\$\{([A-Z_]+)\}")
missing = sorted({n for n in placeholder.findall(text) if n not in os.environ})
if missing:
    sys.exit(f"topology: {template} needs {', '.join(missing)}")
open(dest, "w").write(placeholder.sub(lambda m: os.environ[m.group(1)], text))
PY
}

topology_secret() {
  local file="$TOPOLOGY_DIR/secrets/$1"
  [ -f "$file" ] || head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$file"
  cat "$file"
}

topology_up() {
  topology_ports
  pg_ensure_installed
  topology_install
  if ls "$TOPOLOGY_DIR"/pids/*.pid >/dev/null 2>&1; then
    echo "topology: already up in $TOPOLOGY_DIR (scripts/topology down first)" >&2
    return 1
  fi
  local started=$SECONDS
  mkdir -p "$TOPOLOGY_DIR"/{etc,logs,pids,run,secrets,data}
  TOPOLOGY_DIR=$(cd "$TOPOLOGY_DIR" && pwd)
  chmod 755 "$TOPOLOGY_DIR"
  chmod 700 "$TOPOLOGY_DIR/secrets"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$TOPOLOGY_DIR"/{data,run} && chmod 777 "$TOPOLOGY_DIR/logs"

  if [ -z "${NOTIFIABLE_BIN:-}" ]; then
    echo "==> Building notifiable"
    swift build --product notifiable
    NOTIFIABLE_BIN="$(swift build --show-bin-path)/notifiable"
  fi

  export SUPERUSER_PASSWORD REPLICATION_PASSWORD
  SUPERUSER_PASSWORD=$(topology_secret superuser)
  REPLICATION_PASSWORD=$(topology_secret replication)
  local app_password admin_password master_key admin_token
  app_password=$(topology_secret notifiable)
  admin_password=$(topology_secret pgbouncer_admin)
  [ -f "$TOPOLOGY_DIR/secrets/master.key" ] || head -c 32 /dev/urandom | base64 >"$TOPOLOGY_DIR/secrets/master.key"
  master_key=$(cat "$TOPOLOGY_DIR/secrets/master.key")
  admin_token=$(topology_secret admin.token)

  echo "==> etcd on 127.0.0.1:$ETCD_PORT"
  topology_start etcd "${AS_OWNER[@]}" etcd --name etcd1 --data-dir "$TOPOLOGY_DIR/data/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "etcd1=http://127.0.0.1:$ETCD_PEER_PORT"
  topology_wait "etcd answering" 30 curl -fs "http://127.0.0.1:$ETCD_PORT/health"

  local node
  for node in 1 2; do
    local i=$((node - 1))
    echo "==> PostgreSQL node pg$node under Patroni (PostgreSQL 127.0.0.1:${PG_PORTS[$i]}, Patroni 127.0.0.1:${PATRONI_PORTS[$i]})"
    mkdir -p "$TOPOLOGY_DIR/run/pg$node"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$TOPOLOGY_DIR/run/pg$node"
    NODE_NAME=pg$node NODE_HOST=127.0.0.1 NODE_NETWORK=127.0.0.1/32 PATRONI_PORT=${PATRONI_PORTS[$i]} PG_PORT=${PG_PORTS[$i]} \
      ETCD_HOSTS=127.0.0.1:$ETCD_PORT DATA_DIR=$TOPOLOGY_DIR/data/pg$node PG_BIN=$PG_BIN \
      PGPASS=$TOPOLOGY_DIR/run/pg$node/pgpass SOCKET_DIR=$TOPOLOGY_DIR/run/pg$node \
      topology_render deploy/patroni/patroni.yml "$TOPOLOGY_DIR/etc/patroni-pg$node.yml"
    chmod 600 "$TOPOLOGY_DIR/etc/patroni-pg$node.yml"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$TOPOLOGY_DIR/etc/patroni-pg$node.yml"
    topology_start "patroni-pg$node" "${AS_OWNER[@]}" patroni "$TOPOLOGY_DIR/etc/patroni-pg$node.yml"
    # The first node makes the cluster; the second then copies it and streams from it.
    if [ "$node" = 1 ]; then
      topology_wait "pg1 leading" 90 curl -fs "http://127.0.0.1:${PATRONI_PORTS[0]}/primary"
    fi
  done
  topology_wait "pg2 streaming from pg1 as its synchronous standby" 120 curl -fs "http://127.0.0.1:${PATRONI_PORTS[1]}/sync"

  echo "==> HAProxy: the leader on 127.0.0.1:$PRIMARY_PORT, the API on 127.0.0.1:$API_PORT, status on 127.0.0.1:$STATS_PORT"
  local pg_servers="" api_servers="" n
  for node in 1 2; do
    pg_servers+="    server pg$node 127.0.0.1:${PG_PORTS[$((node - 1))]} check port ${PATRONI_PORTS[$((node - 1))]}"$'\n'
  done
  for n in "${!API_PORTS[@]}"; do
    api_servers+="    server api$((n + 1)) 127.0.0.1:${API_PORTS[$n]} check"$'\n'
  done
  LISTEN_HOST=127.0.0.1 API_PORT=$API_PORT PRIMARY_PORT=$PRIMARY_PORT STATS_PORT=$STATS_PORT RUN_DIR=$TOPOLOGY_DIR/run \
    ERRORS_DIR=$PWD/deploy/haproxy/errors \
    PG_SERVERS=${pg_servers%$'\n'} API_SERVERS=${api_servers%$'\n'} \
    topology_render deploy/haproxy/haproxy.cfg "$TOPOLOGY_DIR/etc/haproxy.cfg"
  haproxy -c -q -f "$TOPOLOGY_DIR/etc/haproxy.cfg"
  topology_start haproxy haproxy -db -f "$TOPOLOGY_DIR/etc/haproxy.cfg"

  echo "==> The database and its user, made on the leader through HAProxy"
  topology_wait "HAProxy leading to pg1" 30 topology_psql_superuser "SELECT 1"
  topology_psql_superuser "DO \$\$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'notifiable') THEN CREATE ROLE notifiable LOGIN; END IF;
    END \$\$; ALTER ROLE notifiable PASSWORD '$app_password'" >/dev/null
  topology_psql_superuser "SELECT 1 FROM pg_database WHERE datname = 'notifiable'" | grep -q 1 \
    || topology_psql_superuser "CREATE DATABASE notifiable OWNER notifiable" >/dev/null
  # The migrations' extensions; earthdistance needs a superuser (README, *Location*).
  topology_psql_superuser "CREATE EXTENSION IF NOT EXISTS cube; CREATE EXTENSION IF NOT EXISTS earthdistance; CREATE EXTENSION IF NOT EXISTS btree_gin" notifiable >/dev/null

  echo "==> PgBouncer on 127.0.0.1:$PGBOUNCER_PORT (transaction pooling; notifiable_session in session pooling)"
  printf '"notifiable" "%s"\n"pgbouncer_admin" "%s"\n' "$app_password" "$admin_password" >"$TOPOLOGY_DIR/etc/userlist.txt"
  chmod 600 "$TOPOLOGY_DIR/etc/userlist.txt"
  PRIMARY_HOST=127.0.0.1 PRIMARY_PORT=$PRIMARY_PORT PGBOUNCER_HOST=127.0.0.1 PGBOUNCER_PORT=$PGBOUNCER_PORT \
    RUN_DIR=$TOPOLOGY_DIR/run USERLIST=$TOPOLOGY_DIR/etc/userlist.txt \
    topology_render deploy/pgbouncer/pgbouncer.ini "$TOPOLOGY_DIR/etc/pgbouncer.ini"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$TOPOLOGY_DIR/etc/userlist.txt" "$TOPOLOGY_DIR/etc/pgbouncer.ini"
  topology_start pgbouncer "${AS_OWNER[@]}" pgbouncer "$TOPOLOGY_DIR/etc/pgbouncer.ini"
  topology_wait "PgBouncer answering" 30 env PGPASSWORD="$app_password" "$PG_BIN/psql" -h 127.0.0.1 -p "$PGBOUNCER_PORT" \
    -U notifiable -d notifiable -tAc "SELECT 1"

  # What every service process reads, as deploy/systemd/notifiable.env shows.
  umask 077
  cat >"$TOPOLOGY_DIR/notifiable.env" <<ENV
export DATABASE_URL='postgres://notifiable:$app_password@127.0.0.1:$PGBOUNCER_PORT/notifiable?sslmode=disable'
export NOTIFIABLE_DATABASE_POOL_MODE=transaction
export NOTIFIABLE_SESSION_DATABASE_URL='postgres://notifiable:$app_password@127.0.0.1:$PGBOUNCER_PORT/notifiable_session?sslmode=disable'
export NOTIFIABLE_MASTER_KEY='$master_key'
export NOTIFIABLE_ADMIN_TOKEN='$admin_token'
export NOTIFIABLE_MIGRATIONS_DIR='$PWD/Migrations'
export NOTIFIABLE_TRUSTED_PROXIES=127.0.0.1
export NOTIFIABLE_URL=http://127.0.0.1:$API_PORT
export NOTIFIABLE_BIN='$NOTIFIABLE_BIN'
ENV
  umask 022

  echo "==> Migrating (through PgBouncer)"
  (. "$TOPOLOGY_DIR/notifiable.env" && "$NOTIFIABLE_BIN" migrate >"$TOPOLOGY_DIR/logs/migrate.log" 2>&1) \
    || { cat "$TOPOLOGY_DIR/logs/migrate.log" >&2; return 1; }

  echo "==> ${#API_PORTS[@]} API processes (notifiable serve --no-workers) and ${#WORKER_METRICS_PORTS[@]} workers (notifiable work)"
  for n in "${!API_PORTS[@]}"; do
    topology_start "api$((n + 1))" env PORT="${API_PORTS[$n]}" bash -c ". '$TOPOLOGY_DIR/notifiable.env' && exec \"\$NOTIFIABLE_BIN\" serve --no-workers --no-migrate"
  done
  for n in "${!WORKER_METRICS_PORTS[@]}"; do
    topology_start "work$((n + 1))" env NOTIFIABLE_WORKER_METRICS_PORT="${WORKER_METRICS_PORTS[$n]}" \
      bash -c ". '$TOPOLOGY_DIR/notifiable.env' && exec \"\$NOTIFIABLE_BIN\" work --no-migrate"
  done
  for n in "${!API_PORTS[@]}"; do
    topology_wait "api$((n + 1)) ready" 60 curl -fs "http://127.0.0.1:${API_PORTS[$n]}/health/ready"
  done
  topology_wait "the API through HAProxy" 30 curl -fs "http://127.0.0.1:$API_PORT/health/ready"
  echo "==> Up in $((SECONDS - started)) s. '. $TOPOLOGY_DIR/notifiable.env' to use it; scripts/topology status; scripts/topology down"
}

# A statement as PostgreSQL's superuser, on whichever node HAProxy leads to (in database $2, or postgres).
topology_psql_superuser() {
  PGPASSWORD=$(cat "$TOPOLOGY_DIR/secrets/superuser") "$PG_BIN/psql" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -d "${2:-postgres}" \
    -v ON_ERROR_STOP=1 -tAc "$1"
}

topology_down() {
  [ -d "$TOPOLOGY_DIR" ] || { echo "topology: nothing in $TOPOLOGY_DIR"; return 0; }
  TOPOLOGY_DIR=$(cd "$TOPOLOGY_DIR" && pwd)
  local started=$SECONDS name pid
  # The service first (it drains), then its way to the database, then the database and etcd.
  for group in "api* work*" "haproxy pgbouncer" "patroni-*" "etcd"; do
    local pids=()
    for name in $group; do
      for file in "$TOPOLOGY_DIR"/pids/$name.pid; do
        [ -f "$file" ] || continue
        pid=$(cat "$file")
        # A session of its own each: the whole group (Patroni's PostgreSQL too) gets the signal.
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
        rm -f "$file"
      done
    done
    local deadline=$((SECONDS + 40))
    for pid in "${pids[@]}"; do
      while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    done
  done
  # Anything still holding the folder (a PostgreSQL whose Patroni was killed): its data dir is in
  # its command line.
  pkill -KILL -f "$TOPOLOGY_DIR/" 2>/dev/null || true
  sleep 0.5
  rm -rf "$TOPOLOGY_DIR"
  echo "==> Down in $((SECONDS - started)) s; $TOPOLOGY_DIR removed"
}

topology_status() {
  topology_ports
  [ -d "$TOPOLOGY_DIR/pids" ] || { echo "topology: not up ($TOPOLOGY_DIR)"; return 1; }
  TOPOLOGY_DIR=$(cd "$TOPOLOGY_DIR" && pwd)
  local file name
  for file in "$TOPOLOGY_DIR"/pids/*.pid; do
    name=$(basename "$file" .pid)
    if topology_alive "$name"; then echo "  $name: running (pid $(topology_pid "$name"))"; else echo "  $name: NOT RUNNING"; fi
  done
  echo "Patroni:"
  "${AS_OWNER[@]}" patronictl -c "$TOPOLOGY_DIR/etc/patroni-pg1.yml" list 2>/dev/null | sed 's/^/  /' || echo "  patronictl could not answer"
  echo "HAProxy:"
  curl -fs "http://127.0.0.1:$STATS_PORT/;csv" 2>/dev/null | awk -F, '$2 != "FRONTEND" && $2 != "BACKEND" && $1 != "stats" && NR > 1 { print "  " $1 "/" $2 ": " $18 }' \
    || echo "  HAProxy's status page does not answer"
}
