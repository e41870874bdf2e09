# shellcheck shell=bash
# Shared helpers for the onramp integration tests (bats).
#
# The tests drive a cluster started beforehand by the runner with
#   testsuite/cluster/onramp-cluster start [--dir DIR]
# (DIR from $ONRAMP_CLUSTER_DIR, default /tmp/onramp-cluster). They must not
# assume a fresh cluster: other tests may have run jobs and rebooted nodes, so
# each test tracks the jobs it submitted itself.
#
# Load with "load helpers" from a .bats file in this directory.

ONRAMP_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ONRAMP_CLUSTER_TOOL=$ONRAMP_REPO/testsuite/cluster/onramp-cluster
ONRAMP_POLL_INTERVAL=${ONRAMP_POLL_INTERVAL:-0.5}
# Every wait_for and submit_wait timeout is multiplied by this (an integer):
# testsuite/run sets 2 when other versions' suites run beside this one on
# the same cores. A timeout only bounds how long a test waits for what must
# happen; no test measures speed.
ONRAMP_WAIT_SCALE=${ONRAMP_WAIT_SCALE:-1}

# SLURM_CONF, ONRAMP_CLUSTER_DIR, ONRAMP_CLUSTER_NODES, ONRAMP_CLUSTER_RACKS,
# ONRAMP_CLUSTER_USER, ONRAMP_MUNGE_SOCKET.
eval "$("$ONRAMP_CLUSTER_TOOL" env)"
export SLURM_CONF ONRAMP_CLUSTER_DIR ONRAMP_CLUSTER_NODES ONRAMP_CLUSTER_RACKS ONRAMP_CLUSTER_USER

# shellcheck disable=SC2034 # used by the .bats files
ONRAMP_JOBS_DIR=$ONRAMP_CLUSTER_DIR/jobs
# shellcheck disable=SC2034
ONRAMP_CTLD_LOG=$ONRAMP_CLUSTER_DIR/log/slurmctld.log
# shellcheck disable=SC2034
ONRAMP_REBOOT_LOG=$ONRAMP_CLUSTER_DIR/log/reboot.log

# cluster_param KEY: a value from DIR/params (NODES, RACKS, PLUGIN_DIR,
# JOB_SUBMIT, EXTRA_CONF, CTLD_PORT, SLURMD_PORT_BASE).
cluster_param() {
	sed -n "s/^$1=//p" "$ONRAMP_CLUSTER_DIR/params" 2>/dev/null | tail -n 1
}

# reexecs: from 23.11 "scontrol reconfigure" re-executes slurmctld: a new
# process (new pid) takes over when it starts, and the running one resumes
# when the new one fails to start (README, "Slurm versions").
reexecs() {
	local v
	v=$(scontrol --version | awk '{split($2, a, "."); printf "%d%02d", a[1], a[2]}')
	((v >= 2311))
}

# private_cluster NAME: a new directory for a second cluster a test starts
# (mode 755: munged wants every directory above its socket searchable),
# listed in $ONRAMP_CLUSTER_DIR.private, whose clusters testsuite/run stops
# when it ends or is interrupted before the test's own stop ran.
private_cluster() {
	local dir
	dir=$(mktemp -d "/tmp/onramp-$1.XXXXXX") || return 1
	chmod 755 "$dir"
	echo "$dir" >>"$ONRAMP_CLUSTER_DIR.private"
	echo "$dir"
}

# ctld_is_up: slurmctld answers scontrol ping.
ctld_is_up() {
	scontrol ping 2>/dev/null | grep -q 'is UP'
}

# ctld_pid: slurmctld's pid, the first line of its pid file. From 23.11 a
# slurmctld re-executed by "scontrol reconfigure" rewrites that file without
# truncating it (update_pidfile in Slurm's src/common/daemonize.c): a pid
# shorter than the one before leaves the end of the old one on a second
# line (seen on 26.05.3 after the pids wrapped: "908", then "5").
ctld_pid() {
	local pid
	read -r pid <"$ONRAMP_CLUSTER_DIR/var/run/slurmctld.pid" || return 1
	echo "$pid"
}

# onramp_topology: the cluster was started with --topology-plugin
# topology/onramp: topology/onramp itself before Slurm 24.05, from 24.05
# stock topology/tree on the topology.conf onramp manages.
onramp_topology() {
	[[ $(cluster_param TOPOLOGY) == topology/onramp ]]
}

# topology_from_file: Slurm 24.05+'s layout: a window reaches the switch
# table only through the file "onramp-rewire sync-topology" installs (what
# onrampctl rewire start/finish runs), not through the plan at reconfigure.
topology_from_file() {
	onramp_topology && [[ $(scontrol show config | sed -n 's/^TopologyPlugin *= *//p') == topology/tree ]]
}

# require_cluster: fail (not skip) when the cluster is not running; call from
# setup() or setup_file().
require_cluster() {
	if [[ ! -f $ONRAMP_CLUSTER_DIR/params ]]; then
		echo "no test cluster in $ONRAMP_CLUSTER_DIR; start one with: $ONRAMP_CLUSTER_TOOL start" >&2
		return 1
	fi
	if ! timeout 15 scontrol ping 2>/dev/null | grep -q 'is UP'; then
		echo "slurmctld of the test cluster in $ONRAMP_CLUSTER_DIR does not answer; see $ONRAMP_CLUSTER_TOOL status" >&2
		return 1
	fi
}

# free_port_base N: the first of N consecutive TCP ports on which nothing
# listens now: ONRAMP_TEST_PORT_BASE (a range given to this run) when it is
# free, else one chosen at random above it (default 20000), so that clusters
# and exporters of other users of the machine are avoided.
free_port_base() {
	local n=$1 base try p busy listening
	listening=$(ss -Htan 2>/dev/null | awk '{ sub(/.*:/, "", $4); print $4 }' | sort -un)
	for try in $(seq 0 200); do
		base=${ONRAMP_TEST_PORT_BASE:-20000}
		((try == 0)) || base=$((base + 100 + RANDOM % 20000))
		((base + n < 65535)) || continue
		busy=false
		for ((p = base; p < base + n; p++)); do
			if grep -qx "$p" <<<"$listening"; then
				busy=true
				break
			fi
		done
		$busy || {
			echo "$base"
			return 0
		}
	done
	echo "free_port_base: no $n free consecutive ports found" >&2
	return 1
}

# cluster_pgrep PATTERN: the pids pgrep -f PATTERN finds, less those of
# another test cluster (their SLURM_CONF names another slurm.conf: other
# versions' suites may run on this machine at the same time); fails when
# none is left, like pgrep. A process without SLURM_CONF counts as this
# cluster's.
cluster_pgrep() {
	local pid conf rc=1
	for pid in $(pgrep -f "$1"); do
		conf=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^SLURM_CONF=//p')
		[[ -n $conf && $conf != "$SLURM_CONF" ]] && continue
		echo "$pid"
		rc=0
	done
	return $rc
}

# wait_for TIMEOUT MESSAGE CMD...: run CMD every $ONRAMP_POLL_INTERVAL seconds
# until it succeeds; after TIMEOUT seconds print "timed out ... MESSAGE" and
# fail.
wait_for() {
	local timeout=$(($1 * ONRAMP_WAIT_SCALE)) message=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		if ((SECONDS >= deadline)); then
			echo "timed out after ${timeout}s waiting for $message" >&2
			return 1
		fi
		sleep "$ONRAMP_POLL_INTERVAL"
	done
}

# as_user CMD...: run CMD as the unprivileged test user, in the jobs
# directory (writable by it), with the cluster's SLURM_CONF.
as_user() {
	(cd "$ONRAMP_JOBS_DIR" && runuser -u "$ONRAMP_CLUSTER_USER" -- env SLURM_CONF="$SLURM_CONF" "$@")
}

# submit ARGS...: sbatch --parsable as the current user in the jobs
# directory; prints the job id.
submit() {
	local out
	out=$(cd "$ONRAMP_JOBS_DIR" && sbatch --parsable "$@") || return 1
	echo "${out%%;*}"
}

# job_field JOBID FIELD: one field of "scontrol show job" (e.g. JobState).
job_field() {
	scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

job_state() {
	job_field "$1" JobState
}

# submit_wait JOBID STATE [TIMEOUT]: wait until the job is in STATE (e.g.
# RUNNING, COMPLETED); fails at once if it ends in another state.
submit_wait() {
	local job=$1 want=$2 timeout=$((${3:-60} * ONRAMP_WAIT_SCALE)) state deadline
	deadline=$((SECONDS + timeout))
	while :; do
		state=$(job_state "$job")
		[[ $state == "$want" ]] && return 0
		case $state in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED | BOOT_FAIL | DEADLINE | OUT_OF_MEMORY)
			echo "job $job ended in state $state, expected $want:" >&2
			scontrol show job "$job" >&2 || true
			return 1
			;;
		esac
		if ((SECONDS >= deadline)); then
			echo "timed out after ${timeout}s waiting for job $job to be $want (now '${state:-unknown}'):" >&2
			scontrol show job "$job" >&2 || true
			return 1
		fi
		sleep "$ONRAMP_POLL_INTERVAL"
	done
}

# node_field NODE FIELD: one field of "scontrol show node".
node_field() {
	scontrol show node -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# node_state NODE: e.g. IDLE, MIXED, IDLE+DRAIN+REBOOT_REQUESTED, DOWN+...
node_state() {
	node_field "$1" State
}

node_is_idle() {
	[[ $(node_state "$1") == IDLE ]]
}

# node_boot_epoch NODE: the node's BootTime in seconds since the epoch.
node_boot_epoch() {
	date -d "$(node_field "$1" BootTime)" +%s
}

# node_boot_id NODE: the emulated boot identity (changes on every emulated
# reboot or crash).
node_boot_id() {
	cat "$ONRAMP_CLUSTER_DIR/nodes/$1/boot_id"
}

# idle_node_count: nodes of the batch partition that are plain idle.
idle_node_count() {
	sinfo -h -N -p batch -o '%N %t' | awk '$2 == "idle" {n++} END {print n + 0}'
}

all_nodes_idle() {
	[[ $(idle_node_count) == "$ONRAMP_CLUSTER_NODES" ]]
}

# expand_hostlist node[1-3] -> one name per line.
expand_hostlist() {
	scontrol show hostnames "$1"
}

# log_offset FILE: current size, to look only at lines written afterwards
# with log_since.
log_offset() {
	stat -c %s "$1" 2>/dev/null || echo 0
}

# log_since FILE OFFSET: the part of FILE written after OFFSET.
log_since() {
	tail -c +$(($2 + 1)) "$1" 2>/dev/null
}

# log_since_has FILE OFFSET PATTERN: grep -E PATTERN in what was written
# after OFFSET.
log_since_has() {
	# Bytes, not characters: a log line quoting a binary file must not make
	# grep skip the file as binary or '.' stop at an invalid UTF-8 byte.
	log_since "$1" "$2" | LC_ALL=C grep -aqE -- "$3"
}

# put_back SAVED FILE: put a saved copy of FILE back in one rename, so that a
# prolog or epilog reading FILE meanwhile sees the old or the saved file,
# never none (they drain a node that has no onramp.conf: a test's
# "rm FILE; cp SAVED FILE" while jobs ended drained them). What a test left
# in FILE's place that a rename cannot replace (a directory) goes first.
put_back() {
	local tmp
	tmp=$(dirname "$2")/.$(basename "$2").put-back.$$
	cp -p "$1" "$tmp" || return 1
	if [[ -d $2 && ! -L $2 ]]; then
		rm -rf "$2"
	fi
	mv -fT "$tmp" "$2"
}

# no_jobs_left: the cluster has no job left, completing ones included
# (their epilogs still run).
no_jobs_left() {
	[[ -z $(squeue -h -o %i 2>/dev/null) ]]
}

# onramp_conf_save / onramp_conf_restore: keep the cluster's onramp.conf
# while a bats file changes it (setup_file / teardown_file), then put it
# back and reconfigure.
onramp_conf_save() {
	cp -p "$ONRAMP_CLUSTER_DIR/etc/onramp.conf" "$BATS_FILE_TMPDIR/onramp.conf.orig"
}
onramp_conf_restore() {
	if [[ -f $BATS_FILE_TMPDIR/onramp.conf.orig ]]; then
		put_back "$BATS_FILE_TMPDIR/onramp.conf.orig" "$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
		scontrol reconfigure >/dev/null 2>&1 || true
		onramp_conf_ship || true
	fi
}
# onramp_conf_ship: on the site profile (configless nodes, which read
# onramp's settings from plugstack.conf), hand a changed onramp.conf to the
# nodes as a site does (onrampctl ship-conf) and wait until every slurmd's
# conf cache has it; nothing elsewhere (the nodes read the file).
onramp_conf_ship() {
	[[ $(cluster_param PROFILE) == site ]] || return 0
	"$ONRAMP_REPO/contrib/onrampctl" ship-conf >/dev/null || return 1
	local n
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		wait_for 30 "$n's conf cache" cmp -s "$ONRAMP_CLUSTER_DIR/etc/plugstack.conf" \
			"$ONRAMP_CLUSTER_DIR/var/spool/slurmd-$n/conf-cache/plugstack.conf" || return 1
	done
}

# resume_migrate_drains: resume every node onrampctl migrate drained
# (reason onramp:MIGRATE:...), so a failed test leaves none drained.
resume_migrate_drains() {
	local n
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		if [[ $(node_field "$n" Reason) == onramp:MIGRATE:* ]]; then
			scontrol update nodename="$n" state=resume 2>/dev/null || true
		fi
	done
}
