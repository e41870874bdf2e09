#!/usr/bin/env bats
# The host and dcgm admission checks on the live cluster. Each node gets a
# host tree of its own (HostRoot=.../%n: proc/self/mountinfo, proc/cmdline,
# proc/sys, the mount directories) and the testsuite's TEST DOUBLES of
# dcgmi, chronyc and systemctl (testsuite/doubles), whose answers per node
# come from files beside them. A node whose tree breaks one part is drained
# with that part's code naming it; a healthy one is admitted.

load helpers
load admission_helpers
bats_require_minimum_version 1.5.0

# The cluster's nodes, each with a healthy host tree under $HOSTS/NODE.
healthy_host() {
	local h=$HOSTS/$1 t
	rm -rf "$h"
	mkdir -p "$h/proc/self" "$h/proc/sys/vm" "$h/bin" "$h/ckpt" "$h/data"
	chmod 1777 "$h/ckpt" "$h/data"
	cat >"$h/proc/self/mountinfo" <<-EOF
		22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
		40 22 0:40 / /ckpt rw,relatime shared:20 - lustre 10.0.0.1@o2ib:/ckpt rw,flock
		41 22 0:41 / /data rw master:3 - nfs4 filer:/data rw,vers=4.2
	EOF
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt" >"$h/proc/cmdline"
	echo 0 >"$h/proc/sys/vm/swappiness"
	for t in dcgmi chronyc systemctl; do
		ln -s "$ONRAMP_REPO/testsuite/doubles/$t" "$h/bin/$t"
	done
}

setup_file() {
	require_cluster
	HOSTS=$(mktemp -d /tmp/onramp-hosts.XXXXXX)
	chmod 0755 "$HOSTS"
	export HOSTS
	local conf=$ONRAMP_CLUSTER_DIR/etc/onramp.conf n
	cp -p "$conf" "$HOSTS/onramp.conf.orig"
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		healthy_host "$n"
	done
	cat >>"$conf" <<-EOF
		HostRoot=$HOSTS/%n
		AdmissionMounts=/ckpt:lustre,/data:nfs4
		AdmissionCheckpointMount=/ckpt
		AdmissionIoBytes=4194304
		AdmissionIoTimeout=10
		AdmissionServices=munge,nvidia-fabricmanager
		AdmissionClockMaxOffset=0.01
		SystemctlCommand=$HOSTS/%n/bin/systemctl
		ChronycCommand=$HOSTS/%n/bin/chronyc
		DcgmiCommand=$HOSTS/%n/bin/dcgmi
		DcgmDiagLevel=3
		DcgmTimeout=20
		DcgmRequired=yes
		CheckRetries=1
		CheckRetryBackoff=1
	EOF
}

teardown_file() {
	if [[ -n ${HOSTS:-} && -f $HOSTS/onramp.conf.orig ]]; then
		mv "$HOSTS/onramp.conf.orig" "$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
	fi
	[[ -n ${HOSTS:-} ]] && rm -rf "$HOSTS"
}

setup() {
	require_cluster
}

# check_field NODE CHECK FIELD: FIELD of CHECK in the node's recorded verdict.
check_field() {
	jq -r --arg c "$2" ".verdict.checks[] | select(.name == \$c) | .$3" \
		"$ONRAMP_CLUSTER_DIR/nodes/$1/onramp/admission.json"
}

# failed_then_healthy NODE...: each NODE is not admitted and its record
# says FAIL; its host tree is made healthy again.
failed_then_healthy() {
	local n
	for n in "$@"; do
		run ! node_admitted "$n"
		[ "$(record_field "$n" status)" = FAIL ]
		healthy_host "$n"
	done
}

@test "a healthy host passes the host and dcgm checks and is admitted" {
	local node=node4
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	run "$ONRAMPCTL" admit "$node"
	echo "$output"
	[ "$status" -eq 0 ]
	wait_for 60 "$node admitted" admitted_idle "$node"
	[ "$(record_field "$node" status)" = PASS ]
	[ "$(check_field "$node" host status)" = PASS ]
	[[ $(check_field "$node" host detail) == *"2 mounts ok"*"/ckpt write"* ]]
	[ "$(check_field "$node" host data.checkpoint_io.bytes)" = 4194304 ]
	[ "$(check_field "$node" dcgm status)" = PASS ]
	[[ $(check_field "$node" dcgm detail) == *"diag -r 3 passed"* ]]
	# The write test left nothing behind.
	[ -z "$(find "$HOSTS/$node/ckpt" -mindepth 1)" ]
}

@test "a missing mount, an inactive service, a DCGM failure and a clock offset drain with their code naming the part" {
	local h=$HOSTS
	# node5: /ckpt not mounted.
	sed -i '/ \/ckpt /d' "$h/node5/proc/self/mountinfo"
	# node6: nvidia-fabricmanager inactive.
	echo nvidia-fabricmanager >"$h/node6/bin/systemctl.inactive"
	# node7: DCGM's SM Stress fails on GPU 3.
	echo "fail SM_Stress 3 SM stress found 12 errors" >"$h/node7/bin/dcgmi.scenario"
	# node8: the clock 0.5 s off.
	echo "C0A80001,ntp1.example.net,2,1765100000.0,0.500000000,0.0,0.0,-9.1,0.0,0.04,0.0005,0.0002,64.2,Normal" \
		>"$h/node8/bin/chronyc.csv"
	reboot_nodes 'node[5-8]'
	wait_for 120 "node5 drained" drained_with node5 '^onramp:MOUNT_MISSING: host: /ckpt not mounted'
	wait_for 60 "node6 drained" drained_with node6 '^onramp:SERVICE_INACTIVE: host: nvidia-fabricmanager is inactive'
	wait_for 60 "node7 drained" drained_with node7 '^onramp:DCGM_SM_STRESS: dcgm: .*SM Stress GPU 3'
	wait_for 60 "node8 drained" drained_with node8 '^onramp:CLOCK_OFFSET: host: offset 0.500000 s'
	failed_then_healthy node5 node6 node7 node8
	restore_nodes 'node[5-8]'
}

@test "an unwritable mount, a wrong type, an unsynchronised clock and a missing dcgmi (DcgmRequired=yes) keep the node out" {
	local h=$HOSTS
	# node5: /data is root's, mode 0755: nobody cannot write.
	chmod 0755 "$h/node5/data"
	# node6: /data is nfs, not nfs4.
	sed -i 's/ - nfs4 / - nfs /' "$h/node6/proc/self/mountinfo"
	# node7: chronyd has no source.
	echo "00000000,,0,0.000000000,0.000000000,0.0,0.0,0.0,0.0,0.0,1.0,1.0,0.0,Not synchronised" \
		>"$h/node7/bin/chronyc.csv"
	# node8: no dcgmi at all: NOT_AVAILABLE, with DcgmRequired=yes an ERROR
	# (could not measure).
	rm "$h/node8/bin/dcgmi"
	reboot_nodes 'node[5-8]'
	wait_for 120 "node5 drained" drained_with node5 '^onramp:MOUNT_NOT_WRITABLE: host: /data not writable by the test user'
	wait_for 60 "node6 drained" drained_with node6 '^onramp:MOUNT_TYPE: host: /data is nfs, expected nfs4'
	wait_for 60 "node7 drained" drained_with node7 "^onramp:CLOCK_UNSYNC: host: chrony not synchronised \\(leap status 'Not synchronised'"
	# Could not measure, twice (CheckRetries=1): never admitted, never
	# drained as broken: fenced in its admission reservation, INCONCLUSIVE.
	wait_for 90 "node8 recorded INCONCLUSIVE" eval '[ "$(record_field node8 status)" = INCONCLUSIVE ]'
	[ "$(record_field node8 code)" = INCONCLUSIVE_DCGM ]
	[[ $(record_field node8 detail) == *"/node8/bin/dcgmi not installed"*"DcgmRequired=yes"*"(unmeasured after 2 tries)"* ]]
	[[ $(node_state node8) != *DRAIN* ]]
	resv_exists node8
	run ! node_admitted node8
	for n in node5 node6 node7 node8; do
		healthy_host "$n"
	done
	restore_nodes 'node[5-8]'
}

@test "a kernel command line, a sysctl, checkpoint bandwidth and free space off their floors drain with their code naming the part" {
	local h=$HOSTS conf=$ONRAMP_CLUSTER_DIR/etc/onramp.conf
	cp -p "$conf" "$h/onramp.conf.before"
	# A baseline of this test's own with a host section: iommu=pt on the
	# kernel command line and vm.swappiness 0 (the healthy trees have both).
	cp -r "$ONRAMP_REPO/etc/baselines" "$h/baselines"
	jq '. + {host: {cmdline: ["iommu=pt"], sysctl: {"vm.swappiness": "0"}}}' \
		"$ONRAMP_REPO/etc/baselines/SIM-8GPU.json" >"$h/baselines/SIM-8GPU.json"
	sed -i '/^BaselineDir=/d' "$conf"
	echo "BaselineDir=$h/baselines" >>"$conf"
	# node5: booted without iommu=pt; node6: vm.swappiness 60.
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1" >"$h/node5/proc/cmdline"
	echo 60 >"$h/node6/proc/sys/vm/swappiness"
	reboot_nodes 'node[5-6]'
	wait_for 120 "node5 drained" drained_with node5 '^onramp:KERNEL_CMDLINE: host: kernel command line lacks iommu=pt'
	wait_for 60 "node6 drained" drained_with node6 '^onramp:SYSCTL_MISMATCH: host: vm.swappiness = 60, expected 0'
	# A floor no disk meets: /ckpt's write bandwidth is measured, and low.
	jq '.host.ckpt_write_gbs = 1000000' "$h/baselines/SIM-8GPU.json" >"$h/b.json"
	mv "$h/b.json" "$h/baselines/SIM-8GPU.json"
	run "$ONRAMPCTL" admit node7
	echo "$output"
	wait_for 60 "node7 drained" drained_with node7 '^onramp:CKPT_BW_LOW: host: /ckpt write [0-9.]+ GB/s < 1e\+06 GB/s \(4194304 bytes\)'
	[[ $(check_field node7 host data.checkpoint_io.write_gbs) =~ ^[0-9.e+-]+$ ]]
	# More free space asked of /data than any disk here has.
	cp -p "$h/onramp.conf.before" "$conf"
	sed -i 's|^AdmissionMounts=.*|AdmissionMounts=/ckpt:lustre,/data:nfs4:1000000000|' "$conf"
	run "$ONRAMPCTL" admit node8
	echo "$output"
	wait_for 60 "node8 drained" drained_with node8 '^onramp:MOUNT_FULL: host: /data [0-9.]+ GiB free < 1e\+09 GiB'
	failed_then_healthy node5 node6 node7 node8
	cp -p "$h/onramp.conf.before" "$conf"
	# node5's and node6's slurmd read the test's BaselineDir when they
	# booted: judged against it, a record made under the restored baseline
	# is "baseline changed". A reboot reads onramp.conf again, and admits.
	reboot_nodes 'node[5-6]'
	restore_nodes 'node[7-8]'
	wait_for 180 "node5 admitted and idle" admitted_idle node5
	wait_for 60 "node6 admitted and idle" admitted_idle node6
}
