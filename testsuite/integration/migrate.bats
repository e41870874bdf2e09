#!/usr/bin/env bats
# Migration on the live cluster: reference-trainer jobs (contrib/examples/
# onramp-trainer) move from rack1 (node[1-4]) to rack2 (node[5-8]) under
# the same job id and resume from their checkpoint. Jobs opt in through
# MigratePartitions (set for this file) and name their checkpoint directory
# with --comment=onramp:ckpt=DIR. Each move waits out cred_expire (30 s on
# the test cluster) before the requeued job may start again.

load helpers

ONRAMP_CONF=$ONRAMP_CLUSTER_DIR/etc/onramp.conf
TRAINER=$ONRAMP_REPO/contrib/examples/onramp-trainer
CTL=$ONRAMP_REPO/contrib/onrampctl

setup_file() {
	require_cluster
	[[ -x $TRAINER ]] || skip "onramp-trainer not built"
	cp -p "$ONRAMP_CONF" "$BATS_FILE_TMPDIR/onramp.conf.orig"
	echo "MigratePartitions=batch" >>"$ONRAMP_CONF"
	local off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	scontrol reconfigure
	wait_for 30 "job_submit/onramp to reload onramp.conf" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded"
}

teardown_file() {
	if [[ -f $BATS_FILE_TMPDIR/onramp.conf.orig ]]; then
		cp -p "$BATS_FILE_TMPDIR/onramp.conf.orig" "$ONRAMP_CONF"
		scontrol reconfigure >/dev/null 2>&1 || true
	fi
}

setup() {
	require_cluster
	JOBS=()
}

teardown() {
	local j
	# A migration a failed test started in the background ends first.
	if [[ -f ${BATS_TEST_TMPDIR:-/nonexistent}/first.pid ]]; then
		local p; p=$(cat "$BATS_TEST_TMPDIR/first.pid")
		while kill -0 "$p" 2>/dev/null; do sleep 0.5; done
	fi
	for j in "${JOBS[@]}"; do scancel "$j" 2>/dev/null || true; done
	# Never leave a node drained by a failed test.
	local n
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		if [[ $(node_field "$n" Reason) == onramp:MIGRATE:* ]]; then
			scontrol update nodename="$n" state=resume 2>/dev/null || true
		fi
	done
}

spank_loaded() {
	grep -q spank_onramp "$ONRAMP_CLUSTER_DIR/etc/plugstack.conf" 2>/dev/null
}

# trainer_job NAME [TRAINER ARGS...]: a trainer job of the test user on one
# rack1 node, checkpoint directory $ONRAMP_JOBS_DIR/NAME.ckpt; prints its id.
# It opts in with spank/onramp's --checkpoint-dir when the cluster loads it,
# else through MigratePartitions and --comment=onramp:ckpt=DIR.
trainer_job() {
	local name=$1 dir
	shift
	dir=$ONRAMP_JOBS_DIR/$name.ckpt
	rm -rf "$dir"
	as_user mkdir -p "$dir"
	if spank_loaded; then
		as_user sbatch --parsable -N1 --constraint=rack1 -J "$name" -o "$name.out" \
			--checkpoint-dir="$dir" --wrap "exec $TRAINER --step-ms 20 $*"
	else
		as_user sbatch --parsable -p batch -N1 --constraint=rack1 -J "$name" -o "$name.out" \
			--comment="onramp:ckpt=$dir" \
			--wrap "ONRAMP_CKPT_DIR=$dir exec $TRAINER --step-ms 20 $*"
	fi
}

running_on_rack() {
	local job=$1 rack=$2 n
	[[ $(job_state "$job") == RUNNING ]] || return 1
	for n in $(expand_hostlist "$(job_field "$job" NodeList)"); do
		[[ $(node_field "$n" AvailableFeatures) == *"$rack"* ]] || return 1
	done
}

# Wait until the job has written at least N loss lines.
loss_lines() {
	[[ $(wc -l <"$ONRAMP_JOBS_DIR/$1.ckpt/loss.log" 2>/dev/null || echo 0) -ge $2 ]]
}

json_num() { sed -n "s/.*\"$2\": *\([0-9]*\).*/\1/p" "$1" | head -1; }

@test "jobs of a MigratePartitions partition are made requeueable with the migration warning signal" {
	local job off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	job=$(as_user sbatch --parsable -p batch --no-requeue -o /dev/null --wrap true 2>&1) || true
	[[ $job == *"must be requeueable"* ]]
	job=$(as_user sbatch --parsable -p batch -o /dev/null --comment=onramp:ckpt=/nonexistent --wrap "sleep 1")
	JOBS+=("$job")
	[ "$(job_field "$job" Requeue)" = 1 ]
	log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: job 0: migratable \\(partition\\): requeue, append, signal 12@120"
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

@test "trainer jobs move from rack1 to rack2: same job id, resumed at the checkpointed step, loss continues" {
	local a b
	a=$(trainer_job mva --steps 1000000)
	b=$(trainer_job mvb --steps 1000000 --seed 7)
	JOBS+=("$a" "$b")
	submit_wait "$a" RUNNING 60
	submit_wait "$b" RUNNING 60
	running_on_rack "$a" rack1
	wait_for 60 "100 training steps" loss_lines mva 100
	wait_for 60 "100 training steps" loss_lines mvb 100
	local src_a
	src_a=$(job_field "$a" NodeList)
	run "$CTL" migrate --jobs "$a,$b" --to rack2
	echo "$output"
	[ "$status" -eq 0 ]
	for j in "$a" "$b"; do
		running_on_rack "$j" rack2
		[ "$(job_field "$j" Restarts)" = 1 ]
	done
	# Resumed from the generation taken on the signal, at its step.
	local dir=$ONRAMP_JOBS_DIR/mva.ckpt gen step
	gen=$(json_num "$dir/resumed.json" generation)
	step=$(json_num "$dir/resumed.json" step)
	[ "$(json_num "$dir/$gen/manifest.json" step)" = "$step" ]
	wait_for 30 "steps after the move" loss_lines mva $((step + 110))
	run "$CTL" verify-loss "$a"
	echo "$output"
	[ "$status" -eq 0 ]
	# Exactly the trajectory of an uninterrupted run (the last line for a
	# step counts).
	local ref=$BATS_TEST_TMPDIR/ref upto=$((step + 100))
	ONRAMP_CKPT_DIR=$ref "$TRAINER" --steps "$upto" 2>/dev/null
	diff <(awk -v n="$upto" '$1 <= n {l[$1] = $2} END {for (k = 1; k <= n; k++) print k, l[k]}' "$dir/loss.log") \
		"$ref/loss.log"
	# The source node was drained only for the move.
	[[ $(node_field "$src_a" Reason) != onramp:MIGRATE:* ]]
	# The journal says so too, and the job kept its shape (one leaf).
	"$CTL" migrate --status "$a" | grep -q " DONE "
	sqlite3 "$ONRAMP_CLUSTER_DIR/onramp/migrate.db" \
		"select message from events e join migrations m on m.id = e.migration
		 where m.job = $a and e.state = 'STEERED'" | grep -q "Switches=1"
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
	run "$CTL" rollback "$job"
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
	local dir=$ONRAMP_JOBS_DIR/bad.ckpt newest used
	newest=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -regex '.*/[0-9]+' -printf '%f\n' | sort -n | tail -1)
	used=$(json_num "$dir/resumed.json" generation)
	[ "$used" -lt "$newest" ]
	run "$ONRAMP_REPO/contrib/tools/onramp-ckpt" verify --dir "$dir" "$newest"
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
