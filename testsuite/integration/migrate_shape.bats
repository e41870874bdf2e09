#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4 --cpus 16
# A migration keeps the job's shape: as many leaf switches as it spanned
# (topology/tree, one leaf per rack: leaf1 node[1-2], leaf2 node[3-4],
# leaf3 node[5-6], leaf4 node[7-8]).

load helpers
load migrate_helpers # and the setup/teardown hooks

# leaves JOB: how many leaf switches the job's nodes hang off (the rack
# feature names the leaf in this layout).
leaves() {
	local n
	for n in $(expand_hostlist "$(job_field "$1" NodeList)"); do
		node_field "$n" AvailableFeatures | grep -o 'rack[0-9]*'
	done | sort -u | wc -l
}

# on_nodes JOB N HOSTLIST: running on N nodes, all in HOSTLIST.
on_nodes() {
	local n all
	[[ $(job_state "$1") == RUNNING ]] || return 1
	[[ $(job_field "$1" NumNodes) == "$2" ]] || return 1
	all=" $(expand_hostlist "$3" | tr '\n' ' ') "
	for n in $(expand_hostlist "$(job_field "$1" NodeList)"); do
		[[ $all == *" $n "* ]] || return 1
	done
}

pending_for_resources() {
	[[ $(job_state "$1") == PENDING && $(job_field "$1" Reason) == Resources ]]
}

@test "2-node jobs keep their leaf count: the two-leaf one moves at once, the one-leaf one waits for a free leaf" {
	local wide narrow b5 b7
	wide=$(TRAINER_SBATCH="-N2 --constraint=[rack1*1&rack2*1]" trainer_job wide --steps 1000000)
	JOBS+=("$wide")
	narrow=$(TRAINER_SBATCH="-N2 --constraint=rack1" trainer_job narrow --steps 1000000 --seed 3)
	JOBS+=("$narrow")
	# One node of each target leaf is taken: the target has no free leaf
	# for two nodes until b5 ends.
	b5=$(submit -w node5 --exclusive -o /dev/null --wrap "sleep 600")
	JOBS+=("$b5")
	b7=$(submit -w node7 --exclusive -o /dev/null --wrap "sleep 600")
	JOBS+=("$b7")
	submit_wait "$wide" RUNNING 60
	submit_wait "$narrow" RUNNING 60
	submit_wait "$b5" RUNNING 60
	submit_wait "$b7" RUNNING 60
	[ "$(leaves "$wide")" = 2 ]
	[ "$(leaves "$narrow")" = 1 ]
	wait_for 60 "20 training steps" loss_lines wide 20
	wait_for 60 "20 training steps" loss_lines narrow 20

	"$CTL" migrate --jobs "$wide,$narrow" --to 'node[5-8]' >"$BATS_TEST_TMPDIR/mig" 2>&1 &
	local pid=$!
	echo "$pid" >"$BATS_TEST_TMPDIR/first.pid"
	# The two-leaf job fits on node6 and node8.
	wait_for 120 "the two-leaf job to run on the target" on_nodes "$wide" 2 'node[5-8]'
	# The one-leaf job does not run across two leaves: the scheduler finds
	# no leaf for it; once a leaf frees up, it runs there.
	wait_for 60 "the one-leaf job to wait for resources" pending_for_resources "$narrow"
	scontrol show job "$narrow" | grep -q "Switches=1@"
	scancel "$b5"
	local rc=0
	wait "$pid" || rc=$?
	cat "$BATS_TEST_TMPDIR/mig"
	[ "$rc" -eq 0 ]
	on_nodes "$wide" 2 'node[5-8]'
	on_nodes "$narrow" 2 'node[5-6]'
	[ "$(leaves "$wide")" -le 2 ]
	[ "$(leaves "$narrow")" = 1 ]
	steered_event "$wide" | grep -q "Switches=2@"
	steered_event "$narrow" | grep -q "Switches=1@"
	for j in "$wide" "$narrow"; do
		[ "$(job_field "$j" Restarts)" = 1 ]
		[ "$(journal_state "$j")" = DONE ]
	done
	no_migrate_drain
}
