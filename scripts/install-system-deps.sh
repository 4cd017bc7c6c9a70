#!/usr/bin/env bash
# Installs the Debian packages sbclab needs (with 'test': and its tests), skipping apt when all are present.
set -euo pipefail

packages=(
  iproute2          # ip netns, veth, bridge, tc: the emulated nodes' network
  util-linux        # losetup, mount, unshare, nsenter
  e2fsprogs         # mkfs.ext4 for each node's filesystem
  procps            # ps/pgrep used when reading leftovers
  openjdk-17-jdk-headless  # Hadoop 3.3.6 and Spark 3.5 run on Java 17
  maven             # assembles Hadoop and Spark from Maven Central, builds the Spark jobs
  sysbench fio iperf3   # the seeds' micro-benchmarks: host calibration and node figures
  stress-ng             # full load for the power figures
  7zip mbw              # a second CPU figure (7-Zip's benchmark) and memory copy bandwidth
  hpcc openmpi-bin      # HPL (in the HPC Challenge suite) across the nodes with OpenMPI
  netpipe-tcp netpipe-openmpi  # NetPIPE latency and throughput, TCP and MPI
  nginx-light httperf   # web-serving capacity
  # Containers on the nodes (native against container, Hajji & Tso): podman with crun (it keeps a
  # container in its node's cgroup), netavark and aardvark-dns for its default bridge, iptables for
  # the published ports, catatonit as the init of a node's long-lived container, mmdebstrap to build
  # the node image from Debian packages.
  podman crun catatonit netavark aardvark-dns iptables mmdebstrap
  # The 2021 seed's stack runs on Java 8, which only Debian unstable still builds: sbclab takes it
  # and its C library from there and points its programs at them (stack/jre.py).
  patchelf debian-archive-keyring
)
if [ "${1:-}" = "test" ]; then
  packages+=(chromium chromium-driver)  # the report is checked in a real browser
  packages+=(openssh-server openssh-sftp-server)  # boards reached over SSH are played by sshd in network namespaces
  packages+=(nftables)  # ... whose daemon ports sbclab keeps to the cluster with nft, as on real boards
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "sbclab needs these Debian packages: ${missing[*]}" >&2
  echo "Install them as root (apt-get install ${missing[*]}), then run this again." >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# nginx and sshd are started by sbclab or its tests inside a node, on the cluster's address; the
# packages must not start servers of their own on this host, so services are not started while installing.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
