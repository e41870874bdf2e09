# onramp-cluster: --nodes 16 --racks 4
# Expansion campaigns (onrampctl expand) on a 16-node cluster in 4 racks of
# 4 (leaf1..leaf4). At MaxWaveFraction=0.2 a rack of 4 allows
# max(1, floor(0.8)) = 1 node per wave: the planner's floor of one node.

load helpers
load admission_helpers

METRICS=$ONRAMP_REPO/contrib/tools/onramp-metrics
CONF=$ONRAMP_CLUSTER_DIR/etc/onramp.conf

# conf_set KEY VALUE / conf_unset KEY: edit the cluster's onramp.conf.
conf_unset() {
	sed -i "/^$1=/d" "$CONF"
}
conf_set() {
	conf_unset "$1"
	echo "$1=$2" >>"$CONF"
}

# The operations layer's setup for the whole file: onramp's exporter on its
# own port, the alert rules where AlertRulesFile says, and a textfile
# directory that the tests fill as a site's cron would.
setup_file() {
	cp "$CONF" "$BATS_FILE_TMPDIR/onramp.conf.orig"
	local port=$(($(cluster_param CTLD_PORT) + 1))
	mkdir -p "$BATS_FILE_TMPDIR/textfiles"
	conf_set MetricsListen "127.0.0.1:$port"
	conf_set AlertRulesFile "$ONRAMP_REPO/contrib/prometheus/onramp-rules.yml"
	conf_set MetricsTextfileDir "$BATS_FILE_TMPDIR/textfiles"
	"$METRICS" serve --listen "127.0.0.1:$port" >"$BATS_FILE_TMPDIR/exporter.log" 2>&1 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/exporter.pid"
}

teardown_file() {
	kill "$(cat "$BATS_FILE_TMPDIR/exporter.pid")" 2>/dev/null || true
	put_back "$BATS_FILE_TMPDIR/onramp.conf.orig" "$CONF"
}

setup() {
	require_cluster
}

# faulty NODE...: the test gives NODE a fault (a profile, a slow boot); if
# the test fails before it undoes that, teardown does: the node gets its
# healthy profile and is admitted again, so no later test inherits it.
faulty() {
	printf '%s\n' "$@" >>"$BATS_TEST_TMPDIR/faulty"
}

teardown() {
	[[ -z ${BATS_TEST_COMPLETED:-} && -f $BATS_TEST_TMPDIR/faulty ]] || return 0
	rm -f "$ONRAMP_CLUSTER_DIR/etc/reboot-hook"
	restore_nodes "$(paste -sd, "$BATS_TEST_TMPDIR/faulty")"
}

# write_textfiles HOSTLIST: each node's onramp-<node>.prom, as cron would.
write_textfiles() {
	local n
	for n in $(expand_hostlist "$1"); do
		"$METRICS" node --node "$n" --textfile-dir "$BATS_FILE_TMPDIR/textfiles"
	done
}

report_json() {
	"$ONRAMPCTL" report --name "$1" --json
}

count_reboots() {
	local c
	c=$(grep -c "reboot of" "$ONRAMP_REBOOT_LOG" 2>/dev/null)
	echo "${c:-0}"
}

status_json() {
	"$ONRAMPCTL" expand-status --name "$1" --json
}

# admission_resv_nodes: the nodes that have an onramp admission reservation.
admission_resv_nodes() {
	scontrol -o show reservation 2>/dev/null | sed -n 's/^ReservationName=onramp_admission_\(node[0-9]*\) .*/\1/p'
}

# Sample Slurm every half second: per rack, how many nodes are rebooting or
# in their admission reservation. Writes the per-sample maximum to FILE.
# The node table and the reservations are two calls, not one snapshot: a
# node counts as reserved when its reservation is there before and after
# the node table was read (a campaign reserves a node once, so it was
# reserved in between); a reservation read before the table alone can be
# one that ended meanwhile, beside the next wave's reboot.
start_sampler() {
	local file=$1
	(
		while :; do
			before=$(admission_resv_nodes | tr '\n' ' ')
			table=$(sinfo -h -N -o '%N %T %f' | sort -u)
			after=$(admission_resv_nodes | tr '\n' ' ')
			awk -v before=" $before" -v after=" $after" '
				{ rk = ""; n = split($3, f, ","); for (i = 1; i <= n; i++) if (f[i] ~ /^rack/) rk = f[i]
				  if ($2 ~ /reboot/ || (index(before, " " $1 " ") && index(after, " " $1 " "))) busy[rk]++ }
				END { m = 0; for (r in busy) if (busy[r] > m) m = busy[r]; print m }' <<<"$table"
			sleep 0.5
		done
	) >"$file" 2>/dev/null &
	echo $!
}

@test "expand 12 nodes (3 per rack): waves of one node per rack, the low-NCCL node drained with its code, the rest admitted, cross-rack pairs cover every rack" {
	local nodes='node[1-3,5-7,9-11,13-15]' sampler json
	set_profile node6 low-nccl
	faulty node6
	sampler=$(start_sampler "$BATS_TEST_TMPDIR/observed")
	run timeout 300 "$ONRAMPCTL" expand "$nodes" --name exp12 --min-pass-rate 0.75
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
	# Each node's timeline carries its checks, from this campaign's admission.
	[ "$(echo "$json" | jq -r '.campaigns[0].nodes_detail[] | select(.node == "node6") | .admission.checks[] | select(.status == "FAIL") | .code')" = NCCL_BW_LOW ]
	[ "$(echo "$json" | jq -r '.campaigns[0].nodes_detail[] | select(.node == "node1") | .admission.status')" = PASS ]
	[ "$(echo "$json" | jq '[.campaigns[0].nodes_detail[] | select(.node == "node1") | .admission.checks[] | select(.status == "PASS")] | length')" -ge 7 ]
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
	[[ $output == *"checks done@"*"inventory=PASS("* ]]
	# The report: five layers for the campaign, each rack and each wave.
	json=$(report_json exp12)
	[ "$(echo "$json" | jq -c '.campaigns[0].layers | keys')" = '["application","network","node","operations","platform"]' ]
	[ "$(echo "$json" | jq -c '[.campaigns[0].racks[].layers | keys | length] | unique')" = '[5]' ]
	[ "$(echo "$json" | jq -c '[.campaigns[0].waves[].layers | keys | length] | unique')" = '[5]' ]
	# Application: a smoke job per rack, each passed on the rack's admitted new nodes.
	echo "$json" | jq -c '.campaigns[0].racks[] | {rack, smoke, application: .layers.application}'
	[ "$(echo "$json" | jq '[.campaigns[0].racks[] | select(.smoke.result == "pass" and .layers.application.ok == true)] | length')" -eq 4 ]
	[ "$(echo "$json" | jq -r '.campaigns[0].racks[] | select(.rack == "leaf2") | .smoke.nodes')" = 'node[5,7]' ]
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.application.ok')" = true ]
	# Network and platform hold; the node layer is blocked by node6 in its
	# rack and its wave only.
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.network.ok')" = true ]
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.platform.ok')" = true ]
	[ "$(echo "$json" | jq -r '.campaigns[0].racks[] | select(.rack == "leaf2") | .layers.node.blocked_by[0]')" = "node6: NCCL_BW_LOW" ]
	[ "$(echo "$json" | jq -r '.campaigns[0].racks[] | select(.rack == "leaf1") | .layers.node.ok')" = true ]
	[ "$(echo "$json" | jq '[.campaigns[0].waves[] | select(.layers.node.ok == false)] | length')" -eq 1 ]
	# Operations: exporter and rules are there, but no node textfile yet.
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.operations.ok')" = false ]
	[[ $(echo "$json" | jq -r '.campaigns[0].layers.operations.blocked_by[]') == *"node1: no onramp-node1.prom in $BATS_FILE_TMPDIR/textfiles"* ]]
	[ "$(echo "$json" | jq '[.campaigns[0].layers.operations.blocked_by[] | select(test("exporter|alert rules"))] | length')" -eq 0 ]
	write_textfiles "$nodes"
	json=$(report_json exp12)
	echo "$json" | jq -c '.campaigns[0].layers.operations'
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.operations.ok')" = true ]
	run "$ONRAMPCTL" report --name exp12
	echo "$output"
	[ "$status" -eq 0 ]
	for l in node network platform application operations; do
		[[ $output == *"  $l "* ]]
	done
	[[ $output == *"smoke leaf1: pass"* ]]
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
	faulty node8
	run timeout 120 "$ONRAMPCTL" expand 'node[4,8,12,16]' --name exp4
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == *"paused"* ]]
	json=$(status_json exp4)
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = "paused" ]
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

@test "a rack whose smoke job fails blocks its application layer and pauses the campaign; expand again after the fix finishes it" {
	local json smoke=$BATS_FILE_TMPDIR/smoke.sh
	# The site's smoke test, run by srun on each new node of a rack: it
	# fails on node8 (rack leaf2).
	cat >"$smoke" <<'EOS'
#!/bin/sh
if [ "$SLURMD_NODENAME" = node8 ]; then
	echo "node8: smoke test failed"
	exit 1
fi
echo "$SLURMD_NODENAME ok"
EOS
	chmod 0755 "$smoke"
	conf_set ExpandSmokeCommand "$smoke"
	run timeout 200 "$ONRAMPCTL" expand 'node[4,8]' --name expsmoke
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == *"smoke job failed on rack leaf2"* ]]
	json=$(report_json expsmoke)
	echo "$json" | jq -c '.campaigns[0] | {state, status, layers}'
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = "paused" ]
	# Both nodes were admitted: only the application layer of leaf2 is blocked.
	[ "$(echo "$json" | jq -r '.campaigns[0].counts.admitted')" -eq 2 ]
	[ "$(echo "$json" | jq -r '.campaigns[0].racks[] | select(.rack == "leaf1") | .layers.application.ok')" = true ]
	[ "$(echo "$json" | jq -r '.campaigns[0].racks[] | select(.rack == "leaf2") | .layers.application.ok')" = false ]
	[[ $(echo "$json" | jq -r '.campaigns[0].racks[] | select(.rack == "leaf2") | .layers.application.blocked_by[0]') == "rack leaf2: smoke job "*" on node8 failed: srun exit 1 (node8: task 0: "*"); last output: 0: node8: smoke test failed" ]]
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.application.ok')" = false ]
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.node.ok')" = true ]
	[ "$(echo "$json" | jq -r '.campaigns[0].racks[] | select(.rack == "leaf2") | .layers.platform.ok')" = true ]
	run "$ONRAMPCTL" report --name expsmoke
	echo "$output"
	[[ $output == *"application blocked: rack leaf2: smoke job"* ]]
	[[ $(echo "$output" | grep '^  application ') == *BLOCKED* ]]
	# The admin fixes the application; expand again re-runs leaf2's smoke job only.
	conf_unset ExpandSmokeCommand
	run timeout 120 "$ONRAMPCTL" expand 'node[4,8]' --name expsmoke
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"rack leaf2: smoke job"* ]]
	[[ $output != *"rack leaf1: smoke job"* ]]
	json=$(report_json expsmoke)
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = "done" ]
	[ "$(echo "$json" | jq -r '.campaigns[0].layers.application.ok')" = true ]
	[ "$(echo "$json" | jq '[.campaigns[0].nodes_detail[] | select(.reboots != 1)] | length')" -eq 0 ]
}

@test "a node not back within --boot-timeout is drained with BOOT_TIMEOUT and pauses its wave" {
	local hook=$ONRAMP_CLUSTER_DIR/etc/reboot-hook from json
	from=$(wc -l <"$ONRAMP_REBOOT_LOG" 2>/dev/null || echo 0)
	# The emulated hardware hangs 40 s in node12's boot (firmware, say).
	printf '#!/bin/sh\n[ "$1" = node12 ] && sleep 40\nexit 0\n' >"$hook"
	faulty node12
	chmod 0755 "$hook"
	run timeout 120 "$ONRAMPCTL" expand 'node[12,16]' --name expboot --boot-timeout 8
	echo "$output"
	[ "$status" -eq 3 ]
	drained_with node12 '^onramp:BOOT_TIMEOUT: expand expboot wave 1: not back 8s after reboot'
	json=$(status_json expboot)
	[ "$(echo "$json" | jq -r '.campaigns[0].state')" = paused ]
	[ "$(echo "$json" | jq -r '.campaigns[0].nodes_detail[] | select(.node == "node12") | .state + " " + .code')" = "boot_timeout BOOT_TIMEOUT" ]
	[ "$(echo "$json" | jq -r '.campaigns[0].nodes_detail[] | select(.node == "node16") | .state')" = admitted ]
	rm -f "$hook"
	wait_for 60 "node12 to finish its slow boot" eval '[ "$(booted_count node12 "$from")" -ge 1 ]'
	restore_nodes node12
}

@test "bad input is refused with a clear error: unknown nodes, fraction out of range, bad options" {
	run "$ONRAMPCTL" expand 'node[1,99]'
	[ "$status" -eq 2 ]
	[[ $output == *"unknown node(s): node99"* ]]
	# Every unknown node is named; what onrampctl-expand reads (libslurm's
	# hostlist functions and node table, with jq).
	run "$ONRAMPCTL" expand 'node[98-99,1]'
	[ "$status" -eq 2 ]
	[[ $output == *"unknown node(s): node98 node99"* ]]
	run "$ONRAMP_REPO/contrib/tools/onramp-campaign" nodes 'node[2,1,98-99],node1' --json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.hostlist + " " + (.nodes | join(",")) + " " + (.unknown | join(","))' <<<"$output")" = \
		"node[1-2,98-99] node2,node1,node98,node99 node98,node99" ]
	for bad in 'node[1-99999999]' 'node[' 'node;id'; do
		run "$ONRAMPCTL" expand "$bad"
		echo "$output"
		[ "$status" -eq 2 ]
		[[ $output == *"bad hostlist '$bad'"* ]]
	done
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

@test "the planner reads racks from the topology.conf that ONRAMP_TOPOLOGY_CONF names, continuation lines joined" {
	local topo=$BATS_TEST_TMPDIR/topology.conf db=$BATS_TEST_TMPDIR/campaign.db
	printf 'SwitchName=leafA \\\n  Nodes=node[1-2]\nSwitchName=leafB Nodes=node3,\\\nnode4\nSwitchName=top Switches=leaf[A-B]\n' >"$topo"
	run env ONRAMP_TOPOLOGY_CONF="$topo" "$ONRAMP_REPO/contrib/tools/onramp-campaign" --db "$db" \
		plan --id t1 --nodes 'node[5-6]' --fraction 0.5 --min-pass 1 --boot-timeout 60
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"unknown node(s) node[5-6]"* ]]
	run env ONRAMP_TOPOLOGY_CONF="$topo" "$ONRAMP_REPO/contrib/tools/onramp-campaign" --db "$db" \
		plan --id t2 --nodes 'node[1-4]' --fraction 0.5 --min-pass 1 --boot-timeout 60
	echo "$output"
	[ "$status" -eq 0 ]
	run env ONRAMP_TOPOLOGY_CONF="$topo" "$ONRAMP_REPO/contrib/tools/onramp-campaign" --db "$db" wave --id t2
	echo "$output"
	[[ $output == "wave 1"* ]]
	# one node per rack of two at 0.5: node1 (leafA) and node3 (leafB)
	[ "$(echo "$output" | sed 1d | wc -l)" -eq 2 ]
	# what onrampctl-expand reads (with jq)
	run env ONRAMP_TOPOLOGY_CONF="$topo" "$ONRAMP_REPO/contrib/tools/onramp-campaign" --db "$db" wave --id t2 --json
	echo "$output"
	jq -e '.wave == 1 and ([.nodes[].node] | sort) == ["node1", "node3"]' <<<"$output"
}

@test "onramp-campaign refuses numbers that are not integers instead of truncating them" {
	local db=$BATS_TEST_TMPDIR/campaign.db camp=$ONRAMP_REPO/contrib/tools/onramp-campaign
	"$camp" --db "$db" plan --id n1 --nodes node1 --fraction 0.5 --min-pass 1 --boot-timeout 60
	for w in 1.9 1e0 1, 99999999999 " 1" ""; do
		run "$camp" --db "$db" open-wave --id n1 --wave "$w"
		echo "$w: $output"
		[ "$status" -eq 2 ]
		[[ $output == *"--wave: '$w' is "* ]]
	done
	run "$camp" --db "$db" plan --id n2 --nodes node2 --fraction 0.5 --min-pass 1 --boot-timeout 60.5
	[ "$status" -eq 2 ]
	[[ $output == *"not an integer"* ]]
	run "$camp" --db "$db" open-wave --id n1 --wave 1
	[ "$status" -eq 0 ]
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

# host_conf NAME: an onramp.conf for admin host NAME (a high-availability
# controller pair on one machine): the cluster's, with its own StateDir
# (the journal on its "local disk") and the one SharedStateDir both use.
host_conf() {
	sed "s|^StateDir=.*|StateDir=$BATS_TEST_TMPDIR/$1|" "$CONF" >"$BATS_TEST_TMPDIR/$1.conf"
	printf 'SharedStateDir=%s\nLeaseSeconds=20\n' "$BATS_TEST_TMPDIR/shared" >>"$BATS_TEST_TMPDIR/$1.conf"
}

# on HOST CMD...: CMD run as admin host HOST (ONRAMP_LEASE_HOST names it in
# its lease: both hosts share one kernel, boot id and host name here), with
# the cluster's topology.conf (not one beside HOST's onramp.conf).
on() {
	local host=$1
	shift
	ONRAMP_CONF=$BATS_TEST_TMPDIR/$host.conf ONRAMP_LEASE_HOST=$host \
		ONRAMP_TOPOLOGY_CONF=$ONRAMP_CLUSTER_DIR/etc/topology.conf "$@"
}

@test "a campaign whose driver died on admin host A is resumed on host B from SharedStateDir once A's lease expired, no node rebooted twice" {
	local nodes='node[3,7]' from pid i json lease=$BATS_TEST_TMPDIR/shared/onramp.db.lease
	mkdir -m 0700 "$BATS_TEST_TMPDIR/shared"
	host_conf hostA
	host_conf hostB
	faulty node3 node7
	from=$(wc -l <"$ONRAMP_REBOOT_LOG" 2>/dev/null || echo 0)
	# Its own process group (setsid: pid and group), so the kill takes the
	# whole orchestration.
	# Its own session (setsid: pid, group and session), so the kill takes
	# the whole orchestration.
	ONRAMP_CONF=$BATS_TEST_TMPDIR/hostA.conf ONRAMP_LEASE_HOST=hostA \
		ONRAMP_TOPOLOGY_CONF=$ONRAMP_CLUSTER_DIR/etc/topology.conf \
		setsid "$ONRAMPCTL" expand "$nodes" --name expha >"$BATS_TEST_TMPDIR/hostA.log" 2>&1 &
	pid=$!
	# One wave (one node per rack): host A dies once both reboots were issued.
	if ! wait_for 120 "the reboots of node3 and node7" eval \
		"tail -n +$((from + 1)) $ONRAMP_REBOOT_LOG 2>/dev/null | grep -q 'reboot of node3:' &&
		 tail -n +$((from + 1)) $ONRAMP_REBOOT_LOG | grep -q 'reboot of node7:'"; then
		cat "$BATS_TEST_TMPDIR/hostA.log"
		false
	fi
	kill -KILL -- "-$pid"
	wait "$pid" || true
	cat "$BATS_TEST_TMPDIR/hostA.log"
	[ "$(jq -r .host "$lease")" = hostA ]
	# Host B while A's lease is live: refused, naming A, its journal untouched.
	run on hostB "$ONRAMPCTL" expand "$nodes" --name expha
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"onramp.db.lease: held by hostA"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/hostB/onramp.db" ]
	# Once it expired, B imports A's last copy and finishes the campaign.
	wait_for 60 "host A's lease to expire" eval \
		"[[ ! -e $lease ]] || ((\$(date +%s) > \$(jq -r .expires $lease) + 2))"
	run on hostB timeout 240 "$ONRAMPCTL" expand "$nodes" --name expha
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"taking over the lease of hostA"* ]]
	json=$(on hostB "$ONRAMPCTL" expand-status --name expha --json)
	[ "$(jq -r '.campaigns[0].state' <<<"$json")" = done ]
	[ "$(jq -r '.campaigns[0].counts.admitted' <<<"$json")" -eq 2 ]
	[ "$(jq '[.campaigns[0].nodes_detail[] | select(.reboots != 1)] | length' <<<"$json")" -eq 0 ]
	for n in node3 node7; do
		echo "$n booted $(booted_count "$n" "$from") time(s)"
		[ "$(booted_count "$n" "$from")" -eq 1 ]
		admitted_idle "$n"
	done
	rm -f "$BATS_TEST_TMPDIR/faulty"
}
