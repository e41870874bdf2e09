#!/usr/bin/env bats
# Migration on the live cluster: reference-trainer jobs (contrib/examples/
# onramp-trainer) move from rack1 (node[1-4]) to rack2 (node[5-8]) under
# the same job id and resume from their checkpoint. Jobs opt in through
# MigratePartitions (set for this file) and name their checkpoint directory
# with --comment=onramp:ckpt=DIR. Each move waits out cred_expire (30 s on
# the test cluster) before the requeued job may start again.

load helpers
load migrate_helpers # and the setup/teardown hooks

@test "jobs of a MigratePartitions partition are made requeueable with the migration warning signal" {
	local job off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	job=$(as_user sbatch --parsable -p batch --no-requeue -o /dev/null --wrap true 2>&1) || true
	[[ $job == *"must be requeueable"* ]]
	job=$(as_user sbatch --parsable -p batch -o /dev/null --comment=onramp:ckpt=/nonexistent --wrap "sleep 1")
	JOBS+=("$job")
	[ "$(job_field "$job" Requeue)" = 1 ]
	log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: submission by uid [0-9]+ \\(job name wrap\\): migratable \\(partition\\): requeue, append, signal 12@120"
	# Jobs of other partitions are left alone: migrate_submit.bats (here
	# every job lands in batch, the default partition, and so opts in).
}

@test "spank/onramp: --checkpoint-dir opts a job in and hands the job its checkpoint environment" {
	[[ -e $(cluster_param PLUGIN_DIR)/spank_onramp.so ]] || skip "spank_onramp.so not built"
	grep -q spank_onramp "$ONRAMP_CLUSTER_DIR/etc/plugstack.conf" 2>/dev/null ||
		skip "cluster started without plugstack.conf"
	local dir=$ONRAMP_JOBS_DIR/spank.ckpt job
	run as_user sbatch --checkpoint-dir=relative --wrap true
	[ "$status" -ne 0 ]
	run as_user sbatch --checkpoint-dir=/x --checkpoint-signal=KILL --wrap true
	[ "$status" -ne 0 ]
	job=$(as_user sbatch --parsable -o spank.out --checkpoint-dir="$dir" \
		--checkpoint-signal=USR1@90 --wrap 'env | grep ^ONRAMP_ | sort')
	JOBS+=("$job")
	submit_wait "$job" COMPLETED 60
	scontrol show job "$job" | grep -q "Comment=onramp:ckpt=$dir"
	[ "$(job_field "$job" Requeue)" = 1 ]
	grep -qx "ONRAMP_CKPT_DIR=$dir" "$ONRAMP_JOBS_DIR/spank.out"
	grep -qx "ONRAMP_CKPT_SIGNAL=USR1@90" "$ONRAMP_JOBS_DIR/spank.out"
	grep -qx "ONRAMP_RESTART_COUNT=0" "$ONRAMP_JOBS_DIR/spank.out"
}

@test "four trainer jobs move from rack1 to rack2: same job ids, resumed at the checkpointed step, loss continues" {
	local names=(mva mvb mvc mvd) ids=() i j
	for i in 0 1 2 3; do
		j=$(trainer_job "${names[i]}" --steps 1000000 --seed $((i + 1)))
		ids+=("$j")
		JOBS+=("$j")
	done
	for i in 0 1 2 3; do
		submit_wait "${ids[i]}" RUNNING 60
		running_on_rack "${ids[i]}" rack1
	done
	for i in 0 1 2 3; do
		wait_for 60 "100 training steps" loss_lines "${names[i]}" 100
	done
	local src_a
	src_a=$(job_field "${ids[0]}" NodeList)
	run "$CTL" migrate --jobs "$(
		IFS=,
		echo "${ids[*]}"
	)" --to rack2
	echo "$output"
	[ "$status" -eq 0 ]
	local dir gen step
	for i in 0 1 2 3; do
		j=${ids[i]}
		running_on_rack "$j" rack2
		[ "$(job_field "$j" Restarts)" = 1 ]
		# Resumed from the generation taken on the signal, at its step.
		dir=$ONRAMP_JOBS_DIR/${names[i]}.ckpt
		gen=$(json_num "$dir/resumed.json" generation)
		step=$(json_num "$dir/resumed.json" step)
		[ "$gen" -ge 1 ]
		[ "$(json_num "$dir/$gen/manifest.json" step)" = "$step" ]
		[ "$(json_num "$dir/resumed.json" restart_count)" = 1 ]
	done
	for i in 0 1 2 3; do
		dir=$ONRAMP_JOBS_DIR/${names[i]}.ckpt
		step=$(json_num "$dir/resumed.json" step)
		wait_for 30 "steps after the move" loss_lines "${names[i]}" $((step + 110))
		run "$CTL" verify-loss "${ids[i]}"
		echo "$output"
		[ "$status" -eq 0 ]
	done
	# Exactly the trajectory of an uninterrupted run (the last line for a
	# step counts).
	local ref=$BATS_TEST_TMPDIR/ref upto
	dir=$ONRAMP_JOBS_DIR/mva.ckpt
	upto=$(($(json_num "$dir/resumed.json" step) + 100))
	ONRAMP_CKPT_DIR=$ref "$TRAINER" --steps "$upto" 2>/dev/null
	diff <(awk -v n="$upto" '$1 <= n {l[$1] = $2} END {for (k = 1; k <= n; k++) print k, l[k]}' "$dir/loss.log") \
		"$ref/loss.log"
	# The source nodes were drained only for the move.
	no_migrate_drain
	[[ $(node_state "$src_a") != *DRAIN* ]]
	# The journal says so too, and each job kept its shape (one leaf).
	for j in "${ids[@]}"; do
		"$CTL" migrate --status "$j" | grep -q " DONE "
		steered_event "$j" | grep -q "Switches=1@"
	done
}

@test "rollback sends a migrated job back to its source node, losing no step" {
	local job src
	job=$(trainer_job rb --steps 1000000)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	wait_for 60 "50 training steps" loss_lines rb 50
	src=$(job_field "$job" NodeList)
	run "$CTL" migrate --jobs "$job" --to rack2
	[ "$status" -eq 0 ]
	running_on_rack "$job" rack2
	local first
	first=$(json_num "$ONRAMP_JOBS_DIR/rb.ckpt/resumed.json" step)
	# MigrateMaxPerJob=1: one more migrate is refused, naming the cap, and
	# leaves the job where it is; rollback is exempt.
	local conf=$BATS_TEST_TMPDIR/onramp.conf
	{ cat "$ONRAMP_CONF"; echo "MigrateMaxPerJob=1"; } >"$conf"
	run env ONRAMP_CONF="$conf" "$CTL" migrate --jobs "$job" --to rack1
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"already migrated 1 times (MigrateMaxPerJob=1)"* ]]
	running_on_rack "$job" rack2
	[ "$(job_field "$job" Restarts)" = 1 ]
	run env ONRAMP_CONF="$conf" "$CTL" rollback "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(job_field "$job" NodeList)" = "$src" ]
	[ "$(job_field "$job" Restarts)" = 2 ]
	# Resumed from a checkpoint taken on rack2, after the first move.
	[ "$(json_num "$ONRAMP_JOBS_DIR/rb.ckpt/resumed.json" step)" -gt "$first" ]
	[ "$(json_num "$ONRAMP_JOBS_DIR/rb.ckpt/resumed.json" restart_count)" = 2 ]
}

@test "a job that ignores the signal: migration aborted, still running on rack1, drain undone" {
	local job node
	job=$(trainer_job ign --steps 1000000 --ignore-signal)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	node=$(job_field "$job" NodeList)
	run "$CTL" migrate --jobs "$job" --to rack2 --ack-timeout 5
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"ABORTED: no new checkpoint generation"* ]]
	running_on_rack "$job" rack1
	[ "$(job_field "$job" NodeList)" = "$node" ]
	[ "$(job_field "$job" Restarts)" = 0 ]
	[[ $(node_state "$node") != *DRAIN* ]]
	[[ $(job_field "$job" AdminComment) != *onramp:migrating* ]]
}

@test "a corrupted shard: that manifest is never used, the job resumes from the previous verified generation" {
	local job
	job=$(trainer_job bad --steps 1000000 --ckpt-every 50 --test-corrupt-shard)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	wait_for 60 "a periodic checkpoint" test -e "$ONRAMP_JOBS_DIR/bad.ckpt/1/manifest.json"
	run "$CTL" migrate --jobs "$job" --to rack2
	echo "$output"
	[ "$status" -eq 0 ]
	running_on_rack "$job" rack2
	# The generation written on the signal is the corrupted one (the trainer
	# says which); the job resumed from the one before it. Generations the
	# resumed job writes afterwards on rack2 are good again.
	local dir=$ONRAMP_JOBS_DIR/bad.ckpt bad used
	bad=$(sed -n 's|.*test: corrupted .*/\([0-9][0-9]*\)/weights\.bin.*|\1|p' "$ONRAMP_JOBS_DIR/bad.out" | head -1)
	[ -n "$bad" ]
	used=$(json_num "$dir/resumed.json" generation)
	[ "$used" -lt "$bad" ]
	run "$ONRAMP_REPO/contrib/tools/onramp-ckpt" verify --dir "$dir" "$bad"
	[ "$status" -eq 1 ]
	[[ $output == *"shard weights.bin"* ]]
	sqlite3 "$ONRAMP_CLUSTER_DIR/onramp/migrate.db" \
		"select message from events where state='VERIFIED'" | grep -q "previous verified generation $used"
}

@test "an unprivileged user cannot migrate a job" {
	local job
	job=$(trainer_job usr --steps 1000000)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	run as_user "$CTL" migrate --jobs "$job" --to rack2
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"only root or SlurmUser"* ]]
	run as_user "$ONRAMP_REPO/contrib/tools/onramp-migrate" migrate --jobs "$job" --to rack2
	[ "$status" -ne 0 ]
	[[ $output == *"only root or SlurmUser"* ]]
	running_on_rack "$job" rack1
	[[ $(node_state "$(job_field "$job" NodeList)") != *DRAIN* ]]
}

@test "a second migration of the same job is refused while one runs; requeue=0 is refused meanwhile" {
	local job
	job=$(trainer_job two --steps 1000000 --ignore-signal)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	"$CTL" migrate --jobs "$job" --to rack2 --ack-timeout 8 >"$BATS_TEST_TMPDIR/first" 2>&1 &
	local first=$!
	echo "$first" >"$BATS_TEST_TMPDIR/first.pid"
	wait_for 10 "the first migration to mark the job" \
		eval "[[ \$(job_field $job AdminComment) == onramp:migrating* ]]"
	run "$CTL" migrate --jobs "$job" --to rack2
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"already being migrated"* ]]
	local off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	run as_user scontrol update jobid="$job" requeue=0
	echo "$output"
	[ "$status" -ne 0 ]
	wait "$first" || true
	log_since_has "$ONRAMP_CTLD_LOG" "$off" "update of job $job by uid [0-9]+ rejected: onramp: job $job is being migrated"
	[ "$(job_field "$job" Requeue)" = 1 ]
	running_on_rack "$job" rack1
}

@test "--resume finishes a migration whose driver died after signalling" {
	local job
	job=$(trainer_job crash --steps 1000000)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	# RUNNING is slurmctld's word; the trainer handles the signal once it
	# trains (a signal before that killed it on the site profile).
	wait_for 60 "training steps" loss_lines crash 10
	run env ONRAMP_MIGRATE_CRASH_AFTER=SIGNALLED "$CTL" migrate --jobs "$job" --to rack2
	[ "$status" -eq 99 ]
	"$CTL" migrate --status "$job" | grep -q " SIGNALLED "
	run "$CTL" migrate --resume
	echo "$output"
	[ "$status" -eq 0 ]
	running_on_rack "$job" rack2
	[ "$(job_field "$job" Restarts)" = 1 ]
	[ "$(json_num "$ONRAMP_JOBS_DIR/crash.ckpt/resumed.json" generation)" = 1 ]
}

@test "array tasks move under their own job ids; tasks sharing a checkpoint directory are refused" {
	local arr dir=$ONRAMP_JOBS_DIR/arr.ckpt t0 t1
	as_user mkdir -p "$dir" "$dir.1"
	arr=$(as_user sbatch --parsable -p batch -N1 --constraint=rack1 --array=0-1 -o /dev/null \
		--comment="onramp:ckpt=$dir" --wrap "sleep 600")
	JOBS+=("$arr")
	wait_for 60 "both array tasks to run" \
		eval "[ \$(squeue -h -j $arr -t RUNNING -o %A | wc -l) -eq 2 ]"
	t0=$(squeue -h -j "${arr}_0" -o %A)
	t1=$(squeue -h -j "${arr}_1" -o %A)
	[ "$t0" != "$t1" ]
	# One task by ARRAYID_TASK: its own job id.
	run "$CTL" migrate --jobs "${arr}_1" --to rack2 --dry-run
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"job $t1: would move"* ]]
	[[ $output != *"job $t0:"* ]]
	# The array's id: every running task, but not two into one directory.
	run "$CTL" migrate --jobs "$arr" --to rack2 --dry-run
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"shares its checkpoint directory $dir with job"* ]]
	scontrol update jobid="${arr}_1" comment="onramp:ckpt=$dir.1"
	run "$CTL" migrate --jobs "$arr" --to rack2 --dry-run
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"job $t0: would move"*"checkpoints $dir,"* ]]
	[[ $output == *"job $t1: would move"*"checkpoints $dir.1,"* ]]
	run "$CTL" migrate --jobs "${arr}_7" --to rack2
	[ "$status" -eq 2 ]
	[[ $output == *"array task ${arr}_7 is not running"* ]]
	run "$CTL" migrate --jobs "12x" --to rack2
	[ "$status" -eq 2 ]
	[[ $output == *"'12x' is not a job id"* ]]
}
