#!/usr/bin/env bats
# One live smoke of each flow, run against every Slurm version of the test
# matrix (testsuite/run --slurm VERSION; the README's "Slurm versions"):
# the plugins load in that version's daemons, a rebooted node is admitted
# again, job_submit/onramp refuses a submission and an update, and a job
# migrates. The full files cover each flow in depth; these tests only show
# that the flow works on the version the cluster runs.

load helpers
load admission_helpers
load migrate_helpers # MigratePartitions=batch for the file; JOBS cancelled

# The Slurm the cluster runs (its scontrol, from PATH).
slurm_version() {
	scontrol --version | awk '{print $2}'
}

@test "the cluster runs the Slurm onramp was built for, and loads every onramp plugin" {
	local built
	built=$(sed -n 's/^#define ONRAMP_SLURM_VERSION_STRING "\(.*\)"$/\1/p' "$ONRAMP_REPO/config.h")
	[ -n "$built" ]
	[ "$(slurm_version)" = "$built" ]
	scontrol show config | grep -E '^SLURM_VERSION' | grep -q " $built\$"
	scontrol show config | grep -qE '^JobSubmitPlugins *= *(.*,)?(job_submit/)?onramp(,|$)'
	scontrol show config | grep -qE '^NodeFeaturesPlugins *= *(.*,)?(node_features/)?onramp(,|$)'
	# The daemons loaded them (a plugin that fails to load is fatal, or
	# logged as such).
	grep -q 'job_submit/onramp: loaded' "$ONRAMP_CTLD_LOG"
	grep -q 'node_features/onramp: node node1: admitted' "$ONRAMP_CLUSTER_DIR/log/slurmd-node1.log"
	run grep -iE 'onramp.*(undefined symbol|incompatible plugin|missing symbols)' "$ONRAMP_CTLD_LOG" \
		"$ONRAMP_CLUSTER_DIR"/log/slurmd-node*.log
	[ "$status" -eq 1 ]
	# spank/onramp: its options reach sbatch.
	if spank_loaded; then
		sbatch --help | grep -q -- '--checkpoint-dir'
	fi
}

@test "admission: a rebooted node is out of production until admitted again (slurmd re-registers)" {
	reboot_into_admission node3 4
	admitted_again node3
}

@test "job_submit: a submission and an update are refused with onramp's reason" {
	local acct job
	acct=$(sed -n 's/^AdmissionAccount=//p' "$ONRAMP_CONF" | tail -1)
	acct=${acct:-onramp}
	run as_user sbatch -A "$acct" -o /dev/null --wrap true
	[ "$status" -ne 0 ]
	echo "$output" | grep -q "onramp's admission path, for Slurm admins only"
	job=$(as_user sbatch --parsable -o /dev/null --hold --wrap true)
	JOBS+=("$job")
	run as_user scontrol update jobid="$job" account="$acct" reservation=onramp_admission
	[ "$status" -ne 0 ]
	# The reason reaches the user from 23.02 on (job_modify's err_msg); 22.05
	# only says the update was denied. The log names it on every version.
	if [[ $(slurm_version) != 22.* ]]; then
		echo "$output" | grep -q "admission path, for Slurm admins only"
	fi
	grep -q "job_submit/onramp: update of job $job by uid [0-9]* rejected" "$ONRAMP_CTLD_LOG"
}

@test "migration: a trainer job moves from rack1 to rack2 under its job id and resumes from its checkpoint" {
	local j dir
	j=$(trainer_job vsm --steps 1000000)
	JOBS+=("$j")
	submit_wait "$j" RUNNING 60
	running_on_rack "$j" rack1
	wait_for 60 "50 training steps" loss_lines vsm 50
	run "$CTL" migrate --jobs "$j" --to rack2
	echo "$output"
	[ "$status" -eq 0 ]
	running_on_rack "$j" rack2
	[ "$(job_field "$j" Restarts)" = 1 ]
	dir=$ONRAMP_JOBS_DIR/vsm.ckpt
	[ "$(json_num "$dir/resumed.json" restart_count)" = 1 ]
	[ "$(json_num "$dir/resumed.json" generation)" -ge 1 ]
	no_migrate_drain
}

# ctld_settled BEFORE: the pid file names a live slurmctld that answers, and
# from 23.11 (reconfigure re-executes) not BEFORE, which holds the file until
# it exits.
ctld_settled() {
	local pid
	pid=$(ctld_pid) || return 1
	if reexecs && [ "$pid" = "$1" ]; then
		return 1
	fi
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmctld ] && ctld_is_up
}

@test "a reconfigure that gives slurmctld a shorter pid: its pid is still read right (ctld_pid)" {
	local before after
	before=$(ctld_pid)
	kill -0 "$before"
	# The pid namespace's next pids from 10 (root may set the last one
	# given): from 23.11 the re-executed slurmctld gets one of them.
	echo 9 >/proc/sys/kernel/ns_last_pid
	scontrol reconfigure
	wait_for 60 "slurmctld back after the reconfigure" ctld_settled "$before"
	after=$(ctld_pid)
	echo "slurmctld pid $before, then $after; its pid file: $(tr '\n' ' ' <"$ONRAMP_CLUSTER_DIR/var/run/slurmctld.pid")"
	if ! reexecs; then
		[ "$after" = "$before" ]
		return 0
	fi
	[ ${#after} -lt ${#before} ] || skip "the new slurmctld got pid $after, no shorter than $before"
	# (Whether the old pid's end is left on a second line varies: seen on
	# 26.05.3, not always; ctld_settled read the live slurmctld either way.)
	[ "$(cat "/proc/$after/comm")" = slurmctld ]
}
