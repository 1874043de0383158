#!/usr/bin/env bash
# Installs everything nodecoll needs on Debian 12 (idempotent: skips what is present).
set -euo pipefail
PKGS=(build-essential cmake pkg-config gfortran
      openmpi-bin libopenmpi-dev mpich libmpich-dev libhwloc-dev hwloc
      python3 python3-matplotlib)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "nodecoll: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
