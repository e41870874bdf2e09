#!/usr/bin/env bats
# GPU and fabric depth on the live cluster (simulated GPU backend): the
# gpu_depth check and the fabric's port error counters drain a node with
# their code and name the part (GPU index, HCA, port); a part NVML cannot
# read leaves the check unmeasured (INCONCLUSIVE_GPU_DEPTH), never passed. The healthy nodes were
# admitted at bring-up with the same checks (SIM-8GPU has gpu_depth).

load helpers
load admission_helpers
bats_require_minimum_version 1.5.0

setup() {
	require_cluster
}

@test "bring-up ran gpu_depth on every node and passed it" {
	local rec=$ONRAMP_CLUSTER_DIR/nodes/node1/onramp/admission.json
	[ "$(record_field node1 status)" = PASS ]
	run jq -r '.verdict.checks[] | select(.name == "gpu_depth") | .status' "$rec"
	echo "$output"
	[ "$output" = PASS ]
	# The fabric check recorded each port's counters for the next admission.
	run jq -r '.verdict.checks[] | select(.name == "fabric") | .data.ports[0].counters.link_downed' "$rec"
	[ "$output" = 2 ]
}

@test "throttled GPU, degraded HCA link and port errors end drained naming the part; an unreadable NVML part leaves the node fenced INCONCLUSIVE" {
	local conf=$ONRAMP_CLUSTER_DIR/etc/onramp.conf
	# One retry, 1 s after the first try.
	cp -p "$conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
	{ cat "$conf" && printf 'CheckRetries=1\nCheckRetryBackoff=1\n'; } >"$conf.new"
	mv "$conf.new" "$conf"
	set_profile node5 gpu-throttled
	set_profile node6 pcie-degraded
	set_profile node7 port-errors
	set_profile node8 nvml-partial
	reboot_nodes 'node[5-8]'
	wait_for 120 "node5 drained" drained_with node5 '^onramp:GPU_THROTTLED: gpu_depth: GPU 3 \(0000:[0-9a-f:.]+\) throttled under load: sw_thermal'
	wait_for 60 "node6 drained" drained_with node6 '^onramp:PCIE_DEGRADED: gpu_depth: mlx5_5 PCIe Gen5 x8 .*x8 < x16'
	wait_for 60 "node7 drained" drained_with node7 '^onramp:PORT_ERRORS: fabric: mlx5_2 port 1 symbol_error \+5000'
	# Could not measure, twice: neither admitted nor drained.
	wait_for 90 "node8 recorded INCONCLUSIVE" eval '[ "$(record_field node8 status)" = INCONCLUSIVE ]'
	[ "$(record_field node8 code)" = INCONCLUSIVE_GPU_DEPTH ]
	[[ $(record_field node8 detail) == *"not measured: GPU 6 "*"power"*"(unmeasured after 2 tries)"* ]]
	[[ $(node_state node8) != *DRAIN* ]]
	resv_exists node8
	for n in node5 node6 node7 node8; do
		run ! node_admitted "$n"
	done
	for n in node5 node6 node7; do
		[ "$(record_field "$n" status)" = FAIL ]
	done
	mv "$BATS_TEST_TMPDIR/onramp.conf.orig" "$conf"
	restore_nodes 'node[5-8]'
}

@test "a link that went down since the previous admission is PORT_FLAPPING naming HCA and port" {
	# node4's record is bring-up's (link_downed 2 on every port).
	set_profile node4 link-flapped
	reboot_nodes node4
	wait_for 120 "node4 drained" drained_with node4 '^onramp:PORT_FLAPPING: fabric: mlx5_4 port 1 link_downed 2 -> 6 since the last admission'
	run ! node_admitted node4
	jq -e '.verdict.checks[] | select(.name == "fabric") | .data.previous_admission | test("Z$")' \
		"$ONRAMP_CLUSTER_DIR/nodes/node4/onramp/admission.json"
	restore_nodes node4
}

# depth_profile NODE JQ: NODE's profile, the healthy one changed by JQ.
depth_profile() {
	jq "$2" "$ONRAMP_REPO/etc/sim-profiles/healthy.json" >"$ONRAMP_PROFILES/$1.json"
}

# drains_each (NODE JQ PATTERN)...: each NODE gets the healthy profile
# changed by JQ; all are rebooted, and each must end drained with a reason
# matching PATTERN (reasons are cut at 100 characters), its record FAIL,
# not admitted. Then they are restored.
drains_each() {
	local nodes=() n wait=120
	local -A pat
	while [ $# -ge 3 ]; do
		depth_profile "$1" "$2"
		nodes+=("$1")
		pat[$1]=$3
		shift 3
	done
	reboot_nodes "$(IFS=,; echo "${nodes[*]}")"
	for n in "${nodes[@]}"; do
		wait_for "$wait" "$n drained" drained_with "$n" "${pat[$n]}"
		wait=60
		run ! node_admitted "$n"
		[ "$(record_field "$n" status)" = FAIL ]
	done
	restore_nodes "$(IFS=,; echo "${nodes[*]}")"
}

# gpu N: the pattern of gpu_depth naming GPU N and its PCI address.
gpu() {
	echo "gpu_depth: GPU $1 \\(0000:[0-9a-f:.]+\\)"
}

@test "heat, power, NVLink errors and corrected ECC under load drain naming the GPU" {
	drains_each \
		node5 '.gpus[2].temp_c = 92' "^onramp:GPU_TEMP_HIGH: $(gpu 2) 92 C > 85 C under load" \
		node6 '.gpus[1].power_w = 760' "^onramp:GPU_POWER_HIGH: $(gpu 1) 760 W > 700 W under load" \
		node7 '.gpus[4].nvlink_errors = {"replay": 500}' "^onramp:NVLINK_ERRORS: $(gpu 4) NVLink replay errors \\+500 during load" \
		node8 '.gpus[6].ecc_corrected = 5000' "^onramp:ECC_CORRECTED_HIGH: $(gpu 6) 5000 volatile corrected ECC errors"
}

@test "remapped rows, short memory, persistence off and a stray process drain naming the GPU" {
	drains_each \
		node5 '.gpus[0].remapped_rows = 40' "^onramp:ROW_REMAP_HIGH: $(gpu 0) 40 remapped rows > 16" \
		node6 '.gpus[7].memory_mib = 81920' "^onramp:GPU_MEMORY: $(gpu 7) 81920 MiB < 143000 MiB" \
		node7 '.gpus[2].persistence = false' "^onramp:PERSISTENCE_OFF: $(gpu 2) persistence mode off" \
		node8 '.gpus[5].processes = [4242]' "^onramp:GPU_FOREIGN_PROCESS: $(gpu 5) runs process 4242"
}

@test "a port trained to 2X and one at MTU 1024 drain naming HCA and port" {
	drains_each \
		node5 '.nics[6].ports[0].rate = "400 Gb/sec (2X XDR)"' '^onramp:PORT_WIDTH_LOW: fabric: mlx5_6 port 1 width 2X < 4X' \
		node6 '.nics[1].ports[0].active_mtu = 1024' '^onramp:PORT_MTU_LOW: fabric: mlx5_1 port 1 active MTU 1024 < 4096'
}
