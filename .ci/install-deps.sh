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
  python3 python3-pip # pip download: the pinned CUTLASS and cuobjdump wheels below
  openmpi-bin libopenmpi-dev   # alltoall node, mpi transport (mpirun + aispflow-comm-rank)
  slurmctld slurmd slurm-client munge   # the Slurm executor's tests and bench: a one-node cluster on localhost (tests/support/local_slurm.sh)
  chromium libpng-dev # `aispflow report`'s tests: the page opened in headless Chromium, its screenshot read with libpng
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

# Pinned dependencies from PyPI wheels, unpacked (never installed into a Python) into a per-user cache that
# CMake searches (docs/cutlass.md): CUTLASS's header tree, and cuobjdump for the test that proves the
# plugin carries sm_100a SASS. Neither is copied into the repository.
deps_dir=${AISPFLOW_DEPS_DIR:-$HOME/.cache/aispflow-deps}
unpack_wheel() {   # name version directory
  local name=$1 version=$2 dir=$3
  [ -e "$dir/.complete" ] && return 0
  local tmp
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$name==$version"
  rm -rf "$dir" && mkdir -p "$dir"
  python3 -m zipfile -e "$tmp"/*.whl "$dir"
  rm -rf "$tmp"
  touch "$dir/.complete"
}
unpack_wheel nvidia-cutlass 4.2.0.0 "$deps_dir/cutlass-4.2.0.0"
unpack_wheel nvidia-cuda-cuobjdump 13.5.37 "$deps_dir/cuobjdump-13.5.37"
chmod +x "$deps_dir/cuobjdump-13.5.37/nvidia/cu13/bin/cuobjdump"
echo "aispflow dependencies: ok"
