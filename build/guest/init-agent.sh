#!/bin/busybox sh
# /init of the agent image's initramfs: assemble the root from its virtio-blk disks, then
# switch_root into it with the agent as PID 1.
#   - serial `capsem-root`:    the image's Debian squashfs, read-only, the overlay's bottom layer.
#   - serial `capsem-agents`:  the coding agents' squashfs (opt/capsem/agents and their commands in
#                              usr/local/bin), read-only, laid over the Debian one; stored
#                              uncompressed, so an agent's first start does not pay to inflate it.
#   - serial `capsem-session`: the session's ext4 disk, upper/ and work/ of the overlay, plus
#                              capsem/ca.pem, the app's CA, written by the host when it made the disk.
# Disks are found by serial rather than by vda/vdb, because the order the kernel names
# virtio-mmio devices in is not the order they are given on the QEMU command line.
. /lib/capsem/init-common.sh

find_disk() {
  for b in /sys/block/vd*; do
    [ -r "$b/serial" ] || continue
    read -r serial < "$b/serial"
    if [ "$serial" = "$1" ]; then
      echo "/dev/${b##*/}"
      return 0
    fi
  done
  return 1
}

# The CA changes per install, so it is not in the cached image: rebuild the bundle from the
# image's own bundle on every boot (a CA from an earlier boot never lingers in the upper layer).
install_ca() {
  bundle=/etc/ssl/certs/ca-certificates.crt
  [ -f "/lower$bundle" ] || fail "the image has no $bundle (is ca-certificates in packages.txt?)"
  mkdir -p /newroot/usr/local/share/ca-certificates /newroot/etc/profile.d
  if [ -s /rw/capsem/ca.pem ]; then
    cp /rw/capsem/ca.pem /newroot/usr/local/share/ca-certificates/capsem-ca.crt || fail "cannot copy the CA"
    { cat "/lower$bundle"; echo; cat /rw/capsem/ca.pem; } > "/newroot$bundle" || fail "cannot write $bundle"
    # Every TLS connection out of the guest ends at the proxy, which shows leaves of this CA: the
    # variables name it alone, as `capsem record` does on the host. Parsing the whole bundle cost
    # each curl over a second under TCG; the system bundle above still holds it for other readers.
    ca=/usr/local/share/ca-certificates/capsem-ca.crt
    export NODE_EXTRA_CA_CERTS=$ca SSL_CERT_FILE=$ca REQUESTS_CA_BUNDLE=$ca CURL_CA_BUNDLE=$ca GIT_SSL_CAINFO=$ca
    # For shells the user starts by other routes than the agent (the agent passes its own env on).
    cat > /newroot/etc/profile.d/capsem-ca.sh <<PROFILE
export NODE_EXTRA_CA_CERTS=$ca SSL_CERT_FILE=$ca REQUESTS_CA_BUNDLE=$ca CURL_CA_BUNDLE=$ca GIT_SSL_CAINFO=$ca
PROFILE
    say "trusting the app's CA (capsem/ca.pem on the session disk)"
  else
    rm -f /newroot/usr/local/share/ca-certificates/capsem-ca.crt /newroot/etc/profile.d/capsem-ca.sh
    cat "/lower$bundle" > "/newroot$bundle"
    say "warning: no capsem/ca.pem on the session disk; HTTPS through the proxy will not be trusted"
  fi
}

# The transparent path: programs that ignore the proxy variables are recorded too. The guest has
# no network but this: a dummy interface whose default route lets a connection to any address
# reach netfilter, where every TCP connection that does not stay on the loopback is redirected
# to the agent's transparent listener (which reads the original destination back), and UDP to
# port 53 anywhere goes to the agent's DNS answerer. Names resolve through that answerer: the
# host resolves and records each lookup and answers with stand-in addresses it maps back.
TRANSPARENT_PORT=3129
DNS_ADDRESS=127.0.0.53
transparent_network() {
  ip link add capsem0 type dummy && ip link set capsem0 up \
    && ip addr add 192.0.2.2/32 dev capsem0 && ip route add default dev capsem0 \
    || fail "cannot set up the transparent path's interface"
  # IPv6 too: the DNS answerer gives AAAA stand-ins, and a program may dial any IPv6 address.
  ip -6 addr add fd00:c5e3:0:1::2/128 dev capsem0 && ip -6 route add default dev capsem0 \
    || fail "cannot give the transparent path's interface its IPv6 address"
  chroot /newroot /usr/sbin/nft -f - <<NFT || fail "cannot load the transparent path's nftables rules"
table inet capsem {
  chain output {
    type nat hook output priority -100; policy accept;
    oifname "lo" return
    meta l4proto tcp redirect to :$TRANSPARENT_PORT
    meta nfproto ipv4 udp dport 53 dnat ip to $DNS_ADDRESS
  }
}
NFT
  rm -f /newroot/etc/resolv.conf
  echo "nameserver $DNS_ADDRESS" > /newroot/etc/resolv.conf || fail "cannot write /etc/resolv.conf"
  say "transparent path: TCP to port $TRANSPARENT_PORT, DNS at $DNS_ADDRESS"
}

init_start
mount_basics
load_modules
link_virtio_ports

ROOT_DEV=$(find_disk capsem-root) || fail "no virtio-blk disk with serial capsem-root (the image's rootfs)"
RW_DEV=$(find_disk capsem-session) || fail "no virtio-blk disk with serial capsem-session (the session disk)"
mkdir -p /lower /rw /newroot
mount -t squashfs -o ro "$ROOT_DEV" /lower || fail "cannot mount the rootfs $ROOT_DEV (squashfs)"
# Overlay's leftmost lower layer is its top: the agents' tree over the Debian one.
LOWER=/lower
if AGENTS_DEV=$(find_disk capsem-agents); then
  mkdir -p /agents
  mount -t squashfs -o ro "$AGENTS_DEV" /agents || fail "cannot mount the coding agents' layer $AGENTS_DEV (squashfs)"
  LOWER=/agents:/lower
fi
mount -t ext4 -o noatime "$RW_DEV" /rw || fail "cannot mount the session disk $RW_DEV (ext4)"
mkdir -p /rw/upper /rw/work || fail "cannot create upper/ and work/ on the session disk"
mount -t overlay -o "lowerdir=$LOWER,upperdir=/rw/upper,workdir=/rw/work" overlay /newroot \
  || fail "cannot mount the overlay root"
say "root: $ROOT_DEV (squashfs)${AGENTS_DEV:+ and $AGENTS_DEV (agents, squashfs)} under $RW_DEV (ext4) as overlay"

install_ca

# The agent comes in the initramfs, not the squashfs: a new agent build then only rebuilds the
# initramfs, and the copy lands in the session's upper layer.
AGENT=/usr/local/sbin/capsem-agent
mkdir -p /newroot/usr/local/sbin
cp /sbin/capsem-agent "/newroot$AGENT" && chmod 755 "/newroot$AGENT" || fail "cannot install $AGENT"

# Node's fetch ignores HTTPS_PROXY; this preload (with the undici it loads) routes it through
# the agent's proxy listener, for every Node program the agent starts and each of its threads.
NODE_SUPPORT=/usr/local/lib/capsem/node
mkdir -p "/newroot$NODE_SUPPORT" && cp -r /lib/capsem/node/. "/newroot$NODE_SUPPORT/" || fail "cannot install $NODE_SUPPORT"
export NODE_OPTIONS="--require $NODE_SUPPORT/proxy-preload.cjs"

mount_workspace /newroot/workspace
bring_up_loopback
# The image has no /etc/hosts, and the host's resolver knows nothing of the guest: without this,
# `localhost` names nothing in the guest, and a program cannot reach a server of its own by that
# name (the agent's NO_PROXY sends it there directly rather than to the host's proxy).
[ -e /newroot/etc/hosts ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' > /newroot/etc/hosts \
  || fail "cannot write /etc/hosts"
transparent_network
# Last read of /proc/uptime before /proc moves into the new root.
init_end "$AGENT"

for d in dev proc sys run tmp; do
  mkdir -p "/newroot/$d"
  mount --move "/$d" "/newroot/$d" || fail "cannot move /$d into the new root"
done
mkdir -p /newroot/run/capsem/lower /newroot/run/capsem/rw
mount --move /lower /newroot/run/capsem/lower || fail "cannot move the rootfs mount"
if [ -n "$AGENTS_DEV" ]; then
  mkdir -p /newroot/run/capsem/agents
  mount --move /agents /newroot/run/capsem/agents || fail "cannot move the coding agents' mount"
fi
mount --move /rw /newroot/run/capsem/rw || fail "cannot move the session disk mount"

cd /
exec switch_root /newroot "$AGENT" --port "$CAPSEM_PORT" --workspace /workspace \
  --transparent-port "$TRANSPARENT_PORT" --dns "$DNS_ADDRESS"
fail "cannot switch_root to /newroot"
