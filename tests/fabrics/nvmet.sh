#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/fabrics/nvmet.sh - an NVMe over Fabrics target and host connection
# on one machine (the test guest): the kernel's nvmet target configured
# through configfs, exporting a block device or a file on 127.0.0.1, and
# nvme-cli's `nvme connect` to it. Runs in the guest (tests/vm/run.sh),
# as root; also works on any machine with nvmet, nvmet-tcp/nvme-tcp (or
# nvme-loop) and configfs mounted.
#
# usage: tests/fabrics/nvmet.sh COMMAND [options]
#   setup [--transport tcp|loop] [--backing DEV|FILE] [--file-mb N]
#         [--port-id N] [--trsvcid PORT] [--nqn NQN] [--hostnqn NQN]
#         [--ctrl-loss-tmo S] [--reconnect-delay S (tcp only)]
#                     create the target (port, subsystem with
#                     allow_any_host, namespace 1 backed by DEV or FILE;
#                     a FILE that does not exist is created with
#                     --file-mb MiB, default 512), connect to it and print
#                     the /dev/nvmeXnY of the fabrics namespace on stdout
#   add-port --port-id N --trsvcid PORT
#                     a second port (tcp: 127.0.0.1:PORT) to the subsystem:
#                     a second path for native NVMe multipath
#   connect [--hostnqn NQN] [--trsvcid PORT]
#                     one more connection (controller) to the subsystem,
#                     through the port listening on PORT (tcp); with
#                     another host NQN it stands in for a second host;
#                     prints the controller's name (nvmeN)
#   port-down [--port-id N]  remove the port -> subsystem link (the target
#                     drops the controllers of that port; the host starts
#                     reconnecting); default: the first port
#   port-up [--port-id N]    restore the link (the host reconnects if it is
#                     still within ctrl_loss_tmo)
#   dev               print the fabrics namespace's /dev/nvmeXnY
#   ctrls             print the host's controllers of the subsystem, one a
#                     line: "nvmeN STATE"
#   teardown          disconnect every controller of the subsystem, remove
#                     the configfs entries (links, ports, namespace,
#                     subsystem), in that order
#   check             exit 0 if the transport's modules load (tcp: nvmet,
#                     nvmet-tcp, nvme-tcp; loop: nvmet, nvme-loop)
#
# Defaults: transport tcp, NQN nqn.2024-11.io.kvtier:flash-pool, port id 1,
# trsvcid 4420, host NQN nqn.2024-11.io.kvtier:host-a, ctrl_loss_tmo 600,
# reconnect_delay 1. The state (NQN, port, transport, backing) is kept in
# $KVT_NVMET_STATE (default /run/kvtier-nvmet), so the other commands need
# no options. Sourcing the script instead defines nvmet_setup, nvmet_dev,
# nvmet_add_port, nvmet_port_down, nvmet_port_up, nvmet_ctrls,
# nvmet_connect, nvmet_teardown and nvmet_check, taking the same options.
#
# Exit status: 0, 1 on failure (with a message on stderr), 2 on usage
# errors, 4 when the transport's modules are missing (kselftest "skip").

NVMET_CFS=/sys/kernel/config/nvmet
: "${KVT_NVMET_STATE:=/run/kvtier-nvmet}"

nvmet_log() { echo "nvmet.sh: $*" >&2; }

# The state file: shell assignments of the nvmet_* variables.
nvmet_load() {
	nvmet_transport=tcp nvmet_nqn=nqn.2024-11.io.kvtier:flash-pool
	nvmet_port=1 nvmet_svc=4420 nvmet_backing='' nvmet_hostnqn=nqn.2024-11.io.kvtier:host-a
	nvmet_tmo=600 nvmet_delay=1 nvmet_file_mb=512 nvmet_ports=''
	# shellcheck disable=SC1090
	[[ -f $KVT_NVMET_STATE ]] && . "$KVT_NVMET_STATE"
	return 0
}

nvmet_save() {
	mkdir -p "$(dirname "$KVT_NVMET_STATE")"
	declare -p nvmet_transport nvmet_nqn nvmet_port nvmet_svc nvmet_backing \
		nvmet_hostnqn nvmet_tmo nvmet_delay nvmet_ports | sed 's/^declare -- //' >"$KVT_NVMET_STATE"
}

# nvmet_opts ARGS...: the options of setup/connect into the nvmet_* variables.
nvmet_opts() {
	while (($#)); do
		case $1 in
		--transport) nvmet_transport=$2 ;;
		--backing) nvmet_backing=$2 ;;
		--file-mb) nvmet_file_mb=$2 ;;
		--port-id) nvmet_port=$2 ;;
		--trsvcid) nvmet_svc=$2 ;;
		--nqn) nvmet_nqn=$2 ;;
		--hostnqn) nvmet_hostnqn=$2 ;;
		--ctrl-loss-tmo) nvmet_tmo=$2 ;;
		--reconnect-delay) nvmet_delay=$2 ;;
		*) nvmet_log "unknown option $1"; return 2 ;;
		esac
		[[ $# -ge 2 ]] || { nvmet_log "$1 needs a value"; return 2; }
		shift 2
	done
	case $nvmet_transport in
	tcp | loop) ;;
	*) nvmet_log "transport must be tcp or loop, not $nvmet_transport"; return 2 ;;
	esac
}

nvmet_check() {
	nvmet_load
	nvmet_opts "$@" || return
	nvmet_modules
}

# The modules of $nvmet_transport, configfs and nvme-cli: 0 or 4.
nvmet_modules() {
	local m mods=(nvmet nvmet-tcp nvme-tcp)
	[[ $nvmet_transport == loop ]] && mods=(nvmet nvme-loop)
	for m in "${mods[@]}"; do
		modprobe -q "$m" 2>/dev/null || { nvmet_log "no module $m in $(uname -r)"; return 4; }
	done
	if [[ ! -d $NVMET_CFS ]]; then
		mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config 2>/dev/null
		[[ -d $NVMET_CFS ]] || { nvmet_log "no $NVMET_CFS (configfs)"; return 4; }
	fi
	command -v nvme >/dev/null || { nvmet_log "no nvme-cli"; return 4; }
	return 0
}

# The host's controllers connected to the subsystem: "nvmeN STATE" lines.
nvmet_ctrls() {
	nvmet_load
	local c
	for c in /sys/class/nvme/nvme*; do
		[[ -r $c/subsysnqn ]] || continue
		[[ $(<"$c/subsysnqn") == "$nvmet_nqn" ]] || continue
		echo "${c##*/} $(cat "$c/state" 2>/dev/null)"
	done
}

# The fabrics namespace's block device: under the subsystem with native
# multipath (nvmeXnY, X the subsystem instance), else under the controller.
nvmet_dev() {
	nvmet_load
	local s n c name
	for s in /sys/class/nvme-subsystem/nvme-subsys*; do
		[[ -r $s/subsysnqn && $(<"$s/subsysnqn") == "$nvmet_nqn" ]] || continue
		for n in "$s"/nvme*n*; do
			name=${n##*/}
			[[ $name =~ ^nvme[0-9]+n[0-9]+$ && -e /dev/$name ]] && { echo "/dev/$name"; return 0; }
		done
	done
	for c in /sys/class/nvme/nvme*; do
		[[ -r $c/subsysnqn && $(<"$c/subsysnqn") == "$nvmet_nqn" ]] || continue
		for n in "$c"/nvme*n*; do
			name=${n##*/}
			[[ $name =~ ^nvme[0-9]+n[0-9]+$ && -e /dev/$name ]] && { echo "/dev/$name"; return 0; }
		done
	done
	return 1
}

# nvmet_connect [--hostnqn NQN] [--trsvcid PORT]: nvme connect; prints
# the new controller.
nvmet_connect() {
	nvmet_load
	local before after c i args hostid svc=$nvmet_svc
	while (($#)); do
		case $1 in
		--hostnqn) nvmet_hostnqn=${2:?--hostnqn needs a value} ;;
		--trsvcid) svc=${2:?--trsvcid needs a value} ;;
		*) nvmet_log "connect: unknown option $1"; return 2 ;;
		esac
		shift 2
	done
	before=$(nvmet_ctrls | cut -d' ' -f1)
	# A host ID of its own for each host NQN (the kernel refuses one host
	# ID under two NQNs), derived from it so that it stays the same.
	hostid=$(printf %s "$nvmet_hostnqn" | md5sum |
		sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/')
	args=(-t "$nvmet_transport" -n "$nvmet_nqn" --hostnqn="$nvmet_hostnqn" --hostid="$hostid"
		--ctrl-loss-tmo="$nvmet_tmo")
	# nvme-loop takes no address and no reconnect_delay (EINVAL).
	[[ $nvmet_transport == tcp ]] &&
		args+=(-a 127.0.0.1 -s "$svc" --reconnect-delay="$nvmet_delay")
	nvme connect "${args[@]}" >&2 || { nvmet_log "nvme connect ${args[*]} failed"; return 1; }
	for ((i = 0; i < 100; i++)); do
		after=$(nvmet_ctrls | cut -d' ' -f1)
		for c in $after; do
			grep -qx "$c" <<<"$before" && continue
			echo "$c"
			return 0
		done
		sleep 0.1
	done
	nvmet_log "connected, but no new controller of $nvmet_nqn appeared"
	return 1
}

# nvmet_mkport ID SVC: a port of $nvmet_transport, linked to the subsystem.
nvmet_mkport() {
	local p=$NVMET_CFS/ports/$1
	[[ -e $p ]] && { nvmet_log "port $1 exists already"; return 1; }
	mkdir "$p" || return 1
	nvmet_ports+="${nvmet_ports:+ }$1"
	nvmet_save
	echo "$nvmet_transport" >"$p/addr_trtype" || return 1
	if [[ $nvmet_transport == tcp ]]; then
		echo ipv4 >"$p/addr_adrfam" && echo 127.0.0.1 >"$p/addr_traddr" &&
			echo "$2" >"$p/addr_trsvcid" || return 1
	fi
	ln -s "$NVMET_CFS/subsystems/$nvmet_nqn" "$p/subsystems/$nvmet_nqn" ||
		{ nvmet_log "cannot enable port $1"; return 1; }
}

nvmet_add_port() {
	nvmet_load
	local id='' svc=''
	while (($#)); do
		case $1 in
		--port-id) id=${2:?--port-id needs a value} ;;
		--trsvcid) svc=${2:?--trsvcid needs a value} ;;
		*) nvmet_log "add-port: unknown option $1"; return 2 ;;
		esac
		shift 2
	done
	[[ -n $id && ( -n $svc || $nvmet_transport == loop ) ]] ||
		{ nvmet_log "add-port: --port-id and --trsvcid are required"; return 2; }
	nvmet_mkport "$id" "$svc"
}

nvmet_setup() {
	nvmet_load
	rm -f "$KVT_NVMET_STATE"
	nvmet_load
	nvmet_opts "$@" || return
	nvmet_modules || return
	local s=$NVMET_CFS/subsystems/$nvmet_nqn p=$NVMET_CFS/ports/$nvmet_port i dev
	if [[ -z $nvmet_backing ]]; then
		nvmet_log "setup: --backing DEV|FILE is required"
		return 2
	fi
	if [[ ! -e $nvmet_backing ]]; then
		truncate -s "${nvmet_file_mb}M" "$nvmet_backing" || return 1
	fi
	if [[ -e $s || -e $p ]]; then
		nvmet_log "setup: $s or $p exists already (teardown first)"
		return 1
	fi
	nvmet_save
	mkdir "$s" || return 1
	echo 1 >"$s/attr_allow_any_host" || return 1
	# A model name that says what this is (kvtierctl attach prints it).
	[[ -e $s/attr_model ]] && echo "kvtier nvmet ($nvmet_transport)" >"$s/attr_model"
	mkdir "$s/namespaces/1" || return 1
	echo "$nvmet_backing" >"$s/namespaces/1/device_path" || return 1
	echo 1 >"$s/namespaces/1/enable" || { nvmet_log "cannot enable namespace on $nvmet_backing"; return 1; }
	nvmet_mkport "$nvmet_port" "$nvmet_svc" || return 1
	nvmet_connect >/dev/null || return 1
	for ((i = 0; i < 100; i++)); do
		dev=$(nvmet_dev) && { echo "$dev"; return 0; }
		sleep 0.1
	done
	nvmet_log "connected, but no namespace block device of $nvmet_nqn appeared"
	return 1
}

# nvmet_port_id [--port-id N]: N, else the first port.
nvmet_port_id() {
	if [[ ${1:-} == --port-id ]]; then
		echo "${2:?--port-id needs a value}"
	else
		echo "$nvmet_port"
	fi
}

nvmet_port_down() {
	nvmet_load
	rm "$NVMET_CFS/ports/$(nvmet_port_id "$@")/subsystems/$nvmet_nqn"
}

nvmet_port_up() {
	nvmet_load
	ln -s "$NVMET_CFS/subsystems/$nvmet_nqn" \
		"$NVMET_CFS/ports/$(nvmet_port_id "$@")/subsystems/$nvmet_nqn"
}

# Teardown goes on past errors, so that whatever exists is removed.
nvmet_teardown() {
	nvmet_load
	local s=$NVMET_CFS/subsystems/$nvmet_nqn p rc=0 c i id
	if [[ -n $(nvmet_ctrls) ]]; then
		nvme disconnect -n "$nvmet_nqn" >/dev/null 2>&1 || true
		for ((i = 0; i < 100; i++)); do
			[[ -z $(nvmet_ctrls) ]] && break
			sleep 0.1
		done
		# A controller still reconnecting or deleting: by name.
		for c in $(nvmet_ctrls | cut -d' ' -f1); do
			echo 1 >"/sys/class/nvme/$c/delete_controller" 2>/dev/null || true
		done
		[[ -z $(nvmet_ctrls) ]] || { nvmet_log "teardown: controllers left: $(nvmet_ctrls | tr '\n' ' ')"; rc=1; }
	fi
	for id in $nvmet_ports; do
		p=$NVMET_CFS/ports/$id
		if [[ -L $p/subsystems/$nvmet_nqn ]]; then
			rm "$p/subsystems/$nvmet_nqn" || rc=1
		fi
		if [[ -d $p ]]; then
			rmdir "$p" || rc=1
		fi
	done
	if [[ -d $s/namespaces/1 ]]; then
		echo 0 >"$s/namespaces/1/enable" 2>/dev/null
		rmdir "$s/namespaces/1" || rc=1
	fi
	if [[ -d $s ]]; then
		rmdir "$s" || rc=1
	fi
	((rc)) || rm -f "$KVT_NVMET_STATE"
	return $rc
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -uo pipefail
	cmd=${1:-}
	shift || true
	case $cmd in
	setup) nvmet_setup "$@" ;;
	connect) nvmet_connect "$@" ;;
	add-port) nvmet_add_port "$@" ;;
	port-down) nvmet_port_down "$@" ;;
	port-up) nvmet_port_up "$@" ;;
	dev) nvmet_dev ;;
	ctrls) nvmet_ctrls ;;
	teardown) nvmet_teardown ;;
	check) nvmet_check "$@" ;;
	*)
		sed -n '2,/^$/{/^#/s/^# \{0,1\}//p}' "$0" >&2
		exit 2
		;;
	esac
fi
