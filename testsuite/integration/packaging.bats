#!/usr/bin/env bats
# Packaging as sites install onramp (no cluster needed): "make install
# DESTDIR=" puts everything at FHS paths; the Debian packages build with
# dpkg-buildpackage in a scratch copy of the tree and hold the plugins in
# Slurm's plugin directory, the tools, man pages, rules, dashboard and
# systemd units; lintian finds no error; the RPM spec parses and makes a
# source package.
#
# To keep the suite short the scratch copy reuses the tree's compiled
# objects (timestamps kept, so make only links) when the tree is built
# against the installed Slurm, which the packages are built for; set
# ONRAMP_PACKAGE_FROM_SCRATCH=1 to compile everything again (always so
# when the tree is built for another Slurm: contrib/build --slurm).

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	export SCRATCH=$BATS_FILE_TMPDIR/onramp SLURM_SRC
	SLURM_SRC=$("$ONRAMP_REPO/contrib/slurm-source" 2>/dev/null)
	mkdir -p "$SCRATCH"
	# Tracked and new (not ignored) files, as a commit would have them.
	sources | (cd "$ONRAMP_REPO" && tar cf - --null -T -) | tar xf - -C "$SCRATCH"
	if [[ -z ${ONRAMP_PACKAGE_FROM_SCRATCH:-} && -f $ONRAMP_REPO/config.h ]] &&
		[[ -z $(sed -n 's/^SLURM_PREFIX = //p' "$ONRAMP_REPO/Makefile") ]]; then
		(cd "$ONRAMP_REPO" && find . -path ./stage -prune -o \( -name '*.o' -o -name '*.lo' \
			-o -path '*/.deps/*' -o -name .dirstamp -o -name config.h \) -print0 |
			tar cf - --null -T -) | tar xf - -C "$SCRATCH"
	fi
}

# sources: the tree's files (NUL-separated, relative), without the deleted.
sources() {
	(cd "$ONRAMP_REPO" && git ls-files -z -co --exclude-standard |
		while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done)
}

# exporter_unit_is_unprivileged UNIT SYSUSERS: the exporter's unit runs as
# the unprivileged user that the shipped sysusers.d file creates, with
# systemd's hardening; systemd-analyze rates its exposure (the unit that
# ran as root: 8.9 of 10) where systemd is installed.
exporter_unit_is_unprivileged() {
	local unit=$1 sysusers=$2 root=$BATS_TEST_TMPDIR/sysroot key
	for key in User=onramp Group=onramp NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes \
		PrivateTmp=yes PrivateDevices=yes CapabilityBoundingSet= RestrictSUIDSGID=yes; do
		grep -qx "$key" "$unit" || { echo "$unit: no $key" >&2; false; }
	done
	run grep -Ec '^(User|Group)=|^AmbientCapabilities=.|^ReadWritePaths=' "$unit"
	[ "$output" = 2 ]
	if command -v systemd-sysusers >/dev/null; then
		mkdir -p "$root/etc"
		systemd-sysusers --root="$root" "$sysusers"
		run awk -F: '$1 == "onramp" { print $3 ":" $7 }' "$root/etc/passwd"
		echo "onramp in passwd: $output"
		[[ $output =~ ^[1-9][0-9]*:.*nologin$ ]]
	fi
	if command -v systemd-analyze >/dev/null; then
		run systemd-analyze security --offline=yes --threshold=20 "$unit"
		echo "${output##*$'\n'}"
		[ "$status" -eq 0 ]
	fi
}

@test "make install DESTDIR= installs plugins, tools, onrampctl, man pages, rules, dashboard and units" {
	local d=$BATS_FILE_TMPDIR/destdir prefix plugindir unitdir f
	prefix=$(sed -n 's/^prefix = //p' "$ONRAMP_REPO/Makefile")
	plugindir=$(sed -n 's/^slurm_plugindir = //p' "$ONRAMP_REPO/Makefile")
	unitdir=$(sed -n 's/^systemdsystemunitdir = //p' "$ONRAMP_REPO/Makefile")
	run make -s -C "$ONRAMP_REPO" install DESTDIR="$d"
	echo "$output"
	[ "$status" -eq 0 ]
	# topology/onramp exists up to Slurm 23.11 (README, "Slurm versions").
	local v plugins=("$plugindir"/{job_submit,node_features,spank}_onramp.so)
	v=$(sed -n 's/^SLURM_SRC_VERSION = //p' "$ONRAMP_REPO/Makefile" | awk -F. '{printf "%d%02d", $1, $2}')
	[ -n "$v" ]
	((v >= 2405)) || plugins+=("$plugindir/topology_onramp.so")
	for f in "${plugins[@]}" \
		"$prefix"/sbin/{onrampctl,onramp-admit,onramp-prolog,onramp-epilog,onramp-metrics,onramp-rewire,onramp-migrate,onramp-config} \
		"$prefix"/bin/{onramp-ckpt,onramp-trainer} \
		"$prefix"/libexec/onramp/{onramp-lib.sh,onramp-reboot,onramp-trigger,onramp-admission-job,onramp-campaign} \
		"$prefix"/libexec/onramp/onrampctl-{rewire,migrate,expand} \
		"$prefix"/share/onramp/prometheus/onramp-rules{,.test}.yml \
		"$prefix"/share/onramp/grafana/onramp-dashboard.json \
		"$prefix"/share/onramp/baselines/H200-SXM-8.json \
		"$prefix"/share/doc/onramp/examples/onramp.conf.example \
		"$unitdir"/onramp-metrics{,-node}.service "$unitdir"/onramp-metrics-node.timer; do
		[[ -e $d$f ]] || { echo "not installed: $f" >&2; false; }
	done
	# Every manual page, in its section.
	for f in "$ONRAMP_REPO"/doc/man/*.[1-8]; do
		[[ -e $d$prefix/share/man/man${f##*.}/${f##*/} ]] ||
			{ echo "man page not installed: ${f##*/}" >&2; false; }
	done
	grep -qx "ExecStart=$prefix/sbin/onramp-metrics serve \$ONRAMP_METRICS_ARGS" \
		"$d$unitdir/onramp-metrics.service"
	exporter_unit_is_unprivileged "$d$unitdir/onramp-metrics.service" \
		"$d$prefix/lib/sysusers.d/onramp.conf"
	# The example configuration is valid, also with every key uncommented.
	"$d$prefix/sbin/onramp-config" --conf "$d$prefix/share/doc/onramp/examples/onramp.conf.example" --check
	# SharedStateDir must exist (root's, writable by no one else): here, one
	# made for the test in place of the example's shared storage.
	mkdir -m 0755 "$BATS_TEST_TMPDIR/shared"
	sed -e 's/^#\([A-Z]\)/\1/' -e "s|^SharedStateDir=.*|SharedStateDir=$BATS_TEST_TMPDIR/shared|" \
		"$d$prefix/share/doc/onramp/examples/onramp.conf.example" >"$BATS_TEST_TMPDIR/all.conf"
	grep -q "^SharedStateDir=$BATS_TEST_TMPDIR/shared$" "$BATS_TEST_TMPDIR/all.conf"
	"$d$prefix/sbin/onramp-config" --conf "$BATS_TEST_TMPDIR/all.conf" --check
}

@test "dpkg-buildpackage builds the Debian packages: plugins in Slurm's plugin dir, tools, man pages, rules, units" {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
		skip "dpkg-dev/debhelper not installed (contrib/install-deps)"
	run bash -c "cd '$SCRATCH' && ONRAMP_SLURM_SOURCE='$SLURM_SRC' DEB_BUILD_OPTIONS='nocheck parallel=$(nproc)' \
		dpkg-buildpackage -b -uc -us 2>&1"
	echo "$output" | tail -40
	[ "$status" -eq 0 ]
	local arch ver slurmver plugins tools deb
	arch=$(dpkg --print-architecture)
	ver=$(dpkg-parsechangelog -l "$SCRATCH/debian/changelog" -S Version)
	slurmver=$("$ONRAMP_REPO/contrib/slurm-source" --print-version)
	plugins=$BATS_FILE_TMPDIR/slurm-onramp-plugins_${ver}_$arch.deb
	tools=$BATS_FILE_TMPDIR/onramp_${ver}_$arch.deb
	for deb in "$plugins" "$tools" "$BATS_FILE_TMPDIR"/libonramp-ckpt{0,-dev}_"${ver}_$arch.deb"; do
		[ -f "$deb" ]
	done
	# The plugins land where Debian's Slurm loads them from, and require
	# exactly the Slurm release they were built against.
	run dpkg-deb -c "$plugins"
	for p in job_submit node_features topology spank; do
		[[ $output == *" ./usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm/${p}_onramp.so"* ]]
	done
	run dpkg-deb -f "$plugins" Depends
	echo "$output"
	[[ $output == *"slurm-wlm-basic-plugins (>= $slurmver), slurm-wlm-basic-plugins (<< $slurmver.~)"* ]]
	# The tools, helpers, man pages, rules, dashboard and units.
	run dpkg-deb -c "$tools"
	for f in usr/sbin/onrampctl usr/sbin/onramp-metrics usr/sbin/onramp-admit usr/sbin/onramp-rewire \
		usr/libexec/onramp/onramp-lib.sh usr/libexec/onramp/onrampctl-migrate \
		usr/share/man/man8/onramp-metrics.8.gz usr/share/man/man8/onramp-rewire.8.gz \
		usr/share/man/man8/onrampctl.8.gz usr/share/man/man5/onramp.conf.5.gz \
		usr/share/man/man8/onramp-prolog.8.gz usr/share/man/man8/onramp-epilog.8.gz \
		usr/share/onramp/prometheus/onramp-rules.yml usr/share/onramp/grafana/onramp-dashboard.json \
		usr/share/doc/onramp/examples/onramp.conf.example \
		lib/systemd/system/onramp-metrics.service lib/systemd/system/onramp-metrics-node.timer \
		usr/lib/sysusers.d/onramp.conf; do
		[[ $output == *" ./$f"* ]] || { echo "not in the onramp package: $f" >&2; false; }
	done
	[[ $output != *".la"$'\n'* ]]
	# What was packaged works from where it was installed: the exporter
	# unit runs /usr/sbin, and the shipped rule tests pass.
	local x=$BATS_TEST_TMPDIR/x
	dpkg-deb -x "$tools" "$x"
	grep -q '^ExecStart=/usr/sbin/onramp-metrics serve' "$x/lib/systemd/system/onramp-metrics.service"
	# ... as its own user, which the package creates when installed.
	exporter_unit_is_unprivileged "$x/lib/systemd/system/onramp-metrics.service" \
		"$x/usr/lib/sysusers.d/onramp.conf"
	dpkg-deb -e "$tools" "$BATS_TEST_TMPDIR/control"
	grep -q 'systemd-sysusers.*onramp\.conf' "$BATS_TEST_TMPDIR/control/postinst"
	"$x/usr/sbin/onramp-metrics" --help | grep -q "onramp-metrics serve"
	if command -v promtool >/dev/null; then
		promtool test rules "$x/usr/share/onramp/prometheus/onramp-rules.test.yml"
	fi
	# lintian: no errors (warnings and pedantic tags are reported, not fatal).
	if command -v lintian >/dev/null; then
		run lintian --fail-on error "$BATS_FILE_TMPDIR/onramp_${ver}_$arch.changes"
		echo "$output"
		[ "$status" -eq 0 ]
	fi
}

@test "the RPM spec parses and makes a source package (rpmspec, rpmbuild -bs)" {
	command -v rpmspec >/dev/null && command -v rpmbuild >/dev/null ||
		skip "rpm not installed (contrib/install-deps)"
	local top=$BATS_TEST_TMPDIR/rpm ver
	ver=$(sed -n 's/^Version: *//p' "$SCRATCH/contrib/onramp.spec")
	mkdir -p "$top"
	run rpmspec -P --define "slurm_source $SLURM_SRC" "$SCRATCH/contrib/onramp.spec"
	[ "$status" -eq 0 ]
	# The plugins require the Slurm release of the source tree they use.
	[[ $output == *"Requires:       slurm = $("$ONRAMP_REPO/contrib/slurm-source" --print-version)"* ]]
	[[ $output == *"--with-slurm-source=$SLURM_SRC"* ]]
	# The exporter's user exists before the unit can start.
	[[ $output == *"useradd -r -g onramp"* && $output == *"/lib/sysusers.d/onramp.conf"* ]]
	# The same version as configure.ac.
	grep -q "AC_INIT(\[onramp\], \[$ver\]" "$SCRATCH/configure.ac"
	sources | (cd "$ONRAMP_REPO" && tar czf "$top/onramp-$ver.tar.gz" --null -T - \
		--transform "s|^|onramp-$ver/|")
	run rpmbuild -bs --nodeps --define "_topdir $top" --define "_sourcedir $top" \
		--define "slurm_source $SLURM_SRC" "$SCRATCH/contrib/onramp.spec"
	echo "$output"
	[ "$status" -eq 0 ]
	ls "$top"/SRPMS/onramp-"$ver"-1*.src.rpm
}
