#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4 --cpus 16
# Two admin hosts (high-availability controllers) on one machine: each its
# own onramp.conf and StateDir (its journals on its "local disk"), both
# one SharedStateDir (onramp.conf(5) SharedStateDir=, LeaseSeconds=). A
# migration started on host A, whose driver dies mid-way, is resumed on
# host B from the shared copy of the journal, once A's lease has expired.
# ONRAMP_LEASE_HOST names each host in its lease (a test hook: both run on
# one kernel, with one boot id and host name); the crash is
# onramp-migrate's ONRAMP_MIGRATE_CRASH_AFTER hook (exit 99, no cleanup).

load helpers
load migrate_helpers # and the setup/teardown hooks

LEASE_S=20

# host_conf NAME: an onramp.conf for admin host NAME, differing from the
# cluster's only in StateDir, plus the shared settings.
host_conf() {
	local conf=$BATS_TEST_TMPDIR/$1.conf
	sed "s|^StateDir=.*|StateDir=$BATS_TEST_TMPDIR/$1|" "$ONRAMP_CONF" >"$conf"
	printf 'SharedStateDir=%s\nLeaseSeconds=%s\n' "$SHARED" "$LEASE_S" >>"$conf"
	echo "$conf"
}

# on HOST CMD...: CMD run as admin host HOST.
on() {
	local host=$1
	shift
	ONRAMP_CONF=$BATS_TEST_TMPDIR/$host.conf ONRAMP_LEASE_HOST=$host "$@"
}

state_in() { # state_in DB JOB
	sqlite3 "$1" "select state from migrations where job = $2 order by id desc limit 1"
}

# The lease file is gone or past its expiry plus the margin (a tenth of
# LeaseSeconds: 2 s).
lease_over() {
	local f=$SHARED/migrate.db.lease
	[[ ! -e $f ]] || (($(date +%s) > $(jq -r .expires "$f") + 2))
}

@test "a migration whose driver died on host A is resumed on host B from SharedStateDir, once A's lease expired" {
	SHARED=$BATS_TEST_TMPDIR/shared
	mkdir -m 0700 "$SHARED"
	host_conf hostA >/dev/null
	host_conf hostB >/dev/null
	on hostA "$ONRAMP_REPO/contrib/tools/onramp-config" --check

	local job out=$BATS_TEST_TMPDIR
	job=$(trainer_job ha --steps 1000000)
	JOBS+=("$job")
	submit_wait "$job" RUNNING 90
	running_on_rack "$job" rack1
	wait_for 60 "20 training steps" loss_lines ha 20

	# Host A dies right after journaling SIGNALLED: drained, signalled.
	run on hostA env ONRAMP_MIGRATE_CRASH_AFTER=SIGNALLED "$CTL" migrate --jobs "$job" --to rack2
	echo "$output"
	[ "$status" -eq 99 ]
	[ "$(state_in "$BATS_TEST_TMPDIR/hostA/migrate.db" "$job")" = SIGNALLED ]
	# Its copy in SharedStateDir is at that step, one file (no WAL).
	[ "$(state_in "$SHARED/migrate.db" "$job")" = SIGNALLED ]
	[ ! -e "$SHARED/migrate.db-wal" ]
	[ "$(jq -r .host "$SHARED/migrate.db.lease")" = hostA ]

	# Host B while A's lease is live (renewed at that step, 20 s): refused,
	# naming A; nothing written.
	run on hostB "$CTL" migrate --resume
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"migrate.db.lease: held by hostA"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/hostB/migrate.db" ]

	# Once it expired: B takes it over, imports the copy and finishes.
	wait_for 60 "host A's lease to expire" lease_over
	run on hostB "$CTL" migrate --resume
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"taking over the lease of hostA"* ]]
	[[ $output == *"imported $SHARED/migrate.db"* ]]
	[ "$(state_in "$BATS_TEST_TMPDIR/hostB/migrate.db" "$job")" = DONE ]
	[ "$(state_in "$SHARED/migrate.db" "$job")" = DONE ]
	# B's last process released the lease.
	[ ! -e "$SHARED/migrate.db.lease" ]

	# No job lost: the same job runs on rack2, moved once, from its checkpoint.
	running_on_rack "$job" rack2
	[ "$(job_field "$job" Restarts)" = 1 ]
	[ "$(json_num "$ONRAMP_JOBS_DIR/ha.ckpt/resumed.json" restart_count)" = 1 ]
	[[ $(job_field "$job" AdminComment) != *onramp:migrating* ]]
	[ -z "$(squeue -h -t PD -j "$job" -o %i)" ]
	no_migrate_drain

	# Host A back: its older journal is brought up to date, nothing to do.
	run on hostA "$CTL" migrate --resume
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"nothing to resume"* ]]
	[ "$(state_in "$BATS_TEST_TMPDIR/hostA/migrate.db" "$job")" = DONE ]
}
