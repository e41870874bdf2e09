#!/usr/bin/env bats
# Root's shell code in directories SlurmUser can write (StateDir/locks,
# StateDir/admit, NodeStateDir/verdicts in an unprivileged setup): a symlink
# SlurmUser put there is refused, and its root-owned target (the victim) is
# neither given away, created, truncated nor written. Runs as root: the
# state directories belong to a stand-in SlurmUser (nobody).

load helpers

LIB=$ONRAMP_REPO/contrib/libexec/onramp-lib.sh

setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/victim.d" "$T/state"
	echo "root's" >"$T/victim"
	chown nobody: "$T/state"
	export ONRAMP_SLURM_USER=nobody
}

# stamp PATH: owner, mode, size, mtime and content of PATH (not followed).
stamp() {
	stat -c '%U:%G %a %s %Y' -- "$1"
	[ ! -f "$1" ] || md5sum <"$1"
}

@test "onramp_state_dir refuses a symlinked state directory and gives its target to nobody" {
	local before
	ln -s "$T/victim.d" "$T/state/locks"
	before=$(stamp "$T/victim.d")
	run bash -c '. "$1"; onramp_state_dir "$2" "$2/locks" "$2/admit"' _ "$LIB" "$T/state"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"refusing $T/state/locks"* ]]
	[ "$(stamp "$T/victim.d")" = "$before" ]
	# A file where a directory goes is refused too.
	rm "$T/state/locks"
	: >"$T/state/locks"
	run bash -c '. "$1"; onramp_state_dir "$2/locks"' _ "$LIB" "$T/state"
	[ "$status" -ne 0 ]
	[[ $output == *"not a directory"* ]]
}

@test "onramp_state_dir creates missing directories for SlurmUser" {
	run bash -c '. "$1"; onramp_state_dir "$2" "$2/locks" "$2/admit"' _ "$LIB" "$T/state"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(stat -c %U "$T/state/locks")" = nobody ]
	[ "$(stat -c %U "$T/state/admit")" = nobody ]
}

@test "onramp_state_dir gives SlurmUser the directory it checked, never a hard link swapped in after the check" {
	# With fs.protected_hardlinks=0 SlurmUser can hard-link a root-owned
	# file into its directory; here root plays that part, swapping the
	# name between a directory and such a link while root's flows prepare
	# it. chown -h by name, after the check, gave the file away.
	local i
	ln "$T/victim" "$T/victim.link"
	(
		set +e
		while :; do
			rm -rf "$T/state/locks"
			mkdir "$T/state/locks" 2>/dev/null
			rm -rf "$T/state/locks"
			ln -T "$T/victim.link" "$T/state/locks" 2>/dev/null
			rm -f "$T/state/locks" 2>/dev/null
		done
	) &
	local swapper=$!
	for i in $(seq 1 200); do
		bash -c '. "$1"; onramp_state_dir "$2/locks"' _ "$LIB" "$T/state" 2>/dev/null || true
	done
	kill "$swapper"
	wait "$swapper" || true
	stat -c '%U:%G %n' "$T/victim"
	[ "$(stat -c %U:%G "$T/victim")" = root:root ]
}

CAMPAIGN=$ONRAMP_REPO/contrib/tools/onramp-campaign

# lock_once FILE: onramp-campaign taking the expand lock FILE (then failing
# on a missing onramp.conf: exit 1 without "lock"), bounded.
lock_once() {
	run timeout 20 "$CAMPAIGN" --conf /nonexistent --lock "$1" --id c1 plan
	echo "$output"
	[ "$status" -ne 124 ]
}

@test "the expand lock: a FIFO, a directory or a symlink at its name is refused, never waited on or followed" {
	# Seen live: a FIFO SlurmUser put at StateDir/locks/expand.ID.lock
	# held root's onrampctl expand in open(2) until killed. The guard
	# (timeout) turns a hang into a failure, it measures nothing.
	local before l
	before=$(stamp "$T/victim")
	mkfifo "$T/state/f.lock"
	mkdir "$T/state/d.lock"
	ln -s "$T/victim" "$T/state/a.lock"
	ln -s "$T/created-by-root" "$T/state/b.lock"
	for l in f d a b; do
		lock_once "$T/state/$l.lock"
		[ "$status" -eq 1 ]
		[[ $output == *"cannot open the lock file: $T/state/$l.lock"* ]]
	done
	[ ! -e "$T/created-by-root" ]
	[ "$(stamp "$T/victim")" = "$before" ]
	# A missing lock file is created, a held one refused (exit 2).
	lock_once "$T/state/c.lock"
	[ "$status" -eq 1 ] && [[ $output != *lock* ]]
	[ -f "$T/state/c.lock" ] && [ ! -L "$T/state/c.lock" ]
	flock "$T/state/c.lock" sleep 30 &
	local holder=$!
	sleep 0.5
	lock_once "$T/state/c.lock"
	kill "$holder"
	[ "$status" -eq 2 ]
	[[ $output == *"campaign c1 is being run by another onrampctl expand"* ]]
}

@test "the expand lock: a FIFO swapped in after a check never holds root in open(2)" {
	# onramp_lock_open (bash) checked for a regular file, then opened the
	# name: a FIFO swapped in between held root until killed (seen in
	# about three tries in 100 beside this loop, 5 s each).
	local i
	(
		set +e
		while :; do
			rm -f "$T/state/r.lock"
			: >"$T/state/r.lock"
			rm -f "$T/state/r.lock"
			mkfifo "$T/state/r.lock" 2>/dev/null
		done
	) &
	local swapper=$!
	for i in $(seq 1 100); do
		run timeout 10 "$CAMPAIGN" --conf /nonexistent --lock "$T/state/r.lock" --id c1 plan
		[ "$status" -ne 124 ] || break
	done
	kill "$swapper"
	wait "$swapper" || true
	echo "try $i: $status $output"
	[ "$status" -ne 124 ]
}

# stand_in_admit BIN VERDICT [CONF]: an onramp-admit in BIN that prints
# VERDICT (into its --output, else on stdout) and "onramp:OK" into its
# --reason-file; its state-dir is the real one, and with CONF, so is its
# prune-verdicts (on CONF).
stand_in_admit() {
	{
		echo '#!/bin/bash'
		printf '[ "$1" != state-dir ] || exec %q "$@"\n' "$ONRAMP_REPO/node_features/onramp-admit"
		[ -z "${3:-}" ] || printf '[ "$1" != prune-verdicts ] || exec %q "$@" --conf %q\n' \
			"$ONRAMP_REPO/node_features/onramp-admit" "$3"
		cat <<'EOS'
while [ $# -gt 0 ]; do
	[ "$1" = --reason-file ] && echo "onramp:OK" >"$2"
	# As onramp-admit --output does: the old name replaced.
	[ "$1" = --output ] && { rm -f -- "$2"; exec >"$2"; }
	shift
done
EOS
		printf 'echo %q\n' "$2"
	} >"$1/onramp-admit"
	chmod +x "$1/onramp-admit"
}

@test "the admission job writes its verdict over a symlink, never through it" {
	local before bin=$T/bin
	mkdir -p "$bin" "$T/state/verdicts"
	chown nobody: "$T/state/verdicts"
	# Stand-ins for onramp-config (NodeStateDir) and onramp-admit (a verdict).
	printf '#!/bin/bash\necho %q\n' "$T/state" >"$bin/onramp-config"
	stand_in_admit "$bin" '{"verdict": "pass"}'
	chmod +x "$bin/onramp-config"
	ln -s "$T/victim" "$T/state/verdicts/verdict.manual.json"
	before=$(stamp "$T/victim")
	run env -u SLURM_JOB_ID ONRAMP_LIBEXEC="$bin" SLURMD_NODENAME=node1 \
		"$ONRAMP_REPO/contrib/libexec/onramp-admission-job"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(stamp "$T/victim")" = "$before" ]
	[ ! -L "$T/state/verdicts/verdict.manual.json" ]
	grep -q '"verdict": "pass"' "$T/state/verdicts/verdict.manual.json"
}

@test "onramp-admit --output replaces a symlink or FIFO put at the name, never following or opening it" {
	local v=$T/state/verdicts/verdict.manual.json before
	mkdir -p "$T/state/verdicts"
	chown nobody: "$T/state/verdicts"
	mkfifo "$T/fifo"
	before=$(stamp "$T/victim")
	# What SlurmUser can put at the name: a symlink to a root file, to a
	# FIFO (bash's noclobber opened those: not a regular file), a FIFO
	# itself, an old verdict.
	for what in victim fifo-link fifo old; do
		rm -f "$v"
		case $what in
		victim) ln -s "$T/victim" "$v" ;;
		fifo-link) ln -s "$T/fifo" "$v" ;;
		fifo) mkfifo "$v" ;;
		old) echo stale >"$v" ;;
		esac
		run timeout 20 "$ONRAMP_REPO/node_features/onramp-admit" --output "$v" --node node1 --conf /nonexistent
		echo "$what: $output"
		[ "$status" -eq 2 ]
		[ -f "$v" ] && [ ! -L "$v" ]
		grep -q '"status":"ERROR"' "$v"
	done
	[ "$(stamp "$T/victim")" = "$before" ]
	[ -p "$T/fifo" ]
	# A directory at the name is not removed.
	rm -f "$v"
	mkdir "$v"
	run timeout 20 "$ONRAMP_REPO/node_features/onramp-admit" --output "$v" --node node1 --conf /nonexistent
	[ "$status" -eq 2 ]
	[[ $output == *"--output $v: Is a directory"* ]]
	rmdir "$v"
	# A new name: created 0640 (whatever the umask), the answer in it.
	run bash -c 'umask 0; exec "$@"' _ "$ONRAMP_REPO/node_features/onramp-admit" --output "$v" --node node1 --conf /nonexistent
	[ "$status" -eq 2 ]
	[ "$(stat -c %a "$v")" = 640 ]
	grep -q '"status":"ERROR"' "$v"
}

@test "the admission job never removes a verdict through a verdicts/ swapped for a symlink after its check" {
	# SlurmUser owns NodeStateDir: it can exchange verdicts/ with a
	# symlink to another directory at any moment. The job's old
	# rm -f verdicts/verdict.manual.json removed root's file of that name
	# there; onramp-admit now replaces the name in verdicts/ opened once.
	local bin=$T/bin i
	mkdir -p "$bin" "$T/state/verdicts" "$T/rootdir"
	chown nobody: "$T/state/verdicts"
	echo precious >"$T/rootdir/verdict.manual.json"
	ln -s "$T/rootdir" "$T/state/swap"
	printf '#!/bin/bash\necho %q\n' "$T/state" >"$bin/onramp-config"
	chmod +x "$bin/onramp-config"
	# The real onramp-admit for --output (it exits 2 on the missing conf,
	# once the output is made), nothing else.
	{
		echo '#!/bin/bash'
		printf '[ "$1" != state-dir ] || exec %q "$@"\n' "$ONRAMP_REPO/node_features/onramp-admit"
		printf 'while [ $# -gt 0 ]; do [ "$1" != --output ] || exec %q --output "$2" --node node1 --conf /nonexistent; shift; done\n' \
			"$ONRAMP_REPO/node_features/onramp-admit"
	} >"$bin/onramp-admit"
	chmod +x "$bin/onramp-admit"
	python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
while True:
    libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE
' "$T/state/verdicts" "$T/state/swap" &
	local swapper=$!
	for i in $(seq 150); do
		env -u SLURM_JOB_ID ONRAMP_LIBEXEC="$bin" SLURMD_NODENAME=node1 \
			"$ONRAMP_REPO/contrib/libexec/onramp-admission-job" >/dev/null 2>&1 || true
		[ "$(cat "$T/rootdir/verdict.manual.json" 2>/dev/null)" = precious ] || break
	done
	kill "$swapper"
	wait "$swapper" || true
	echo "after $i runs: $(ls -l "$T/rootdir")"
	[ "$(cat "$T/rootdir/verdict.manual.json")" = precious ]
}

@test "the admission job writes its verdict readable by no other account, whatever the job's umask" {
	local bin=$T/bin v=$T/state/verdicts/verdict.manual.json
	mkdir -p "$bin"
	printf '#!/bin/bash\necho %q\n' "$T/state" >"$bin/onramp-config"
	echo "NodeStateDir=$T/state" >"$T/onramp.conf"
	# A stand-in onramp-admit that prints a verdict; the pruning is the
	# real one.
	stand_in_admit "$bin" '{"verdict": "pass", "serial": "1650921000001"}' "$T/onramp.conf"
	chmod +x "$bin/onramp-config"
	# A job submitted under umask 0 (slurmd gives the job the submitter's).
	run bash -c 'umask 0; exec "$@"' _ env -u SLURM_JOB_ID ONRAMP_LIBEXEC="$bin" \
		SLURMD_NODENAME=node1 "$ONRAMP_REPO/contrib/libexec/onramp-admission-job"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output != *"not pruned"* ]]
	stat -c '%a %U:%G %n' "$T/state" "$T/state/verdicts" "$v"
	# Before: 0666 in a 0777 verdicts/.
	[ "$(stat -c %a "$v")" = 640 ]
	[ "$(stat -c %a "$T/state/verdicts")" = 750 ]
	# Root's verdict in SlurmUser's directory takes its group, so
	# SlurmUser reads it back.
	[ "$(stat -c %U "$T/state/verdicts")" = nobody ]
	[ "$(stat -c %g "$v")" = "$(id -g nobody)" ]
}

@test "trigger.log: past LogMaxBytes it becomes trigger.log.1, it is created 0640, and a symlink there is refused" {
	local bin=$T/bin log=$T/state/trigger.log before
	mkdir -p "$bin"
	printf 'StateDir=%s\nLogMaxBytes=4096\n' "$T/state" >"$T/onramp.conf"
	# onramp-config answers for the stand-in onramp.conf.
	printf '#!/bin/bash\nexec %q --conf %q "$@"\n' "$ONRAMP_REPO/contrib/tools/onramp-config" \
		"$T/onramp.conf" >"$bin/onramp-config"
	chmod +x "$bin/onramp-config"
	head -c 5000 /dev/zero | tr '\0' x >"$log"
	chmod 0644 "$log"
	run bash -c 'umask 0; exec "$@"' _ "$bin/onramp-config" --prepare-log "$log"
	[ "$status" -eq 0 ]
	# Before: no rotation at all, and the log kept 0644.
	[ "$(stat -c %s "$log.1")" -eq 5000 ]
	[ "$(stat -c '%s %a' "$log")" = "0 640" ]
	# A symlink in the log's place: the trigger refuses to run, naming it;
	# its target untouched.
	rm "$log"
	ln -s "$T/victim" "$log"
	before=$(stamp "$T/victim")
	run env ONRAMP_LIBEXEC="$bin" "$ONRAMP_REPO/contrib/libexec/onramp-trigger" up node1
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"$log: a symlink, refused"* ]]
	[ "$(stamp "$T/victim")" = "$before" ]
}
