#!/usr/bin/env bash
# Installs and starts the services the full test suite uses: Docker engine, bubblewrap,
# PostgreSQL, headless Chromium. Needs root (Debian/Ubuntu). Safe to run twice.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-system.sh needs root (apt-get, dockerd, PostgreSQL); run it with sudo" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
packages=(docker.io bubblewrap debootstrap postgresql chromium chromium-driver python3 python3-venv sqlite3)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Docker engine: no systemd here, so start dockerd by hand. No bridge: sandboxed containers get
# no network at all, and nothing depends on dockerd's iptables rules.
if ! docker info >/dev/null 2>&1; then
  echo "== starting dockerd"
  setsid dockerd --bridge=none --iptables=false --ip-forward=false \
    >/var/log/rlvr-dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start:"; tail -20 /var/log/rlvr-dockerd.log; exit 1; }
fi

# PostgreSQL: start Debian's default cluster.
if ! pg_isready -q 2>/dev/null; then
  echo "== starting PostgreSQL"
  cluster=$(pg_lsclusters -h | awk 'NR==1 {print $1" "$2}')
  if [ -z "$cluster" ]; then
    pg_createcluster 15 main >/dev/null
    cluster="15 main"
  fi
  pg_ctlcluster $cluster start
  for _ in $(seq 1 60); do
    pg_isready -q && break
    sleep 0.5
  done
  pg_isready -q || { echo "PostgreSQL did not start"; exit 1; }
fi
echo "== services ready: docker $(docker version --format '{{.Server.Version}}'), $(pg_isready)"
