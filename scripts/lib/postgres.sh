# Shared by scripts/run and scripts/test: install PostgreSQL if missing, and run a cluster
# kept in a folder of our own (never the system's cluster).

# Installs Debian's postgresql when no server binaries are present.
pg_ensure_installed() {
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "==> Installing PostgreSQL (Debian's postgresql package)"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q postgresql
  fi
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  export PG_BIN
}

# Runs a command as the cluster's owner: initdb and postgres refuse to run as root.
pg_as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# pg_start DIR PORT: creates the cluster in DIR on first use, then starts it on 127.0.0.1:PORT
# (and a Unix socket in DIR). Superuser "notifiable", trusted on loopback only.
pg_start() {
  local dir=$1 port=$2
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir" && chmod 700 "$dir"
  if [ ! -f "$dir/PG_VERSION" ]; then
    pg_as_owner "$PG_BIN/initdb" -D "$dir" -U notifiable -A trust -E UTF8 --locale=C >"$dir/../initdb.log" 2>&1 \
      || { cat "$dir/../initdb.log"; return 1; }
  fi
  if pg_as_owner "$PG_BIN/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
    return 0
  fi
  pg_as_owner "$PG_BIN/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=${PG_FSYNC:-on} ${PG_EXTRA_OPTIONS:-}" start >/dev/null \
    || { tail -n 20 "$dir/server.log"; return 1; }
}

pg_stop() {
  local dir=$1
  pg_as_owner "$PG_BIN/pg_ctl" -D "$dir" -m fast -w stop >/dev/null 2>&1 || true
}

# pg_create_database PORT NAME: creates the database unless it exists.
pg_create_database() {
  local port=$1 name=$2
  if ! "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U notifiable -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1; then
    "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U notifiable "$name"
  fi
}

# A TCP port nobody listens on now.
pg_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
