#!/usr/bin/env bats
# onramp on a cluster configured like a production site: slurmctld as the
# unprivileged SlurmUser, slurmdbd + MariaDB with enforced associations
# (etc/onramp-accounting.sh), configless slurmds, cgroup tracking.
# onramp-cluster: --profile site --nodes 8 --racks 2

load helpers
load admission_helpers

SU=slurm
ETC=$ONRAMP_CLUSTER_DIR/etc

setup_file() {
	onramp_conf_save
}

teardown_file() {
	onramp_conf_restore
	"$ONRAMPCTL" ship-conf >/dev/null 2>&1 || true
	SLURM_CONF=$SLURM_CONF "$ONRAMP_REPO/etc/onramp-accounting.sh" >/dev/null 2>&1 || true
}

setup() {
	require_cluster
	[[ $(cluster_param PROFILE) == site ]] || skip "needs onramp-cluster --profile site"
}

# conf_cache NODE: the directory slurmd of NODE runs from (configless).
conf_cache() {
	echo "$ONRAMP_CLUSTER_DIR/var/spool/slurmd-$1/conf-cache"
}
# node_conf NODE KEY: the onramp setting as NODE's own tools read it.
node_conf() {
	SLURM_CONF=$(conf_cache "$1")/slurm.conf "$ONRAMP_REPO/contrib/tools/onramp-config" --seconds "$2"
}
# job_account JOB / job_user JOB: from slurmdbd (sacct), not slurmctld.
job_acct_field() {
	sacct -nP -X -j "$1" -o "$2" 2>/dev/null | head -n 1
}
admission_job_of() {
	sed -n "s/.*node $1: admission job \([0-9]*\) in .*/\1/p" | tail -n 1
}

@test "the profile: slurmctld runs as $SU, accounting enforced, slurmds configless" {
	run scontrol show config
	[[ $output == *"SlurmUser               = $SU("* ]]
	[[ $output == *"AccountingStorageEnforce = associations,limits,qos,safe"* ]]
	[[ $output == *"enable_configless"* ]]
	local pid
	pid=$(ctld_pid)
	[ "$(stat -c %U "/proc/$pid")" = "$SU" ]
	# Each node runs from its conf cache, which holds no onramp.conf: its
	# settings came inside plugstack.conf.
	[ -f "$(conf_cache node1)/slurm.conf" ]
	[ ! -e "$(conf_cache node1)/onramp.conf" ]
	grep -q '^#onramp.conf|GpuBackend=sim' "$(conf_cache node1)/plugstack.conf"
	[ "$(node_conf node1 GpuBackend)" = sim ]
	# Every node was admitted at bring-up, through those settings.
	[ "$(sinfo -h -N -o '%N %b' | sort -u | grep -c ' .*onramp_ok')" -eq "$ONRAMP_CLUSTER_NODES" ]
}

@test "a user job under the admission account is refused for lack of association; onramp's admission job under it runs" {
	# The user has an association in "users" only: Slurm refuses a job under
	# an account without one (job_submit/onramp lets it through: not onramp's).
	sacctmgr -i add account other cluster=onramp-test description=other organization=test >/dev/null 2>&1 || true
	run as_user sbatch -A other -o /dev/null --wrap true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"Invalid account"* ]]
	run as_user sbatch -o /dev/null --wrap true
	[ "$status" -eq 0 ]
	# The admission account itself: refused by job_submit/onramp first, and
	# the user has no association with it either.
	run as_user sbatch -A onramp -o /dev/null --wrap true
	[ "$status" -ne 0 ]
	[ -z "$(sacctmgr -nP show assoc where account=onramp user="$ONRAMP_CLUSTER_USER" format=user)" ]
	# The admission job, under the documented association, admits a node.
	local node=node3 job
	run "$ONRAMPCTL" admit --timeout 120 "$node"
	echo "$output"
	[ "$status" -eq 0 ]
	job=$(admission_job_of "$node" <<<"$output")
	[ -n "$job" ]
	wait_for 30 "job $job in slurmdbd" eval "[[ -n \$(job_acct_field $job Account) ]]"
	[ "$(job_acct_field "$job" Account)" = onramp ]
	[ "$(job_acct_field "$job" State)" = COMPLETED ]
	admitted_idle "$node"
}

@test "a user cannot reach an admission reservation: not listed, refused" {
	local node=node4
	scontrol create reservation reservationname=onramp_admission_$node nodes=$node \
		starttime=now duration=infinite users=root,$SU flags=maint,ignore_jobs
	run as_user sbatch -w "$node" --reservation="onramp_admission_$node" -o /dev/null --wrap true
	scontrol delete reservationname=onramp_admission_$node
	[ "$status" -ne 0 ]
	[[ $output == *"Access denied"* || $output == *"reservation"* ]]
}

@test "without the onramp association, admit exits non-zero, says why, returns the borrowed peers, keeps the node reserved" {
	local node=node5
	sacctmgr -i delete user root account=onramp >/dev/null
	run "$ONRAMPCTL" admit --timeout 60 "$node"
	echo "$output"
	# Put the documented association back (the script under test).
	"$ONRAMP_REPO/etc/onramp-accounting.sh"
	[ "$status" -ne 0 ]
	[[ $output == *"cannot submit the admission job"* ]]
	[[ $output == *"onramp-accounting.sh"* ]]
	resv_exists "$node"
	[ "$(scontrol -o show reservation "onramp_admission_$node" | sed -n 's/.* Nodes=\([^ ]*\) .*/\1/p')" = "$node" ]
	[[ $(node_state "$node") != *DRAIN* ]]
	run "$ONRAMPCTL" admit --timeout 120 "$node"
	[ "$status" -eq 0 ]
	admitted_idle "$node"
}

@test "triggers are $SU's and fire under the unprivileged slurmctld: a rebooted node is admitted by itself" {
	run strigger --get
	echo "$output"
	[ "$(grep -c "onramp-trigger" <<<"$output")" -eq 2 ]
	[ "$(awk '/onramp-trigger/ {print $6}' <<<"$output" | sort -u)" = "$SU" ]
	local node=node6 boot_before
	boot_before=$(node_boot_id "$node")
	reboot_nodes "$node"
	wait_for 60 "$node back from reboot" eval "[[ \$(node_boot_id $node) != $boot_before ]]"
	wait_for 120 "$node admitted by the trigger" admitted_idle "$node"
	# The trigger ran as SlurmUser and logged where it could write.
	grep -q "trigger up: admitting .*$node" "$ONRAMP_CLUSTER_DIR/onramp/trigger.log"
	local job
	job=$(admission_job_of "$node" <"$ONRAMP_CLUSTER_DIR/onramp/trigger.log")
	[ "$(job_acct_field "$job" User)" = "$SU" ]
	[ "$(record_field "$node" boot_id)" = "$(node_boot_id "$node")" ]
	# No error in the admission job: $SU does not signal root's slurmd.
	local out=$ONRAMP_CLUSTER_DIR/onramp/admit/onramp-admit:$node.$job.out
	cat "$out"
	[ "$(grep -c "cannot signal slurmd" "$out")" = 0 ]
}

# next_job_ids N: the N job ids after the highest one slurmctld or slurmdbd knows.
next_job_ids() {
	local last
	last=$({
		squeue -h -a -o %i
		sacct -a -X -n -o jobid -S now-7days
	} | tr -d ' ' | grep -E '^[0-9]+$' | sort -n | tail -n 1)
	seq $((last + 1)) $((last + $1))
}

@test "$SU's links in StateDir/admit do not steer the output of root's admission job" {
	local node=node5 dir=$ONRAMP_CLUSTER_DIR/onramp/admit vdir id i=0
	vdir=$(mktemp -d /var/tmp/onramp-victims.XXXXXX)
	chmod 755 "$vdir"
	# SlurmUser owns StateDir/admit: it links the names the next
	# admission jobs of $node would write to root's files.
	for id in $(next_job_ids 30); do
		i=$((i + 1))
		echo "root's $i" >"$vdir/v$i"
		runuser -u "$SU" -- ln -sfn "$vdir/v$i" "$dir/onramp-admit:$node.$id.out"
	done
	run "$ONRAMPCTL" admit --timeout 120 "$node"
	echo "$output"
	local job changed=""
	job=$(admission_job_of "$node" <<<"$output")
	for i in $(seq 1 30); do
		[ "$(cat "$vdir/v$i")" = "root's $i" ] || changed+=" v$i"
	done
	find "$dir" -maxdepth 1 -type l -name "onramp-admit:$node.*" -delete
	rm -rf "$vdir"
	[ -z "$changed" ] || { echo "root's files written through $SU's links:$changed"; false; }
	[ "$status" -eq 0 ]
	# The job's output went to a file of its own, not through the link.
	[ -f "$dir/onramp-admit:$node.$job.out" ] && [ ! -L "$dir/onramp-admit:$node.$job.out" ]
	grep -q "onramp-admit: $node PASS" "$dir/onramp-admit:$node.$job.out"
}

@test "a NodeStateDir $SU cannot write is onramp's error: the node stays reserved, undrained, with the reason said" {
	local node=node7 dir=$ONRAMP_CLUSTER_DIR/nodes/node7/onramp
	chown root: "$dir"
	run runuser -u "$SU" -- env SLURM_CONF="$SLURM_CONF" "$ONRAMPCTL" admit --timeout 120 "$node"
	chown "$SU:" "$dir"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"onramp's own error, not the node's"* ]]
	[[ $(node_state "$node") != *DRAIN* ]]
	resv_exists "$node"
	run runuser -u "$SU" -- env SLURM_CONF="$SLURM_CONF" "$ONRAMPCTL" admit --timeout 120 "$node"
	[ "$status" -eq 0 ]
	admitted_idle "$node"
}

@test "a configless node picks up a changed onramp setting with no file copied by hand" {
	[ "$(node_conf node2 XidWindow)" = 7200 ]
	echo "XidWindow=3h" >>"$ETC/onramp.conf"
	"$ONRAMPCTL" ship-conf
	# slurmctld pushes the new plugstack.conf to every configless slurmd.
	wait_for 30 "node2's conf cache to carry the new setting" \
		eval "[[ \$(node_conf node2 XidWindow) == 10800 ]]"
	[ ! -e "$(conf_cache node2)/onramp.conf" ]
	onramp_conf_restore
	"$ONRAMPCTL" ship-conf
	wait_for 30 "node2 back to the default" eval "[[ \$(node_conf node2 XidWindow) == 7200 ]]"
}

@test "a configless node without onramp's settings fails closed: the prolog refuses the job, the reboot wrapper refuses to reboot" {
	local node=node8 job
	# plugstack.conf without onramp's block, shipped to every node.
	sed -i '/^#onramp.conf|/d' "$ETC/plugstack.conf"
	scontrol reconfigure
	wait_for 30 "$node's conf cache without onramp's settings" \
		eval "! grep -q '^#onramp.conf|' $(conf_cache $node)/plugstack.conf"
	job=$(as_user sbatch --parsable -w "$node" -o /dev/null --wrap true)
	# The prolog drains it (the epilog of the refused job may restate it).
	wait_for 60 "$node drained by the prolog" eval "[[ \$(node_reason $node) =~ ^onramp:(PRO|EPI)LOG_NO_CONFIG: ]]"
	grep -q "onramp-prolog.*PROLOG_NO_CONFIG" "$ONRAMP_CLUSTER_DIR/log/slurmd-$node.log"
	# The job never ran there: requeued, not completed.
	[[ $(job_state "$job") != COMPLETED ]]
	scancel "$job"
	# RebootProgram on that node: no reservation named "_node8", no reboot.
	run env SLURM_CONF="$(conf_cache $node)/slurm.conf" "$ONRAMP_REPO/contrib/libexec/onramp-reboot"
	[ "$status" -ne 0 ]
	[[ $output == *"settings cannot be found"* ]]
	run scontrol -o show reservation "_$node"
	[ "$status" -ne 0 ]
	"$ONRAMPCTL" ship-conf
	wait_for 30 "$node's settings back" eval "grep -q '^#onramp.conf|' $(conf_cache $node)/plugstack.conf"
	# From 23.11 ship-conf's reconfigure re-executes slurmctld, which
	# recovers node state from the last state save: a drain set
	# milliseconds before (the epilog's) can be lost or come back while the
	# test looks, so a resume refused as "Invalid node state" (seen on
	# 24.11.5 in CI) is tried again until the node is idle.
	wait_for 60 "$node resumed, admitted and idle" resumed_idle "$node"
}

# sig_job DIR [SBATCH ARGS...]: a job of the test user on node1 whose batch
# shell, child, grandchild and daemon (setsid, double fork: its parent is
# init, out of the job's process tree and group) each record USR2 in
# DIR/NAME (DIR/NAME.ready: its pid); prints the job id once all run.
sig_job() {
	local dir=$1 job
	shift
	mkdir -m 0777 "$dir"
	cat >"$dir/rec.sh" <<'EOF'
#!/bin/bash
trap 'echo got >"$2/$1"; exit 0' USR2
echo $$ >"$2/$1.ready"
while :; do sleep 0.2; done
EOF
	cat >"$dir/job.sh" <<EOF
#!/bin/bash
trap 'echo got >$dir/shell' USR2
$dir/rec.sh child $dir &
( $dir/rec.sh grandchild $dir & wait ) &
setsid bash -c '$dir/rec.sh daemon $dir & exit 0' &
echo \$\$ >$dir/shell.ready
while :; do sleep 0.2; done
EOF
	chmod 0755 "$dir/rec.sh"
	job=$(as_user sbatch --parsable -N1 -w node1 -o "$dir/out" "$@" "$dir/job.sh")
	wait_for 30 "the job's processes" eval "[[ -e $dir/shell.ready && -e $dir/child.ready && -e $dir/grandchild.ready && -e $dir/daemon.ready ]]" >&2
	echo "$job"
}

@test "cgroup tracking: Slurm's own --full signal reaches the job's process group only, and a process that left it dies with the job" {
	grep -q '^ProctrackType=proctrack/cgroup' "$SLURM_CONF" || skip "cgroups unavailable on this host (see the README)"
	local dir=$ONRAMP_JOBS_DIR/sig.$$ job pid
	job=$(sig_job "$dir")
	pid=$(cat "$dir/daemon.ready")
	grep -q "job_$job/step_batch" "/proc/$pid/cgroup"
	# scancel --signal --full: Slurm 22.05 delivers it to the batch step's
	# process group (killpg), with any ProctrackType: not to the daemon.
	scancel --signal=USR2 --full "$job"
	wait_for 20 "the process group to get the signal" eval "[[ -e $dir/shell && -e $dir/child && -e $dir/grandchild ]]"
	sleep 2
	[[ ! -e $dir/daemon ]]
	# The cgroup holds the daemon: the job's end (a migration's requeue)
	# kills it, which linuxproc tracking cannot do for a reparented process.
	scancel "$job" 2>/dev/null || true
	wait_for 30 "the daemon to die with the job" eval "! kill -0 $pid 2>/dev/null"
}

@test "cgroup tracking: onrampctl migrate's checkpoint signal reaches every process of the job, also one that left its process group" {
	grep -q '^ProctrackType=proctrack/cgroup' "$SLURM_CONF" || skip "cgroups unavailable on this host (see the README)"
	local dir=$ONRAMP_JOBS_DIR/msig.$$ job off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	echo "MigratePartitions=batch" >>"$ETC/onramp.conf"
	scontrol reconfigure
	wait_for 30 "job_submit/onramp to reload onramp.conf" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded"
	job=$(sig_job "$dir" -p batch --comment="onramp:ckpt=$dir")
	# The job writes no checkpoint: the migration aborts after the signal.
	run "$ONRAMPCTL" migrate --jobs "$job" --to rack2 --ack-timeout 5
	echo "$output"
	scancel "$job" 2>/dev/null || true
	[ "$status" -eq 1 ]
	[[ $output == *"ABORTED: no new checkpoint generation"* ]]
	[[ -e $dir/shell && -e $dir/child && -e $dir/grandchild ]]
	# The daemon too: onramp-signal-cgroup ran as a step of the job.
	[[ -e $dir/daemon ]]
}
