#!/usr/bin/env bats
# job_submit/onramp's side of migration on the live cluster: which jobs opt
# in (the default partition, partition lists) and whom the checkpoint signal
# reaches (Slurm's warning and onrampctl migrate's scancel), per job.
#
# MigratePartitions=batch (the default partition) is set for this file, and
# a second partition "other", not listed, is created for it.

load helpers

setup_file() {
	require_cluster
	onramp_conf_save
	local off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	echo "MigratePartitions=batch" >>"$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
	scontrol reconfigure
	wait_for 30 "job_submit/onramp to reload onramp.conf" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded"
	# After the reconfigure, which would drop a partition made at run time.
	scontrol create PartitionName=other Nodes=ALL State=UP
}

teardown_file() {
	scontrol delete PartitionName=other >/dev/null 2>&1 || true
	onramp_conf_restore
}

setup() {
	require_cluster
	JOBS=()
}

teardown() {
	local j
	for j in "${JOBS[@]}"; do scancel "$j" 2>/dev/null || true; done
	resume_migrate_drains
}

need_spank() {
	[[ -e $(cluster_param PLUGIN_DIR)/spank_onramp.so ]] || skip "spank_onramp.so not built"
	grep -q spank_onramp "$ONRAMP_CLUSTER_DIR/etc/plugstack.conf" 2>/dev/null ||
		skip "cluster started without plugstack.conf"
}

# lacks FILE TEXT: FILE has no line containing TEXT.
lacks() {
	! grep -qF -- "$2" "$1"
}

# held ARGS...: submit a held job as the test user; prints its id.
held() {
	as_user sbatch --parsable --hold -o /dev/null "$@" --wrap true
}

@test "a job naming no partition opts in through the default partition; a partition list when any listed one does" {
	local job off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	job=$(held)
	JOBS+=("$job")
	[ "$(job_field "$job" Partition)" = batch ]
	[ "$(job_field "$job" Requeue)" = 1 ]
	scontrol show job "$job" | grep -q "Comment=onramp:signal=F:USR2@120"
	log_since_has "$ONRAMP_CTLD_LOG" "$off" \
		"job_submit/onramp: submission by uid [0-9]+ \\(job name wrap\\): migratable \\(default partition\\): requeue, append, signal 12@120 to full"
	# Opted in: --no-requeue is refused, also without -p and for a list.
	run held --no-requeue
	[ "$status" -ne 0 ]
	[[ $output == *"migratable jobs (default partition) must be requeueable"* ]]
	run held -p other,batch --no-requeue
	[ "$status" -ne 0 ]
	[[ $output == *"migratable jobs (partition) must be requeueable"* ]]
	# A partition that is not listed: left alone.
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	job=$(held -p other --no-requeue)
	JOBS+=("$job")
	[ "$(job_field "$job" Partition)" = other ]
	[ "$(job_field "$job" Requeue)" = 0 ]
	[[ $(job_field "$job" Comment) != *onramp:* ]]
	run log_since_has "$ONRAMP_CTLD_LOG" "$off" "migratable"
	[ "$status" -ne 0 ]
}

@test "an admin's smoke job in the default partition is onramp's own: not opted in; a user's job of that name is" {
	local job off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	job=$(sbatch --parsable --hold -o /dev/null -J onramp-smoke:t1:rack1 --wrap true)
	JOBS+=("$job")
	[[ $(job_field "$job" Comment) != *onramp:* ]]
	run log_since_has "$ONRAMP_CTLD_LOG" "$off" "migratable"
	[ "$status" -ne 0 ]
	job=$(held -J onramp-smoke:t1:rack1)
	JOBS+=("$job")
	scontrol show job "$job" | grep -q "Comment=onramp:signal=F:USR2@120"
}

@test "the job's environment names its checkpoint signal (ONRAMP_CKPT_SIGNAL), whichever way it opted in" {
	local job out=$ONRAMP_JOBS_DIR
	# Opted in by partition: MigrateSignal (USR2@120).
	job=$(as_user sbatch --parsable -o envsig1.out --wrap 'echo "sig=$ONRAMP_CKPT_SIGNAL"')
	JOBS+=("$job")
	submit_wait "$job" COMPLETED 60
	grep -qx "sig=USR2@120" "$out/envsig1.out"
	# The job's own --signal is the checkpoint signal.
	job=$(as_user sbatch --parsable -o envsig2.out --signal=B:URG@77 --wrap 'echo "sig=$ONRAMP_CKPT_SIGNAL"')
	JOBS+=("$job")
	submit_wait "$job" COMPLETED 60
	grep -qx "sig=URG@77" "$out/envsig2.out"
	# Not opted in: nothing.
	job=$(as_user sbatch --parsable -p other -o envsig3.out --wrap 'echo "sig=${ONRAMP_CKPT_SIGNAL:-none}"')
	JOBS+=("$job")
	submit_wait "$job" COMPLETED 60
	grep -qx "sig=none" "$out/envsig3.out"
	# spank/onramp passes it on for --checkpoint-dir without --checkpoint-signal.
	need_spank
	job=$(as_user sbatch --parsable -p other -o envsig4.out --checkpoint-dir="$out/envsig4.ckpt" \
		--wrap 'echo "sig=$ONRAMP_CKPT_SIGNAL"')
	JOBS+=("$job")
	submit_wait "$job" COMPLETED 60
	grep -qx "sig=USR2@120" "$out/envsig4.out"
}

@test "--checkpoint-signal takes sbatch's B: and onramp's S:/F: targets, and refuses others" {
	need_spank
	local job
	run as_user sbatch --checkpoint-dir=/x --checkpoint-signal=R:USR2 --wrap true
	[ "$status" -ne 0 ]
	[[ $output == *"B: batch shell, S: steps, F: both"* ]]
	job=$(held -p other --checkpoint-dir="$ONRAMP_JOBS_DIR/t.ckpt" --checkpoint-signal=s:TERM@30)
	JOBS+=("$job")
	scontrol show job "$job" | grep -q "Comment=onramp:ckpt=$ONRAMP_JOBS_DIR/t.ckpt; onramp:signal=S:TERM@30"
}

@test "B: Slurm's warning before the time limit reaches a trap in the batch shell" {
	need_spank
	local job out=$ONRAMP_JOBS_DIR/warn-batch.out
	rm -f "$out"
	# A 2-minute limit and a 110 s warning: slurmctld sends it at its next
	# time-limit pass (every 30 s). Without KILL_JOB_BATCH only job steps
	# would get it, and this job (no steps) would run into its limit.
	# shellcheck disable=SC2016 # expanded by the job's shell
	job=$(as_user sbatch --parsable --time=2 -o "$out" --checkpoint-dir="$ONRAMP_JOBS_DIR/wb.ckpt" \
		--checkpoint-signal=B:USR1@110 \
		--wrap 'trap "echo batch shell got USR1; exit 0" USR1; for i in $(seq 300); do sleep 0.5; done; echo no signal')
	JOBS+=("$job")
	scontrol show job "$job" | grep -q "onramp:signal=B:USR1@110"
	submit_wait "$job" COMPLETED 150
	grep -qx "batch shell got USR1" "$out"
	lacks "$out" "no signal"
}

@test "F: (MigrateSignalTarget's default) Slurm's warning reaches the batch shell and the processes it started" {
	need_spank
	local job out=$ONRAMP_JOBS_DIR/warn-full.out
	rm -f "$out"
	# shellcheck disable=SC2016 # expanded by the job's shell
	job=$(as_user sbatch --parsable --time=2 -o "$out" --checkpoint-dir="$ONRAMP_JOBS_DIR/wf.ckpt" \
		--checkpoint-signal=USR1@110 \
		--wrap 'trap "echo batch shell got USR1" USR1
bash -c '\''trap "echo child got USR1; exit 0" USR1; for i in $(seq 300); do sleep 0.5; done; echo no signal'\'' &
wait; wait')
	JOBS+=("$job")
	scontrol show job "$job" | grep -q "onramp:signal=F:USR1@110"
	submit_wait "$job" COMPLETED 150
	grep -qx "batch shell got USR1" "$out"
	grep -qx "child got USR1" "$out"
	lacks "$out" "no signal"
}

@test "S: Slurm's warning reaches the job's steps, not the batch shell" {
	need_spank
	local job out=$ONRAMP_JOBS_DIR/warn-steps.out
	rm -f "$out"
	# shellcheck disable=SC2016 # expanded by the job's shell
	job=$(as_user sbatch --parsable -N1 --time=2 -o "$out" --checkpoint-dir="$ONRAMP_JOBS_DIR/ws.ckpt" \
		--checkpoint-signal=S:USR1@110 \
		--wrap 'trap "echo batch shell got USR1" USR1
srun bash -c '\''trap "echo step got USR1; exit 0" USR1; for i in $(seq 300); do sleep 0.5; done; echo no signal'\''
echo step done')
	JOBS+=("$job")
	submit_wait "$job" COMPLETED 150
	grep -qx "step got USR1" "$out"
	grep -qx "step done" "$out"
	lacks "$out" "batch shell got USR1"
	lacks "$out" "no signal"
}

TRAINER=$ONRAMP_REPO/contrib/examples/onramp-trainer
CTL=$ONRAMP_REPO/contrib/onrampctl

# A trainer job on rack1 whose batch shell traps USR2 and passes it on to
# the trainer it runs in the background.
trapping_trainer() {
	local name=$1 spec=$2 dir=$ONRAMP_JOBS_DIR/$1.ckpt
	rm -rf "$dir" "$ONRAMP_JOBS_DIR/$name.out"
	as_user mkdir -p "$dir"
	as_user sbatch --parsable -N1 --constraint=rack1 -J "$name" -o "$name.out" \
		--checkpoint-dir="$dir" --checkpoint-signal="$spec" \
		--wrap "$TRAINER --step-ms 20 --steps 1000000 & pid=\$!
trap 'echo batch shell got USR2; kill -USR2 \$pid' USR2
wait \$pid; wait \$pid"
}

# training NAME JOB: wait until the job runs and has trained a little.
training() {
	submit_wait "$2" RUNNING 60
	wait_for 60 "training steps" test -s "$ONRAMP_JOBS_DIR/$1.ckpt/loss.log"
}

@test "onrampctl migrate signals as the job's mode says: B: reaches the batch shell's trap, S: does not" {
	[[ -x $TRAINER ]] || skip "onramp-trainer not built"
	need_spank
	local job
	job=$(trapping_trainer mtb B:USR2)
	JOBS+=("$job")
	training mtb "$job"
	run "$CTL" migrate --jobs "$job" --to rack2
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"SIGNALLED: signal 12 (RUNNING): scancel --signal=12 --batch $job"* ]]
	grep -qx "batch shell got USR2" "$ONRAMP_JOBS_DIR/mtb.out"
	[ "$(job_field "$job" Restarts)" = 1 ]
	local n
	for n in $(expand_hostlist "$(job_field "$job" NodeList)"); do
		[[ $(node_field "$n" AvailableFeatures) == *rack2* ]]
	done

	# Steps only: the batch shell (and the trainer under it) never hears it;
	# the migration is aborted and the job keeps running where it was.
	job=$(trapping_trainer mts S:USR2)
	JOBS+=("$job")
	training mts "$job"
	run "$CTL" migrate --jobs "$job" --to rack2 --ack-timeout 5
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"SIGNALLED: signal 12 (RUNNING): scancel --signal=12 $job"* ]]
	[[ $output == *"ABORTED: no new checkpoint generation"* ]]
	[ "$(job_state "$job")" = RUNNING ]
	[ "$(job_field "$job" Restarts)" = 0 ]
	lacks "$ONRAMP_JOBS_DIR/mts.out" "batch shell got USR2"
}
