#!/usr/bin/env bash
# Writes a private containers configuration for podman and buildah in DIR and prints the two
# `export` lines that select it (eval them): an image store in DIR (vfs driver, works on any
# filesystem), the host's network namespace (testenv listens on 127.0.0.1), runc with cgroupfs
# (crun refuses hybrid cgroups; there may be no systemd), events to a file, and rlimits no
# higher than the caller's hard limits (podman's default nproc is above them in a CI
# container, and raising a limit needs CAP_SYS_RESOURCE).
# Usage: eval "$(deploy/containers-conf.sh DIR)"
set -euo pipefail
dir=${1:?usage: $0 DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
[[ $nproc == unlimited || $nproc -gt 4096 ]] && nproc=4096
[[ $nofile == unlimited || $nofile -gt 65536 ]] && nofile=65536
cat >"$dir/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$dir/storage"
runroot = "$dir/run"
CONF
cat >"$dir/containers.conf" <<CONF
[containers]
netns = "host"
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$dir/events.log"
[network]
network_backend = "netavark"
CONF
echo "export CONTAINERS_STORAGE_CONF=$dir/storage.conf"
echo "export CONTAINERS_CONF=$dir/containers.conf"
