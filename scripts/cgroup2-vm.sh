#!/usr/bin/env bash
# `make test-cgroup2`: sbclab's cgroup v2 path on a cgroup v2 kernel. Hosts of this kind run cgroup v1,
# so a small virtual machine boots Debian 12's kernel (qemu, from Debian packages) on a root filesystem
# built with mmdebstrap, mounts only the unified hierarchy, and runs bench/fidelity.py there: emulated
# nodes with threaded virtual cores, io.max and memory.max. This checkout and its Python come in over
# 9p at their own paths; then one measured sysbench run through `sbclab bench` on an emulated node.
# The figures and the run come back in $OUT (default: cache/cgroup2-vm/out).
#
# Without KVM (no vmx/svm flags) qemu emulates the CPU: slow, and the emulated nodes are scaled to the
# virtual machine's own calibration, so the fidelity ratios hold while the absolute figures do not.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${SBCLAB_HOME:-$HOME/.sbclab}/cache/cgroup2-vm
out=${OUT:-$cache/out}
seconds=${SECONDS_PER_FIGURE:-3}
# fio lays its file out at the node's write speed first: at this machine's scale (about 0.02 under
# software emulation) a microSD node writes a few hundred KB/s, so 128 MB per pattern took minutes.
file_size=${FIO_FILE_SIZE:-16M}  # one 16 MB block of the sequential patterns
memory=${VM_MEMORY:-6G}
python_prefix=$("$here/.venv/bin/python" -c 'import sys; print(sys.base_prefix)')

command -v qemu-system-x86_64 >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-system-x86 >/dev/null
command -v mmdebstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap >/dev/null

mkdir -p "$cache" "$out"
rm -rf "$out/results" "$out/run.txt"  # a stored cell would be skipped, not run again
root="$cache/root"
if [ ! -e "$root/boot/vmlinuz" ] && ! ls "$root"/boot/vmlinuz-* >/dev/null 2>&1; then
  rm -rf "$root.partial"
  mmdebstrap --mode=root --variant=apt \
    --include=linux-image-amd64,kmod,mount,procps,iproute2,util-linux,e2fsprogs,sysbench,fio,iperf3,python3 \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    bookworm "$root.partial" http://deb.debian.org/debian
  mv "$root.partial" "$root"
fi
kernel=$(ls "$root"/boot/vmlinuz-* | head -n 1)
initrd=$(ls "$root"/boot/initrd.img-* | head -n 1)

# What the machine runs instead of an init system: the unified hierarchy only, the shares, the check.
cat > "$root/sbclab-init" <<EOF
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run; mount -t tmpfs tmpfs /tmp; mount -o remount,rw /
mount -t cgroup2 none /sys/fs/cgroup
ip link set lo up; hostname cgroup2-vm
# ip netns exec binds a node's hosts file over this one, which mmdebstrap's root does not have.
[ -e /etc/hosts ] || echo "127.0.0.1 localhost" > /etc/hosts
for m in 9pnet_virtio 9p loop veth bridge sch_tbf sch_netem br_netfilter; do modprobe \$m 2>/dev/null; done
mkdir -p "$here" "$python_prefix" /out
mount -t 9p -o trans=virtio,version=9p2000.L,ro checkout "$here"
[ "$python_prefix" = /usr ] || mount -t 9p -o trans=virtio,version=9p2000.L,ro python "$python_prefix"
mount -t 9p -o trans=virtio,version=9p2000.L out /out
export SBCLAB_HOME=/var/sbclab HOME=/root
if [ "${ONLY_RUN:-0}" = 0 ]; then
{
  echo "kernel \$(uname -r), cgroup: \$(stat -fc %T /sys/fs/cgroup), controllers: \$(cat /sys/fs/cgroup/cgroup.controllers)"
  cd "$here" && "$here/.venv/bin/python" -u bench/fidelity.py --seconds $seconds --file-size $file_size
  echo "exit \$?"
} > /out/fidelity.txt 2>&1
fi
# One measured run through the run path on v2 groups: a sysbench cell on an emulated RPi 4 worker,
# with its per-node sampler reading the node's v2 group.
{
  cd "$here" && "$here/.venv/bin/sbclab" bench --workloads sysbench-cpu --engines node --workers 1 --profile rpi4b \
    --storage microsd --repetitions 1 --idle-baseline 0 --sample-hz 0.5 --name v2run --results /out/results
  echo "exit \$?"
} > /out/run.txt 2>&1
sync; echo o > /proc/sysrq-trigger; sleep 60
EOF
chmod +x "$root/sbclab-init"

image="$cache/root.img"
rm -f "$image"
truncate -s 12G "$image"
mkfs.ext4 -q -F -d "$root" "$image"

accel=tcg,thread=multi
[ -w /dev/kvm ] && grep -qE 'vmx|svm' /proc/cpuinfo && accel=kvm
share() { echo "-virtfs local,path=$1,mount_tag=$2,security_model=passthrough,id=$2"; }
shares="$(share "$here" checkout) $(share "$out" out)"
[ "$python_prefix" = /usr ] || shares="$shares $(share "$python_prefix" python)"
echo "booting the cgroup v2 machine ($accel; figures in $out/fidelity.txt)"
start=$(date +%s)
# shellcheck disable=SC2086
# -cpu max: every instruction qemu can emulate (or the host's, with KVM); the default model lacks what
# this checkout's compiled Python packages use, and `sbclab` died of an illegal instruction.
timeout "${VM_TIMEOUT:-5400}" qemu-system-x86_64 -accel "$accel" -cpu max -smp 2 -m "$memory" -nographic -no-reboot \
  -kernel "$kernel" -initrd "$initrd" \
  -append "root=/dev/vda rw console=ttyS0 init=/sbclab-init cgroup_no_v1=all quiet" \
  -drive "file=$image,format=raw,if=virtio" $shares > "$out/console.log" 2>&1 || true
rm -f "$image"
echo "the machine ran $(( $(date +%s) - start )) s"
cat "$out/fidelity.txt" "$out/run.txt"
grep -q "^exit 0" "$out/fidelity.txt" && grep -q "^exit 0" "$out/run.txt"  # ONLY_RUN=1 keeps the last figures
