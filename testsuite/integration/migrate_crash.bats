#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4 --cpus 16
# Migration drivers that die, and a slurmctld that restarts, in the middle
# of migrations. rack1 is node[1-2], rack2 node[3-4] (16 CPUs each node, so
# that twenty one-CPU trainer jobs fit on one rack and move concurrently).
# The crashes are simulated by onramp-migrate's test hooks
# ONRAMP_MIGRATE_CRASH_BEFORE/AFTER=STATE (exit 99 just before / after the
# state is journaled), and once by a real kill -9.

load helpers
load migrate_helpers # and the setup/teardown hooks

# Every boundary of the journal, from before PLANNED to before DONE.
BOUNDARIES=(BEFORE:PLANNED AFTER:PLANNED BEFORE:DRAINED AFTER:DRAINED
	BEFORE:SIGNALLING AFTER:SIGNALLING BEFORE:SIGNALLED AFTER:SIGNALLED
	BEFORE:CHECKPOINTED AFTER:CHECKPOINTED BEFORE:VERIFIED AFTER:VERIFIED
	BEFORE:HELD AFTER:HELD BEFORE:STEERED AFTER:STEERED
	BEFORE:RELEASED AFTER:RELEASED BEFORE:DONE)
# The state journaled before STATE.
declare -gA PREVIOUS=([DRAINED]=PLANNED [SIGNALLING]=DRAINED [SIGNALLED]=SIGNALLING
	[CHECKPOINTED]=SIGNALLED [VERIFIED]=CHECKPOINTED [HELD]=VERIFIED
	[STEERED]=HELD [RELEASED]=STEERED [DONE]=RELEASED)

@test "drivers killed at every journal boundary (and by kill -9): --resume finishes all, no job lost, duplicated or left held" {
	local -a ids=() names=()
	local i j b name
	for i in "${!BOUNDARIES[@]}"; do
		names+=("c$i")
		j=$(trainer_job "c$i" --steps 1000000 --seed $((i + 1)))
		ids+=("$j")
		JOBS+=("$j")
	done
	# The kill -9 case: its checkpoint takes 15 s to commit.
	local kid
	kid=$(trainer_job k9 --steps 1000000 --test-slow-checkpoint 15000)
	JOBS+=("$kid")
	for j in "${ids[@]}" "$kid"; do
		submit_wait "$j" RUNNING 90
		running_on_rack "$j" rack1
	done
	for name in "${names[@]}" k9; do
		wait_for 60 "20 training steps of $name" loss_lines "$name" 20
	done

	# One driver per job, all at once, each crashing at its boundary.
	local out=$BATS_TEST_TMPDIR
	for i in "${!BOUNDARIES[@]}"; do
		b=${BOUNDARIES[i]}
		(
			rc=0
			env "ONRAMP_MIGRATE_CRASH_${b%%:*}=${b#*:}" "$CTL" migrate --jobs "${ids[i]}" --to rack2 \
				>"$out/c$i.log" 2>&1 || rc=$?
			echo "$rc" >"$out/c$i.rc"
		) &
	done
	"$CTL" migrate --jobs "$kid" --to rack2 >"$out/k9.log" 2>&1 &
	local kpid=$!
	echo "$kpid" >"$out/first.pid"
	# kill -9 while it waits for the checkpoint: signalled, generation
	# started, manifest not yet committed.
	wait_for 60 "the k9 migration to signal its job" journal_state_is "$kid" SIGNALLED
	wait_for 30 "k9's checkpoint to start" test -d "$ONRAMP_JOBS_DIR/k9.ckpt/1"
	[ ! -e "$ONRAMP_JOBS_DIR/k9.ckpt/1/manifest.json" ]
	[ "$(cat "/proc/$kpid/comm")" = onramp-migrate ]
	kill -9 "$kpid"
	wait "$kpid" || true
	for i in "${!BOUNDARIES[@]}"; do
		wait_for 240 "the driver crashing at ${BOUNDARIES[i]}" test -s "$out/c$i.rc"
	done
	# Each driver died where it was told to.
	for i in "${!BOUNDARIES[@]}"; do
		b=${BOUNDARIES[i]}
		echo "${BOUNDARIES[i]}: rc $(cat "$out/c$i.rc"), journal '$(journal_state "${ids[i]}")'"
		[ "$(cat "$out/c$i.rc")" = 99 ]
		case $b in
		BEFORE:PLANNED) [ -z "$(journal_state "${ids[i]}")" ] ;;
		AFTER:*) [ "$(journal_state "${ids[i]}")" = "${b#*:}" ] ;;
		BEFORE:*) [ "$(journal_state "${ids[i]}")" = "${PREVIOUS[${b#*:}]}" ] ;;
		esac
	done
	[ "$(journal_state "$kid")" = SIGNALLED ]

	run "$CTL" migrate --resume
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$(sqlite3 "$MIGRATE_DB" "select id from migrations where active = 1")" ]
	# The driver that died before PLANNED had done nothing: the job runs
	# where it ran.
	running_on_rack "${ids[0]}" rack1
	[ "$(job_field "${ids[0]}" Restarts)" = 0 ]
	# Every other job moved exactly once, resumed from the journaled
	# generation, and its migration is DONE.
	local gen
	for j in "${ids[@]:1}" "$kid"; do
		echo "job $j: $(job_state "$j") on $(job_field "$j" NodeList), restarts $(job_field "$j" Restarts), journal $(journal_state "$j")"
		running_on_rack "$j" rack2
		[ "$(job_field "$j" Restarts)" = 1 ]
		[ "$(journal_state "$j")" = DONE ]
		[ "$(sqlite3 "$MIGRATE_DB" "select count(*) from migrations where job = $j")" = 1 ]
		gen=$(sqlite3 "$MIGRATE_DB" "select gen from migrations where job = $j")
		name=$(job_field "$j" JobName)
		[ "$(json_num "$ONRAMP_JOBS_DIR/$name.ckpt/resumed.json" generation)" = "$gen" ]
		[ "$(json_num "$ONRAMP_JOBS_DIR/$name.ckpt/resumed.json" restart_count)" = 1 ]
		[[ $(job_field "$j" AdminComment) != *onramp:migrating* ]]
	done
	# The kill -9 one resumed from the slow checkpoint it was waiting for.
	[ "$(json_num "$ONRAMP_JOBS_DIR/k9.ckpt/resumed.json" generation)" = 1 ]
	# Nothing left held or drained.
	[ -z "$(squeue -h -t PD -j "$(IFS=,; echo "${JOBS[*]}")" -o %i)" ]
	no_migrate_drain
}

@test "slurmctld restarted in the middle of a migration: the migration completes" {
	local job
	# The checkpoint commits 10 s after the signal, while slurmctld is down
	# (25 s: longer than scontrol's own retries, MessageTimeout).
	job=$(trainer_job ctld --steps 1000000 --test-slow-checkpoint 10000)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	wait_for 60 "20 training steps" loss_lines ctld 20
	"$CTL" migrate --jobs "$job" --to rack2 >"$BATS_TEST_TMPDIR/mig" 2>&1 &
	local pid=$!
	echo "$pid" >"$BATS_TEST_TMPDIR/first.pid"
	wait_for 60 "the migration to signal the job" journal_state_is "$job" SIGNALLED
	"$ONRAMP_CLUSTER_TOOL" restart-ctld --down 25
	local rc=0
	wait "$pid" || rc=$?
	cat "$BATS_TEST_TMPDIR/mig"
	[ "$rc" -eq 0 ]
	# It did meet the outage, and waited it out.
	grep -q "slurmctld does not answer" "$BATS_TEST_TMPDIR/mig"
	running_on_rack "$job" rack2
	[ "$(job_field "$job" Restarts)" = 1 ]
	[ "$(journal_state "$job")" = DONE ]
	[ "$(json_num "$ONRAMP_JOBS_DIR/ctld.ckpt/resumed.json" generation)" = 1 ]
	no_migrate_drain
}
