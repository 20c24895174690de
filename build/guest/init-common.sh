# Sourced by both guest inits (/init, busybox sh, PID 1). Every stage says what it does on the
# console (ttyS0, the session's serial.log) as a `capsem-init:` line, and any failure powers the VM
# off with the reason: a PID 1 that just exits panics the kernel and the reason is lost.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
CAPSEM_PORT=/dev/virtio-ports/capsem.mux
CAPSEM_MODULES=/lib/modules/capsem

say() { echo "capsem-init: $*"; }

fail() {
  echo "capsem-init: FAILED: $*"
  echo "capsem-init: powering off"
  sync
  poweroff -f
  # Only reached if poweroff itself failed; the panic then ends the VM (panic=-1, -no-reboot).
  exit 1
}

# /proc/uptime has two decimals: milliseconds at 10 ms resolution, with busybox arithmetic only.
uptime_ms() {
  read -r up _ < /proc/uptime
  cs=${up#*.}
  cs=${cs#0}
  echo $(( ${up%.*} * 1000 + cs * 10 ))
}

init_start() {
  mount -t proc -o nosuid,nodev,noexec proc /proc || fail "cannot mount /proc"
  # For the boot benchmark only (test/bench/vmBench.ts): with `capsem.bare=1` on the kernel
  # command line, init says it is up and powers off at once, so the bench can time a bare QEMU
  # boot to init of the same kernel and initramfs against a full session start.
  read -r cmdline < /proc/cmdline
  case " $cmdline " in
    *" capsem.bare=1 "*) echo "capsem-init: bare boot"; poweroff -f ;;
  esac
  CAPSEM_INIT_START_MS=$(uptime_ms)
  say "started at ${CAPSEM_INIT_START_MS} ms since boot"
}

mount_basics() {
  mount -t sysfs -o nosuid,nodev,noexec sysfs /sys || fail "cannot mount /sys"
  # The kernel does not mount devtmpfs itself (DEVTMPFS_MOUNT is off in Debian's cloud kernel).
  mount -t devtmpfs -o nosuid,mode=755 devtmpfs /dev || fail "cannot mount devtmpfs on /dev"
  mkdir -p /dev/pts /dev/shm /tmp /run
  mount -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=666 devpts /dev/pts || fail "cannot mount /dev/pts"
  mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm || fail "cannot mount /dev/shm"
  mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /tmp || fail "cannot mount /tmp"
  mount -t tmpfs -o nosuid,nodev,mode=755 tmpfs /run || fail "cannot mount /run"
  say "mounted /proc /sys /dev /dev/pts /tmp /run"
}

# load-order lists the .ko files with dependencies first; it is written at build time from modinfo.
load_modules() {
  n=0
  while read -r ko; do
    [ -n "$ko" ] || continue
    insmod "$CAPSEM_MODULES/$ko" || fail "cannot load kernel module $ko"
    n=$((n + 1))
  done < "$CAPSEM_MODULES/load-order"
  say "loaded $n kernel modules"
}

# There is no udev: name the ports the way udev would. The device announces its ports after the
# driver binds, so they can appear a moment after insmod returns; wait up to 2 s for the agent's.
link_virtio_ports() {
  mkdir -p /dev/virtio-ports
  tries=0
  while :; do
    for p in /sys/class/virtio-ports/*; do
      [ -r "$p/name" ] || continue
      read -r name < "$p/name"
      [ -n "$name" ] && ln -sf "../${p##*/}" "/dev/virtio-ports/$name"
    done
    if [ -e "$CAPSEM_PORT" ]; then
      say "virtio ports: $(ls /dev/virtio-ports | tr '\n' ' ')"
      return 0
    fi
    tries=$((tries + 1))
    if [ "$tries" -ge 200 ]; then
      say "warning: no $CAPSEM_PORT after 2 s; the agent will not reach the host"
      return 0
    fi
    usleep 10000
  done
}

# virtiofs share tagged `workspace` when the host gives one, mounted at /run/capsem/share and
# bound at the workspace; otherwise a scratch tmpfs. A VM booted ahead of its session gets an empty
# share: the agent binds the session's folder (a name inside the share) over the workspace when
# the session adopts it (`workspace_source` in its config). /run moves into the new root with it.
CAPSEM_SHARE=/run/capsem/share
mount_workspace() {
  mkdir -p "$1" "$CAPSEM_SHARE" || fail "cannot create $1 and $CAPSEM_SHARE"
  if mount -t virtiofs -o nodev workspace "$CAPSEM_SHARE" 2>/dev/null; then
    mount --bind "$CAPSEM_SHARE" "$1" || fail "cannot bind the share on $1"
    say "workspace: virtiofs share 'workspace' on $CAPSEM_SHARE, bound on $1"
  else
    mount -t tmpfs -o nodev,mode=755 tmpfs "$1" || fail "cannot mount a tmpfs on $1"
    say "workspace: no virtiofs share 'workspace', using a tmpfs on $1"
  fi
}

bring_up_loopback() {
  ip link set lo up || fail "cannot bring up the loopback interface"
  say "loopback up"
}

# Ends the init's own timing; the agent reports both numbers to the host in its `ready` message.
init_end() {
  CAPSEM_INIT_END_MS=$(uptime_ms)
  export CAPSEM_INIT_START_MS CAPSEM_INIT_END_MS
  say "init took $((CAPSEM_INIT_END_MS - CAPSEM_INIT_START_MS)) ms; exec $1"
}
