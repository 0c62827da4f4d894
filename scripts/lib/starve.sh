# Starved mode for scripts/test and scripts/test-faults: a CPU hog beside everything the suite
# runs, as a throttled pod, a shared VM or a backup running beside the service would be.
# stress-ng (Debian's package) runs CPU workers at the suite's own priority, so the service, its
# PostgreSQL and the fake gateways get what the hog leaves them. STARVE_WORKERS (default 4) sets
# how many: 4 on two cores keeps the load average near 6.

# Installs stress-ng when it is missing.
starve_ensure_installed() {
  if ! command -v stress-ng >/dev/null; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "==> Installing stress-ng"
    $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q stress-ng
  fi
}

# Starts the hog; its pid is in STARVE_PID, stopped by starve_stop.
starve_start() {
  starve_ensure_installed
  local workers="${STARVE_WORKERS:-4}"
  echo "==> Starved mode: stress-ng --cpu $workers beside the suite"
  stress-ng --cpu "$workers" --cpu-method matrixprod --quiet --timeout 0 &
  STARVE_PID=$!
}

starve_stop() {
  if [ -n "${STARVE_PID:-}" ]; then
    kill "$STARVE_PID" 2>/dev/null || true
    wait "$STARVE_PID" 2>/dev/null || true
    STARVE_PID=""
  fi
}
