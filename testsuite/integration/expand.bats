# onramp-cluster: --nodes 16 --racks 4
# Expansion campaigns (onrampctl expand) on a 16-node cluster in 4 racks of
# 4 (leaf1..leaf4). At MaxWaveFraction=0.2 a rack of 4 allows
# max(1, floor(0.8)) = 1 node per wave: the planner's floor of one node.

load helpers
load admission_helpers

setup() {
	require_cluster
}

count_reboots() {
	local c
	c=$(grep -c "reboot of" "$ONRAMP_REBOOT_LOG" 2>/dev/null)
	echo "${c:-0}"
}

status_json() {
	"$ONRAMPCTL" expand-status --name "$1" --json
}

# Sample Slurm every half second: per rack, how many nodes are rebooting or
# in their admission reservation. Writes the per-sample maximum to FILE.
start_sampler() {
	local file=$1
	(
		while :; do
			resv=$(scontrol -o show reservation 2>/dev/null | sed -n 's/^ReservationName=onramp_admission_\(node[0-9]*\) .*/\1/p')
			sinfo -h -N -o '%N %T %f' | sort -u | awk -v resv=" $(echo $resv) " '
				{ rk = ""; n = split($3, f, ","); for (i = 1; i <= n; i++) if (f[i] ~ /^rack/) rk = f[i]
				  if ($2 ~ /reboot/ || index(resv, " " $1 " ")) busy[rk]++ }
				END { m = 0; for (r in busy) if (busy[r] > m) m = busy[r]; print m }'
			sleep 0.5
		done
	) >"$file" 2>/dev/null &
	echo $!
}

@test "expand 12 nodes (3 per rack): waves of one node per rack, the low-NCCL node drained with its code, the rest admitted, cross-rack pairs cover every rack" {
	local nodes='node[1-3,5-7,9-11,13-15]' sampler json
	set_profile node6 low-nccl
	sampler=$(start_sampler "$BATS_TEST_TMPDIR/observed")
	run timeout 240 "$ONRAMPCTL" expand "$nodes" --name exp12 --min-pass-rate 0.75
	kill "$sampler"
	echo "$output"
	[ "$status" -eq 0 ]
	json=$(status_json exp12)
	echo "$json" | jq -c '.campaigns[0] | {state, counts, racks}'
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = done ]
	[ "$(echo "$json" | jq -r '.campaigns[0].waves | length')" -eq 3 ]
	# From the journal's timeline: never more than the rack cap in flight.
	[ "$(echo "$json" | jq '[.campaigns[0].racks[] | select(.max_in_flight > .cap)] | length')" -eq 0 ]
	[ "$(echo "$json" | jq '[.campaigns[0].racks[] | .cap] | max')" -eq 1 ]
	# From what Slurm showed while it ran.
	[ "$(sort -n "$BATS_TEST_TMPDIR/observed" | tail -1)" -le 1 ]
	# The failing node: drained with its code, recorded in the journal.
	drained_with node6 '^onramp:NCCL_BW_LOW: '
	[ "$(echo "$json" | jq -r '.campaigns[0].nodes_detail[] | select(.node == "node6") | .code')" = NCCL_BW_LOW ]
	[ "$(echo "$json" | jq -r '.campaigns[0].counts.admitted')" -eq 11 ]
	for n in node1 node2 node3 node5 node7 node9 node10 node11 node13 node14 node15; do
		admitted_idle "$n"
	done
	# Every node rebooted exactly once.
	[ "$(echo "$json" | jq '[.campaigns[0].nodes_detail[] | select(.reboots != 1)] | length')" -eq 0 ]
	# Cross-rack pairs: every rack covered by a passing pair.
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.network.racks_covered | length')" -eq 4 ]
	[ "$(echo "$json" | jq '[.campaigns[0].pairs[] | select(.rack == .peer_rack)] | length')" -eq 0 ]
	# The layered view names what blocks the node layer.
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.node.blocked_by[0]')" = "node6: NCCL_BW_LOW" ]
	run "$ONRAMPCTL" expand-status --name exp12
	echo "$output"
	[[ $output == *"layer platform"* ]]
	# Re-running the finished campaign reboots nothing.
	local before
	before=$(count_reboots)
	run "$ONRAMPCTL" expand "$nodes" --name exp12
	[ "$status" -eq 0 ]
	[ "$(count_reboots)" -eq "$before" ]
	clear_profile node6
	restore_nodes node6
}

@test "a wave below MinWavePassRate pauses the campaign; expand again after the fix resumes it; overlapping campaigns are refused" {
	set_profile node8 low-nccl
	run timeout 120 "$ONRAMPCTL" expand 'node[4,8,12,16]' --name exp4
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == *"paused"* ]]
	json=$(status_json exp4)
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = paused ]
	[[ $(echo "$json" | jq -r '.campaigns[0].status') == *"wave 1 pass rate 3/4"*"node8 NCCL_BW_LOW"* ]]
	drained_with node8 '^onramp:NCCL_BW_LOW: '
	# A node of the paused campaign cannot join another one.
	run "$ONRAMPCTL" expand node8 --name other
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"node8 (campaign exp4, paused)"* ]]
	# The admin fixes the node; the same command continues the campaign.
	clear_profile node8
	run timeout 120 "$ONRAMPCTL" expand 'node[4,8,12,16]' --name exp4
	echo "$output"
	[ "$status" -eq 0 ]
	json=$(status_json exp4)
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = done ]
	[ "$(echo "$json" | jq -r '.campaigns[0].counts.admitted')" -eq 4 ]
	# node8 was admitted on the boot of this campaign: rebooted once only.
	[ "$(echo "$json" | jq '[.campaigns[0].nodes_detail[] | select(.reboots != 1)] | length')" -eq 0 ]
	admitted_idle node8
}

@test "bad input is refused with a clear error: unknown nodes, fraction out of range, bad options" {
	run "$ONRAMPCTL" expand 'node[1,99]'
	[ "$status" -eq 2 ]
	[[ $output == *"unknown node(s): node99"* ]]
	for f in 0 1.5 -0.2 abc; do
		run "$ONRAMPCTL" expand node4 --wave-fraction "$f"
		echo "$output"
		[ "$status" -eq 2 ]
		[[ $output == *"out of range (0,1]"* ]]
	done
	run "$ONRAMPCTL" expand node4 --boot-timeout soon
	[ "$status" -eq 2 ]
	[[ $output == *"--boot-timeout must be a positive number"* ]]
	run "$ONRAMPCTL" expand
	[ "$status" -eq 2 ]
	[[ $output == *"no nodes given"* ]]
	run "$ONRAMPCTL" expand-status --name nosuch
	[ "$status" -eq 2 ]
	[[ $output == *"no campaign 'nosuch'"* ]]
}

# booted_count NODE FROM_LINE: "NODE booted" lines of reboot.log after line FROM_LINE.
booted_count() {
	tail -n +"$(($2 + 1))" "$ONRAMP_REBOOT_LOG" 2>/dev/null | grep -c " $1 booted:" || true
}

@test "killing onrampctl expand mid-wave and running it again completes the campaign without rebooting any node twice" {
	local nodes='node[1-2,5-6]' from pid i json
	from=$(wc -l <"$ONRAMP_REBOOT_LOG" 2>/dev/null || echo 0)
	# Its own process group, so the kill takes the whole orchestration.
	setsid "$ONRAMPCTL" expand "$nodes" --name expkill >"$BATS_TEST_TMPDIR/first.log" 2>&1 &
	pid=$!
	# Wave 1 is node1 and node5 (one per rack): kill once both reboots were issued.
	for i in $(seq 1 120); do
		if tail -n +"$((from + 1))" "$ONRAMP_REBOOT_LOG" 2>/dev/null | grep -q "reboot of node1:" &&
			tail -n +"$((from + 1))" "$ONRAMP_REBOOT_LOG" | grep -q "reboot of node5:"; then
			break
		fi
		sleep 0.5
	done
	kill -KILL -- "-$pid"
	wait "$pid" || true
	cat "$BATS_TEST_TMPDIR/first.log"
	[ "$(status_json expkill | jq -r '.campaigns[0].state')" = running ]
	run timeout 240 "$ONRAMPCTL" expand "$nodes" --name expkill
	echo "$output"
	[ "$status" -eq 0 ]
	json=$(status_json expkill)
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = done ]
	[ "$(echo "$json" | jq -r '.campaigns[0].counts.admitted')" -eq 4 ]
	[ "$(echo "$json" | jq '[.campaigns[0].nodes_detail[] | select(.reboots != 1)] | length')" -eq 0 ]
	# What the emulated hardware saw: each node booted exactly once.
	for n in node1 node2 node5 node6; do
		echo "$n booted $(booted_count "$n" "$from") time(s)"
		[ "$(booted_count "$n" "$from")" -eq 1 ]
		admitted_idle "$n"
	done
}
