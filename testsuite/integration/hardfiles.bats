#!/usr/bin/env bats
# What root and slurmstepd do with a user's checkpoint directory: read it
# with the user's privileges, never block on it, and hash it once per
# restart.

load helpers
load migrate_helpers # and the setup/teardown hooks

@test "spank/onramp: after a restart the checkpoint is hashed once, in the batch step; every step of every node gets ONRAMP_RESUME_MANIFEST" {
	spank_loaded || skip "cluster started without plugstack.conf"
	local dir=$ONRAMP_JOBS_DIR/once.ckpt job off n logs=()
	rm -rf "$dir" "$ONRAMP_JOBS_DIR/once.out"
	as_user mkdir -p "$dir/1"
	as_user dd if=/dev/urandom of="$dir/1/a.bin" bs=1M count=1 status=none
	as_user "$ONRAMP_REPO/contrib/tools/onramp-ckpt" commit --dir "$dir" --generation 1 \
		--step 7 a.bin
	job=$(as_user sbatch --parsable -N2 -o once.out --open-mode=append --checkpoint-dir="$dir" \
		--wrap 'if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
			srun -N2 -l printenv ONRAMP_RESUME_MANIFEST; srun -N2 true; srun -N2 true
		else sleep 600; fi')
	JOBS+=("$job")
	submit_wait "$job" RUNNING 60
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		logs+=("$ONRAMP_CLUSTER_DIR/log/slurmd-$n.log:$(log_offset "$ONRAMP_CLUSTER_DIR/log/slurmd-$n.log")")
	done
	scontrol requeue "$job"
	submit_wait "$job" COMPLETED 180
	local verified=0 l f
	for l in "${logs[@]}"; do
		f=${l%:*} off=${l##*:}
		verified=$((verified + $(tail -c +"$((off + 1))" "$f" | { grep -c "spank/onramp: restart 1 resumes from $dir/1/manifest.json" || true; })))
	done
	cat "$ONRAMP_JOBS_DIR/once.out"
	# Once per restart (before: once per node for each of the 4 steps).
	[ "$verified" -eq 1 ]
	[ "$(grep -c ": $dir/1/manifest.json\$" "$ONRAMP_JOBS_DIR/once.out")" -eq 2 ]
}

@test "onrampctl verify-loss reads the checkpoint directory as the job's user: no FIFO hang, no root-only file" {
	local dir=$ONRAMP_JOBS_DIR/vl.ckpt job secret
	rm -rf "$dir"
	as_user mkdir -p "$dir"
	job=$(as_user sbatch --parsable -H --comment="onramp:ckpt=$dir" -o /dev/null --wrap true)
	JOBS+=("$job")
	# A root-only file the user links to: root would read it, the user
	# cannot.
	secret=$BATS_TEST_TMPDIR/secret
	printf '{"step": 5}\n' >"$secret"
	chmod 600 "$secret"
	chmod 755 "$BATS_TEST_TMPDIR"
	as_user ln -s "$secret" "$dir/resumed.json"
	run timeout 120 "$CTL" verify-loss "$job"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"unreadable by the job's user"* ]]
	# A FIFO as the loss log: refused at once, no reader left blocked.
	as_user rm "$dir/resumed.json"
	as_user sh -c "printf '{\"step\": 5}\n' >'$dir/resumed.json'"
	as_user mkfifo "$dir/loss.log"
	SECONDS=0
	run timeout 120 "$CTL" verify-loss "$job"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"not a regular file the job's user can read"* ]]
	[ "$SECONDS" -lt 60 ]
	# A real log still works.
	as_user rm "$dir/loss.log"
	as_user sh -c "for s in 4 5 6; do echo \"\$s 1.0\"; done >'$dir/loss.log'"
	run "$CTL" verify-loss "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"resumed at step 5"* ]]
	# A loss of 0 is a loss, not a division by zero; garbage lines are
	# not losses.
	as_user sh -c "printf '4 1\n5 0\n6 0\nbogus line\n7 nan\n' >'$dir/loss.log'"
	run "$CTL" verify-loss "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"loss 0 before, 0 after (0.000%)"* ]]
	as_user sh -c "printf '5 0\n6 0.25\n' >'$dir/loss.log'"
	run "$CTL" verify-loss "$job"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"loss 0 before, 0.25 after (100.000%)"* ]]
}
