#!/usr/bin/env bats
# The portable check bundle (contrib/check-bundle, make check-bundle) on a
# machine without a GPU (no cluster needed): it builds, every bundled
# program finds its libraries in the bundle or in glibc, and run-checks,
# run from a copy in a scratch directory with a scrubbed environment,
# fails closed: exit 3, NO_GPU with the reason, and one valid JSON report
# in which every check and every case is present and says why it did or
# did not run. On a GPU host the same bundle is run by bench/h200-run.

ONRAMP_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup_file() {
	if [[ -e /dev/nvidiactl ]]; then
		skip "this machine has an NVIDIA device; use bench/h200-run"
	fi
	export OUTDIR=$BATS_FILE_TMPDIR/out COPY=$BATS_FILE_TMPDIR/copy
	"$ONRAMP_REPO/contrib/check-bundle" --builddir "$ONRAMP_REPO" --out "$OUTDIR" \
		>"$BATS_FILE_TMPDIR/build.log" 2>&1
	mkdir -p "$COPY"
	tar -C "$COPY" -xzf "$OUTDIR"/onramp-checks-*.tar.gz
	export B=$COPY/onramp-checks REPORT=$BATS_FILE_TMPDIR/report.json
	# A bare host: no Slurm configuration, no library path, a minimal PATH.
	local rc=0
	(cd "$BATS_FILE_TMPDIR" && env -i PATH=/usr/bin:/bin HOME="$BATS_FILE_TMPDIR" \
		SLURM_CONF=/nonexistent/slurm.conf "$B/run-checks" --out "$REPORT" \
		>"$BATS_FILE_TMPDIR/run.out" 2>"$BATS_FILE_TMPDIR/run.err") || rc=$?
	echo "$rc" >"$BATS_FILE_TMPDIR/run.rc"
}

@test "make check-bundle builds a self-contained directory and tarball of a few MiB" {
	run cat "$BATS_FILE_TMPDIR/build.log"
	[[ $output == *"onramp-checks ("*"MiB; "*" libraries; host glibc >= "*", else its own)"* ]]
	for f in run-checks README MANIFEST.json bin/onramp-admit bin/onramp-prolog \
		bin/onramp-epilog bin/jq baselines/H200-SXM-8.json baselines/H200-SXM-1.json; do
		[ -e "$B/$f" ] || { echo "missing $f"; false; }
	done
	size=$(du -sk "$B" | cut -f1)
	((size < 64 * 1024))
	# libslurm's soname is the Slurm version's (22.05: libslurm.so.38).
	local slurm_so
	slurm_so=$(readelf -d "$B/libexec/onramp-admit" | sed -n 's/.*(NEEDED).*\[\(libslurm\.so\.[0-9]*\)\]$/\1/p')
	[ -n "$slurm_so" ]
	jq -e --arg s "$slurm_so" '.libraries | index("libjansson.so.4") and index("libhwloc.so.15") and
		index("libcrypto.so.3") and index($s) and index("libstdc++.so.6")' \
		"$B/MANIFEST.json"
	# glibc stays the host's; the bundle's own is kept apart for older hosts.
	[ -z "$(find "$B/lib" -maxdepth 1 -regextype egrep -regex '.*/(libc|libm|libdl|libpthread|librt|ld-linux)[.-][^/]*')" ]
	jq -e '.glibc_fallback | index("libc.so.6") and index("ld-linux-x86-64.so.2") and
		index("libpthread.so.0")' "$B/MANIFEST.json"
}

@test "every bundled program and library resolves from the bundle or glibc only" {
	for f in "$B"/libexec/* "$B"/lib/*.so*; do
		while read -r soname path; do
			case "$soname" in
			libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
				libresolv.so.* | ld-linux*) continue ;;
			esac
			if [[ $path != "$B/lib/"* ]]; then
				echo "$f: $soname resolves to $path, not the bundle"
				false
			fi
		done < <(LD_LIBRARY_PATH=$B/lib ldd "$f" | awk '$2 == "=>" { print $1, $3 }')
	done
}

@test "on a host with an older glibc the programs run under the bundle's own" {
	# ONRAMP_BUNDLE_GLIBC=1 takes the path a glibc older than the bundle's takes.
	run env ONRAMP_BUNDLE_GLIBC=1 LD_DEBUG=libs "$B/bin/jq" -n '1 + 1'
	[ "$status" -eq 0 ]
	[[ $output == *"$B/lib/glibc/libc.so.6"* ]]
	run env ONRAMP_BUNDLE_GLIBC=1 "$B/bin/jq" -n '1 + 1'
	[ "$output" = 2 ]
	run env ONRAMP_BUNDLE_GLIBC=1 "$B/bin/onramp-admit" --help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: onramp-admit"* ]]
}

@test "run-checks without a GPU exits 3 and says NO_GPU with the reason" {
	[ "$(cat "$BATS_FILE_TMPDIR/run.rc")" = 3 ]
	run cat "$BATS_FILE_TMPDIR/run.err"
	[[ $output == *"run-checks: NO_GPU: no GPU: the real backend failed closed with NO_GPU ("* ]]
	[[ $output == *"report in $REPORT"* ]]
	jq -e '.summary | .result == "NO_GPU" and .exit_code == 3 and .gpus == 0 and
		(.not_matched | length == 0)' "$REPORT"
}

@test "the report has every check, each saying why it did not run" {
	jq -e '.inventory.code == "NO_GPU" and (.inventory.detail | test("no GPU"))' "$REPORT"
	for c in gpu_health mem_bw nccl_allreduce topology gpu_depth; do
		jq -e --arg c "$c" '.[$c] | .code == "NO_GPU" and (.detail | endswith("; " + $c + " not run"))' "$REPORT"
	done
	# Checks that need no GPU ran on the real backend.
	jq -e '.fabric.status == "PASS" and .fabric.data.source == "sysfs:/"' "$REPORT"
	jq -e '.versions_pinned_to_this_host.status == "PASS"' "$REPORT"
	jq -e '.versions_vs_h200_baseline.code == "VERSION_MISMATCH" and
		(.versions_vs_h200_baseline.detail | test("driver expected 570.124.06 found none"))' "$REPORT"
	jq -e '.gpu_libraries.found.nvml.found == false and .gpu_libraries.errors.driver != null' "$REPORT"
	jq -e '[.cases[] | select(.verdict != null) | .verdict.backend] | all(. == "real")' "$REPORT"
}

@test "every case is in the report with its command, exit code, code and whether it matched" {
	run jq -r '.cases[].name' "$REPORT"
	[ "$output" = "$(printf '%s\n' probe main mem_bw_vs_plain_copy prolog epilog no_gpu \
		driver_mismatch mem_bw_low nccl_bw_low timeout_mem_bw timeout_fabric)" ]
	jq -e '.cases | all(has("command") and has("exit_code") and has("code") and
		has("expected") and (.matched | type == "boolean") and (.why | length > 0))' "$REPORT"
	jq -e '.cases[] | select(.name == "prolog") | .matched and (.why | startswith("not run: "))' "$REPORT"
}

@test "the fail-closed cases give their codes on a machine without a GPU" {
	code_of() { jq -r --arg n "$1" '.cases[] | select(.name == $n) | "\(.code) \(.exit_code) \(.matched)"' "$REPORT"; }
	[ "$(code_of no_gpu)" = "NO_GPU 1 true" ]
	[ "$(code_of driver_mismatch)" = "VERSION_MISMATCH 1 true" ]
	[ "$(code_of mem_bw_low)" = "NO_GPU 1 true" ]
	[ "$(code_of timeout_fabric)" = "INCONCLUSIVE_FABRIC 2 true" ]
	# The overrun check was killed with its process group; nothing is left.
	jq -e '.cases[] | select(.name == "timeout_fabric") | (.process_group > 1) and
		(.left_in_process_group == []) and (.left_of_the_run == []) and
		(.verdict.detail | test("fabric did not finish within 1 s; process group [0-9]+ killed"))' "$REPORT"
}

@test "run-checks refuses bad arguments with exit 2" {
	run "$B/run-checks" --budget 5
	[ "$status" -eq 2 ]
	[[ $output == *"--budget: whole seconds >= 30"* ]]
	run "$B/run-checks" --cuda-libs /nonexistent
	[ "$status" -eq 2 ]
	[[ $output == *"--cuda-libs: '/nonexistent' is not a directory"* ]]
}

# The GPU path of run-checks, driven by a test double of NVML, the CUDA
# runtime and NCCL (testsuite/fake-gpu/fake_gpu.c: one fake H200, no
# device touched) given with --cuda-libs: what a one-GPU host must make of
# the report. The numbers are the double's; only the logic is under test.
@test "run-checks on a fake one-GPU host: every check runs, every case gives its code, exit 0" {
	fake=$BATS_FILE_TMPDIR/fake-gpu
	mkdir -p "$fake"
	cc -shared -fPIC -O1 -o "$fake/libnvidia-ml.so.1" "$ONRAMP_REPO/testsuite/fake-gpu/fake_gpu.c"
	for n in libcudart.so libcudart.so.13 libnccl.so.2; do cp "$fake/libnvidia-ml.so.1" "$fake/$n"; done
	r=$BATS_FILE_TMPDIR/fake-report.json
	run env -i PATH=/usr/bin:/bin HOME="$BATS_FILE_TMPDIR" SLURM_CONF=/nonexistent/slurm.conf \
		"$B/run-checks" --cuda-libs "$fake" --out "$r"
	echo "$output"
	jq -c '.cases[] | select(.matched | not) | {name, why}' "$r"
	[ "$status" -eq 0 ]
	jq -e '.summary | .result == "PASS" and .gpus == 1 and (.not_matched | length == 0)' "$r"
	jq -e '.sku == "H200-SXM-1" and .gpu_libraries.loaded.nvml == $f + "/libnvidia-ml.so.1" and
		.gpu_libraries.found.cudart.found_via == "--cuda-libs"' --arg f "$fake" "$r"
	jq -e '.inventory | .gpus[0].uuid == "GPU-fake0000-0000-0000-0000-000000000000" and
		.driver == "999.99.99-fake" and .cuda_runtime == "13.0" and .nccl == "2.28.9"' "$r"
	# One rank: SKIP with no number; mem_bw judged against the plain copy.
	jq -e '.nccl_allreduce | .status == "SKIP" and .value == null and .data.nranks == 1' "$r"
	# The double's events time exactly 4400 GB/s; its plain copies can only be slower.
	jq -e '.mem_bw.data.gpus[0] | (.gbs > 4399 and .gbs < 4401) and .fraction_of_plain_copy >= 1 and
		(.fraction_of_peak - 4400 / 4800 | fabs < 0.001)' "$r"
	code_of() { jq -r --arg n "$1" '.cases[] | select(.name == $n) | "\(.code) \(.exit_code) \(.matched)"' "$r"; }
	[ "$(code_of no_gpu)" = "NO_GPU 1 true" ]
	[ "$(code_of mem_bw_low)" = "MEM_BW_LOW 1 true" ]
	[ "$(code_of nccl_bw_low)" = "OK 0 true" ]
	[ "$(code_of timeout_mem_bw)" = "INCONCLUSIVE_MEM_BW 2 true" ]
	jq -e '.cases[] | select(.name == "no_gpu") | .verdict.detail |
		test("NVML lists 1 GPUs but the CUDA runtime sees none .*CUDA_VISIBLE_DEVICES=")' "$r"
	jq -e '[.cases[] | select(.name == "prolog" or .name == "epilog") | .matched] == [true, true]' "$r"
}

# gpu_depth through the real backend on the NVML double: a clean GPU
# passes; thermal slowdown is GPU_THROTTLED naming the GPU; a driver whose
# NVML lacks the power entry point leaves power unmeasured: inconclusive
# (INCONCLUSIVE_GPU_DEPTH, exit 2) naming GPU and part, never a pass.
@test "gpu_depth on the NVML double: passes, GPU_THROTTLED names the GPU, a missing NVML entry point is inconclusive" {
	local f=$BATS_FILE_TMPDIR/fake-depth
	mkdir -p "$f/nopower" "$f/base" "$f/state"
	cc -shared -fPIC -O1 -o "$f/libnvidia-ml.so.1" "$ONRAMP_REPO/testsuite/fake-gpu/fake_gpu.c"
	cc -shared -fPIC -O1 -DFAKE_NO_POWER -o "$f/nopower/libnvidia-ml.so.1" \
		"$ONRAMP_REPO/testsuite/fake-gpu/fake_gpu.c"
	for n in libcudart.so.13 libnccl.so.2; do cp "$f/libnvidia-ml.so.1" "$f/$n"; done
	jq '.versions = {} | .firmware = {} | .gpu_depth.load_s = 1' \
		"$ONRAMP_REPO/etc/baselines/H200-SXM-1.json" >"$f/base/H200-SXM-1.json"
	echo boot-depth >"$f/boot_id"
	printf '%s\n' GpuBackend=real Sku=H200-SXM-1 "BaselineDir=$f/base" "StateDir=$f/state" \
		"NodeStateDir=$f/state/node" "BootIdFile=$f/boot_id" "SysfsRoot=$f/root" \
		CheckRetries=0 >"$f/onramp.conf"
	depth() {
		env -i PATH=/usr/bin:/bin "$@" "$B/bin/onramp-admit" --conf "$f/onramp.conf" \
			--node n1 --json-only --checks gpu_depth
	}
	run depth LD_LIBRARY_PATH="$f"
	echo "$output"
	[ "$status" -eq 0 ]
	jq -e '.checks[0] | .status == "PASS" and .data.gpus[0].power_max_w == 412 and
		.data.gpus[0].throttle_reasons == "sw_power_cap" and .data.gpus[0].memory_mib == 143771 and
		(.data.gpus[0].h2d_gbs - 50 | fabs) < 0.1 and (.data.gpus[0].d2h_gbs - 50 | fabs) < 0.1' <<<"$output"
	run depth LD_LIBRARY_PATH="$f" FAKE_THROTTLE=0x40
	echo "$output"
	[ "$status" -eq 1 ]
	jq -e '.code == "GPU_THROTTLED" and
		(.detail | startswith("gpu_depth: GPU 0 (0000:fa:00.0) throttled under load: hw_thermal"))' <<<"$output"
	run depth LD_LIBRARY_PATH="$f/nopower:$f"
	echo "$output"
	[ "$status" -eq 2 ]
	jq -e '.checks[0].status == "ERROR" and .code == "INCONCLUSIVE_GPU_DEPTH" and
		(.detail | test("GPU 0 \\(0000:fa:00.0\\) power: NVML has no nvmlDeviceGetPowerUsage"))' <<<"$output"
}

# Run as root, run-checks loads no GPU library from a directory another
# account can change (LD_LIBRARY_PATH, site-packages), nor imports Python
# from the current directory.
@test "run-checks as root skips another account's library directory and the current directory's Python" {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	local planted=$BATS_FILE_TMPDIR/planted cwd=$BATS_FILE_TMPDIR/cwd r=$BATS_FILE_TMPDIR/planted-report.json
	mkdir -p "$planted" "$cwd/nvidia"
	chmod 0777 "$planted"
	cc -shared -fPIC -O1 -o "$planted/libnvidia-ml.so.1" "$ONRAMP_REPO/testsuite/fake-gpu/fake_gpu.c"
	# A module "nvidia" in the current directory that says it ran.
	printf 'open("%s/imported", "w").write("yes")\n__path__ = []\n' "$cwd" >"$cwd/nvidia/__init__.py"
	run bash -c "cd '$cwd' && env -i PATH=/usr/bin:/bin HOME='$BATS_FILE_TMPDIR' SLURM_CONF=/nonexistent/slurm.conf \
		LD_LIBRARY_PATH='$planted' '$B/run-checks' --out '$r'"
	echo "$output"
	[[ $output == *"run-checks: skipping $planted (LD_LIBRARY_PATH): another account can change it"* ]]
	[ ! -e "$cwd/imported" ]
	jq -e --arg p "$planted" '[.gpu_libraries.found[] | select(.file? // "" | startswith($p))] | length == 0' "$r"
	# The same directory made root's alone is used.
	chmod 0755 "$planted"
	run bash -c "cd '$cwd' && env -i PATH=/usr/bin:/bin HOME='$BATS_FILE_TMPDIR' SLURM_CONF=/nonexistent/slurm.conf \
		LD_LIBRARY_PATH='$planted' '$B/run-checks' --out '$r'"
	jq -e --arg p "$planted" '.gpu_libraries.found.nvml.file == $p + "/libnvidia-ml.so.1" and
		.gpu_libraries.found.nvml.found_via == "LD_LIBRARY_PATH"' "$r"
}
