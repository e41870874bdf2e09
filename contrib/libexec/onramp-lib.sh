# onramp-lib.sh - shared shell functions of onramp's admin tools.
# Sourced by onrampctl and the libexec helpers; never run directly.
# shellcheck shell=bash

ONRAMP_PROG=${ONRAMP_PROG:-${0##*/}}
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

# The admission reservation of one node.
onramp_resv() { echo "$(onramp_conf AdmissionReservation)_$1"; }

# One field of "scontrol -o show node NODE" (e.g. State, Reason, ActiveFeatures).
onramp_node_field() {
	scontrol -o show node "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
# Reason may contain blanks: everything after "Reason=" up to " [user@time]".
onramp_node_reason() {
	scontrol -o show node "$1" 2>/dev/null | sed -n 's/.* Reason=\(.*\) \[[^]]*\].*/\1/p'
}

# Does the node carry a drain/down reason that onramp did not write?
onramp_reason_foreign() {
	local r
	r=$(onramp_node_reason "$1")
	[ -n "$r" ] && [ "${r#"$ONRAMP_REASON_PREFIX"}" = "$r" ]
}

# Drain NODE with an onramp reason, unless an admin's reason is there.
onramp_drain() {
	local node=$1 reason=$2
	if onramp_reason_foreign "$node"; then
		onramp_log "node $node: keeping the admin's reason '$(onramp_node_reason "$node")'; not draining with '$reason'"
		return 0
	fi
	scontrol update nodename="$node" state=drain reason="$reason"
}

# Resume NODE only if the reason on it is onramp's.
onramp_resume() {
	local node=$1 r state
	r=$(onramp_node_reason "$node")
	state=$(onramp_node_field "$node" State)
	case "$state" in
	*DRAIN* | *DOWN* | *FAIL*) ;;
	*) return 0 ;;
	esac
	if [ "${r#"$ONRAMP_REASON_PREFIX"}" = "$r" ]; then
		onramp_log "node $node: reason '$r' is not onramp's; leaving it drained"
		return 0
	fi
	scontrol update nodename="$node" state=resume
}

# Put NODE in its admission reservation (MAINT, admins only). Idempotent.
onramp_reserve() {
	local node=$1 resv out
	resv=$(onramp_resv "$node")
	if scontrol -o show reservation "$resv" >/dev/null 2>&1; then
		return 0
	fi
	out=$(scontrol create reservation reservationname="$resv" nodes="$node" starttime=now \
		duration=infinite users=root flags=maint,ignore_jobs 2>&1) || {
		scontrol -o show reservation "$resv" >/dev/null 2>&1 && return 0
		onramp_log "node $node: cannot create reservation $resv: $out"
		return 1
	}
}

# Release NODE's admission reservation.
onramp_unreserve() {
	local resv
	resv=$(onramp_resv "$1")
	scontrol -o show reservation "$resv" >/dev/null 2>&1 || return 0
	scontrol delete reservationname="$resv"
}

# The "slurmd -N NODE" ancestor of this process, if any: prints "PID NODE CONF".
onramp_slurmd_ancestor() {
	local pid=$$ cmd node conf
	while [ "$pid" -gt 1 ] 2>/dev/null; do
		cmd=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || break
		if [ "$(basename "$(echo "$cmd" | head -1)")" = slurmd ]; then
			node=$(echo "$cmd" | sed -n '/^-N$/{n;p;}' | head -1)
			conf=$(echo "$cmd" | sed -n '/^-f$/{n;p;}' | head -1)
			echo "$pid ${node:-$(hostname -s)} ${conf:-}"
			return 0
		fi
		pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || break
	done
	return 1
}
