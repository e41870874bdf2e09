#!/usr/bin/env bats
# job_submit/onramp configuration handling on the live cluster.
#
# Needs the build's job_submit_onramp.so staged in the cluster's plugin
# directory (a failure otherwise) and a cluster started with it (the default
# "--job-submit onramp"; skipped for other clusters). Needs a running cluster:
#   testsuite/cluster/onramp-cluster start

load helpers

ONRAMP_CONF=$ONRAMP_CLUSTER_DIR/etc/onramp.conf

setup() {
	require_cluster
	local plugin_dir
	plugin_dir=$(cluster_param PLUGIN_DIR)
	if [[ ! -e $plugin_dir/job_submit_onramp.so ]]; then
		echo "job_submit_onramp.so not built/staged in ${plugin_dir:-the plugin dir}" >&2
		return 1
	fi
	if [[ ,$(cluster_param JOB_SUBMIT), != *,onramp,* ]]; then
		skip "cluster started with --job-submit $(cluster_param JOB_SUBMIT), not onramp"
	fi
	BACKUP=$BATS_TEST_TMPDIR/onramp.conf.orig
	cp -p "$ONRAMP_CONF" "$BACKUP"
}

teardown() {
	# Always put the good configuration back, so later tests see it.
	if [[ -n ${BACKUP:-} && -f $BACKUP ]]; then
		cp -p "$BACKUP" "$ONRAMP_CONF"
		scontrol reconfigure >/dev/null 2>&1 || true
	fi
}


# reconfigure_expect OFFSET PATTERN [kept|replaced]: scontrol reconfigure,
# then wait until slurmctld's log gets PATTERN (after OFFSET) while
# slurmctld stays up. Up because it never went away, not because something
# restarted it: before 23.11 the same process; from 23.11 either the same
# process after Slurm's "reconfigure failed" or a new one Slurm's own
# hand-over started (the old one gone), as the third argument demands.
reconfigure_expect() {
	local off=$1 pattern=$2 want=${3:-} pid_before pid_after
	pid_before=$(ctld_pid)
	run scontrol reconfigure
	if [ "$want" = kept ] && reexecs; then
		# The new slurmctld refused the file: scontrol reports the failure.
		[ "$status" -ne 0 ]
	else
		[ "$status" -eq 0 ]
	fi
	wait_for 30 "slurmctld log line matching '$pattern'" log_since_has "$ONRAMP_CTLD_LOG" "$off" "$pattern" || {
		echo "--- slurmctld log since reconfigure:" >&2
		log_since "$ONRAMP_CTLD_LOG" "$off" | tail -n 30 >&2
		return 1
	}
	if ! reexecs; then
		ctld_is_up
		[ "$(ctld_pid)" = "$pid_before" ]
		kill -0 "$pid_before"
		return 0
	fi
	if [ "$want" = kept ]; then
		wait_for 30 "slurmctld resuming after the failed re-exec" log_since_has "$ONRAMP_CTLD_LOG" "$off" \
			"Resuming operation, reconfigure failed"
		ctld_is_up
		[ "$(ctld_pid)" = "$pid_before" ]
		kill -0 "$pid_before"
	else
		wait_for 30 "slurmctld handing over to its re-executed self" log_since_has "$ONRAMP_CTLD_LOG" "$off" \
			"Relinquishing control to new slurmctld process"
		wait_for 30 "the old slurmctld $pid_before to exit" eval "! kill -0 $pid_before 2>/dev/null"
		ctld_is_up
		pid_after=$(ctld_pid)
		[ "$pid_after" != "$pid_before" ]
		[ "$(cat "/proc/$pid_after/comm")" = slurmctld ]
	fi
}

@test "JobSubmitPlugins=onramp is listed by scontrol show config" {
	run scontrol show config
	[ "$status" -eq 0 ]
	echo "$output" | grep -qE '^JobSubmitPlugins[[:space:]]*=[[:space:]]*(.*,)?(job_submit/)?onramp(,.*)?$'
}

@test "an unknown key in onramp.conf at reconfigure keeps slurmctld up and logs the line number" {
	local off
	{
		echo "# onramp.conf written by job_submit_config.bats"
		echo "# the next line is line 3"
		echo "ThisIsNotAKey=1"
	} >"$ONRAMP_CONF"
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	reconfigure_expect "$off" "onramp\.conf:3" kept
	log_since "$ONRAMP_CTLD_LOG" "$off" | grep -E "onramp\.conf:3" | grep -q "ThisIsNotAKey"
	ctld_is_up

	# The good file loads again.
	# The offset first: the watcher may reload the restored file (its stamp
	# changed) before the reconfigure, and that load counts too.
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	cp -p "$BACKUP" "$ONRAMP_CONF"
	reconfigure_expect "$off" "job_submit/onramp: loaded .*onramp\.conf" replaced
}

@test "a line without '=' in onramp.conf at reconfigure keeps slurmctld up and logs the line number" {
	local off
	{
		echo "# onramp.conf written by job_submit_config.bats"
		echo "this line has no equals sign"
	} >"$ONRAMP_CONF"
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	reconfigure_expect "$off" "onramp\.conf:2" kept
	ctld_is_up

	# Jobs are still accepted with the last good configuration.
	local job
	job=$(submit -o /dev/null --wrap true)
	submit_wait "$job" COMPLETED 60

	# The offset first: the watcher may reload the restored file (its stamp
	# changed) before the reconfigure, and that load counts too.
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	cp -p "$BACKUP" "$ONRAMP_CONF"
	reconfigure_expect "$off" "job_submit/onramp: loaded .*onramp\.conf" replaced
}

# ms_into SECONDS: the part of the current second gone by, in
# milliseconds, if the clock still shows SECONDS; fails once it does not.
ms_into() {
	local now
	now=$(date +%s.%N)
	[ "${now%.*}" = "$1" ] || return 1
	echo $((10#${now#*.} / 1000000))
}

# watcher_loaded_since OFFSET: job_submit/onramp's watcher logged a
# (re)load after OFFSET; looks every 20 ms for up to 3 s.
watcher_loaded_since() {
	for _ in $(seq 150); do
		log_since_has "$ONRAMP_CTLD_LOG" "$1" "job_submit/onramp: loaded .*onramp\.conf" && return 0
		sleep 0.02
	done
	return 1
}

@test "a second reconfigure within the second of the watcher's last reload is acted upon" {
	local try sec off ms
	# A reconfigure early in a second, and the watcher's reload of it
	# within that second (slurm_conf.last_update counts seconds). A few
	# tries: the watcher polls once a second, at a phase of its own.
	for try in 1 2 3 4 5; do
		until ms=$(ms_into "$(date +%s)") && ((ms < 100)); do sleep 0.01; done
		sec=$(date +%s)
		off=$(log_offset "$ONRAMP_CTLD_LOG")
		scontrol reconfigure
		watcher_loaded_since "$off"
		ms=$(ms_into "$sec") && ((ms < 800)) && break
		sleep 1.5
	done
	echo "try $try, watcher's reload ${ms:-late} ms into the second"
	# Another reconfigure in that second: onramp.conf is read again.
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	scontrol reconfigure
	wait_for 30 "job_submit/onramp reloading after the second reconfigure" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded .*onramp\.conf"
}

@test "onramp.conf changed and put back with cp -p between two polls is read again" {
	local off
	# No reconfigure or change in the last seconds: the watcher goes by the
	# file's stamp alone.
	sleep 3
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	# Milliseconds: the watcher (once a second) almost never sees the
	# bad file, and the restored one has the inode, mtime and size the
	# watcher saw last.
	echo "ThisIsNotAKey=1" >"$ONRAMP_CONF"
	cp -p "$BACKUP" "$ONRAMP_CONF"
	wait_for 30 "job_submit/onramp reloading the restored onramp.conf" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded .*onramp\.conf"
	ctld_is_up
}

@test "a malformed onramp.conf at startup is refused with its line number" {
	# A second, private cluster whose onramp.conf is broken before start.
	local dir
	dir=$(private_cluster badstart)
	mkdir -p "$dir/etc"
	printf 'GpuBackend=sim\nNcclBusBwFraction=lots\n' >"$dir/etc/onramp.conf"
	local base slurm
	base=$(free_port_base 8)
	# The Slurm the shared cluster runs (--slurm PREFIX), else the installed one.
	slurm=$(cluster_param SLURM)
	run env ONRAMP_CTLD_PORT="$base" ONRAMP_SLURMD_PORT_BASE="$((base + 2))" ONRAMP_START_TIMEOUT=15 \
		"$ONRAMP_CLUSTER_TOOL" start --dir "$dir" ${slurm:+--slurm "$slurm"} --nodes 2 --racks 1 --onramp no
	"$ONRAMP_CLUSTER_TOOL" stop --dir "$dir" >/dev/null 2>&1 || true
	[ "$status" -ne 0 ]
	grep -q "job_submit/onramp: $dir/etc/onramp.conf:2: key 'NcclBusBwFraction': 'lots' is not a number" \
		"$dir/log/slurmctld.log"
	rm -rf "$dir"
	# The shared cluster was not disturbed.
	ctld_is_up
}
