# Installs Debian packages for the scripts, without starting the services some of them bring
# (pgbouncer, haproxy, etcd-server): the scripts run their own, on their own ports, and a
# system copy started by the install would be left running.
install_packages() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "==> Installing $*"
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    made_policy=1
  fi
  local status=0
  { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@"; } || status=$?
  [ "$made_policy" = 1 ] && $sudo rm -f "$policy"
  return $status
}
