#!/usr/bin/env bats
# The test command's own guard rails: two runs on one machine never share a
# cluster directory or ports. testsuite/run holds DIR.lock beside its
# cluster directory for as long as it runs; a second run that names the
# same directory is refused, one that names none takes the next free
# instance (its own directory, matrix directory and ports); and
# onramp-cluster start refuses ports another program listens on.

load helpers

setup() {
	root=$BATS_TEST_TMPDIR/root
	mkdir -p "$root"
	holders=()
}

teardown() {
	local p
	for p in "${holders[@]}"; do
		pkill -P "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
	done
}

# hold FILE: a process holds an flock on FILE (as a run does) until teardown
# (-o: flock itself holds it; no descriptor of bats' stays open in it).
hold() {
	: >>"$1"
	flock -o "$1" sleep 600 </dev/null >/dev/null 2>&1 3>&- &
	holders+=("$!")
	wait_for 10 "the lock on $1" bash -c "! flock -n '$1' true"
}

# which_cluster: what testsuite/run would use, with no cluster or port set.
which_cluster() {
	env -u ONRAMP_CLUSTER_DIR -u ONRAMP_MATRIX_DIR -u ONRAMP_CTLD_PORT -u ONRAMP_SLURMD_PORT_BASE \
		-u ONRAMP_TEST_PORT_BASE -u ONRAMP_INSTANCE ONRAMP_RUN_ROOT="$root" "$@" \
		"$ONRAMP_REPO/testsuite/run" --which-cluster
}

@test "a run takes instance 0 when it is free, and the next free instance when it is not" {
	run which_cluster
	[ "$status" -eq 0 ]
	[ "$output" = "$root/onramp-cluster $root/onramp-matrix 16817 17000 30000" ]

	hold "$root/onramp-cluster.lock"
	run which_cluster
	[ "$status" -eq 0 ]
	[[ $output == *"instance 0 is in use"* ]]
	[ "${lines[-1]}" = "$root/onramp-cluster-1 $root/onramp-matrix-1 20817 21000 50000" ]

	hold "$root/onramp-cluster-1.lock"
	run which_cluster
	[ "${lines[-1]}" = "$root/onramp-cluster-2 $root/onramp-matrix-2 24817 25000 54000" ]

	hold "$root/onramp-cluster-2.lock"
	run which_cluster
	[ "$status" -eq 2 ]
	[[ $output == *"instances 0, 1 and 2 are all in use"* ]]
}

@test "a run naming a cluster directory another run holds is refused, and that cluster keeps running" {
	# The run this test is part of holds its own cluster directory.
	if flock -n "$ONRAMP_CLUSTER_DIR.lock" true 2>/dev/null; then
		skip "not run by testsuite/run (no run holds $ONRAMP_CLUSTER_DIR.lock)"
	fi
	run env ONRAMP_CLUSTER_DIR="$ONRAMP_CLUSTER_DIR" timeout 60 "$ONRAMP_REPO/testsuite/run" \
		"$ONRAMP_REPO/testsuite/integration/versions.bats"
	[ "$status" -eq 2 ]
	[[ $output == *"another run (pid "*") uses the cluster directory $ONRAMP_CLUSTER_DIR"* ]]
	ctld_is_up
	[ -f "$ONRAMP_CLUSTER_DIR/params" ]

	run env -u ONRAMP_CLUSTER_DIR ONRAMP_INSTANCE=3 "$ONRAMP_REPO/testsuite/run" --which-cluster
	[ "$status" -eq 2 ]
	[[ $output == *"ONRAMP_INSTANCE must be 0, 1 or 2"* ]]
}

@test "onramp-cluster start refuses the ports of a running cluster and leaves it alone" {
	local dir=$BATS_TEST_TMPDIR/second pid
	pid=$(ctld_pid)
	run env ONRAMP_CLUSTER_DIR="$dir" ONRAMP_CTLD_PORT="$(cluster_param CTLD_PORT)" \
		ONRAMP_SLURMD_PORT_BASE=$(($(cluster_param SLURMD_PORT_BASE) + 500)) \
		"$ONRAMP_CLUSTER_TOOL" start --nodes 1 --racks 1
	[ "$status" -ne 0 ]
	[[ $output == *"port $(cluster_param CTLD_PORT) of this cluster is in use"* ]]
	[[ $output == *slurmctld* ]]
	[ ! -e "$dir/var/run/slurmctld.pid" ]
	[ "$(ctld_pid)" = "$pid" ]
	ctld_is_up
}
