#!/usr/bin/env bash
# Installs the Debian packages gpuscale needs to build and test, if any are
# missing. As root it runs apt-get (and says what it installs); otherwise it
# prints the command to run.
set -euo pipefail

packages=(cmake g++ make git
          openmpi-bin libopenmpi-dev mpich libmpich-dev libhdf5-dev hdf5-tools libopenblas-dev
          catch2 libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
          python3 python3-h5py python3-numpy python3-pandas python3-matplotlib python3-pip
          iproute2 util-linux
          # the test bed of the job scripts (tests/e2e/test_slurm.py): a real Slurm, started by the test
          slurmd slurmctld slurm-client munge)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
# The test of function sizes (tests/style) needs lizard, which Debian does not package: from PyPI, pinned.
lizard_missing() { ! /usr/bin/python3 -c 'import lizard' 2>/dev/null; }
install_lizard() {
  lizard_missing || return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "the function-size test needs lizard: /usr/bin/python3 -m pip install --user lizard==1.24.3" >&2
    return 0
  fi
  echo "installing lizard 1.24.3 (PyPI) for the function-size test"
  /usr/bin/python3 -m pip install -q --root-user-action=ignore --break-system-packages lizard==1.24.3
}
if [ ${#missing[@]} -eq 0 ]; then
  install_lizard
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "gpuscale needs these Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed: ${missing[*]}"
install_lizard
