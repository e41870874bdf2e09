# bench/lib.sh - shared by the benchmarks.
# shellcheck shell=bash

# median: one number per line on stdin.
bench_median() {
	tr ' ' '\n' | { grep -v '^$' || true; } | sort -n |
		awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'
}

# bench_section NAME SECTION_FILE [AFTER]: replace NAME's section of
# bench/RESULTS.md (between <!-- NAME --> markers) with SECTION_FILE's
# content, where it stands; a new section goes after section AFTER when that
# is there, else at the end.
bench_section() {
	local name=$1 section=$2 after=${3:-} results present=0
	results=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/RESULTS.md
	[ -f "$results" ] || printf '# onramp benchmark results\n\nEach section is written by the benchmark named in it.\n' >"$results"
	grep -qxF "<!-- $name -->" "$results" && present=1
	awk -v n="$name" -v f="$section" -v a="$after" -v present="$present" '
		function put(  line) {
			print "<!-- " n " -->"
			while ((getline line <f) > 0) print line
			close(f)
			print "<!-- /" n " -->"
			done = 1
		}
		$0 == "<!-- " n " -->" {skip = 1; if (!done) put(); next}
		$0 == "<!-- /" n " -->" {skip = 0; next}
		skip {next}
		{print}
		!present && !done && a != "" && $0 == "<!-- /" a " -->" {put()}
		END {if (!done) put()}' "$results" >"$results.new"
	mv "$results.new" "$results"
}

# bench_slurm_args: "--slurm PREFIX" for onramp-cluster when onramp is built
# against a Slurm prefix (contrib/build --slurm), else nothing: a benchmark
# runs the Slurm its plugins were built for.
bench_slurm_args() {
	local prefix
	prefix=$(sed -n 's/^SLURM_PREFIX = //p' "$(dirname "${BASH_SOURCE[0]}")/../Makefile" 2>/dev/null)
	[ -z "$prefix" ] || echo "--slurm $prefix"
}

# bench_slurm_version: MAJOR.MINOR of the slurmctld in PATH (after the
# cluster's env), e.g. 26.05; results sections are named by it.
bench_slurm_version() {
	slurmctld -V | awk '{split($NF, v, "."); print v[1] "." v[2]}'
}
