#!/usr/bin/env bash
# Installs everything aispflow needs to build and test, from Debian/Ubuntu packages (Debian 12, Ubuntu 24.04).
# Run as root (or with sudo). Idempotent: packages already present are left alone.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git ccache
  libtbb-dev libboost-graph-dev libyaml-cpp-dev nlohmann-json3-dev libgtest-dev libcli11-dev libxxhash-dev
  libopenblas-dev     # cpu.openblas provider (CBLAS)
  librsvg2-bin        # rsvg-convert: roofline.svg -> PNG
  hyperfine jq        # bench/run_*.sh: whole-process timings and their JSON
  openmpi-bin libopenmpi-dev   # alltoall node, mpi transport (mpirun + aispflow-comm-rank)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "aispflow dependencies: ok"
