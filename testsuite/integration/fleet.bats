#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4
# Fleet intelligence on the live cluster (simulated backend): a node judged
# against its own fleet (SLOW_*), and slow pairs blamed on the node, the
# leaf's uplinks or the spine that makes them slow (onrampctl diagnose,
# probe). Four leaves of two nodes under two spines (a fabric file; leaf4
# reaches spine-a only);
# link-level faults come from <SimProfileDir>/fabric-faults.json.

load helpers
load admission_helpers

FLEET_DIR=$ONRAMP_CLUSTER_DIR/onramp/fleet

setup_file() {
	require_cluster
	onramp_conf_save
	cat >"$ONRAMP_CLUSTER_DIR/fleet-fabric.json" <<EOT
{"spines": ["spine-a", "spine-b"],
 "uplinks": [
$(for l in 1 2 3 4; do
	for s in a b; do
		[[ $l$s == 4b ]] && continue # leaf4 hangs off spine-a alone
		echo "  {\"leaf\": \"leaf$l\", \"spine\": \"spine-$s\", \"links\": 4, \"speed_gbps\": 400},"
	done
done | sed '$ s/,$//')
 ]}
EOT
	echo "FabricFile=$ONRAMP_CLUSTER_DIR/fleet-fabric.json" >>"$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
}

teardown_file() {
	rm -f "$ONRAMP_PROFILES/fabric-faults.json"
	onramp_conf_restore
}

setup() {
	require_cluster
	rm -f "$FLEET_DIR/probe/results.json"
}

# link_fault JSON-MEMBERS: slow every pair through the named components.
link_fault() {
	echo "{\"topology\": \"$ONRAMP_CLUSTER_DIR/etc/topology.conf\", \"fabric\": \"$ONRAMP_CLUSTER_DIR/fleet-fabric.json\", $1}" \
		>"$ONRAMP_PROFILES/fabric-faults.json"
}
# record NODE JQ: a field of NODE's admission record.
record() {
	jq -r "$2" "$ONRAMP_CLUSTER_DIR/nodes/$1/onramp/admission.json"
}
# probe_blames KIND NAME: onrampctl probe names KIND NAME first, and no node
# unless KIND is node.
probe_blames() {
	run "$ONRAMPCTL" probe --json
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(jq -r '.suspects[0].kind + " " + .suspects[0].name' <<<"$output")" = "$1 $2" ]
	[[ $1 == node ]] || [ "$(jq '[.suspects[] | select(.kind == "node")] | length' <<<"$output")" -eq 0 ]
}
set_conf() {
	sed -i "/^$1=/d" "$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
	echo "$1=$2" >>"$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
	onramp_conf_ship
}

@test "probe, diagnose and spine-check are refused to a user, as admit is" {
	for cmd in probe diagnose "spine-check --leaves leaf1,leaf2"; do
		# shellcheck disable=SC2086 # the command's words
		run as_user "$ONRAMPCTL" $cmd
		echo "$output"
		[ "$status" -eq 2 ]
		[[ $output == *"only root or SlurmUser"* ]]
	done
	[ ! -e "$FLEET_DIR/probe/results.json" ]
}

@test "with too few admissions in the fleet only the floor applies, and the record says so" {
	set_conf FleetMinSamples 100
	set_profile node2 slow-membw
	run "$ONRAMPCTL" admit node2
	echo "$output"
	[ "$status" -eq 0 ]
	admitted_idle node2
	[ "$(record node2 .code)" = OK ]
	[[ $(record node2 '.verdict.checks[] | select(.name == "mem_bw") | .detail') == *"needs 100 samples, has "*": only the absolute floor applied"* ]]
	clear_profile node2
}

@test "a node at 93% of the fleet's memory bandwidth, above the floor, is admitted with SLOW_MEMBW and the fleet figures" {
	set_conf FleetMinSamples 4
	# Every other node has an admission on record from bring-up.
	[ "$(find "$FLEET_DIR" -maxdepth 1 -name 'node*.json' | wc -l)" -ge 5 ]
	set_profile node2 slow-membw
	run "$ONRAMPCTL" admit node2
	echo "$output"
	[ "$status" -eq 0 ]
	admitted_idle node2
	[ "$(record node2 .status)" = PASS ]
	[ "$(record node2 .code)" = SLOW_MEMBW ]
	[[ $(record node2 .detail) == *"fleet median"*"93% of it"*"FleetSlowAction=warn"* ]]
	[ "$(record node2 '.verdict.checks[] | select(.name == "mem_bw") | .data.fleet.outcome')" = SLOW ]
	# Its own history keeps both admissions.
	[ "$(jq '[.[] | select(.code == "SLOW_MEMBW")] | length' "$FLEET_DIR/node2.json")" -ge 1 ]
	clear_profile node2
}

@test "a degraded leaf uplink is blamed on the link, and none of the leaf's nodes is drained" {
	link_fault '"uplinks": {"leaf2": 0.5}'
	probe_blames uplink leaf2
	run "$ONRAMPCTL" diagnose
	echo "$output"
	[[ $output == *"uplink leaf2"* ]]
	# Admitted together, each is the other's busy peer (tried last): both
	# meet peers across the degraded uplinks only, and fail the pair floor
	# with two of them, which alone would drain them (PAIR_BW_LOW).
	run "$ONRAMPCTL" admit 'node[3-4]'
	echo "$output"
	for n in node3 node4; do
		admitted_idle "$n"
		[[ $(node_state "$n") != *DRAIN* ]]
		[ "$(record "$n" .code)" = PAIR_LINK_FAULT ]
		[[ $(record "$n" .detail) == *"blamed on the fabric, not the node: uplink leaf2"* ]]
	done
	rm -f "$ONRAMP_PROFILES/fabric-faults.json"
}

@test "a degraded spine is blamed on the spine" {
	link_fault '"spines": {"spine-b": 0.5}'
	probe_blames spine spine-b
	rm -f "$ONRAMP_PROFILES/fabric-faults.json"
}

@test "a node slow with every peer, its own leaf's included, is still blamed on itself and drained" {
	set_profile node5 bad-peer
	probe_blames node node5
	run "$ONRAMPCTL" admit node5
	echo "$output"
	wait_for 60 "node5 drained" drained_with node5 '^onramp:PAIR_BW_LOW: '
	[[ $(record node5 .detail) == *"localiser: node node5"* ]]
	restore_nodes node5
}

@test "spine-check names a spine whose loss cuts a job's leaves apart" {
	run "$ONRAMPCTL" spine-check --leaves leaf1,leaf2
	[ "$status" -eq 0 ]
	[[ $output == *"no single spine's loss cuts them apart"* ]]
	local job
	job=$(as_user sbatch --parsable -N 2 -w node1,node7 -o /dev/null --wrap 'sleep 30')
	wait_for 30 "job $job running" eval "[[ \$(job_state $job) == RUNNING ]]"
	run "$ONRAMPCTL" spine-check --json "$job"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(jq -r '.leaves | join(",")' <<<"$output")" = leaf1,leaf4 ]
	[ "$(jq -r '.cuts[0].spine + " " + .cuts[0].apart[0]' <<<"$output")" = "spine-a leaf1|leaf4" ]
	scancel "$job"
}
