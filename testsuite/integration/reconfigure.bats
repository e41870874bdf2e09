#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4 --topology-plugin topology/onramp
# What a racing reconfigure or a hostile file does to the daemons: a
# JobSubmitPlugins change under submit load, a FIFO, a directory, a symlink
# loop, a truncated, binary, huge or overflowing file in place of
# onramp.conf, the rewire plan or the fabric file at "scontrol reconfigure".
# slurmctld keeps answering, the rewire window in force stays (topology and
# job_submit), and the log says why. Also: slurmd restarts with a bad plan
# keep admission, onrampctl's triggers are removed and installed again, and
# a stopped cluster directory starts again.

load helpers
load admission_helpers

ETC=$ONRAMP_CLUSTER_DIR/etc
PLAN=$ETC/rewire-plan.json
FABRIC=$ETC/fabric.json
REWIRE=$ONRAMP_REPO/contrib/tools/onramp-rewire

setup() {
	require_cluster
	onramp_topology || skip "cluster not started with --topology-plugin topology/onramp"
	cp -p "$ETC/onramp.conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
	cp -p "$SLURM_CONF" "$BATS_TEST_TMPDIR/slurm.conf.orig"
}

teardown() {
	# Nothing to undo when setup stopped before saving the files.
	[[ -f $BATS_TEST_TMPDIR/onramp.conf.orig && -f $BATS_TEST_TMPDIR/slurm.conf.orig ]] || return 0
	if [[ -f $BATS_TEST_TMPDIR/loader.pid ]]; then
		local loader
		loader=$(cat "$BATS_TEST_TMPDIR/loader.pid")
		kill "$loader" 2>/dev/null || true
		# That job only: a bare wait would also wait for bats' own
		# per-test timeout countdown (BATS_TEST_TIMEOUT).
		wait "$loader" 2>/dev/null || true
	fi
	if [[ -f $BATS_TEST_TMPDIR/second-cluster ]]; then
		"$ONRAMP_CLUSTER_TOOL" stop --dir "$(cat "$BATS_TEST_TMPDIR/second-cluster")" >/dev/null 2>&1 || true
		rm -rf "$(cat "$BATS_TEST_TMPDIR/second-cluster")"
	fi
	scancel --quiet --user "$(id -un)" 2>/dev/null || true
	scancel --quiet --user "$ONRAMP_CLUSTER_USER" 2>/dev/null || true
	# The files change only once the cancelled jobs' epilogs have run (an
	# epilog that finds no onramp.conf drains its node; the submit load's
	# jobs drained five nodes for the files after this one), and onramp.conf
	# comes back in one rename.
	wait_for 60 "the cancelled jobs to end" no_jobs_left || true
	rm -rf "$PLAN" "$FABRIC"
	put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ETC/onramp.conf"
	put_back "$BATS_TEST_TMPDIR/slurm.conf.orig" "$SLURM_CONF"
	! topology_from_file || "$REWIRE" sync-topology || true
	timeout 30 scontrol reconfigure >/dev/null 2>&1 || true
}

# ctld_answers: slurmctld serves the calls users make, not only pings.
ctld_answers() {
	timeout 15 scontrol ping | grep -q 'is UP' &&
		timeout 15 sinfo -h -o %D >/dev/null &&
		timeout 15 squeue -h >/dev/null
}

# reconfigure: scontrol reconfigure, bounded; fails when slurmctld hangs.
reconfigure() {
	timeout 30 scontrol reconfigure
}

# reconfigure_bad: scontrol reconfigure with a file onramp refuses in place.
# It returns (slurmctld never hangs); before 23.11 it succeeds (the same
# process keeps onramp's state in force), from 23.11 the re-executed
# slurmctld refuses the file, scontrol reports the failure and the running
# slurmctld resumes with its state.
reconfigure_bad() {
	run reconfigure
	[ "$status" -ne 124 ] || {
		echo "scontrol reconfigure hung: $output" >&2
		return 1
	}
	if reexecs; then
		[ "$status" -ne 0 ] || {
			echo "the re-executed slurmctld took the bad file" >&2
			return 1
		}
	else
		[ "$status" -eq 0 ]
	fi
}

# with_window: onramp.conf with RewirePlan and FabricFile, window w1 on
# leaf2 active and in force (the spine lost leaf2).
with_window() {
	cat >"$FABRIC" <<EOF
{"spines": ["spine1"], "uplinks": [
 {"leaf": "leaf1", "spine": "spine1"}, {"leaf": "leaf2", "spine": "spine1"},
 {"leaf": "leaf3", "spine": "spine1"}, {"leaf": "leaf4", "spine": "spine1"}]}
EOF
	cat >"$PLAN" <<EOF
{"windows": [{"id": "w1", "reason": "add spine2", "start": "2026-01-01T00:00:00Z",
  "end": "2036-01-01T00:00:00Z", "leaves": ["leaf2"], "state": "active"}]}
EOF
	grep -q '^RewirePlan=' "$ETC/onramp.conf" || echo "RewirePlan=$PLAN" >>"$ETC/onramp.conf"
	grep -q '^FabricFile=' "$ETC/onramp.conf" || echo "FabricFile=$FABRIC" >>"$ETC/onramp.conf"
	# Slurm 24.05+: what onrampctl rewire start does to the topology.conf
	# topology/tree reads (topology/onramp reads the plan at reconfigure).
	! topology_from_file || "$REWIRE" sync-topology
	reconfigure
	# In force in topology/onramp and in job_submit/onramp (whose watcher
	# reloads within a second).
	wait_for 20 "window w1 in force" window_kept
}

spine_nodes() {
	# The whole table: from 25.05 "show topology NAME" names a topology.
	timeout 15 scontrol show topology | grep '^SwitchName=spine1 ' | tr ' ' '\n' | sed -n 's/^Nodes=//p'
}

# window_kept: the topology still cuts leaf2, and job_submit still holds a
# job the cut fabric cannot hold (7 nodes > 6 connected).
window_kept() {
	local j
	[[ $(spine_nodes) == "node[1-2,5-8]" ]] || return 1
	j=$(submit -N7 -o /dev/null --wrap true) || return 1
	scontrol show job "$j" | grep -q 'Comment=onramp: held until rewire window w1 finishes'
	local rc=$?
	scancel "$j"
	return $rc
}

# spoil FILE KIND: put something hostile in place of FILE.
spoil() {
	local f=$1
	rm -rf "$f"
	case $2 in
	fifo) mkfifo -m 600 "$f" ;;
	directory) mkdir "$f" ;;
	symlink-loop) ln -s "$f" "$f" ;;
	missing) ;;
	truncated) printf '{"windows": [{"id": "w1", "start": "2026-' >"$f" ;;
	binary) head -c 4096 /dev/urandom >"$f" ;;
	huge-line) head -c $((17 << 20)) /dev/zero | tr '\0' 'x' >"$f" ;;
	overflow)
		case $f in
		*.conf) printf 'PairPort=99999999999999999999999\n' >"$f" ;;
		"$PLAN") printf '{"windows": [{"id": "w1", "start": "2026-01-01T00:00:00Z", "end": "2036-01-01T00:00:00Z", "leaves": ["leaf2"], "state": "active", "stages": [99999999999999999999999], "stage": 99999999999999999999999}]}\n' >"$f" ;;
		*) printf '{"spines": ["spine1"], "uplinks": [{"leaf": "leaf1", "spine": "spine1", "links": 99999999999999999999999}]}\n' >"$f" ;;
		esac
		;;
	*) return 1 ;;
	esac
}

# big_plan N: a valid plan with N finished windows (a long history), which
# makes topology/onramp's part of a reconfigure take a while.
big_plan() {
	local i
	{
		echo '{"windows": ['
		for ((i = 1; i <= $1; i++)); do
			printf '{"id": "old%d", "reason": "history", "start": "2020-01-01T00:00:00Z", "end": "2020-01-02T00:00:00Z", "leaves": ["leaf%d"], "state": "done"}%s\n' \
				"$i" $((i % 4 + 1)) "$([[ $i -lt $1 ]] && echo ,)"
		done
		echo ']}'
	} >"$PLAN"
}

@test "JobSubmitPlugins changed at reconfigure, 20 times under submit load: slurmctld never hangs" {
	# The plugin's watcher thread wakes about a second after the plugin
	# starts (at the end of the previous reconfigure); the next reconfigure
	# starts 0.5-1 s later and holds the config lock a while (a long plan
	# history), so the watcher wakes inside it while fini() is due: fini()
	# must never wait for a thread that waits for that lock.
	big_plan 15000
	grep -q '^RewirePlan=' "$ETC/onramp.conf" || echo "RewirePlan=$PLAN" >>"$ETC/onramp.conf"
	reconfigure
	(
		while :; do
			as_user sbatch -o /dev/null --wrap true >/dev/null 2>&1
			sleep 0.2
		done
	) &
	echo $! >"$BATS_TEST_TMPDIR/loader.pid"
	local i list
	for i in $(seq 1 20); do
		if ((i % 2)); then list=logging,onramp; else list=onramp; fi
		sed -i "s/^JobSubmitPlugins=.*/JobSubmitPlugins=$list/" "$SLURM_CONF"
		sleep "0.$((5 + RANDOM % 5))"
		run timeout 30 scontrol reconfigure
		[ "$status" -eq 0 ] || {
			echo "reconfigure $i (JobSubmitPlugins=$list) did not return: $output" >&2
			return 1
		}
	done
	ctld_answers
	# onramp's policy is still in force after the flips.
	run as_user sbatch -A onramp -o /dev/null --wrap true
	[ "$status" -ne 0 ]
	[[ $output == *"admission path"* ]]
}

@test "a FIFO in place of onramp.conf at reconfigure does not block slurmctld" {
	local off
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	spoil "$ETC/onramp.conf" fifo
	reconfigure_bad
	ctld_answers
	local j
	j=$(submit -o /dev/null --wrap true)
	submit_wait "$j" COMPLETED 60
	wait_for 20 "the FIFO named in the log" log_since_has "$ONRAMP_CTLD_LOG" "$off" "onramp\.conf: not a regular file"
	# Nothing stays stuck: a good file is taken at the next reconfigure.
	put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ETC/onramp.conf"
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	reconfigure
	wait_for 20 "onramp.conf loaded again" log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded"
	ctld_answers
}

@test "malformed plan, fabric and onramp.conf at reconfigure keep the window in force, logged" {
	with_window
	local file kind off
	for file in "$PLAN" "$FABRIC" "$ETC/onramp.conf"; do
		for kind in fifo directory symlink-loop missing truncated binary huge-line overflow; do
			off=$(log_offset "$ONRAMP_CTLD_LOG")
			spoil "$file" "$kind"
			reconfigure_bad || {
				echo "with $kind in place of $file" >&2
				return 1
			}
			ctld_answers
			window_kept || {
				echo "the window was dropped with $kind in place of $file" >&2
				return 1
			}
			if topology_from_file; then
				# Slurm 24.05+: tree reads only the derived file,
				# which sync-topology refuses to change from a
				# spoiled file (a missing plan is no plan: it
				# would put the admin's file back).
				if [[ $kind != missing || $file != "$PLAN" ]]; then
					cp "$ETC/topology.conf" "$BATS_TEST_TMPDIR/derived"
					run timeout 30 "$REWIRE" sync-topology
					[ "$status" -eq 2 ] || {
						echo "sync-topology with $kind in place of $file: $status $output" >&2
						return 1
					}
					cmp "$ETC/topology.conf" "$BATS_TEST_TMPDIR/derived"
				fi
			else
				wait_for 20 "topology/onramp logging why ($kind $file)" \
					log_since_has "$ONRAMP_CTLD_LOG" "$off" "topology/onramp: .*keeping the switch table in force"
			fi
			# Put the good file back before the next kind.
			rm -rf "$file"
			put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ETC/onramp.conf"
			with_window
		done
	done
}

@test "a bad path in onramp.conf is refused naming the key and the line" {
	with_window
	local off line
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	spoil "$FABRIC" directory
	line=$(grep -n '^FabricFile=' "$ETC/onramp.conf" | cut -d: -f1)
	reconfigure_bad
	wait_for 20 "the key and line in the log" log_since_has "$ONRAMP_CTLD_LOG" "$off" \
		"FabricFile \(.*onramp\.conf:$line\): .*fabric\.json: not a regular file"
}

# slurmd_pid NODE: sets pid to the node's slurmd. From 23.11 a reconfigure
# re-executes slurmd, which rewrites its pid file: the first line, once it
# names a live process.
slurmd_pid() {
	pid=$(head -n 1 "$ONRAMP_CLUSTER_DIR/var/run/slurmd-$1.pid" 2>/dev/null) &&
		[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

# restart_slurmd NODE: stop and start the node's slurmd (no reboot: the
# boot identity stays).
restart_slurmd() {
	local pid
	wait_for 20 "slurmd of $1's pid file" slurmd_pid "$1"
	kill "$pid"
	wait_for 20 "slurmd of $1 to stop" eval "! kill -0 $pid 2>/dev/null"
	slurmd -N "$1" -f "$SLURM_CONF" </dev/null >>"$ONRAMP_CLUSTER_DIR/log/slurmd-$1.out" 2>&1
}

@test "a slurmd restart with a broken rewire plan keeps the node admitted" {
	local node=node3 off
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	with_window
	spoil "$PLAN" truncated
	reconfigure_bad
	off=$(log_offset "$ONRAMP_CLUSTER_DIR/log/slurmd-$node.log")
	restart_slurmd "$node"
	wait_for 30 "$node re-registered" log_since_has "$ONRAMP_CLUSTER_DIR/log/slurmd-$node.log" "$off" \
		"node_features/onramp: node $node: "
	log_since_has "$ONRAMP_CLUSTER_DIR/log/slurmd-$node.log" "$off" "node_features/onramp: node $node: admitted \("
	node_admitted "$node"
	[[ $(node_state "$node") == IDLE ]]
}

# unfenced_restart NODE TEXT: restart NODE's slurmd; it registers saying
# "not admitted: TEXT" with neither onramp feature active (unjudged), and
# stays in production: not drained, no reservation taken for it.
unfenced_restart() {
	local node=$1 off
	off=$(log_offset "$ONRAMP_CLUSTER_DIR/log/slurmd-$node.log")
	restart_slurmd "$node"
	wait_for 30 "$node re-registered unjudged" log_since_has "$ONRAMP_CLUSTER_DIR/log/slurmd-$node.log" \
		"$off" "node_features/onramp: node $node: not admitted: $2; $ONRAMP_FEATURE inactive\$"
	sleep 2 # the registration reaches slurmctld
	[[ ,$(node_field "$node" ActiveFeatures), != *,onramp_unadmitted,* ]]
	! node_admitted "$node"
	[[ $(node_state "$node") == IDLE ]]
	[[ -z $(node_reason "$node") ]]
}

@test "a slurmd restarted while onramp.conf is unreadable is not fenced: onramp cannot judge it" {
	local node=node4
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	# slurmctld keeps the onramp.conf it loaded (no reconfigure); the
	# restarted slurmd cannot load one.
	spoil "$ETC/onramp.conf" binary
	unfenced_restart "$node" "onramp.conf not loaded"
	put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ETC/onramp.conf"
	restart_slurmd "$node"
	wait_for 30 "$node admitted again" admitted_idle "$node"
}

@test "a baseline edited since admission fences no node at its registration" {
	local node=node6 base
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	# A copy of the baselines with whitespace added: a new digest, the same
	# thresholds. Only the restarted slurmd reads the changed onramp.conf.
	base=$(sed -n 's/^BaselineDir=//p' "$ETC/onramp.conf")
	cp -r "$base" "$BATS_TEST_TMPDIR/baselines"
	echo >>"$BATS_TEST_TMPDIR/baselines/SIM-8GPU.json"
	chmod -R a+rX "$BATS_TEST_TMPDIR"
	sed "s|^BaselineDir=.*|BaselineDir=$BATS_TEST_TMPDIR/baselines|" \
		"$BATS_TEST_TMPDIR/onramp.conf.orig" >"$ETC/onramp.conf.new"
	mv "$ETC/onramp.conf.new" "$ETC/onramp.conf"
	unfenced_restart "$node" "baseline changed since admission"
	put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ETC/onramp.conf"
	restart_slurmd "$node"
	wait_for 30 "$node admitted again" admitted_idle "$node"
}

@test "onrampctl remove-trigger removes onramp's triggers; install-trigger twice keeps one pair" {
	local ctl=$ONRAMP_REPO/contrib/onrampctl
	onramp_triggers() { strigger --get --noheader | awk '$8 ~ /onramp-trigger$/' | wc -l; }
	[ "$(onramp_triggers)" -eq 2 ]
	"$ctl" remove-trigger
	[ "$(onramp_triggers)" -eq 0 ]
	"$ctl" install-trigger
	"$ctl" install-trigger
	[ "$(onramp_triggers)" -eq 2 ]
}

@test "onramp-cluster stop ends onramp processes left on the cluster; start on a stopped cluster directory starts it again" {
	local dir base slurm
	dir=$(private_cluster restart)
	echo "$dir" >"$BATS_TEST_TMPDIR/second-cluster"
	base=$(free_port_base 6)
	export ONRAMP_CTLD_PORT=$base ONRAMP_SLURMD_PORT_BASE=$((base + 2)) ONRAMP_ADMIT_AT_START=no
	# The Slurm the shared cluster runs (--slurm PREFIX), else the installed one.
	slurm=$(cluster_param SLURM)
	"$ONRAMP_CLUSTER_TOOL" start --dir "$dir" ${slurm:+--slurm "$slurm"} --nodes 2 --racks 1 >/dev/null
	# An onramp process a test left talking to that cluster (its
	# SLURM_CONF) is stopped with it; one of another cluster is not.
	cp /bin/sleep "$BATS_TEST_TMPDIR/onramp-linger"
	SLURM_CONF=$dir/etc/slurm.conf "$BATS_TEST_TMPDIR/onramp-linger" 300 &
	local ours=$!
	SLURM_CONF=$dir/etc/other.conf "$BATS_TEST_TMPDIR/onramp-linger" 300 &
	local theirs=$!
	run "$ONRAMP_CLUSTER_TOOL" stop --dir "$dir"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"onramp processes left running on this cluster: $ours"* ]]
	# Ended by stop's SIGTERM (already dead: wait returns at once).
	run wait "$ours"
	[ "$status" -eq 143 ]
	kill -0 "$theirs"
	kill "$theirs"
	run "$ONRAMP_CLUSTER_TOOL" start --dir "$dir" --nodes 2 --racks 1
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(SLURM_CONF=$dir/etc/slurm.conf strigger --get --noheader | awk '$8 ~ /onramp-trigger$/' | wc -l)" -eq 2 ]
}
