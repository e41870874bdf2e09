#!/usr/bin/env bats
# SlurmUser against root, on a cluster configured like a production site
# (SlurmUser=slurm): every directory and file under StateDir and
# NodeStateDir that root's code touches and SlurmUser can replace (it owns
# StateDir and NodeStateDir, so it can rename any entry there aside, also a
# root-owned one, and put its own in its place) becomes, as SlurmUser, a
# symlink to a root-owned victim, a FIFO, or a hard link; then root runs
# each flow: install-trigger, admit (and the admission job it runs on the
# node), admit --no-wait, expand (its pair and smoke jobs), migrate, and a
# user job (prolog and epilog). No victim may change (owner, group, mode,
# link count, size, mtime, content; for a directory its entries), no flow
# may hang (each runs under timeout), and a flow that refuses says which
# path it refused.
#
# The inventory (names with a job id: the next ones, as SlurmUser can
# predict them):
#   StateDir: locks/ admit/ expand/ (directories); locks/admit.NODE.lock,
#     locks/expand.ID.lock, locks/drain.lock, locks/migrate.JOB.lock;
#     admit/onramp-admit:NODE.JOB.out (the admission job's -o),
#     admit/orchestrate.log (--no-wait); expand/admit.log,
#     expand/ID.pairN.out, expand/ID.smoke.RACK.out (the campaign's jobs' -o);
#     onramp.db and migrate.db with their -wal, -shm and -journal;
#     trigger.log (appended by the trigger, which runs as SlurmUser).
#   NodeStateDir: verdicts/ jobs/ (directories); admission.json,
#     verdicts/verdict.JOB.json, jobs/JOB.start, jobcheck.log, jobcheck.log.1.
# onramp-cluster: --profile site --nodes 8 --racks 2

load helpers
load admission_helpers

SU=slurm
STATE=$ONRAMP_CLUSTER_DIR/onramp
# The node whose NodeStateDir is attacked, and the expansion's nodes (one
# per rack: a cross-rack pair).
NODE=node3
EXPAND_NODES='node[4,8]'
ND=$ONRAMP_CLUSTER_DIR/nodes/$NODE/onramp
CONF=$ONRAMP_CLUSTER_DIR/etc/onramp.conf

setup_file() {
	onramp_conf_save
	# The migration flow: jobs of batch opt in.
	sed -i '/^MigratePartitions=/d' "$CONF"
	echo "MigratePartitions=batch" >>"$CONF"
	scontrol reconfigure
}

teardown_file() {
	onramp_conf_restore
}

setup() {
	require_cluster
	[[ $(cluster_param PROFILE) == site ]] || skip "needs onramp-cluster --profile site"
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	VD=$BATS_TEST_TMPDIR/victims
	mkdir -m 0700 "$VD"
	PLANTED=$BATS_TEST_TMPDIR/planted
	: >"$PLANTED"
	JOBS=()
}

teardown() {
	local j
	for j in "${JOBS[@]}"; do scancel "$j" 2>/dev/null || true; done
	unplant
	# A node a failed test left unadmitted is admitted again.
	for n in $NODE $(expand_hostlist "$EXPAND_NODES"); do
		admitted_idle "$n" || restore_nodes "$n" || true
	done
}

as_su() { runuser -u "$SU" -- "$@"; }

# stamp PATH: what must not change of a victim (PATH itself, not followed).
stamp() {
	stat -c '%U:%G %f %h %s %Y' -- "$1"
	if [ -d "$1" ]; then
		find "$1" -mindepth 1 -maxdepth 1 -printf '%P\n' | sort | sha256sum
	else
		sha256sum <"$1"
	fi
}

# victim file|empty|dir: a new root-owned victim in $VD (mode 0700, root's);
# prints it. An empty file is what SQLite would take for a new database.
victim() {
	local v
	v=$(mktemp -u "$VD/$1.XXXXXX")
	case $1 in
	dir)
		mkdir -m 0755 "$v"
		echo "root's" >"$v/keep"
		;;
	empty) install -m 0644 /dev/null "$v" ;;
	*) echo "root's $v" >"$v" && chmod 0644 "$v" ;;
	esac
	echo "$v"
}

# aside PATH: SlurmUser renames what is at PATH aside (recorded, put back by
# unplant); a parent directory SlurmUser cannot write (root made it) is
# replaced by one of SlurmUser's first, the same way.
aside() {
	local p=$1 parent
	parent=$(dirname "$p")
	if ! as_su test -w "$parent"; then
		aside "$parent"
		as_su mkdir "$parent"
	fi
	if [ -e "$p" ] || [ -L "$p" ]; then
		as_su mv -T -- "$p" "$p.aside-$$"
		echo "$p|$p.aside-$$" >>"$PLANTED"
	else
		echo "$p|" >>"$PLANTED"
	fi
}

# plant KIND PATH...: as SlurmUser, put at each PATH a symlink to a new
# victim file (link), to an empty one (emptylink), to a victim directory
# (dirlink), a FIFO (fifo) or a hard link to a victim file (hardlink).
plant() {
	local kind=$1 p v
	shift
	for p in "$@"; do
		aside "$p"
		case $kind in
		link) v=$(victim file) && as_su ln -s -- "$v" "$p" ;;
		emptylink) v=$(victim empty) && as_su ln -s -- "$v" "$p" ;;
		dirlink) v=$(victim dir) && as_su ln -s -- "$v" "$p" ;;
		hardlink) v=$(victim file) && as_su ln -- "$v" "$p" ;;
		fifo) as_su mkfifo -- "$p" ;;
		esac
		if [ "$kind" != fifo ]; then
			echo "$v" >>"$BATS_TEST_TMPDIR/victims.list"
			stamp "$v" >"$v.stamp"
		fi
	done
}

# victims_unchanged: every victim as it was planted; names each one changed.
victims_unchanged() {
	local v bad=0
	[ -f "$BATS_TEST_TMPDIR/victims.list" ] || return 0
	while read -r v; do
		if [ "$(stamp "$v")" != "$(cat "$v.stamp")" ]; then
			echo "victim $v changed: was $(cat "$v.stamp"), is $(stamp "$v")" >&2
			bad=1
		fi
	done <"$BATS_TEST_TMPDIR/victims.list"
	return $bad
}

# unplant: what was planted removed, what was there put back (last first).
unplant() {
	local p a
	[ -f "$PLANTED" ] || return 0
	tac "$PLANTED" | while IFS='|' read -r p a; do
		rm -rf -- "$p"
		[ -z "$a" ] || mv -T -- "$a" "$p"
	done
	: >"$PLANTED"
}

# next_jobs N: the next N job ids (those SlurmUser would plant for).
next_jobs() {
	local j
	j=$(sbatch --parsable --hold -o /dev/null --wrap true)
	scancel "$j"
	seq $((j + 1)) $((j + $1))
}

# bounded CMD...: run CMD under a timeout; 124 means root hung.
bounded() {
	timeout 150 "$@"
}

# refused PATH: the flow ($status, $output of run) failed, not by hanging,
# naming PATH.
refused() {
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ] && [[ $output == *"$1"* ]]
}

# user_job_on NODE: a user's job on NODE, completed (its prolog and epilog ran).
user_job_on() {
	local j
	j=$(as_user sbatch --parsable -w "$1" -o /dev/null --wrap true) || return 1
	JOBS+=("$j")
	submit_wait "$j" COMPLETED 60
}

# migratable_job: a running job of the test user on node1 (rack1) that
# writes no checkpoint (a migration of it aborts); prints its id.
migratable_job() {
	local j
	j=$(as_user sbatch --parsable -p batch -w node1 -o /dev/null \
		--comment="onramp:ckpt=$ONRAMP_JOBS_DIR/victims.ckpt" --wrap "sleep 600") || return 1
	submit_wait "$j" RUNNING 60 >&2 || { scancel "$j"; return 1; }
	echo "$j"
}

# migrate_refuses JOB PATH: root's migration of JOB to rack2 refuses,
# naming PATH; no victim changed, node1 not left drained.
migrate_refuses() {
	run bounded "$ONRAMPCTL" migrate --jobs "$1" --to rack2 --ack-timeout 3
	refused "$2" && victims_unchanged && [[ $(node_state node1) != *DRAIN* ]]
}

# migrate_locks_refused KIND: KIND (plant) at the migration's lock files
# (the job's, the drain lock); its migration refuses, naming them.
migrate_locks_refused() {
	local job
	job=$(migratable_job) || return 1
	JOBS+=("$job")
	plant "$1" "$STATE/locks/migrate.$job.lock" "$STATE/locks/drain.lock"
	migrate_refuses "$job" "$STATE/locks/"
}

# expand_once ID: one campaign over EXPAND_NODES; $status, $output. A
# campaign's id is journaled for good: each test run names its own (camp).
expand_once() {
	run bounded "$ONRAMPCTL" expand "$EXPAND_NODES" --name "$1" --boot-timeout 90 --admit-timeout 120
}
camp() { echo "victims-$1-$$"; }

@test "StateDir's directories as symlinks: install-trigger, admit and expand refuse, naming them; no victim changes" {
	local d
	for d in locks admit; do
		plant dirlink "$STATE/$d"
		run bounded "$ONRAMPCTL" install-trigger
		refused "$STATE/$d"
		run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
		refused "$STATE/$d"
		victims_unchanged
		unplant
	done
	plant dirlink "$STATE/locks"
	expand_once "$(camp locks)"
	refused "$STATE/locks"
	unplant
	# expand/ is the campaign's (its jobs' output): refused before any reboot.
	plant dirlink "$STATE/expand"
	expand_once "$(camp expand)"
	refused "$STATE/expand"
	victims_unchanged
	# Once it is a directory again the same command finishes the campaign.
	unplant
	expand_once "$(camp expand)"
	echo "$output"
	[ "$status" -eq 0 ]
	# The triggers are still in place.
	[ "$(strigger --get | grep -c onramp-trigger)" -eq 2 ]
}

@test "NodeStateDir's directories as symlinks: the admission job refuses, naming them; prolog and epilog leave the victim alone" {
	plant dirlink "$ND/verdicts"
	run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
	echo "$output"
	# Could not judge: onramp's own error, the node stays reserved.
	[ "$status" -eq 2 ]
	[[ $output == *"$ND/verdicts"* ]]
	victims_unchanged
	unplant
	run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
	[ "$status" -eq 0 ]
	admitted_idle "$NODE"
	# jobs/ (the prolog's start markers, which the epilog removes).
	user_job_on "$NODE"
	plant dirlink "$ND/jobs"
	user_job_on "$NODE"
	victims_unchanged
	[[ $(node_state "$NODE") != *DRAIN* ]]
	grep -q "$ND/jobs" "$ND/jobcheck.log"
}

@test "lock files as symlinks: admit, expand and migrate refuse, naming them; no victim changes" {
	plant link "$STATE/locks/admit.$NODE.lock"
	run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
	refused "$STATE/locks/admit.$NODE.lock"
	local id
	id=$(camp lock)
	plant link "$STATE/locks/expand.$id.lock"
	expand_once "$id"
	refused "$STATE/locks/expand.$id.lock"
	victims_unchanged
	# Migration: a job of the test user on rack1 that writes no checkpoint.
	migrate_locks_refused link
}

@test "files root writes as symlinks to victims: admit, the admission job, install-trigger, prolog, epilog, expand and migrate work or refuse; no victim changes" {
	local j
	# The admission job's output and verdict, the record, the logs.
	for j in $(next_jobs 12); do
		plant link "$STATE/admit/onramp-admit:$NODE.$j.out" "$ND/verdicts/verdict.$j.json"
	done
	plant link "$STATE/admit/orchestrate.log" "$STATE/trigger.log" "$ND/admission.json"
	run bounded "$ONRAMPCTL" install-trigger
	echo "$output"
	[ "$status" -eq 0 ]
	run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
	echo "$output"
	[ "$status" -eq 0 ]
	admitted_idle "$NODE"
	victims_unchanged
	# Prolog and epilog: their log, its rotation, the start markers.
	as_su mkdir -p "$ND/jobs"
	for j in $(next_jobs 4); do
		plant link "$ND/jobs/$j.start"
	done
	plant link "$ND/jobcheck.log" "$ND/jobcheck.log.1"
	user_job_on "$NODE"
	[[ $(node_state "$NODE") != *DRAIN* ]]
	victims_unchanged
	# Expansion: the admissions' log, the pair and smoke jobs' output.
	local id f
	id=$(camp files)
	for f in expand/admit.log expand/$id.pair1.out expand/$id.pair2.out \
		expand/$id.smoke.leaf1.out expand/$id.smoke.leaf2.out; do
		plant link "$STATE/$f"
	done
	expand_once "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"cross-rack pair"* && $output == *"smoke job"*": pass"* ]]
	victims_unchanged
	unplant
	# The journal's side files, then the journal (an empty victim is what
	# SQLite would take for a new database).
	plant link "$STATE/onramp.db-wal" "$STATE/onramp.db-shm" "$STATE/onramp.db-journal"
	expand_once "$(camp wal)"
	refused "$STATE/onramp.db"
	victims_unchanged
	unplant
	plant emptylink "$STATE/onramp.db"
	expand_once "$(camp db)"
	refused "$STATE/onramp.db"
	victims_unchanged
	unplant
	# Migration: its journal's side files, then the journal.
	local job
	job=$(migratable_job)
	JOBS+=("$job")
	plant link "$STATE/migrate.db-wal" "$STATE/migrate.db-shm" "$STATE/migrate.db-journal"
	migrate_refuses "$job" "$STATE/migrate.db"
	unplant
	plant emptylink "$STATE/migrate.db"
	migrate_refuses "$job" "$STATE/migrate.db"
}

@test "FIFOs where root opens a lock, appends a log or a job writes its output: no flow hangs, each refuses naming the FIFO or works" {
	local j
	plant fifo "$STATE/locks/admit.$NODE.lock"
	run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
	refused "$STATE/locks/admit.$NODE.lock"
	unplant
	local id
	id=$(camp fifo)
	plant fifo "$STATE/locks/expand.$id.lock"
	expand_once "$id"
	refused "$STATE/locks/expand.$id.lock"
	unplant
	# The admission job's output and the detached wait's log: admitted.
	for j in $(next_jobs 12); do
		plant fifo "$STATE/admit/onramp-admit:$NODE.$j.out"
	done
	plant fifo "$STATE/admit/orchestrate.log"
	run bounded "$ONRAMPCTL" admit --no-wait --timeout 60 "$NODE"
	echo "$output"
	[ "$status" -eq 0 ]
	wait_for 90 "$NODE admitted by the detached wait" admitted_idle "$NODE"
	# The detached wait ended: the node's lock is free again.
	run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
	[ "$status" -eq 0 ]
	# The prolog's and epilog's log: the job runs, the node stays up.
	plant fifo "$ND/jobcheck.log"
	user_job_on "$NODE"
	[[ $(node_state "$NODE") != *DRAIN* ]]
	# Migration's locks.
	migrate_locks_refused fifo
}

@test "hard links to root-owned files where root appends or locks: refused, no victim changes" {
	# fs.protected_hardlinks=1 (the default of every current distribution)
	# forbids SlurmUser a hard link to a file it cannot write: the attack
	# cannot be set up, and the kernel is what stops it.
	[ "$(cat /proc/sys/fs/protected_hardlinks)" = 0 ] ||
		skip "fs.protected_hardlinks=1: SlurmUser cannot link to root's files"
	plant hardlink "$STATE/locks/admit.$NODE.lock" "$STATE/admit/orchestrate.log" "$ND/jobcheck.log"
	run bounded "$ONRAMPCTL" admit --timeout 60 "$NODE"
	refused "$STATE/locks/admit.$NODE.lock"
	user_job_on "$NODE"
	victims_unchanged
}
