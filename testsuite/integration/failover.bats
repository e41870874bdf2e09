#!/usr/bin/env bats
# onramp-cluster: --ha yes --nodes 8 --racks 4 --topology-plugin topology/onramp
# Every onramp flow across a controller failover and a failback: a primary
# and a backup slurmctld (onramp-cluster --ha yes: one StateSaveLocation,
# SlurmctldTimeout 6 s); "onramp-cluster failover [--kill]" stops (kills)
# the primary and waits until the backup is in control, "failback" starts
# it again and waits until it has taken control back. rack1..rack4 are
# node[1-2], node[3-4], node[5-6], node[7-8] under leaf1..leaf4.
#
# Each test checks, on the controller in control before the failover, on
# the backup after it and on the primary after the failback: onramp's
# policy is the same (policy_view: the switch table, the rewiring windows,
# onramp's triggers, job_submit/onramp's acknowledged configuration and what
# it does to two probe jobs); no job is lost or duplicated; every node
# admitted before keeps onramp_ok; a node drained or reserved has a journal
# entry saying why; and at the end the flow is done, both controllers
# answer, every node is admitted and idle, nothing drained or reserved.

load helpers
load admission_helpers

ETC=$ONRAMP_CLUSTER_DIR/etc
PLAN=$ETC/rewire-plan.json
REWIRE=$ONRAMP_REPO/contrib/tools/onramp-rewire
TRAINER=$ONRAMP_REPO/contrib/examples/onramp-trainer
MIGRATE_DB=$ONRAMP_CLUSTER_DIR/onramp/migrate.db

# sync_topology: Slurm 24.05+: the topology.conf stock topology/tree reads
# follows the plan (what onrampctl rewire start/finish do).
sync_topology() {
	! topology_from_file || "$REWIRE" sync-topology
}

# A backup handing control back saves its state first; on a loaded machine
# (the CI run's three lanes) that took longer than onramp-cluster's default
# 60 s for both controllers to answer again.
export ONRAMP_FAILOVER_TIMEOUT=${ONRAMP_FAILOVER_TIMEOUT:-150}

setup_file() {
	[[ $(cluster_param HA) == yes ]] || return 0
	require_cluster
	cp -p "$ETC/onramp.conf" "$BATS_FILE_TMPDIR/onramp.conf.orig"
	# Windows come from the plan; batch jobs opt in to migration.
	echo "RewirePlan=$PLAN" >>"$ETC/onramp.conf"
	echo "MigratePartitions=batch" >>"$ETC/onramp.conf"
	rm -f "$PLAN"
	sync_topology
	local off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	scontrol reconfigure
	wait_for 30 "job_submit/onramp to reload onramp.conf" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded"
}

teardown_file() {
	[[ -f $BATS_FILE_TMPDIR/onramp.conf.orig ]] || return 0
	put_back "$BATS_FILE_TMPDIR/onramp.conf.orig" "$ETC/onramp.conf"
	rm -f "$PLAN"
	sync_topology || true
	scontrol reconfigure >/dev/null 2>&1 || true
}

setup() {
	[[ $(cluster_param HA) == yes ]] || skip "cluster not started with --ha yes"
	onramp_topology || skip "cluster not started with --topology-plugin topology/onramp"
	require_cluster
	JOBS=()
}

teardown() {
	# A test that failed half-way: the primary back in control, its jobs
	# gone, nodes it left drained or reserved admitted again, onramp's
	# triggers in place, no window.
	"$ONRAMP_CLUSTER_TOOL" failback >&2 || true
	local j n
	[[ -f $BATS_TEST_TMPDIR/flow.pid ]] && kill -9 -- "-$(cat "$BATS_TEST_TMPDIR/flow.pid")" 2>/dev/null
	for j in "${JOBS[@]}"; do scancel "$j" 2>/dev/null || true; done
	"$ONRAMPCTL" install-trigger >/dev/null 2>&1 || true
	if [[ -f $PLAN ]]; then
		# Finished first: a plan removed while its window is active is
		# refused by job_submit/onramp (it keeps the window).
		"$ONRAMPCTL" rewire finish fo2 >/dev/null 2>&1 || true
		rm -f "$PLAN"
		sync_topology || true
		scontrol reconfigure >/dev/null 2>&1 || true
	fi
	[[ -z ${BATS_TEST_COMPLETED:-} ]] || return 0
	local todo=""
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		clear_profile "$n"
		if [[ $(node_field "$n" Reason) == onramp:MIGRATE:* ]]; then
			scontrol update nodename="$n" state=resume 2>/dev/null || true
		fi
		admitted_idle "$n" || todo+="$n,"
	done
	[[ -z $todo ]] || restore_nodes "${todo%,}" || true
}

# ---------------------------------------------------------------- views

# ack_view: job_submit/onramp's acknowledgement of what it loaded (in
# StateSaveLocation, written by the plugin of the controller in control):
# its status
# line, and whether it names every file it read as that file is now.
ack_view() {
	local ack line path want
	ack=$(scontrol show config | sed -n 's/^StateSaveLocation *= *//p')/onramp_job_submit.loaded
	[[ -r $ack ]] || {
		echo "no acknowledgement in $ack"
		return
	}
	head -n 1 "$ack"
	while read -r path line; do
		want=$(stat -c '%n %i %.9Y %s' "$path" 2>/dev/null || echo "$path missing")
		[[ "$path $line" == "$want" ]] || echo "stale: $path $line (now: $want)"
	done < <(tail -n +2 "$ack")
}

ack_current() {
	[[ $(ack_view) == "status loaded" ]]
}

# probe_view: what job_submit/onramp of the controller in control does to a
# 4-node job (held by its user: its --switches default, the requeue opt-in
# of MigratePartitions) and to a 7-node job beginning in an hour (during a
# window that cuts a leaf: held and marked for the window). Both cancelled.
probe_view() {
	local p4 p7
	if p4=$(as_user sbatch --parsable --hold -p batch -N4 -J onramp-probe -o /dev/null --wrap true 2>&1); then
		echo "probe -N4: Switches=$(job_field "$p4" Switches) Requeue=$(job_field "$p4" Requeue)"
		scancel "$p4"
	else
		echo "probe -N4: refused: $p4"
	fi
	if p7=$(as_user sbatch --parsable --begin=now+1hour -p batch -N7 -J onramp-probe -o /dev/null --wrap true 2>&1); then
		echo "probe -N7: $([[ $(job_field "$p7" Priority) == 0 ]] && echo held || echo not held)" \
			"AdminComment=$(scontrol show job "$p7" | sed -n 's/^ *AdminComment=\(.*[^ ]\) *$/\1/p')"
		scancel "$p7"
	else
		echo "probe -N7: refused: $p7"
	fi
}

# saved_since EPOCH FILE...: wait until slurmctld has written each state
# FILE (job_state, resv_state, node_state) in a second after EPOCH.
saved_since() {
	local t=$1 f ssl
	shift
	ssl=$(scontrol show config | sed -n 's/^StateSaveLocation *= *//p')
	for f in "$@"; do
		wait_for 30 "slurmctld to save $f" eval "(( \$(stat -c %Y $ssl/$f) > $t ))"
	done
}

# policy_view: onramp's policy as the controller in control enforces it.
policy_view() {
	wait_for 30 "job_submit/onramp to acknowledge the files as they are" ack_current || true
	echo "== switch table"
	scontrol show topology
	echo "== windows"
	if [[ -f $PLAN ]]; then "$REWIRE" status; else echo "no plan"; fi
	echo "== onramp triggers"
	strigger --get | awk 'NR > 1 && /onramp-trigger/' | sort -n
	echo "== job_submit/onramp"
	ack_view
	probe_view
}

# same_view WHEN BEFORE AFTER: the two views are identical, else the
# difference is shown and the test fails.
same_view() {
	if [[ $2 != "$3" ]]; then
		echo "policy differs $1:" >&2
		diff <(echo "$2") <(echo "$3") >&2
		return 1
	fi
	echo "policy identical $1:"
	echo "$3"
}

# admitted_nodes: the nodes whose onramp_ok is active, one per line.
admitted_nodes() {
	sinfo -h -N -o '%N %b' | awk -v f="$ONRAMP_FEATURE" '{n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == f) print $1}' | sort -uV
}

# kept_admitted LIST: every node of LIST (one per line) is admitted.
kept_admitted() {
	local n bad=""
	for n in $1; do
		node_admitted "$n" || bad+=" $n"
	done
	[[ -z $bad ]] || {
		echo "lost onramp_ok:$bad" >&2
		return 1
	}
}

# once JOBNAME: exactly one job of that name in the queue (pending, running
# or held; none lost, none duplicated).
once() {
	local n
	n=$(squeue -h -n "$1" -o %i | wc -l)
	[[ $n -eq 1 ]] || {
		echo "$n jobs named $1 in the queue" >&2
		return 1
	}
}

# why_drained_or_reserved: every node drained carries onramp's migration
# reason and is in the drained list of an active migration; every node in an
# onramp admission reservation is under admission or in a running campaign
# (ALLOWED: a hostlist of nodes allowed to be reserved now). Prints what has
# no journal entry saying why.
why_drained_or_reserved() {
	local allowed=${1:-} n journaled
	journaled=$(sqlite3 "$MIGRATE_DB" "select drained from migrations where active = 1" 2>/dev/null | while read -r h; do
		[[ -z $h ]] || expand_hostlist "$h"
	done)
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		if [[ $(node_state "$n") == *DRAIN* ]] && ! grep -qx "$n" <<<"$journaled"; then
			echo "$n drained ($(node_reason "$n")) without an active migration naming it"
		fi
		if resv_exists "$n" && ! { [[ -n $allowed ]] && expand_hostlist "$allowed" | grep -qx "$n"; }; then
			echo "$n left in onramp_admission_$n"
		fi
	done
}

nothing_unexplained() {
	[[ -z $(why_drained_or_reserved "$@") ]] || {
		why_drained_or_reserved "$@" >&2
		return 1
	}
}

# settled OTHERS [ALLOWED]: after a failover, within 60 s (a controller that
# took over from a state saved seconds before the fault shows that older
# state until the nodes have registered with it: a node back from a reboot
# is still rebooting to it): every node of OTHERS admitted, and every drain
# or reservation explained (why_drained_or_reserved ALLOWED).
settled() {
	local others=$1
	shift
	wait_for 60 "the nodes admitted before to keep onramp_ok" kept_admitted "$others" 2>/dev/null ||
		kept_admitted "$others" || return 1
	wait_for 60 "every drain and reservation explained by a journal" explained "$@" ||
		nothing_unexplained "$@"
}

explained() {
	[[ -z $(why_drained_or_reserved "$@") ]]
}

# healthy: both controllers answer, every node admitted and plain idle, no
# onramp reservation or drain left.
healthy() {
	[[ $(scontrol ping | grep -c 'is UP') -eq 2 ]] || return 1
	local n
	# A SIGKILLed controller can lose the jobs it started in its last
	# seconds; the backup hands their ids out again and Slurm itself drains
	# a node still running the lost one ("Duplicate jobid"). That is
	# Slurm's reason, which onramp never touches: the admin resumes it.
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		if [[ $(node_reason "$n") == "Duplicate jobid"* ]]; then
			echo "resuming $n as an admin would: $(node_reason "$n")" >&2
			scontrol update nodename="$n" state=resume || true
		fi
	done
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		admitted_idle "$n" || return 1
	done
	! scontrol -o show reservation 2>/dev/null | grep -q '^ReservationName=onramp_'
}

failover() {
	run "$ONRAMP_CLUSTER_TOOL" failover "$@"
	echo "$output"
	[ "$status" -eq 0 ]
}

failback() {
	run "$ONRAMP_CLUSTER_TOOL" failback
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"slurmctld1 in control again"* ]]
}

# flow_stopped: the flow started with setsid (its pid in flow.pid) has a
# process that stopped itself (state T).
flow_stopped() {
	ps -o stat= --sid "$(cat "$BATS_TEST_TMPDIR/flow.pid")" 2>/dev/null | grep -q '^T'
}

start_flow() {
	setsid "$@" >"$BATS_TEST_TMPDIR/flow.log" 2>&1 </dev/null &
	echo $! >"$BATS_TEST_TMPDIR/flow.pid"
}

kill_flow() {
	kill -9 -- "-$(cat "$BATS_TEST_TMPDIR/flow.pid")" 2>/dev/null || true
	wait "$(cat "$BATS_TEST_TMPDIR/flow.pid")" 2>/dev/null || true
	rm -f "$BATS_TEST_TMPDIR/flow.pid"
	cat "$BATS_TEST_TMPDIR/flow.log"
}

# ---------------------------------------------------------------- tests

@test "job_submit: a backup standing by never acknowledges a load in the shared StateSaveLocation; the controller in control does" {
	local ack p1
	ack=$(scontrol show config | sed -n 's/^StateSaveLocation *= *//p')/onramp_job_submit.loaded
	p1=$("$ONRAMP_CLUSTER_TOOL" status | awk '/onramp-ctl1/ {print $3}')
	[[ -n $p1 ]]
	# The primary paused for 3 s (less than SlurmctldTimeout: the backup
	# stays a standby), onramp.conf changed: both plugins reload it
	# within a second, and before the fix the backup wrote the
	# acknowledgement while the primary still ran the old file.
	kill -STOP "$p1"
	rm -f "$ack"
	echo "# $BATS_TEST_NAME" >>"$ETC/onramp.conf"
	sleep 3
	local seen=no
	[[ ! -e $ack ]] || seen=yes
	kill -CONT "$p1"
	echo "acknowledged while the primary was paused: $seen"
	[[ $seen == no ]]
	# The primary, running again, acknowledges the new file.
	wait_for 30 "the primary to acknowledge onramp.conf" ack_current
}

@test "admission: onrampctl admit across a failover (SIGKILL) with the node reserved and its job running ends admitted, idle, unreserved" {
	local node=node3 before after others job rc pid
	# No trigger admits the node on its own: this test's onrampctl admit does.
	"$ONRAMPCTL" remove-trigger
	reboot_into_admission "$node" 20
	others=$(admitted_nodes)
	[[ $'\n'$others$'\n' != *$'\n'$node$'\n'* ]]
	start_flow "$ONRAMPCTL" admit --timeout 120 "$node"
	pid=$(cat "$BATS_TEST_TMPDIR/flow.pid")
	wait_for 60 "$node's admission job running" \
		eval "[[ \$(squeue -h -n onramp-admit:$node -t R -o %i) ]]"
	job=$(squeue -h -n "onramp-admit:$node" -o %i)
	resv_exists "$node"
	# In slurmctld's saved state (it saves within 5 s of a change): the job
	# ids a controller killed before then had handed out are handed out
	# again by the one taking over, and a node still running the lost job
	# is drained "Duplicate jobid" by Slurm (bench/fault-campaign
	# --failover draws such points at random).
	saved_since "$(date -d "$(job_field "$job" SubmitTime)" +%s)" job_state resv_state
	before=$(policy_view)
	failover --kill
	after=$(policy_view)
	same_view "after the failover" "$before" "$after"
	settled "$others" "$node"
	# The admission ends by itself (admitted, or could not judge a job the
	# crash lost: exit 2, the node left in its reservation); its documented
	# resume is to run it again.
	rc=0
	wait "$pid" || rc=$?
	rm -f "$BATS_TEST_TMPDIR/flow.pid"
	cat "$BATS_TEST_TMPDIR/flow.log"
	echo "first run: exit $rc (job $job)"
	[[ $rc == 0 || $rc == 2 ]]
	if ! admitted_idle "$node"; then
		run timeout 300 "$ONRAMPCTL" admit --timeout 120 "$node"
		echo "$output"
		[ "$status" -eq 0 ]
	fi
	admitted_again "$node"
	[[ -z $(squeue -h -n "onramp-admit:$node" -o %i) ]]
	kept_admitted "$others"
	failback
	same_view "after the failback" "$before" "$(policy_view)"
	"$ONRAMPCTL" install-trigger
	wait_for 60 "a healthy cluster" healthy
}

@test "rewire: a window started on the primary holds a job across a failover; finished on the backup, the job runs; the primary agrees" {
	local plan=$BATS_TEST_TMPDIR/plan.json before after done_view others j off
	cat >"$plan" <<EOP
{"windows": [{"id": "fo2", "reason": "failover test", "start": "2026-01-01T00:00:00Z",
  "end": "2036-01-01T00:00:00Z", "leaves": ["leaf2"], "state": "planned"}]}
EOP
	others=$(admitted_nodes)
	"$ONRAMPCTL" rewire plan "$plan"
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	run "$ONRAMPCTL" rewire start fo2
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"window fo2 active: leaf2 cut off"* ]]
	# The acknowledgement start waits for is shared by both controllers,
	# and the backup's may come first: the primary's own reload.
	wait_for 30 "the primary's job_submit/onramp to load the plan" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded"
	# A job larger than the cut fabric: held and marked by job_submit/onramp.
	j=$(as_user sbatch --parsable -p batch -N7 -J fo2-held -o /dev/null --wrap 'sleep 1')
	JOBS+=("$j")
	[[ $(job_field "$j" Priority) == 0 ]]
	scontrol show job "$j" | grep -qx " *AdminComment=onramp:rewire-held window=fo2 *"
	before=$(policy_view)
	echo "$before" | grep -q '^fo2 .*active'
	[[ $before == *"probe -N7: held AdminComment=onramp:rewire-held window=fo2"* ]]
	failover
	after=$(policy_view)
	same_view "after the failover" "$before" "$after"
	# The held job is held as it was, once.
	once fo2-held
	[[ $(job_state "$j") == PENDING && $(job_field "$j" Priority) == 0 ]]
	scontrol show job "$j" | grep -qx " *AdminComment=onramp:rewire-held window=fo2 *"
	settled "$others"
	# Finished on the backup: the table joined again, the job released.
	run "$ONRAMPCTL" rewire finish fo2
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"released held jobs: $j"* ]]
	submit_wait "$j" COMPLETED 120
	done_view=$(policy_view)
	echo "$done_view" | grep -q '^fo2 .*done'
	echo "$done_view" | grep -qx 'probe -N7: not held AdminComment='
	failback
	same_view "after the failback" "$done_view" "$(policy_view)"
	[[ $(job_state "$j") == COMPLETED ]]
	wait_for 60 "a healthy cluster" healthy
}

@test "migrate: a migration stopped after HELD across a failover (SIGKILL) is finished by --resume: running once on the target, journal DONE, nothing drained" {
	[[ -x $TRAINER ]] || skip "onramp-trainer not built"
	local dir=$ONRAMP_JOBS_DIR/fo3.ckpt j before after others i off
	others=$(admitted_nodes)
	rm -rf "$dir"
	as_user mkdir -p "$dir"
	j=$(as_user sbatch --parsable -p batch -N1 --constraint=rack1 -J fo3 -o fo3.out \
		--comment="onramp:ckpt=$dir" --wrap "ONRAMP_CKPT_DIR=$dir exec $TRAINER --step-ms 20 --steps 100000000")
	JOBS+=("$j")
	submit_wait "$j" RUNNING 90
	wait_for 60 "10 training steps" eval "[[ \$(wc -l <$dir/loss.log 2>/dev/null || echo 0) -ge 10 ]]"
	# The running job is in slurmctld's saved state (it saves within 5 s
	# of a change): a controller killed before then loses any job, which
	# no migration can bring back.
	saved_since "$(date -d "$(job_field "$j" StartTime)" +%s)" job_state
	start_flow env ONRAMP_MIGRATE_STOP_AFTER=HELD "$ONRAMPCTL" migrate --jobs "$j" --to rack3
	wait_for 180 "the migration to stop after journaling HELD" flow_stopped
	[[ $(sqlite3 "$MIGRATE_DB" "select state from migrations where job = $j and active = 1") == HELD ]]
	before=$(policy_view)
	failover --kill
	after=$(policy_view)
	same_view "after the failover" "$before" "$after"
	once fo3
	# The drained source node is the journal's.
	settled "$others"
	# The driver dies where it stopped; --resume finishes the migration.
	kill_flow
	run timeout 300 "$ONRAMPCTL" migrate --resume
	echo "$output"
	[ "$status" -eq 0 ]
	wait_for 60 "job $j running on rack3" eval \
		"[[ \$(job_state $j) == RUNNING && ,\$(node_field \$(job_field $j NodeList) AvailableFeatures), == *,rack3,* ]]"
	once fo3
	[[ $(sqlite3 "$MIGRATE_DB" "select state from migrations where job = $j order by id desc limit 1") == DONE ]]
	[[ $(sqlite3 "$MIGRATE_DB" "select count(*) from migrations where active = 1") == 0 ]]
	nothing_unexplained
	off=$(log_offset "$ONRAMP_CLUSTER_DIR/log/slurmctld-2.log")
	failback
	same_view "after the failback" "$before" "$(policy_view)"
	# Once under the primary, never lost or duplicated.
	for i in 1 2 3; do
		once fo3
		sleep 1
	done
	# Still running on the target, unless Slurm handed control back before
	# the backup saved its state: 26.05.3's backup answers the primary's
	# REQUEST_CONTROL only at its 29 s timeout, before its final save, and
	# logs "Old state possible"; the primary may then run from a state saved
	# before the move (seen: the job back in its run on the source).
	if log_since_has "$ONRAMP_CLUSTER_DIR/log/slurmctld-2.log" "$off" "Old state possible"; then
		echo "note: the primary took control before the backup saved its state (Old state possible); job $j is $(job_state "$j") on $(job_field "$j" NodeList)"
	else
		[[ $(job_state "$j") == RUNNING && ,$(node_field "$(job_field "$j" NodeList)" AvailableFeatures), == *,rack3,* ]]
	fi
	scancel "$j"
	wait_for 60 "a healthy cluster" healthy
}

@test "expand: a campaign killed mid-wave with a failover is resumed with its --name on the backup: done, each node rebooted once" {
	local nodes='node[5,7]' from before after others json n
	from=$(wc -l <"$ONRAMP_REBOOT_LOG" 2>/dev/null || echo 0)
	others=$(admitted_nodes | grep -vx 'node5\|node7')
	start_flow "$ONRAMPCTL" expand "$nodes" --name fo4
	# One wave (one node of rack3, one of rack4): both reboots issued.
	wait_for 120 "the reboots of node5 and node7" eval \
		"tail -n +$((from + 1)) $ONRAMP_REBOOT_LOG | grep -q 'reboot of node5:' &&
		 tail -n +$((from + 1)) $ONRAMP_REBOOT_LOG | grep -q 'reboot of node7:'"
	before=$(policy_view)
	kill_flow
	failover
	after=$(policy_view)
	same_view "after the failover" "$before" "$after"
	settled "$others" "$nodes"
	[ "$("$ONRAMPCTL" expand-status --name fo4 --json | jq -r '.campaigns[0].state')" = running ]
	run timeout 300 "$ONRAMPCTL" expand "$nodes" --name fo4
	echo "$output"
	[ "$status" -eq 0 ]
	json=$("$ONRAMPCTL" expand-status --name fo4 --json)
	[ "$(jq -r '.campaigns[0].state' <<<"$json")" = done ]
	[ "$(jq -r '.campaigns[0].counts.admitted' <<<"$json")" -eq 2 ]
	[ "$(jq '[.campaigns[0].nodes_detail[] | select(.reboots != 1)] | length' <<<"$json")" -eq 0 ]
	for n in node5 node7; do
		echo "$n booted $(tail -n +"$((from + 1))" "$ONRAMP_REBOOT_LOG" | grep -c " $n booted:") time(s)"
		[ "$(tail -n +"$((from + 1))" "$ONRAMP_REBOOT_LOG" | grep -c " $n booted:")" -eq 1 ]
	done
	kept_admitted "$others"
	failback
	same_view "after the failback" "$before" "$(policy_view)"
	wait_for 60 "a healthy cluster" healthy
}
