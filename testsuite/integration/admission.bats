#!/usr/bin/env bats
# The admission gate on the live cluster (simulated GPU backend: sim
# profiles in etc/sim-profiles). The cluster harness admitted every node at
# bring-up and installed onramp's permanent triggers.

load helpers
load admission_helpers
bats_require_minimum_version 1.5.0

setup() {
	require_cluster
}

teardown() {
	# A test that changed onramp.conf and stopped half-way.
	if [[ -f $BATS_TEST_TMPDIR/onramp.conf.orig ]]; then
		mv "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
		timeout 30 scontrol reconfigure || true
	fi
}

@test "bring-up admitted every node: sinfo shows onramp_ok available and active" {
	run sinfo -h -N -o '%N %f %b'
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(echo "$output" | sort -u | grep -c " .*onramp_ok.* .*onramp_ok")" -eq "$ONRAMP_CLUSTER_NODES" ]
	[ "$(record_field node1 status)" = PASS ]
}

@test "bring-up had no admitted peer: the new nodes were paired with each other, none admitted without a pair test" {
	local n rec
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		rec=$ONRAMP_CLUSTER_DIR/nodes/$n/onramp/admission.json
		echo "$n: $(jq -c '[.verdict.checks[] | select(.name == "nccl_pair") | {status, detail}]' "$rec")"
		jq -e '.status == "PASS" and ([.verdict.checks[] | select(.name == "nccl_pair" and .status == "PASS")] | length) == 1' "$rec"
	done
	grep -q "no admitted peer; pairing it with" "$ONRAMP_CLUSTER_DIR/log/onrampctl.log"
}

@test "a rebooted healthy node is out of production until admitted, then admitted without an admin step" {
	local node=node2 job
	# Back from the reboot but under admission: reserved, feature inactive.
	reboot_into_admission "$node" 6
	# A production job aimed at it waits.
	job=$(as_user sbatch --parsable -w "$node" -o /dev/null --wrap true)
	sleep 2
	[ "$(job_state "$job")" = PENDING ]
	admitted_again "$node"
	submit_wait "$job" COMPLETED 90
}

@test "a node admitted while its slurmd runs, with no signal to that slurmd, keeps onramp_ok when slurmctld restarts" {
	local node=node3 rec job
	rec=$ONRAMP_CLUSTER_DIR/nodes/$node/onramp/admission.json
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	# Its slurmd caches "not admitted" (a reconfigure while the record is
	# away: what a slurmd started before admission reports).
	mv "$rec" "$BATS_TEST_TMPDIR/admission.json"
	kill -HUP "$(cat "$ONRAMP_CLUSTER_DIR/var/run/slurmd-$node.pid")"
	wait_for 30 "$node reported not admitted" eval "! node_admitted $node"
	# Admitted again the way an admission job run by SlurmUser publishes
	# it: the record, and slurmctld's copy of the feature; SlurmUser cannot
	# signal root's slurmd.
	mv "$BATS_TEST_TMPDIR/admission.json" "$rec"
	scontrol update nodename="$node" ActiveFeatures="$(node_field "$node" ActiveFeatures),$ONRAMP_FEATURE"
	node_admitted "$node"
	# slurmd's watcher looks every 5 s.
	sleep 8
	"$ONRAMP_CLUSTER_TOOL" restart-ctld
	# A restarted slurmctld does not keep SlurmdStartTime: it is known
	# again once the node has registered with it.
	wait_for 60 "$node registered with the new slurmctld" \
		eval "[[ \$(node_field $node SlurmdStartTime) != None ]]"
	scontrol show node "$node" | grep -E 'Features|State'
	node_admitted "$node"
	[[ $(node_state "$node") != *DRAIN* ]]
	job=$(as_user sbatch --parsable -w "$node" -o /dev/null --wrap true)
	submit_wait "$job" COMPLETED 60
}

@test "nodes with low-NCCL, corrupt-NCCL, XID and ECC profiles end drained with their code and numbers" {
	set_profile node5 low-nccl
	set_profile node6 corrupt-nccl
	set_profile node7 xid
	set_profile node8 ecc
	reboot_nodes 'node[5-8]'
	wait_for 120 "node5 drained" drained_with node5 '^onramp:NCCL_BW_LOW: nccl_allreduce busbw [0-9.]+ GB/s < [0-9.]+ GB/s'
	wait_for 60 "node6 drained" drained_with node6 '^onramp:NCCL_CORRUPT: '
	wait_for 60 "node7 drained" drained_with node7 '^onramp:XID_CRITICAL: .*79'
	wait_for 60 "node8 drained" drained_with node8 '^onramp:ECC_UNCORRECTED: '
	for n in node5 node6 node7 node8; do
		run ! node_admitted "$n"
		[ "$(record_field "$n" status)" = FAIL ]
	done
	restore_nodes 'node[5-8]'
}

@test "baseline-mismatch, port-down and wrong-affinity nodes end drained with their code; a hung check leaves its node fenced INCONCLUSIVE, not drained, and no process" {
	local conf=$ONRAMP_CLUSTER_DIR/etc/onramp.conf out
	# One retry, 1 s after the first try (nccl_allreduce's timeout is 5 s).
	cp -p "$conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
	{ cat "$conf" && printf 'CheckRetries=1\nCheckRetryBackoff=1\n'; } >"$conf.new"
	mv "$conf.new" "$conf"
	set_profile node5 baseline-mismatch
	set_profile node6 port-down
	set_profile node7 wrong-affinity
	set_profile node8 hang
	reboot_nodes 'node[5-8]'
	wait_for 120 "node5 drained" drained_with node5 '^onramp:VERSION_MISMATCH: .*expected.*found'
	wait_for 60 "node6 drained" drained_with node6 '^onramp:PORT_DOWN: '
	wait_for 60 "node7 drained" drained_with node7 '^onramp:AFFINITY_MISMATCH: .*GPU'
	# The hung check could not measure, twice: the node is neither
	# admitted nor drained; it stays fenced in its admission reservation.
	wait_for 90 "node8 recorded INCONCLUSIVE" eval '[ "$(record_field node8 status)" = INCONCLUSIVE ]'
	[ "$(record_field node8 code)" = INCONCLUSIVE_NCCL ]
	[[ $(record_field node8 detail) == *"nccl_allreduce did not finish within 5 s"*"(unmeasured after 2 tries)"* ]]
	wait_for 60 "no admission process left for node8" eval "! cluster_pgrep 'onramp-admit.*node8' >/dev/null"
	[[ $(node_state node8) != *DRAIN* ]]
	resv_exists node8
	run ! node_admitted node8
	# onrampctl status says why it is still reserved.
	out=$("$ONRAMPCTL" status node8)
	echo "$out"
	[[ $out == *"onramp:INCONCLUSIVE_NCCL: nccl_allreduce did not finish within 5 s"*"(last admission; not drained)"* ]]
	# Each hung check and its helper process were killed at the timeout.
	run ! cluster_pgrep 'onramp-sim-hang'
	mv "$BATS_TEST_TMPDIR/onramp.conf.orig" "$conf"
	restore_nodes 'node[5-8]'
}

@test "50 jobs during admission never start on an unadmitted node; a job for the rack under admission pends, then runs there" {
	local n job jobs=() rackjob admitted7 admitted8 st
	slow_profile node7 15
	slow_profile node8 15
	reboot_nodes 'node[7-8]'
	wait_for 60 "node7/8 in their reservations" eval 'resv_exists node7 && resv_exists node8'
	rackjob=$(as_user sbatch --parsable -C rack2 -N4 -o /dev/null --wrap 'srun true')
	for n in $(seq 1 50); do
		jobs+=("$(as_user sbatch --parsable -o /dev/null \
			--wrap 'echo "$SLURMD_NODENAME $(date +%s)" >>'"$ONRAMP_JOBS_DIR"'/gate.$SLURM_JOB_ID')")
	done
	sleep 2
	# Pending while both nodes are still under admission (the reservation
	# read after the state: under load the 50 submissions can outlast it).
	st=$(job_state "$rackjob")
	if resv_exists node7 && resv_exists node8; then
		[ "$st" = PENDING ]
	fi
	wait_for 180 "node7 admitted" admitted_released node7
	wait_for 60 "node8 admitted" admitted_released node8
	admitted7=$(date -d "$(record_field node7 time)" +%s)
	admitted8=$(date -d "$(record_field node8 time)" +%s)
	submit_wait "$rackjob" COMPLETED 120
	[ "$(job_field "$rackjob" NodeList)" = 'node[5-8]' ]
	# It started only once both nodes were admitted.
	st=$(date -d "$(job_field "$rackjob" StartTime)" +%s)
	((st >= admitted7 && st >= admitted8))
	for job in "${jobs[@]}"; do
		submit_wait "$job" COMPLETED 120
		read -r n t <"$ONRAMP_JOBS_DIR/gate.$job"
		case $n in
		node7) ((t >= admitted7)) ;;
		node8) ((t >= admitted8)) ;;
		esac
	done
	clear_profile node7
	clear_profile node8
}

@test "a node that reboots without RebootProgram is fenced at registration, before any job, then admitted again" {
	local node=node4 job admitted started
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	"$ONRAMP_REPO/testsuite/cluster/crash-node" "$node"
	# Fenced as it registers: drained with onramp's reason (the drained
	# trigger then admits it inside its reservation), no job before that.
	job=$(fenced_then_admitted "$node" REBOOT_NOT_ADMITTED)
	admitted=$(date -d "$(record_field "$node" time)" +%s)
	started=$(date -d "$(job_field "$job" StartTime)" +%s)
	((started >= admitted))
	[ "$(record_field "$node" boot_id)" = "$(node_boot_id "$node")" ]
}

@test "a node whose admission record is gone is fenced at its next registration, before any job, then admitted again" {
	local node=node5
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	# As for a node never admitted (a new node, a fresh cluster): slurmd
	# reports the feature inactive while the node is in production.
	rm -f "$ONRAMP_CLUSTER_DIR/nodes/$node/onramp/admission.json"
	fenced_then_admitted "$node" NOT_ADMITTED
}

@test "FenceUnadmitted=no leaves a node never admitted in production; turned on again, the node is fenced, then admitted" {
	local node=node7 conf=$ONRAMP_CLUSTER_DIR/etc/onramp.conf
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	cp -p "$conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
	{ cat "$conf" && echo FenceUnadmitted=no; } >"$conf.new"
	mv "$conf.new" "$conf"
	scontrol reconfigure
	wait_for 30 "slurmctld's fence off" eval "scontrol show config | grep -q '^FenceUnadmitted *= no'"
	rm -f "$ONRAMP_CLUSTER_DIR/nodes/$node/onramp/admission.json"
	wait_for 30 "$node reporting onramp_unadmitted" eval \
		"[[ ,\$(node_field $node ActiveFeatures), == *,onramp_unadmitted,* ]]"
	[[ $(node_state "$node") == IDLE ]]
	[[ -z $(node_reason "$node") ]]
	# On again: the next registration (this reconfigure's) fences it.
	mv "$BATS_TEST_TMPDIR/onramp.conf.orig" "$conf"
	scontrol reconfigure
	fenced_then_admitted "$node" NOT_ADMITTED
}

@test "a bad peer in the pairwise test does not get a good new node drained" {
	wait_for 60 "node1 and node2 idle" eval 'admitted_idle node1 && admitted_idle node2'
	set_profile node1 bad-peer
	reboot_nodes node3
	wait_for 120 "node3 admitted" admitted_idle node3
	[[ $(record_field node3 detail) == *node1* ]]
	[[ $(node_state node1) == IDLE ]]
	clear_profile node1
}

@test "a weak rail drains the node naming its HCA, port and GPU; a slow GPU in the all-GPU run names the GPU; a healthy node is admitted" {
	local weak=node5 slow=node6 good=node4 rec
	wait_for 60 "$weak, $slow and $good idle" eval "admitted_idle $weak && admitted_idle $slow && admitted_idle $good"
	set_profile "$weak" weak-rail
	set_profile "$slow" slow-gpu-pair
	run "$ONRAMPCTL" admit "$weak"
	echo "$output"
	[ "$status" -eq 1 ]
	wait_for 60 "$weak drained RAIL_BW_LOW" drained_with "$weak" \
		"^onramp:RAIL_BW_LOW: $weak mlx5_5 port 1 \\(GPU 5\\) 11\\.2 GB/s < 40\\.0 GB/s with node[0-9]+, node[0-9]+"
	run "$ONRAMPCTL" admit "$slow"
	echo "$output"
	[ "$status" -eq 1 ]
	wait_for 60 "$slow drained PAIR_BW_LOW" drained_with "$slow" \
		"^onramp:PAIR_BW_LOW: nccl_pair below 40\\.0 GB/s with 2 peers \\(slowest: $slow GPU 3\\): node[0-9]+ "
	# A healthy node passes the all-GPU run and every rail.
	run "$ONRAMPCTL" admit "$good"
	echo "$output"
	[ "$status" -eq 0 ]
	admitted_idle "$good"
	rec=$ONRAMP_CLUSTER_DIR/nodes/$good/onramp/admission.json
	jq -e '.verdict.checks[] | select(.name == "nccl_pair") | select(.detail | test("8 rails >= 40.0 GB/s"))' "$rec"
	[ "$(jq '[.verdict.checks[] | select(.name == "nccl_pair") | .data.rails[] | select(.measured)] | length' "$rec")" -ge 8 ]
	restore_nodes "$weak,$slow"
}

@test "an admin's drain reason is never touched, and onramp never resumes that node" {
	local node=node6 pid
	wait_for 60 "$node idle" admitted_idle "$node"
	slow_profile "$node" 8 low-nccl
	"$ONRAMPCTL" admit "$node" >"$BATS_TEST_TMPDIR/admit.out" 2>&1 &
	pid=$!
	wait_for 60 "$node's admission job running" eval "squeue -h -t R -n onramp-admit:$node | grep -q ."
	# An admin drains the node while onramp tests it.
	scontrol update nodename="$node" state=drain reason="admin: ticket 42"
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 1 ]
	grep -q "keeping the admin's reason" "$BATS_TEST_TMPDIR/admit.out"
	[ "$(node_reason "$node")" = "admin: ticket 42" ]
	# A node an admin drained is not admitted (nor resumed) by onramp.
	clear_profile "$node"
	run "$ONRAMPCTL" admit "$node"
	[ "$status" -eq 2 ]
	[[ $output == *"drained by an admin"* ]]
	[ "$(node_reason "$node")" = "admin: ticket 42" ]
	[[ $(node_state "$node") == *DRAIN* ]]
	scontrol update nodename="$node" state=resume
	restore_nodes "$node"
}

@test "admit --no-wait returns at once; the run it detaches judges the node and returns its peers" {
	local node=node4 json
	wait_for 60 "$node idle" admitted_idle "$node"
	slow_profile "$node" 5 low-nccl
	run --separate-stderr "$ONRAMPCTL" admit --no-wait --json "$node"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	json=$output
	[ "$(echo "$json" | jq -r '.nodes[0].result')" = submitted ]
	[ "$(echo "$json" | jq '.nodes[0].peers | length')" -ge 1 ]
	# The peers are in the node's reservation while its job runs ...
	[[ $(scontrol -o show reservation "onramp_admission_$node") =~ NodeCnt=([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -ge 2 ]
	# ... and the detached run judges it: drained with its code, reservation gone.
	wait_for 120 "$node drained NCCL_BW_LOW" drained_with "$node" '^onramp:NCCL_BW_LOW: '
	grep -q "node $node: admission failed: onramp:NCCL_BW_LOW" "$ONRAMP_CLUSTER_DIR/onramp/admit/orchestrate.log"
	restore_nodes "$node"
}

@test "an unprivileged user cannot use the admission path or forge admission" {
	run as_user sbatch --reservation=onramp_admission_node1 -o /dev/null --wrap true
	[ "$status" -ne 0 ]
	[[ $output == *"admission path"* ]]
	run as_user sbatch -A onramp -o /dev/null --wrap true
	[ "$status" -ne 0 ]
	[[ $output == *"admission path"* ]]
	run as_user scontrol update nodename=node1 activefeatures=onramp_ok,rack1
	[ "$status" -ne 0 ]
	run as_user "$ONRAMPCTL" admit node1
	[ "$status" -ne 0 ]
	[[ $output == *"only root or SlurmUser"* ]]
	# Nor can a user write a node's admission record.
	run as_user sh -c "echo x > $ONRAMP_CLUSTER_DIR/nodes/node1/onramp/admission.json"
	[ "$status" -ne 0 ]
}

@test "a malformed profile is a clear error naming the file and field; nothing is drained" {
	local node=node5
	wait_for 60 "$node idle" admitted_idle "$node"
	printf '{"sku": "SIM-8GPU", "gpus": 7}\n' >"$ONRAMP_PROFILES/$node.json"
	run "$ONRAMPCTL" admit "$node"
	[ "$status" -eq 2 ]
	[[ $output == *"could not judge"* ]]
	[[ $output == *"$node.json"*gpus* ]]
	[[ $(node_state "$node") != *DRAIN* ]]
	# It stays out of production in its reservation until it can be judged.
	resv_exists "$node"
	clear_profile "$node"
	run "$ONRAMPCTL" admit "$node"
	[ "$status" -eq 0 ]
	wait_for 30 "$node idle" admitted_idle "$node"
}

@test "the epilog revokes admission and drains a node that logged a critical XID during a job" {
	local node=node2 job mark=$ONRAMP_JOBS_DIR/xid-during-job.$$
	wait_for 60 "$node idle" admitted_idle "$node"
	rm -f "$mark".*
	# The job's script says it started (so the prolog has passed: with
	# PrologFlags=Alloc a job is RUNNING while its prolog still runs) and
	# then waits for the test's go-ahead, so the XID lands during the job.
	job=$(as_user sbatch --parsable -w "$node" -o /dev/null \
		--wrap "touch $mark.started; for i in \$(seq 600); do [ -e $mark.go ] && exit 0; sleep 0.2; done; exit 1")
	wait_for 60 "job $job's script to start" test -e "$mark.started"
	# A fresh XID 79 appears while the job runs.
	sed 's/"age_s": [0-9.]*/"age_s": 0/' "$ONRAMP_REPO/etc/sim-profiles/xid.json" >"$ONRAMP_PROFILES/$node.json"
	touch "$mark.go"
	submit_wait "$job" COMPLETED 60
	rm -f "$mark".*
	wait_for 30 "$node drained by the epilog" drained_with "$node" '^onramp:EPILOG_XID: xid 79'
	[ "$(record_field "$node" status)" = REVOKED ]
	wait_for 30 "$node to lose $ONRAMP_FEATURE" eval "! node_admitted $node"
	restore_nodes "$node"
}

@test "with slurmctld away the epilog gives up in under a minute and fails so slurmd drains; jobcheck.log follows no symlink" {
	local node=node3 log victim=$BATS_TEST_TMPDIR/victim pid rc=0
	wait_for 60 "$node idle" admitted_idle "$node"
	log=$ONRAMP_CLUSTER_DIR/nodes/$node/onramp/jobcheck.log
	# A symlink where root appends its log: refused, the target untouched.
	echo untouched >"$victim"
	mv "$log" "$log.keep" 2>/dev/null || true
	ln -s "$victim" "$log"
	sed 's/"age_s": [0-9.]*/"age_s": 0/' "$ONRAMP_REPO/etc/sim-profiles/xid.json" >"$ONRAMP_PROFILES/$node.json"
	"$ONRAMP_CLUSTER_TOOL" restart-ctld --down 100 >"$BATS_TEST_TMPDIR/restart" 2>&1 &
	pid=$!
	wait_for 30 "slurmctld down" eval '! ctld_is_up'
	SECONDS=0
	SLURMD_NODENAME=$node SLURM_JOB_ID=4242424 "$ONRAMP_REPO/epilog/onramp-epilog" || rc=$?
	echo "epilog: rc $rc after $SECONDS s"
	# Before: 600 s of retries, rc 0 and no drain anywhere.
	[ "$SECONDS" -lt 80 ]
	[ "$rc" -eq 1 ]
	[ "$(cat "$victim")" = untouched ]
	wait "$pid"
	rm -f "$log"
	mv "$log.keep" "$log" 2>/dev/null || true
	# The admission that restores the node keeps its newest VerdictsKept
	# (50) verdicts however many older ones there are; a symlink and
	# another file there are left alone, the link's target untouched.
	local dir=$ONRAMP_CLUSTER_DIR/nodes/$node/onramp i
	local vdir=$dir/verdicts
	for i in $(seq 60); do
		echo '{}' >"$vdir/verdict.old$i.json"
		touch -d '40 days ago' "$vdir/verdict.old$i.json"
	done
	ln -s "$victim" "$vdir/verdict.link.json"
	touch -h -d '50 days ago' "$vdir/verdict.link.json"
	echo "an admin's note" >"$vdir/notes.txt"
	restore_nodes "$node"
	# Before: every one of them kept (only verdicts past 30 days went).
	[ "$(find "$vdir" -maxdepth 1 -type f -name 'verdict.*.json' | wc -l)" -eq 50 ]
	[ ! -e "$vdir/verdict.old1.json" ]
	[ -L "$vdir/verdict.link.json" ]
	[ "$(cat "$victim")" = untouched ]
	[ -e "$vdir/notes.txt" ]
	rm -f "$vdir"/verdict.old*.json "$vdir/verdict.link.json" "$vdir/notes.txt"
	# The record, the verdicts and jobcheck.log hold the node's inventory
	# and its jobs: readable by no other account. Before: 0644 in 0755.
	local newest
	newest=$(find "$vdir" -maxdepth 1 -type f -name 'verdict.*.json' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
	stat -c '%a %U:%G %n' "$dir" "$vdir" "$dir/admission.json" "$newest"
	[ "$(stat -c %a "$dir/admission.json")" = 640 ]
	[ "$(stat -c %a "$newest")" = 640 ]
	# (jobcheck.log exists once a job ran on the node: earlier tests.)
	[ ! -e "$log" ] || [ "$(stat -c %a "$log")" = 640 ]
	[ "$(stat -c %a "$dir")" = 750 ]
	[ "$(stat -c %a "$vdir")" = 750 ]
	# Their group is NodeStateDir's, so SlurmUser reads what root wrote.
	[ "$(stat -c %g "$dir/admission.json")" = "$(stat -c %g "$dir")" ]
	[ "$(stat -c %g "$newest")" = "$(stat -c %g "$vdir")" ]
	run as_user cat "$dir/admission.json"
	[ "$status" -ne 0 ]
	run as_user cat "$newest"
	[ "$status" -ne 0 ]
}
