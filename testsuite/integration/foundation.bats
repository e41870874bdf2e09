#!/usr/bin/env bats
# Foundation tests: the local test cluster (testsuite/cluster) behaves like a
# real Slurm cluster for what the onramp tests need: nodes, multi-node jobs,
# an unprivileged user, and emulated reboots.
#
# Needs a running cluster: testsuite/cluster/onramp-cluster start

load helpers

setup() {
	require_cluster
}

@test "all configured nodes are idle in sinfo" {
	local nodes
	nodes=$(cluster_param NODES)
	[[ $nodes =~ ^[0-9]+$ ]]
	[[ $nodes == "$ONRAMP_CLUSTER_NODES" ]]
	# Earlier tests may still be finishing jobs or reboots: allow them to settle.
	wait_for 60 "all $nodes nodes to be idle (now $(idle_node_count))" all_nodes_idle

	run sinfo -h -N -p batch -o '%N %t %f'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq "$nodes" ]
	local i
	for ((i = 1; i <= nodes; i++)); do
		echo "$output" | grep -qE "^node$i idle ([a-z_]+,)*rack[0-9]+(,[a-z_]+)*$"
	done
	# node1 is in rack1, the last node in the last rack.
	echo "$output" | grep -qE "^node1 idle ([a-z_]+,)*rack1(,[a-z_]+)*$"
	echo "$output" | grep -qE "^node$nodes idle ([a-z_]+,)*rack$ONRAMP_CLUSTER_RACKS(,[a-z_]+)*$"
}

@test "a two-node job runs on two distinct nodes and completes" {
	local job out
	out=$ONRAMP_JOBS_DIR/foundation-two-node-$$.out
	rm -f "$out"
	# shellcheck disable=SC2016 # expanded by the job, not here
	job=$(submit -N2 --ntasks-per-node=1 -o "$out" \
		--wrap 'srun bash -c "echo task \$SLURM_PROCID on \$SLURMD_NODENAME"')
	submit_wait "$job" COMPLETED 60
	[ "$(job_field "$job" ExitCode)" = "0:0" ]

	run cat "$out"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	local -a ran_on=()
	mapfile -t ran_on < <(sed -nE 's/^task [01] on (node[0-9]+)$/\1/p' "$out" | sort)
	[ "${#ran_on[@]}" -eq 2 ]
	[ "${ran_on[0]}" != "${ran_on[1]}" ]
	# ... and those are the nodes Slurm allocated.
	local -a allocated=()
	mapfile -t allocated < <(expand_hostlist "$(job_field "$job" NodeList)" | sort)
	[ "${allocated[*]}" = "${ran_on[*]}" ]
}

@test "an unprivileged user can run jobs but not drain nodes" {
	local job out
	out=$ONRAMP_JOBS_DIR/foundation-user-$$.out
	rm -f "$out"
	run as_user sbatch --parsable -o "$out" --wrap 'id -un; srun hostname >/dev/null && echo step-ok'
	[ "$status" -eq 0 ]
	job=${output%%;*}
	[[ $job =~ ^[0-9]+$ ]]
	submit_wait "$job" COMPLETED 60
	[[ $(job_field "$job" UserId) == "$ONRAMP_CLUSTER_USER("* ]]
	run cat "$out"
	[ "${lines[0]}" = "$ONRAMP_CLUSTER_USER" ]
	[ "${lines[1]}" = step-ok ]

	local before
	before=$(node_state node1)
	run as_user scontrol update nodename=node1 state=drain reason=onramp-foundation-should-fail
	[ "$status" -ne 0 ]
	echo "$output" | grep -qiE 'invalid user id|permission denied|access.*denied'
	[[ $(node_state node1) != *DRAIN* || $before == *DRAIN* ]]
}

@test "scontrol reboot goes through REBOOT, brings the node back idle with a new boot time and boot_id" {
	((ONRAMP_CLUSTER_NODES >= 3)) || skip "needs at least 3 nodes"
	local node=node3 boot_before id_before state seen_reboot=0 deadline t0 log_off
	wait_for 60 "$node to be idle" node_is_idle "$node"
	boot_before=$(node_boot_epoch "$node")
	id_before=$(node_boot_id "$node")
	log_off=$(log_offset "$ONRAMP_REBOOT_LOG")
	# BootTime has one-second resolution.
	if (($(date +%s) <= boot_before + 1)); then
		sleep 2
	fi

	t0=$SECONDS
	run scontrol reboot ASAP nextstate=RESUME reason=onramp-test "$node"
	[ "$status" -eq 0 ]

	deadline=$((SECONDS + 90))
	while :; do
		state=$(node_state "$node")
		[[ $state == *REBOOT* ]] && seen_reboot=1
		if ((seen_reboot)) && [[ $state == IDLE ]]; then
			break
		fi
		if ((SECONDS >= deadline)); then
			echo "timed out after 90s: $node is '$state' (seen REBOOT state: $seen_reboot)" >&2
			scontrol show node "$node" >&2
			tail -n 20 "$ONRAMP_REBOOT_LOG" >&2 || true
			false
		fi
		sleep 0.1
	done
	echo "# reboot round trip: $((SECONDS - t0))s" >&3

	(($(node_boot_epoch "$node") > boot_before))
	[ "$(node_boot_id "$node")" != "$id_before" ]
	[[ $(node_boot_id "$node") =~ ^[0-9a-f-]{36}$ ]]
	# The emulated reboot logs once the new slurmd runs (possibly after
	# the node was first seen IDLE again).
	wait_for 30 "the reboot log to show $node booted" \
		log_since_has "$ONRAMP_REBOOT_LOG" "$log_off" "$node booted: slurmd -N $node -b"
	# The node is usable again.
	local job
	# (With onramp wired in, after its admission releases it.)
	job=$(submit -w "$node" -o /dev/null --wrap true)
	submit_wait "$job" COMPLETED 120
}
