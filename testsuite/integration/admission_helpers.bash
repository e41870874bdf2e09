# shellcheck shell=bash
# Helpers for the admission-gate tests (load after helpers).

ONRAMPCTL=$ONRAMP_REPO/contrib/onrampctl
ONRAMP_PROFILES=$ONRAMP_CLUSTER_DIR/sim-profiles
ONRAMP_FEATURE=onramp_ok

# set_profile NODE NAME: give NODE the simulated hardware etc/sim-profiles/NAME.json.
set_profile() {
	cp "$ONRAMP_REPO/etc/sim-profiles/$2.json" "$ONRAMP_PROFILES/$1.json"
}
# slow_profile NODE SECONDS [NAME]: profile NAME (default healthy) whose
# memory-bandwidth check takes SECONDS (its timeout is CheckTimeout, 300 s).
slow_profile() {
	sed "0,/{/s//{\n  \"delay_s\": {\"mem_bw\": $2},/" \
		"$ONRAMP_REPO/etc/sim-profiles/${3:-healthy}.json" >"$ONRAMP_PROFILES/$1.json"
}
clear_profile() {
	rm -f "$ONRAMP_PROFILES/$1.json"
}

node_admitted() {
	[[ ,$(node_field "$1" ActiveFeatures), == *,$ONRAMP_FEATURE,* ]]
}
node_reason() {
	scontrol show node -o "$1" | sed -n 's/.* Reason=\(.*\) \[[^]]*\].*/\1/p'
}
resv_exists() {
	scontrol -o show reservation "onramp_admission_$1" >/dev/null 2>&1
}
# record_field NODE FIELD: a top-level string field of the node's admission record.
record_field() {
	sed -n "s/^  \"$2\": \"\(.*\)\",\{0,1\}$/\1/p" "$ONRAMP_CLUSTER_DIR/nodes/$1/onramp/admission.json" | head -1
}
# admitted_idle NODE: admitted, out of its reservation, plain IDLE.
admitted_idle() {
	node_admitted "$1" && ! resv_exists "$1" && [[ $(node_state "$1") == IDLE ]]
}
# resumed_idle NODE: NODE resumed if it is drained, then admitted and idle;
# for wait_for where a slurmctld re-exec (scontrol reconfigure, from 23.11)
# can drop or restore a drain set just before it: the resume may then be
# refused as "Invalid node state", and the next try sees the state settled.
resumed_idle() {
	if [[ $(node_state "$1") == *DRAIN* ]]; then
		scontrol update nodename="$1" state=resume 2>/dev/null || true
	fi
	admitted_idle "$1"
}
# admitted_released NODE: admitted and out of its reservation (it may be
# running jobs already).
admitted_released() {
	node_admitted "$1" && ! resv_exists "$1"
}
# drained_with NODE REGEX: drained (or draining) with a reason matching REGEX.
drained_with() {
	[[ $(node_state "$1") == *DRAIN* ]] && ! resv_exists "$1" && [[ $(node_reason "$1") =~ $2 ]]
}
reboot_nodes() {
	scontrol reboot ASAP nextstate=RESUME reason=onramp-test "$1"
}
# reboot_into_admission NODE SECONDS: reboot the admitted, idle NODE with a
# healthy profile whose check takes SECONDS; returns once it is back from
# the reboot in its admission reservation, not admitted.
reboot_into_admission() {
	local node=$1 boot_before
	wait_for 60 "$node idle and admitted" admitted_idle "$node" || return 1
	boot_before=$(node_boot_id "$node")
	slow_profile "$node" "$2"
	reboot_nodes "$node"
	wait_for 60 "$node back from reboot in its reservation" \
		eval "[[ \$(node_boot_id $node) != $boot_before ]] && resv_exists $node && [[ \$(node_state $node) != *REBOOT* ]]" || return 1
	! node_admitted "$node"
}
# admitted_again NODE: admitted for its new boot, idle, its profile cleared.
admitted_again() {
	wait_for 90 "$1 admitted" admitted_idle "$1" || return 1
	[ "$(record_field "$1" status)" = PASS ] || return 1
	[ "$(record_field "$1" boot_id)" = "$(node_boot_id "$1")" ] || return 1
	clear_profile "$1"
}
# restore_nodes HOSTLIST: healthy profiles, admitted and idle again.
restore_nodes() {
	local n
	for n in $(expand_hostlist "$1"); do
		clear_profile "$n"
	done
	# A triggered admission still confirming slurmctld's save of its drains
	# holds the nodes' locks (at most 60 s): admit again once it let go.
	local out i
	for i in $(seq 45); do
		out=$("$ONRAMPCTL" admit "$1" 2>&1) || true
		echo "$out" >&2
		[[ $out == *"an admission is already running"* ]] || break
		sleep 2
	done
	for n in $(expand_hostlist "$1"); do
		wait_for 60 "$n admitted and idle" admitted_idle "$n" || return 1
	done
}

# fenced_then_admitted NODE CODE: NODE, fenced as it registered (drained
# onramp:CODE, or already back in its admission reservation), is admitted
# again by the drained trigger while a user's job aimed at it waits; the
# job then runs there once: never requeued, never caught by the prolog
# backstop. Prints the job's id.
fenced_then_admitted() {
	local node=$1 code=$2 job
	wait_for 60 "$node fenced" eval "[[ \$(node_reason $node) == onramp:$code:* ]] || resv_exists $node" || return 1
	! node_admitted "$node" || return 1
	# shellcheck disable=SC2016 # expanded by the job's shell
	job=$(as_user sbatch --parsable -w "$node" -o /dev/null --wrap 'echo ran on $SLURMD_NODENAME') || return 1
	wait_for 120 "$node admitted again" admitted_idle "$node" || return 1
	submit_wait "$job" COMPLETED 180 >&2 || return 1
	[ "$(job_field "$job" Restarts)" -eq 0 ] || return 1
	! grep -q "PROLOG_NOT_ADMITTED.*$node\|$node.*PROLOG_NOT_ADMITTED" "$ONRAMP_CTLD_LOG" || return 1
	echo "$job"
}
