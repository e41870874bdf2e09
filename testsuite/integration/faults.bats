#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4 --topology-plugin topology/onramp
# A short seeded subset of bench/fault-campaign: onramp's admission and
# rewire flows killed with SIGKILL at a random point, slurmctld restarted
# mid-flow; run again, every flow ends with every node admitted and idle,
# no onramp drain or reservation left and no window active.

load helpers

setup() {
	require_cluster
	if [[ $(scontrol show config | sed -n 's/^TopologyPlugin *= *//p') != topology/onramp ]]; then
		skip "cluster not started with --topology-plugin topology/onramp"
	fi
	cp -p "$ONRAMP_CLUSTER_DIR/etc/onramp.conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
}

teardown() {
	[[ -f $BATS_TEST_TMPDIR/onramp.conf.orig ]] || return 0
	cp -p "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
	timeout 30 scontrol reconfigure >/dev/null 2>&1 || true
}

@test "3 seeded faults in admission and rewire flows leave nothing behind" {
	run timeout 600 "$ONRAMP_REPO/bench/fault-campaign" --seed "${ONRAMP_FAULT_SEED:-7}" --trials 3
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"violations 0 ctld_deaths 0"* ]]
}
