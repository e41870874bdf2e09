#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4 --topology-plugin topology/onramp
# A short seeded subset of bench/fault-campaign: onramp's admission,
# rewire and migration flows killed with SIGKILL at a random point,
# slurmctld restarted (or killed) mid-flow; run again, every flow ends with
# every node admitted and idle, no onramp drain or reservation left, no
# window active, the migrated job running once on its target rack.

load helpers
load admission_helpers

setup() {
	require_cluster
	onramp_topology || skip "cluster not started with --topology-plugin topology/onramp"
	cp -p "$ONRAMP_CLUSTER_DIR/etc/onramp.conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
}

teardown() {
	# Test 3 takes the partition down for a moment.
	scontrol update PartitionName=batch State=UP >/dev/null 2>&1 || true
	[[ -f $BATS_TEST_TMPDIR/onramp.conf.orig ]] || return 0
	put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
	timeout 30 scontrol reconfigure >/dev/null 2>&1 || true
}

@test "3 seeded faults in admission and rewire flows leave nothing behind" {
	run timeout 600 "$ONRAMP_REPO/bench/fault-campaign" --seed "${ONRAMP_FAULT_SEED:-7}" --trials 3 --flows admit,rewire
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"violations 0 ctld_deaths 0"* ]]
}

@test "a migration whose onramp-migrate and slurmctld are killed with SIGKILL mid-flow is finished by --resume" {
	[[ -x $ONRAMP_REPO/contrib/examples/onramp-trainer ]] || skip "onramp-trainer not built"
	# Seed 1: SIGKILL of onramp-migrate and of slurmctld where the driver
	# has just journaled CHECKPOINTED (it stops itself there,
	# ONRAMP_MIGRATE_STOP_AFTER: the same point on every Slurm, however fast
	# the requeue), then --resume.
	run timeout 300 "$ONRAMP_REPO/bench/fault-campaign" --seed "${ONRAMP_FAULT_MIGRATE_SEED:-1}" --trials 1 --flows migrate
	echo "$output"
	[ "$status" -eq 0 ]
	# The faults landed at a journal boundary, not after the flow's end.
	[[ $output =~ "kill-9 ctld-kill-9 at "(BEFORE|AFTER):[A-Z]+": ok" ]]
	[[ $output == *"faults 2 violations 0 ctld_deaths 0"* ]]
}

@test "onrampctl admit killed after submitting its job: the next run cancels the orphan and releases the node" {
	local node=node6 pid orphan
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	# The orphan has not started yet (as behind busy peers) when its
	# onrampctl dies: the partition takes jobs but starts none until the
	# orphan is held (a slurmctld that schedules at submit, 26.05, started
	# it before the test could hold it).
	scontrol update PartitionName=batch State=DOWN
	setsid "$ONRAMPCTL" admit "$node" >"$BATS_TEST_TMPDIR/first.out" 2>&1 &
	pid=$!
	wait_for 60 "$node's admission job" eval "[[ -n \$(squeue -h -n onramp-admit:$node -o %i) ]]"
	orphan=$(squeue -h -n "onramp-admit:$node" -o %i)
	scontrol hold "$orphan"
	kill -9 -- -"$pid"
	scontrol update PartitionName=batch State=UP
	[ "$(job_state "$orphan")" = PENDING ]
	run timeout 300 "$ONRAMPCTL" admit "$node"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"cancelling admission job(s) $orphan left by an earlier run"* ]]
	wait_for 30 "$node admitted and out of its reservation" admitted_idle "$node"
}
