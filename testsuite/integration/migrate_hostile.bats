#!/usr/bin/env bats
# A job's user writes its comment, name, working directory and output
# paths; root's onrampctl migrate must read them as data. scontrol -o
# prints Comment after NodeList, Features, AdminComment and Restarts, and a
# later key=value wins, so a tool parsing that text as root would drain
# every node a user names and copy the user's text into AdminComment.
# onrampctl migrate reads the job through libslurm (common/slurm): only the
# job's real node is drained and AdminComment holds only onramp's marker.

load helpers
load migrate_helpers # and the setup/teardown hooks

# This job's fields are read with squeue's single-field formats: the
# helpers that grep scontrol's text (job_field, job_state) would be fooled
# by the job's comment just as onramp-migrate's old parser was.
sq() { squeue -h -j "$1" -O "$2:300" | sed 's/ *$//'; }
sq_state_is() { [[ $(sq "$1" state) == "$2" ]]; }

# Running, and every node of it has feature (sinfo's field, per node).
sq_running_on() {
	local n
	sq_state_is "$1" RUNNING || return 1
	for n in $(expand_hostlist "$(sq "$1" nodelist)"); do
		[[ ,$(sinfo -h -n "$n" -o %f), == *",$2,"* ]] || return 1
	done
}

@test "a job whose comment, name and paths carry NodeList=, AdminComment=, Restarts= and newlines migrates as itself" {
	local dir=$ONRAMP_JOBS_DIR/hostile.ckpt job real evil wd
	evil=$'x NodeList=node[1-8] AdminComment=pwned Restarts=99 Features=rack1\nJobState=FAILED NodeList=node[1-8]'
	wd="$ONRAMP_JOBS_DIR/w NodeList=node[1-8] AdminComment=pwned"
	rm -rf "$dir" "$wd"
	as_user mkdir -p "$dir" "$wd"
	job=$(as_user sbatch --parsable -p batch -N1 --constraint=rack1 \
		-J "n NodeList=node[1-8] AdminComment=pwned Restarts=99" \
		-D "$wd" -o "$wd/o AdminComment=pwned Restarts=99.out" \
		--comment="onramp:ckpt=$dir $evil" \
		--wrap "ONRAMP_CKPT_DIR=$dir exec $TRAINER --step-ms 20 --steps 1000000")
	JOBS+=("$job")
	wait_for 60 "job $job to run" sq_state_is "$job" RUNNING
	real=$(sq "$job" nodelist)
	[[ $real == node[1-4] ]]
	# The text a parser would have misread is really there.
	scontrol -o show job "$job" | grep -q "Comment=onramp:ckpt=$dir x NodeList=node\[1-8\]"
	wait_for 60 "100 training steps" test -s "$dir/loss.log"
	run "$CTL" migrate --jobs "$job" --to rack2 --confirm-timeout 150
	echo "$output"
	[ "$status" -eq 0 ]
	# Only the job's real node was drained for the move, and resumed.
	[ "$(sqlite3 "$MIGRATE_DB" "select src || ' ' || drained from migrations where job = $job")" = "$real $real" ]
	sqlite3 "$MIGRATE_DB" "select e.message from events e join migrations m on m.id = e.migration
		where m.job = $job and e.state = 'DRAINED'" | grep -qx "drained $real"
	no_migrate_drain
	# Moved as itself: running on rack2, restarted once (not "99").
	sq_running_on "$job" rack2
	[ "$(sq "$job" restartcnt)" = 1 ]
	[ "$(sqlite3 "$MIGRATE_DB" "select restarts || ' ' || state || ' ' || error from migrations where job = $job")" = "0 DONE " ]
	# AdminComment: the marker while it moved (the journal's copy of the
	# job's own AdminComment is empty), nothing of the user's text after.
	[ -z "$(sqlite3 "$MIGRATE_DB" "select admin_comment from migrations where job = $job")" ]
	local ac
	ac=$(sq "$job" admin_comment)
	[[ -z $ac || $ac == "(null)" ]]
}

@test "onrampctl's shell commands read a job's user and checkpoint directory with libslurm, not from a forged comment" {
	local dir=$ONRAMP_JOBS_DIR/hostile2.ckpt job uid
	rm -rf "$dir"
	as_user mkdir -p "$dir"
	job=$(as_user sbatch --parsable -p batch -N1 -J "j UserId=root(0) GroupId=root(0)" \
		--comment="onramp:ckpt=$dir x UserId=root(0) GroupId=root(0)" --wrap "sleep 300")
	JOBS+=("$job")
	# The forged text is in scontrol's output, after the real UserId.
	scontrol -o show job "$job" | grep -q "Comment=onramp:ckpt=$dir x UserId=root(0)"
	uid=$(id -u "$ONRAMP_CLUSTER_USER")
	run "$ONRAMP_REPO/contrib/tools/onramp-migrate" job "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r .uid <<<"$output")" = "$uid" ]
	[ "$(jq -r .ckpt_dir <<<"$output")" = "$dir" ]
	# verify-loss reads as that user: a root-only file named as the loss
	# log is not readable to it (parsing scontrol's text, root(0) won).
	as_user sh -c "echo '{\"step\": 5}' > '$dir/resumed.json'"
	run "$CTL" verify-loss "$job" /etc/shadow
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"not a regular file the job's user can read"* ]]
}
