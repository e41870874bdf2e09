#!/usr/bin/env bats
# Nothing blocking under slurmctld's locks: the plugins onramp stages
# (stage/plugins/*.so) import no libslurm RPC (a call back into slurmctld
# from job_submit or topology deadlocks it) and no SQLite. Both live in the
# tools' libraries (common/slurm, common/db), which no plugin links. No
# cluster needed.

load helpers

# The RPCs and SQLite calls a plugin must not import, as nm -D names them.
FORBIDDEN='^(slurm_(load_[a-z_]+|update_[a-z_]+|[a-z_]*requeue[a-z_0-9]*|kill_job[a-z_0-9]*|signal_job[a-z_0-9]*|submit_batch_job[a-z_0-9]*|allocate_resources[a-z_0-9]*|reconfigure|create_reservation|delete_reservation|suspend[0-9]*|resume[0-9]*)|sqlite3_[a-z_0-9]+)$'

undefined_symbols() {
	nm -D --undefined-only "$1" | awk '{print $NF}' | sed 's/@.*//'
}

@test "the staged plugins import no libslurm RPC and no sqlite3_* symbol" {
	local so bad found=0
	for so in "$ONRAMP_REPO"/stage/plugins/*.so; do
		[[ -e $so ]] || continue
		found=$((found + 1))
		bad=$(undefined_symbols "$so" | grep -E "$FORBIDDEN" || true)
		if [[ -n $bad ]]; then
			echo "$(basename "$so") imports: $bad" >&2
			return 1
		fi
	done
	[ "$found" -ge 3 ]
}

@test "the check sees such imports where they are: onramp-migrate's" {
	local tool=$ONRAMP_REPO/contrib/tools/.libs/onramp-migrate
	[[ -x $tool ]] || tool=$ONRAMP_REPO/contrib/tools/onramp-migrate
	[[ -x $tool ]] || skip "onramp-migrate not built"
	run bash -c "nm -D --undefined-only '$tool' | awk '{print \$NF}' | sed 's/@.*//' | grep -E '$FORBIDDEN'"
	echo "$output"
	[[ $output == *slurm_load_job* ]]
	[[ $output == *slurm_requeue* ]]
	[[ $output == *slurm_kill_job* ]]
	[[ $output == *sqlite3_step* ]]
}
