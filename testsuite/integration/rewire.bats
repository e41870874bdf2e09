#!/usr/bin/env bats
# onramp-cluster: --nodes 8 --racks 4 --topology-plugin topology/onramp
# Rewiring windows on the live cluster: topology/onramp equals topology/tree
# without a window; an active window cuts its leaves off the spine; the
# job_submit policy sets --switches defaults and holds jobs the cut fabric
# cannot hold; a broken plan keeps the topology in force.
#
# The cluster: node[1-8], leaf1..leaf4 of 2 nodes each under spine1.

load helpers

ETC=$ONRAMP_CLUSTER_DIR/etc
PLAN=$ETC/rewire-plan.json
REWIRE=$ONRAMP_REPO/contrib/tools/onramp-rewire

# sync_topology: Slurm 24.05+: what onrampctl rewire start/finish do to the
# topology.conf stock topology/tree reads (before, topology/onramp reads the
# plan at reconfigure).
sync_topology() {
	! topology_from_file || "$REWIRE" sync-topology
}

setup() {
	require_cluster
	onramp_topology || skip "cluster not started with --topology-plugin topology/onramp"
	cp -p "$ETC/onramp.conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
	grep -q '^RewirePlan=' "$ETC/onramp.conf" || echo "RewirePlan=$PLAN" >>"$ETC/onramp.conf"
	rm -f "$PLAN"
	sync_topology
	scontrol reconfigure
}

teardown() {
	# A second cluster a test started ends with the test, pass or fail.
	if [[ -f $BATS_TEST_TMPDIR/second-cluster ]]; then
		"$ONRAMP_CLUSTER_TOOL" stop --dir "$(cat "$BATS_TEST_TMPDIR/second-cluster")" >/dev/null 2>&1 || true
		rm -rf "$(cat "$BATS_TEST_TMPDIR/second-cluster")"
	fi
	scancel --quiet --user "$(id -un)" || true
	# The held jobs a test submitted as the cluster's user.
	scancel --quiet --user "$ONRAMP_CLUSTER_USER" || true
	rm -f "$PLAN"
	if [[ -f $BATS_TEST_TMPDIR/onramp.conf.orig ]]; then
		put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ETC/onramp.conf"
	fi
	sync_topology || true
	scontrol reconfigure || true
}

# window STATE: the plan with window w1 on leaf2.
window() {
	cat >"$PLAN.tmp" <<EOP
{"windows": [{"id": "w1", "reason": "add spine2", "start": "2026-01-01T00:00:00Z",
  "end": "2036-01-01T00:00:00Z", "leaves": ["leaf2"], "state": "$1"}]}
EOP
	mv -f "$PLAN.tmp" "$PLAN"
	sync_topology
	scontrol reconfigure
	sleep 1
}

# The whole table, then spine1's line: from 25.05 "scontrol show topology
# NAME" reads NAME as a topology's name, not a switch's.
spine_nodes() {
	scontrol show topology | grep '^SwitchName=spine1 ' | tr ' ' '\n' | sed -n 's/^Nodes=//p'
}

job_nodes() {
	expand_hostlist "$(job_field "$1" NodeList)"
}

@test "no window: topology/onramp shows topology/tree's table" {
	run scontrol show topology
	[ "$status" -eq 0 ]
	[[ $output == *"SwitchName=spine1 Level=1 LinkSpeed=1 Nodes=node[1-8] Switches=leaf[1-4]"* ]]
	[[ $output == *"SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[3-4]"* ]]
}

@test "no window: a 4-node job spans leaves as under tree, with tree's SLURM_TOPOLOGY_ADDR" {
	j=$(submit -N4 -o "$ONRAMP_JOBS_DIR/addr-%j.out" --wrap 'echo "addr=$SLURM_TOPOLOGY_ADDR pattern=$SLURM_TOPOLOGY_ADDR_PATTERN"; sleep 20')
	submit_wait "$j" RUNNING 60
	[[ $(job_field "$j" NodeList) == "node[1-4]" ]]
	wait_for 20 "job output" grep -q addr= "$ONRAMP_JOBS_DIR/addr-$j.out"
	grep -qx 'addr=spine1.leaf1.node1 pattern=switch.switch.node' "$ONRAMP_JOBS_DIR/addr-$j.out"
}

@test "no window: topology/tree on the same files gives the same table, placements and addresses" {
	# A second cluster, same layout and generated topology.conf, with
	# topology/tree; the same jobs on both.
	local dir tree_topo onramp_topo
	dir=$(private_cluster treecmp)
	echo "$dir" >"$BATS_TEST_TMPDIR/second-cluster"
	local base slurm
	base=$(free_port_base 12)
	# The Slurm the shared cluster runs (--slurm PREFIX), else the installed one.
	slurm=$(cluster_param SLURM)
	env ONRAMP_CTLD_PORT="$base" ONRAMP_SLURMD_PORT_BASE="$((base + 2))" \
		"$ONRAMP_CLUSTER_TOOL" start --dir "$dir" ${slurm:+--slurm "$slurm"} --nodes 8 --racks 4 --onramp no \
		--job-submit none --topology-plugin topology/tree >/dev/null
	cmp "$dir/etc/topology.conf" "$ETC/topology.conf"
	tree_topo=$(SLURM_CONF=$dir/etc/slurm.conf scontrol show topology)
	onramp_topo=$(scontrol show topology)
	[ "$tree_topo" = "$onramp_topo" ]
	local shape out_t out_o jt jo
	for shape in "-N4" "-N3" "-N2 --switches=1" "-N5"; do
		# shellcheck disable=SC2086
		jt=$(cd "$dir/jobs" && SLURM_CONF=$dir/etc/slurm.conf sbatch --parsable $shape \
			-o "$dir/jobs/t-%j.out" --wrap 'echo "$SLURM_TOPOLOGY_ADDR $SLURM_TOPOLOGY_ADDR_PATTERN"')
		# shellcheck disable=SC2086
		jo=$(submit $shape -o "$ONRAMP_JOBS_DIR/o-%j.out" \
			--wrap 'echo "$SLURM_TOPOLOGY_ADDR $SLURM_TOPOLOGY_ADDR_PATTERN"')
		submit_wait "$jo" COMPLETED 60
		SLURM_CONF=$dir/etc/slurm.conf wait_for 60 "tree job $jt" \
			eval "[[ \$(SLURM_CONF=$dir/etc/slurm.conf scontrol show job -o $jt) == *JobState=COMPLETED* ]]"
		out_t=$(SLURM_CONF=$dir/etc/slurm.conf scontrol show job -o "$jt" | tr ' ' '\n' | grep '^NodeList=')
		out_o=$(scontrol show job -o "$jo" | tr ' ' '\n' | grep '^NodeList=')
		echo "$shape: tree $out_t onramp $out_o"
		[ "$out_t" = "$out_o" ]
		[ "$(cat "$dir/jobs/t-$jt.out")" = "$(cat "$ONRAMP_JOBS_DIR/o-$jo.out")" ]
	done
	"$ONRAMP_CLUSTER_TOOL" stop --dir "$dir" >/dev/null
	rm -rf "$dir"
}

@test "window on leaf2: the spine loses leaf2 and 3/4-node jobs never get its nodes" {
	window active
	[[ $(spine_nodes) == "node[1-2,5-8]" ]]
	j3=$(submit -N3 -o /dev/null --wrap 'sleep 20')
	j4=$(submit -N4 -o /dev/null --wrap 'sleep 20')
	submit_wait "$j3" RUNNING 60
	submit_wait "$j4" RUNNING 60
	for n in $(job_nodes "$j3") $(job_nodes "$j4"); do
		[[ $n != node3 && $n != node4 ]]
	done
	# The count; the wait is also capped by SchedulerParameters=max_switch_wait.
	[[ $(job_field "$j3" Switches) == 2@* ]]
}

@test "window on leaf2: a 2-node job runs inside leaf2 and --switches=1 is honoured" {
	window active
	j=$(submit -N2 -w 'node[3-4]' -o /dev/null --wrap 'sleep 20')
	submit_wait "$j" RUNNING 60
	k=$(submit -N2 --switches=1@30:00 -o /dev/null --wrap 'sleep 20')
	submit_wait "$k" RUNNING 60
	[[ $(job_field "$k" Switches) == 1@0* ]]
	nodes=$(job_field "$k" NodeList)
	case $nodes in "node[1-2]" | "node[3-4]" | "node[5-6]" | "node[7-8]") ;; *) false ;; esac
}

@test "window on leaf2: a job larger than the cut fabric is held, runs after finish" {
	window active
	j=$(submit -N7 -o /dev/null --wrap 'sleep 1')
	sleep 2
	[[ $(job_state "$j") == PENDING ]]
	[[ $(job_field "$j" Priority) == 0 ]]
	scontrol show job "$j" | grep -q 'Comment=onramp: held until rewire window w1 finishes'
	window done
	scontrol release "$j"
	submit_wait "$j" COMPLETED 90
}

@test "window on leaf2: -n and -w count their nodes as -N does (--switches, hold)" {
	window active
	# -n4 --ntasks-per-node=1 is -N4: two leaves, as for -N4 above.
	j=$(as_user sbatch --parsable --hold -n4 --ntasks-per-node=1 -o /dev/null --wrap true)
	[[ $(job_field "$j" Switches) == 2@* ]]
	# -n12 on the cluster's 2-CPU nodes needs 6 nodes: three leaves.
	j=$(as_user sbatch --parsable --hold -n12 -o /dev/null --wrap true)
	[[ $(job_field "$j" Switches) == 3@* ]]
	# -w naming 3 nodes.
	j=$(as_user sbatch --parsable --hold -w 'node[1-2,5]' -o /dev/null --wrap true)
	[[ $(job_field "$j" Switches) == 2@* ]]
	# -n14 needs 7 nodes, more than the 6 the cut fabric connects: held
	# and marked like -N7 (before, slurmctld rejected it at submission).
	j=$(as_user sbatch --parsable -n14 -o /dev/null --wrap true)
	[[ $(job_field "$j" Priority) == 0 ]]
	scontrol show job "$j" | grep -q 'Comment=onramp: held until rewire window w1 finishes'
	scontrol show job "$j" | grep -qx " *AdminComment=onramp:rewire-held window=w1 *"
	# One node's worth of tasks is left alone.
	j=$(as_user sbatch --parsable --hold -n2 -o /dev/null --wrap true)
	[[ -z $(job_field "$j" Switches) ]]
}

@test "window on leaf2: updates of a pending job are judged as its submission" {
	local plan=$BATS_TEST_TMPDIR/plan.json j k
	plan_file "$plan" w7 '["leaf2"]'
	"$ONRAMPCTL" rewire plan "$plan"
	"$ONRAMPCTL" rewire start w7
	# Pending, not held: it may start only in an hour.
	j=$(as_user sbatch --parsable --begin=now+1hour -N4 -o /dev/null --wrap true)
	[[ $(job_field "$j" Switches) == 2@* ]]
	# Switches=0 does not remove the window's default.
	as_user scontrol update job "$j" Switches=0
	[[ $(job_field "$j" Switches) == 2@* ]]
	grep -q "job_submit/onramp: update of job $j: .*--switches=2@.*(the change removed --switches)" \
		"$ONRAMP_CLUSTER_DIR/log/slurmctld.log"
	# Grown past the connected part: held and marked, as -N7 at submission.
	k=$(as_user sbatch --parsable --begin=now+1hour -N1 -o /dev/null --wrap true)
	as_user scontrol update job "$k" NumTasks=7 NumNodes=7-7
	[[ $(job_field "$k" NumNodes) == 7* ]]
	[[ $(job_field "$k" Priority) == 0 ]]
	scontrol show job "$k" | grep -qx " *AdminComment=onramp:rewire-held window=w7 *"
	scontrol show job "$k" | grep -q 'Comment=onramp: held until rewire window w7 finishes'
	# Its user cannot release it while the window lasts...
	run as_user scontrol release "$k"
	[ "$status" -ne 0 ]
	[[ $(job_field "$k" Priority) == 0 ]]
	grep -q "job_submit/onramp: update of job $k by uid [0-9]* rejected: .*it can be released when the window finishes" \
		"$ONRAMP_CLUSTER_DIR/log/slurmctld.log"
	# ...and rewire finish releases it by its mark.
	run "$ONRAMPCTL" rewire finish w7
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"released held jobs: $k" ]]
	[[ $(job_field "$k" Priority) != 0 ]]
}

@test "pending multi-leaf jobs start when the window finishes" {
	window active
	# leaf1 and leaf3 busy: the 4 free nodes (leaf2, leaf4) are not joined.
	b1=$(submit -N2 -w 'node[1-2]' --exclusive -o /dev/null --wrap 'sleep 300')
	b3=$(submit -N2 -w 'node[5-6]' --exclusive -o /dev/null --wrap 'sleep 300')
	submit_wait "$b1" RUNNING 60
	submit_wait "$b3" RUNNING 60
	j=$(submit -N4 --exclusive -o /dev/null --wrap 'sleep 1')
	sleep 3
	[[ $(job_state "$j") == PENDING ]]
	window done
	[[ $(spine_nodes) == "node[1-8]" ]]
	submit_wait "$j" RUNNING 60
	[[ $(job_field "$j" NodeList) == "node[3-4,7-8]" ]]
}

@test "a broken plan at reconfigure keeps the topology in force and slurmctld up" {
	window active
	before=$(scontrol show topology)
	echo '{"windows": [{"id": "w1", "start": "2026-01-01T00:00:00Z", "end": "2036-01-01T00:00:00Z", "leaves": ["leafZ"], "state": "active"}]}' >"$PLAN"
	if topology_from_file; then
		# Slurm 24.05+: the plan reaches tree only through the derived
		# file, and onramp-rewire refuses to derive it from this plan.
		local derived
		derived=$(cat "$ETC/topology.conf")
		run "$REWIRE" sync-topology
		echo "$output"
		[ "$status" -eq 2 ]
		[[ $output == *"leafZ"* ]]
		[ "$(cat "$ETC/topology.conf")" = "$derived" ]
	fi
	run scontrol reconfigure
	# From 23.11 the re-executed slurmctld refuses the plan (scontrol
	# reports it) and the running one resumes; before, the same process
	# keeps its table.
	if reexecs; then [ "$status" -ne 0 ]; else [ "$status" -eq 0 ]; fi
	sleep 1
	timeout 15 scontrol ping | grep -q 'is UP'
	[[ $(scontrol show topology) == "$before" ]]
	# job_submit/onramp keeps the window too: a job the cut fabric cannot
	# hold is held.
	j=$(submit -N7 -o /dev/null --wrap true)
	scontrol show job "$j" | grep -q 'Comment=onramp: held until rewire window w1 finishes'
	topology_from_file ||
		grep -q "topology/onramp: .*leafZ.*keeping the switch table in force" "$ONRAMP_CLUSTER_DIR/log/slurmctld.log"
}

ONRAMPCTL=$ONRAMP_REPO/contrib/onrampctl

# plan_file FILE ID LEAVES_JSON: a one-window plan, planned.
plan_file() {
	cat >"$1" <<EOP
{"windows": [{"id": "$2", "reason": "move uplinks", "start": "2026-01-01T00:00:00Z",
  "end": "2036-01-01T00:00:00Z", "leaves": $3, "state": "planned"}]}
EOP
}

@test "only root or SlurmUser may change rewiring windows: refused with exit 2, naming SlurmUser" {
	local plan=$BATS_TEST_TMPDIR/plan.json su
	plan_file "$plan" w9 '["leaf3"]'
	su=$(scontrol show config | sed -n 's/^SlurmUser *= *\([^(]*\).*/\1/p')
	run as_user "$ONRAMPCTL" rewire plan "$plan"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"only root or SlurmUser ($su) may change rewiring windows"* ]]
	run as_user "$ONRAMPCTL" expand node1
	[ "$status" -eq 2 ]
	[[ $output == *"only root or SlurmUser ($su) may run expansion campaigns"* ]]
}

@test "onrampctl rewire plan/start/advance/finish: the cut is confirmed, finish releases what onramp held" {
	local plan=$BATS_TEST_TMPDIR/plan.json j
	plan_file "$plan" w2 '["leaf2"]'
	run "$ONRAMPCTL" rewire plan "$plan"
	[ "$status" -eq 0 ]
	[[ $output == *"w2 planned"* ]]
	run "$ONRAMPCTL" rewire start w2
	[ "$status" -eq 0 ]
	[[ $output == *"window w2 active: leaf2 cut off"* ]]
	[[ $(spine_nodes) == "node[1-2,5-8]" ]]
	# job_submit/onramp acknowledged the plan as start wrote it.
	local ack
	ack=$(scontrol show config | sed -n 's/^StateSaveLocation *= *//p')/onramp_job_submit.loaded
	cat "$ack"
	[ "$(head -n 1 "$ack")" = "status loaded" ]
	grep -qxF "$(stat -c '%n %i %.9Y %s' "$PLAN")" "$ack"
	j=$(submit -N7 -o /dev/null --wrap 'sleep 1')
	sleep 2
	[[ $(job_state "$j") == PENDING ]]
	run "$ONRAMPCTL" rewire advance w2 1
	[ "$status" -eq 0 ]
	[[ $output == *"stage=50%"* ]]
	run "$ONRAMPCTL" rewire finish w2
	[ "$status" -eq 0 ]
	[[ $output == *"released held jobs: $j"* ]]
	[[ $(spine_nodes) == "node[1-8]" ]]
	submit_wait "$j" COMPLETED 90
}

@test "onrampctl rewire finish releases by onramp's AdminComment mark, never by a user's comment or name" {
	local plan=$BATS_TEST_TMPDIR/plan.json reason mark j u1 u2 u3 u4 u
	plan_file "$plan" w6 '["leaf2"]'
	"$ONRAMPCTL" rewire plan "$plan"
	"$ONRAMPCTL" rewire start w6
	reason="onramp: held until rewire window w6 finishes"
	mark="onramp:rewire-held window=w6"
	# onramp holds a job the cut fabric cannot hold and marks it.
	j=$(submit -N7 -o /dev/null --wrap 'sleep 1')
	# A user's own held jobs carrying the old finish's match text, and the
	# mark's text, in their comment and name.
	u1=$(as_user sbatch --parsable --hold -o /dev/null --comment "$reason" --wrap 'sleep 1')
	u2=$(as_user sbatch --parsable --hold -o /dev/null -J "x Comment=$reason" --wrap 'sleep 1')
	u3=$(as_user sbatch --parsable --hold -o /dev/null \
		--comment "x AdminComment=$mark Comment=$reason" -J "AdminComment=$mark" --wrap 'sleep 1')
	# A multi-node job its user submitted held: onramp holds it too but does
	# not mark it (its user releases it).
	u4=$(as_user sbatch --parsable --hold -N7 -o /dev/null --wrap 'sleep 1')
	sleep 2
	# (22.05 prints a space after the field, 26.05 does not)
	scontrol show job "$j" | grep -qx " *AdminComment=$mark *"
	for u in "$u1" "$u2" "$u3" "$u4"; do
		! scontrol show job "$u" | grep -q "^ *AdminComment=onramp"
	done
	# The user cannot write the mark (slurmctld refuses it from a non-admin,
	# at submission too: validate_job_create_req).
	run as_user scontrol update job "$u1" AdminComment="$mark"
	[ "$status" -ne 0 ]
	run "$ONRAMPCTL" rewire finish w6
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"window w6 done; released held jobs: $j" ]]
	for u in "$u1" "$u2" "$u3" "$u4"; do
		[[ $(job_state "$u") == PENDING ]]
		[[ $(job_field "$u" Reason) == JobHeldUser ]]
	done
	submit_wait "$j" COMPLETED 90
}

@test "onrampctl rewire start refuses while a multi-leaf job runs on the leaves, unless --force" {
	local plan=$BATS_TEST_TMPDIR/plan.json b
	plan_file "$plan" w3 '["leaf2"]'
	"$ONRAMPCTL" rewire plan "$plan"
	b=$(submit -N2 -w 'node[2-3]' -o /dev/null --wrap 'sleep 300')
	submit_wait "$b" RUNNING 60
	run "$ONRAMPCTL" rewire start w3
	[ "$status" -ne 0 ]
	[[ $output == *"$b node[2-3]"* ]]
	[[ $(spine_nodes) == "node[1-8]" ]]
	run "$ONRAMPCTL" rewire start w3 --force
	[ "$status" -eq 0 ]
	# The running job keeps running.
	[[ $(job_state "$b") == RUNNING ]]
	run "$ONRAMPCTL" rewire finish w3
	[ "$status" -eq 0 ]
}

@test "onrampctl rewire plan refuses an unknown leaf, naming it, and keeps the installed plan" {
	local plan=$BATS_TEST_TMPDIR/plan.json bad=$BATS_TEST_TMPDIR/bad.json
	plan_file "$plan" w4 '["leaf2"]'
	"$ONRAMPCTL" rewire plan "$plan"
	plan_file "$bad" w5 '["leaf9"]'
	run "$ONRAMPCTL" rewire plan "$bad"
	[ "$status" -eq 2 ]
	[[ $output == *"leaf9"* ]]
	run "$ONRAMPCTL" rewire status
	[[ $output == *"w4 planned"* ]]
	[[ $output != *"w5"* ]]
}

@test "onrampctl topology check: one spine failure cuts the leaf that has a single uplink" {
	local fabric=$BATS_TEST_TMPDIR/fabric.json
	cat >"$fabric" <<'EOF2'
{"spines": ["spine-a", "spine-b"],
 "uplinks": [
  {"leaf": "leaf1", "spine": "spine-a"}, {"leaf": "leaf1", "spine": "spine-b"},
  {"leaf": "leaf2", "spine": "spine-a"}, {"leaf": "leaf2", "spine": "spine-b"},
  {"leaf": "leaf3", "spine": "spine-a"}, {"leaf": "leaf3", "spine": "spine-b"},
  {"leaf": "leaf4", "spine": "spine-a"}]}
EOF2
	echo "FabricFile=$fabric" >>"$ETC/onramp.conf"
	run "$ONRAMPCTL" topology check
	[ "$status" -eq 1 ]
	[ "$output" = "spine-a leaf4 node[7-8]" ]
	run "$ONRAMPCTL" topology check --fail spine-b
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run "$ONRAMPCTL" topology check --fail spine-a spine-b
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
	run "$ONRAMPCTL" topology check --fail spine-z
	[ "$status" -eq 2 ]
	[[ $output == *"unknown switch 'spine-z'"* ]]
}
