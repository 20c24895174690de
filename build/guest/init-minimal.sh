#!/bin/busybox sh
# /init of the minimal image: everything runs from the initramfs; the agent is /sbin/capsem-agent.
. /lib/capsem/init-common.sh

init_start
mount_basics
load_modules
link_virtio_ports
mount_workspace /workspace
bring_up_loopback

AGENT=/sbin/capsem-agent
[ -x "$AGENT" ] || fail "$AGENT is missing or not executable"
cd /workspace || fail "cannot enter /workspace"
init_end "$AGENT"
exec "$AGENT" --port "$CAPSEM_PORT" --workspace /workspace
fail "cannot exec $AGENT"
