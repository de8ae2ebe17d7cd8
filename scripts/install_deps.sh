#!/usr/bin/env bash
# Installs the Debian 12 packages stratasim builds with, only those missing. Idempotent and
# quiet when everything is present. Run as root (or with sudo available).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config   # toolchain
  nlohmann-json3-dev                  # JSON (scenarios, hardware catalog, results)
  doctest-dev                         # unit tests under ctest
  libboost-program-options-dev        # command-line parsing (apps/cli_args.cpp)
  libsimgrid-dev                      # SimGrid engine (sim/simgrid; optional, found by pkg-config)
  openmpi-bin libopenmpi-dev          # MPI ranks for search and batch (sim/batch/ranks; optional)
  qt6-base-dev qt6-charts-dev         # GUI and `stratasim plot` (gui/; optional)
  libqt6opengl6-dev                   # needed by find_package(Qt6 COMPONENTS Charts)
  xvfb xauth imagemagick              # GUI screenshots under Xvfb (scripts/screenshots.sh)
  fonts-dejavu-core                   # a font for offscreen Qt rendering (plots, tests)
  pybind11-dev python3-dev            # the Python module (apps/python; optional)
  python3-pandas                      # its test reads search columns into a DataFrame
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
