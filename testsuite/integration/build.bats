#!/usr/bin/env bats
# The build's guard rails: configure refuses a Slurm source tree that is
# missing, unconfigured or of another version than the installed daemons,
# and contrib/slurm-source reuses its cache. Runs in a scratch copy of the
# tree (no cluster needed), against the Slurm the build under test was
# configured for (the installed 22.05, or contrib/build --slurm's prefix).

load helpers

setup_file() {
	export SCRATCH=$BATS_FILE_TMPDIR/tree
	mkdir -p "$SCRATCH"
	git -C "$ONRAMP_REPO" ls-files -z | (cd "$ONRAMP_REPO" && xargs -0 tar cf -) | tar xf - -C "$SCRATCH"
	(cd "$SCRATCH" && autoreconf -fi >/dev/null 2>&1)
	export SLURM_SRC SLURM_PREFIX
	SLURM_SRC=$(sed -n 's/^SLURM_SRC = //p' "$ONRAMP_REPO/Makefile" 2>/dev/null)
	SLURM_PREFIX=$(sed -n 's/^SLURM_PREFIX = //p' "$ONRAMP_REPO/Makefile" 2>/dev/null)
	[ -n "$SLURM_SRC" ] || SLURM_SRC=$("$ONRAMP_REPO/contrib/slurm-source" 2>/dev/null)
}

configure_with() {
	(cd "$SCRATCH" && ./configure -q --with-slurm-source="$1" ${SLURM_PREFIX:+--with-slurm-prefix="$SLURM_PREFIX"} 2>&1)
}

@test "configure without --with-slurm-source says what it needs" {
	run bash -c "cd '$SCRATCH' && ./configure -q 2>&1"
	[ "$status" -ne 0 ]
	[[ $output == *"--with-slurm-source=DIR is required"* ]]
}

@test "configure refuses a missing Slurm source directory" {
	run configure_with /nonexistent/slurm-src
	[ "$status" -ne 0 ]
	[[ $output == *"/nonexistent/slurm-src does not exist"* ]]
}

@test "configure refuses an unconfigured Slurm source tree" {
	local fake=$BATS_TEST_TMPDIR/unconfigured
	mkdir -p "$fake/src/common"
	cp "$SLURM_SRC/src/common/plugin.h" "$fake/src/common/"
	run configure_with "$fake"
	[ "$status" -ne 0 ]
	[[ $output == *"is not configured"* ]]
}

@test "configure refuses a tree of another version than the installed slurmctld" {
	local fake=$BATS_TEST_TMPDIR/other
	mkdir -p "$fake/src/common" "$fake/slurm"
	cp "$SLURM_SRC/src/common/plugin.h" "$fake/src/common/"
	# A version no build uses; the installed one is the build's own.
	sed 's/^#define SLURM_VERSION_STRING ".*"/#define SLURM_VERSION_STRING "21.08.8"/' \
		"$SLURM_SRC/config.h" >"$fake/config.h"
	sed 's/^#define SLURM_VERSION_NUMBER .*/#define SLURM_VERSION_NUMBER 0x150808/' \
		"$SLURM_SRC/slurm/slurm_version.h" >"$fake/slurm/slurm_version.h"
	local installed
	installed=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"$/\1/p' "$SLURM_SRC/config.h")
	[ -n "$installed" ] && [ "$installed" != 21.08.8 ]
	run configure_with "$fake"
	[ "$status" -ne 0 ]
	[[ $output == *"is version 21.08.8 but the installed"*"is $installed"* ]]
}

@test "the plugins carry the configured tree's SLURM_VERSION_NUMBER" {
	local want
	want=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\)$/\1/p' "$SLURM_SRC/slurm/slurm_version.h")
	# plugin_version is a 4-byte little-endian constant in .rodata.
	for so in "$ONRAMP_REPO"/stage/plugins/*.so; do
		run gdb -batch -ex 'printf "%#x\n", plugin_version' "$so"
		[ "$status" -eq 0 ]
		[ "${lines[-1]}" = "$want" ]
	done
}

@test "contrib/slurm-source reuses its cache on a second run" {
	if [ -n "$SLURM_PREFIX" ]; then
		# An upstream version built by contrib/slurm-source --version.
		local v
		v=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"$/\1/p' "$SLURM_SRC/config.h")
		run "$ONRAMP_REPO/contrib/slurm-source" --version "$v"
		[ "$status" -eq 0 ]
		[[ $output == *"using cached Slurm $v"* ]]
	else
		run "$ONRAMP_REPO/contrib/slurm-source"
		[ "$status" -eq 0 ]
		[[ $output == *"using cached configured tree"* ]]
	fi
	[ "${lines[-1]}" = "$SLURM_SRC" ]
}

# The CI run's lanes build side by side and each runs contrib/install-deps
# first; on a fresh machine apt-get, which fails at once while dpkg's lock
# is held, must run once. apt-get and dpkg-query here are stand-ins: the
# second says every package is missing until an install ran, the first
# fails like apt-get while another install holds its lock.
@test "contrib/install-deps run twice at once installs once and both succeed" {
	local fake=$BATS_TEST_TMPDIR/fake
	mkdir -p "$fake/bin"
	printf '#!/bin/sh\n[ -e %s/installed ] && echo "install ok installed"\n' \
		"$fake" >"$fake/bin/dpkg-query"
	printf '%s\n' '#!/bin/sh' \
		'case " $* " in *" install "*) ;; *) exit 0 ;; esac' \
		'mkdir "$FAKE/lock" 2>/dev/null || { echo "E: Could not get lock $FAKE/lock" >&2; exit 100; }' \
		'echo install >>"$FAKE/calls"' 'sleep 2' 'touch "$FAKE/installed"' 'rmdir "$FAKE/lock"' \
		>"$fake/bin/apt-get"
	chmod +x "$fake/bin/dpkg-query" "$fake/bin/apt-get"
	FAKE=$fake PATH=$fake/bin:$PATH ONRAMP_DEPS_LOCK=$fake/deps.lock \
		"$ONRAMP_REPO/contrib/install-deps" >"$fake/a.log" 2>&1 &
	local a=$! rca=0 rcb=0
	FAKE=$fake PATH=$fake/bin:$PATH ONRAMP_DEPS_LOCK=$fake/deps.lock \
		"$ONRAMP_REPO/contrib/install-deps" >"$fake/b.log" 2>&1 || rcb=$?
	wait "$a" || rca=$?
	cat "$fake/a.log" "$fake/b.log"
	[ "$rca" -eq 0 ] && [ "$rcb" -eq 0 ]
	[ "$(wc -l <"$fake/calls")" -eq 1 ]
	grep -h 'all packages present' "$fake/a.log" "$fake/b.log"
}

# (packaging.bats checks that make install installs each of them.)
@test "every manual page renders without warnings (groff -ww, man --warnings)" {
	local f out
	for f in "$ONRAMP_REPO"/doc/man/*.[1-8]; do
		# A ".so manN/page.N" page only points to another.
		if read -r so target <"$f" && [[ $so == .so ]]; then
			[[ -f $ONRAMP_REPO/doc/man/${target#*/} ]] ||
				{ echo "${f##*/}: .so to a missing page $target" >&2; false; }
			continue
		fi
		out=$(groff -man -ww -z "$f" 2>&1)
		[ -z "$out" ] || { echo "${f##*/}: $out" >&2; false; }
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		[ -z "$out" ] || { echo "${f##*/}: $out" >&2; false; }
	done
}

@test "the commit-msg hook warns about a long subject, a missing area and a missing body, and passes a good message" {
	local hook=$ONRAMP_REPO/contrib/git-hooks/commit-msg m=$BATS_TEST_TMPDIR/msg
	printf '%s\n' "make the pair test bind an ephemeral port and check who connects before it trusts them" >"$m"
	run "$hook" "$m"
	[ "$status" -eq 0 ]
	[[ $output == *"the subject has 86 characters (at most 72)"* ]]
	[[ $output == *'should begin with its area'* ]]
	[[ $output == *'no body'* ]]
	printf '%s\n' "pair: bind an ephemeral port" "" "Symptom: a fixed port." "# a comment git drops" >"$m"
	run "$hook" "$m"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}
