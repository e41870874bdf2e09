# onramp-lib.sh - shared shell functions of onramp's admin tools.
# Sourced by onrampctl and the libexec helpers; never run directly.
# shellcheck shell=bash

ONRAMP_PROG=${ONRAMP_PROG:-${0##*/}}
# Begins every node reason onramp writes; equals ONRAMP_REASON_PREFIX of
# onramp.h (test_admin checks). A reason without it is an admin's.
ONRAMP_REASON_PREFIX="onramp:"

onramp_die() {
	echo "$ONRAMP_PROG: error: $*" >&2
	exit "${ONRAMP_DIE_RC:-1}"
}
onramp_log() { echo "$ONRAMP_PROG: $*" >&2; }

# Locate one of onramp's programs: $ONRAMP_LIBEXEC, beside this script, the
# build tree, then the installed locations.
onramp_tool() {
	local name=$1 here d
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	for d in ${ONRAMP_LIBEXEC:+"$ONRAMP_LIBEXEC"} "$here" "$here/.." "$here/../tools" \
		"$here/../../node_features" "$here/../../contrib/tools" \
		/usr/libexec/onramp /usr/sbin /usr/local/sbin /usr/local/libexec/onramp; do
		if [ -x "$d/$name" ] && [ -f "$d/$name" ]; then
			echo "$(cd "$d" && pwd)/$name"
			return 0
		fi
	done
	onramp_die "cannot find $name (set ONRAMP_LIBEXEC)"
}

# onramp_require_admin WHAT: exit 2 unless the caller is root or SlurmUser
# (libonramp's one admin check, SlurmUser from slurmctld's configuration).
onramp_require_admin() {
	"$(onramp_tool onramp-config)" --require-admin "$1" || exit 2
}

# onramp_conf KEY [NODE]: the effective onramp.conf value (libonramp parses).
onramp_conf() {
	local cfg
	cfg=$(onramp_tool onramp-config) || return 1
	if [ -n "${2:-}" ]; then
		"$cfg" --node "$2" "$1"
	else
		"$cfg" "$1"
	fi
}

# The admission reservation of one node; fails (no "_NODE" name) when
# onramp.conf cannot be read.
onramp_resv() {
	local base
	base=$(onramp_conf AdmissionReservation) && [ -n "$base" ] || return 1
	echo "${base}_$1"
}

# onramp-admit's controller-side subcommands reach Slurm through libslurm
# (onramp-admit(8)): nothing here parses scontrol/sinfo/squeue text.
onramp_admit() { "$(onramp_tool onramp-admit)" "$@"; }

# SlurmUser of the cluster (slurmctld runs as it; triggers must be set by it).
onramp_slurm_user() {
	[ -n "${ONRAMP_SLURM_USER:-}" ] || ONRAMP_SLURM_USER=$(onramp_admit slurm-user 2>/dev/null)
	echo "${ONRAMP_SLURM_USER:-root}"
}

# onramp_as_slurm_user CMD...: run CMD as SlurmUser (root switches to it;
# anyone else runs it as is and Slurm judges).
onramp_as_slurm_user() {
	local su
	su=$(onramp_slurm_user)
	if [ "$(id -u)" -eq 0 ] && [ "$su" != root ]; then
		runuser -u "$su" -- "$@"
	else
		"$@"
	fi
}

# onramp_state_dir DIR...: create onramp's shared state directories so that
# root and SlurmUser (the triggers, admission jobs) can both write them: run
# as root, they belong to SlurmUser. SlurmUser owns StateDir and
# NodeStateDir in an unprivileged setup, so it could put a symlink (or, with
# fs.protected_hardlinks=0, a hard link to a root-owned file) where a DIR
# goes, and root would give the target away: root's work is done by
# onramp-admit state-dir, which refuses a symlink or a non-directory, naming
# it, and changes the owner through the descriptor of the directory it
# opened without following a link, never by name.
onramp_state_dir() {
	local d
	if [ "$(id -u)" -eq 0 ]; then
		onramp_admit state-dir --owner "$(onramp_slurm_user)" -- "$@"
		return
	fi
	for d in "$@"; do
		if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then
			echo "onramp: refusing $d: a symlink or not a directory" >&2
			return 1
		fi
		[ -d "$d" ] || mkdir -p -- "$d" || return 1
	done
}

# The sbatch options of admission and pair-test jobs, one per line:
# --exclusive (AdmissionExclusive) and --gres=... (AdmissionGres), so the
# checks see the node's GPUs (ConstrainDevices=yes) and share them with no
# user's job.
onramp_admission_job_args() {
	local excl gres
	excl=$(onramp_conf AdmissionExclusive) || return 1
	gres=$(onramp_conf AdmissionGres) || return 1
	case ${excl,,} in yes | true | 1) echo --exclusive ;; esac
	[ -z "$gres" ] || echo "--gres=$gres"
}

# The nodes of a hostlist (every node without one) as a JSON array of
# {node, state, drain, reserved, reason, features_active, admitted,
# reservation} (onramp-admit nodes).
onramp_nodes_json() { onramp_admit nodes ${1:+"$1"}; }

# The drain/down reason of NODE, "" when none.
onramp_node_reason() { onramp_nodes_json "$1" 2>/dev/null | jq -r '.[0].reason // empty'; }

# Does the node carry a drain/down reason that onramp did not write?
onramp_reason_foreign() {
	local r
	r=$(onramp_node_reason "$1")
	[ -n "$r" ] && [ "${r#"$ONRAMP_REASON_PREFIX"}" = "$r" ]
}

# Drain NODE with an onramp reason, unless an admin's reason is there.
onramp_drain() { onramp_admit node drain "$1" "$2"; }
# Resume NODE if it is drained or down with a reason onramp wrote.
onramp_resume() { onramp_admit node resume "$1"; }
# Put NODE in its admission reservation (MAINT, root and SlurmUser only).
# Idempotent.
onramp_reserve() { onramp_admit node reserve "$1"; }
# Release NODE's admission reservation.
onramp_unreserve() { onramp_admit node unreserve "$1"; }

# The "slurmd -N NODE" ancestor of this process, if any: prints "PID NODE CONF".
# CONF is slurmd's -f, else the SLURM_CONF it was started with: a configless
# slurmd has no -f, and from 24.11 its RebootProgram gets no SLURM_CONF; one
# that SIGHUP re-executed (23.11+) was started with its conf-cache's.
onramp_slurmd_ancestor() {
	local pid=$$ cmd node conf
	while [ "$pid" -gt 1 ] 2>/dev/null; do
		cmd=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || break
		if [ "$(basename "$(echo "$cmd" | head -1)")" = slurmd ]; then
			node=$(echo "$cmd" | sed -n '/^-N$/{n;p;}' | head -1)
			conf=$(echo "$cmd" | sed -n '/^-f$/{n;p;}' | head -1)
			[ -n "$conf" ] || conf=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^SLURM_CONF=//p' | head -1)
			echo "$pid ${node:-$(hostname -s)} ${conf:-}"
			return 0
		fi
		pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || break
	done
	return 1
}
