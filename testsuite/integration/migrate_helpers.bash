# shellcheck shell=bash
# Helpers for the migration tests (load after helpers): reference-trainer
# jobs (contrib/examples/onramp-trainer) opt in through MigratePartitions
# (set for the file by migrate_setup_file) and name their checkpoint
# directory with --comment=onramp:ckpt=DIR, or with spank/onramp's
# --checkpoint-dir when the cluster loads it.
#
# Loading this file also defines the bats hooks of a migration test file:
# MigratePartitions=batch for the file, and after each test its jobs (the
# test adds them to JOBS) cancelled and no node left drained for a
# migration.

ONRAMP_CONF=$ONRAMP_CLUSTER_DIR/etc/onramp.conf
TRAINER=$ONRAMP_REPO/contrib/examples/onramp-trainer
# shellcheck disable=SC2034 # used by the .bats files
CTL=$ONRAMP_REPO/contrib/onrampctl
MIGRATE_DB=$ONRAMP_CLUSTER_DIR/onramp/migrate.db

migrate_setup_file() {
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

migrate_teardown_file() {
	if [[ -f $BATS_FILE_TMPDIR/onramp.conf.orig ]]; then
		cp -p "$BATS_FILE_TMPDIR/onramp.conf.orig" "$ONRAMP_CONF"
		scontrol reconfigure >/dev/null 2>&1 || true
	fi
}

# migrate_teardown [JOB...]: wait for the migration a failed test left in
# the background (pid in $BATS_TEST_TMPDIR/first.pid), cancel the jobs,
# and resume any node a failed test left drained for a migration.
migrate_teardown() {
	local j n p
	if [[ -f ${BATS_TEST_TMPDIR:-/nonexistent}/first.pid ]]; then
		p=$(cat "$BATS_TEST_TMPDIR/first.pid")
		# Bounded, and only while that pid is still a migration driver: a
		# driver the test killed and reaped leaves a pid the kernel hands
		# out again (pid_max is 32768 here), e.g. to a job's trainer.
		local deadline=$((SECONDS + 420))
		while [[ $(cat "/proc/$p/comm" 2>/dev/null) == onramp-migrate ]]; do
			if ((SECONDS >= deadline)); then
				echo "teardown: migration driver $p still runs after 420s; killing it" >&2
				kill -9 "$p" 2>/dev/null || true
				break
			fi
			sleep 0.5
		done
	fi
	for j in "$@"; do scancel "$j" 2>/dev/null || true; done
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		if [[ $(node_field "$n" Reason) == onramp:MIGRATE:* ]]; then
			scontrol update nodename="$n" state=resume 2>/dev/null || true
		fi
	done
}

spank_loaded() {
	grep -q spank_onramp "$ONRAMP_CLUSTER_DIR/etc/plugstack.conf" 2>/dev/null
}

# trainer_job NAME [TRAINER ARGS...]: a trainer job of the test user,
# checkpoint directory $ONRAMP_JOBS_DIR/NAME.ckpt; prints its id. Its sbatch
# shape is $TRAINER_SBATCH (default: one rack1 node).
trainer_job() {
	local name=$1 dir
	local -a shape=()
	shift
	read -ra shape <<<"${TRAINER_SBATCH:--N1 --constraint=rack1}"
	dir=$ONRAMP_JOBS_DIR/$name.ckpt
	rm -rf "$dir"
	as_user mkdir -p "$dir"
	if spank_loaded; then
		as_user sbatch --parsable "${shape[@]}" -J "$name" -o "$name.out" \
			--checkpoint-dir="$dir" --wrap "exec $TRAINER --step-ms 20 $*"
	else
		as_user sbatch --parsable -p batch "${shape[@]}" -J "$name" -o "$name.out" \
			--comment="onramp:ckpt=$dir" \
			--wrap "ONRAMP_CKPT_DIR=$dir exec $TRAINER --step-ms 20 $*"
	fi
}

# running_on_rack JOB FEATURE: running, every node of it has FEATURE.
running_on_rack() {
	local job=$1 rack=$2 n
	[[ $(job_state "$job") == RUNNING ]] || return 1
	for n in $(expand_hostlist "$(job_field "$job" NodeList)"); do
		[[ ,$(node_field "$n" AvailableFeatures), == *",$rack,"* ]] || return 1
	done
}

# Wait until the job has written at least N loss lines.
loss_lines() {
	[[ $(wc -l <"$ONRAMP_JOBS_DIR/$1.ckpt/loss.log" 2>/dev/null || echo 0) -ge $2 ]]
}

json_num() { sed -n "s/.*\"$2\": *\([0-9]*\).*/\1/p" "$1" | head -1; }

# journal_state JOB: the state of JOB's newest migration ("" when none).
journal_state() {
	sqlite3 "$MIGRATE_DB" "select state from migrations where job = $1 order by id desc limit 1" 2>/dev/null
}

journal_state_is() {
	[[ $(journal_state "$1") == "$2" ]]
}

# steered_event JOB: the message of the STEERED event of JOB's migration.
steered_event() {
	sqlite3 "$MIGRATE_DB" "select e.message from events e join migrations m on m.id = e.migration
		where m.job = $1 and e.state = 'STEERED' order by e.id desc limit 1"
}

# no_migrate_drain: no node is left drained with a migration's reason.
no_migrate_drain() {
	local n
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		# Drained, not only the reason: 24.11 keeps a resumed node's reason.
		if [[ $(node_field "$n" Reason) == onramp:MIGRATE:* && $(node_state "$n") == *DRAIN* ]]; then
			echo "node $n is left drained: $(node_field "$n" Reason)" >&2
			return 1
		fi
	done
}

# The bats hooks.
setup_file() {
	migrate_setup_file
}

teardown_file() {
	migrate_teardown_file
}

setup() {
	require_cluster
	JOBS=()
}

teardown() {
	migrate_teardown "${JOBS[@]}"
}
