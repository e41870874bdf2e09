#!/usr/bin/env bats
# The site's own admission checks on the live cluster: a directory of
# programs (AdmissionSiteChecks) and an LBNL NHC configuration
# (AdmissionNhc, run by testsuite/fake-nhc/nhc: a TEST DOUBLE of NHC's
# driver, which Debian does not package) each gate admission: failing,
# the node is drained with SITE_<NAME> / NHC and the check's own message;
# passing, it is admitted.

load helpers
load admission_helpers
bats_require_minimum_version 1.5.0

setup() {
	require_cluster
	CONF=$ONRAMP_CLUSTER_DIR/etc/onramp.conf
	# Root's, not group/other-writable, readable by SlurmUser's triggers.
	SITE=$ONRAMP_CLUSTER_DIR/site-checks
	rm -rf "$SITE"
	mkdir -m 0755 "$SITE" "$SITE/checks"
	cp -p "$CONF" "$BATS_TEST_TMPDIR/onramp.conf.orig"
}

teardown() {
	if [[ -f $BATS_TEST_TMPDIR/onramp.conf.orig ]]; then
		mv "$BATS_TEST_TMPDIR/onramp.conf.orig" "$CONF"
	fi
	rm -rf "$SITE"
}

# conf_add LINE...: append settings to the cluster's onramp.conf (read by
# every admission job as it starts).
conf_add() {
	{ cat "$CONF" && printf '%s\n' "$@"; } >"$CONF.new"
	mv "$CONF.new" "$CONF"
}

# verdict_check NODE CHECK: "STATUS CODE" of CHECK in NODE's record.
verdict_check() {
	jq -r --arg c "$2" '.verdict.checks[] | select(.name == $c) | "\(.status) \(.code)"' \
		"$ONRAMP_CLUSTER_DIR/nodes/$1/onramp/admission.json"
}

@test "a site check directory gates admission: a failing program drains with SITE_<NAME> and its first line; passing, the node is admitted" {
	local node=node6
	cat >"$SITE/checks/10-ok" <<'EOF'
#!/bin/sh
echo "ok on $ONRAMP_NODE"
EOF
	cat >"$SITE/checks/20-scratch" <<EOF
#!/bin/sh
if [ -e "$SITE/unmounted.\$ONRAMP_NODE" ]; then
	echo "/scratch not mounted on \$ONRAMP_NODE"
	echo "second line, not the reason"
	exit 1
fi
EOF
	echo "not run" >"$SITE/checks/README"
	chmod 0755 "$SITE/checks/10-ok" "$SITE/checks/20-scratch"
	conf_add "AdmissionSiteChecks=$SITE/checks"
	touch "$SITE/unmounted.$node"
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	reboot_nodes "$node"
	wait_for 120 "$node drained" drained_with "$node" "^onramp:SITE_20_SCRATCH: /scratch not mounted on $node \(exit 1\)"
	[ "$(record_field "$node" status)" = FAIL ]
	[ "$(verdict_check "$node" site_10-ok)" = "PASS OK" ]
	[ "$(verdict_check "$node" site_20-scratch)" = "FAIL SITE_20_SCRATCH" ]
	# Fixed: admitted again, every site check passed.
	rm -f "$SITE/unmounted.$node"
	restore_nodes "$node"
	[ "$(record_field "$node" status)" = PASS ]
	[ "$(verdict_check "$node" site_20-scratch)" = "PASS OK" ]
	run -0 jq -e '[.verdict.checks[].name] | index("README") == null' \
		"$ONRAMP_CLUSTER_DIR/nodes/$node/onramp/admission.json"
}

@test "a site check another account can change is refused: the node is not drained" {
	local node=node7
	printf '#!/bin/sh\nexit 0\n' >"$SITE/checks/10-writable"
	chmod 0777 "$SITE/checks/10-writable"
	conf_add "AdmissionSiteChecks=$SITE/checks"
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	run "$ONRAMPCTL" admit "$node"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == *"onramp:BAD_INPUT: AdmissionSiteChecks"* ]]
	# The verdict names the file in full.
	local v
	v=$(ls -t "$ONRAMP_CLUSTER_DIR/nodes/$node/onramp/verdicts"/verdict.*.json | head -1)
	[[ $(jq -r .detail "$v") == *"site check $SITE/checks/10-writable is writable by group or others (mode 0777): refused"* ]]
	[[ $(node_state "$node") != *DRAIN* ]]
	[ "$(record_field "$node" status)" = PASS ] # the earlier admission's, untouched
	# Fixed: admitted.
	chmod 0755 "$SITE/checks/10-writable"
	restore_nodes "$node"
}

@test "an NHC configuration gates admission: NHC's failure drains with NHC and its message; healthy, the node is admitted" {
	local node=node5
	printf '# the site'\''s NHC checks\n* || check_file_test -d /\n* || check_file_test -e %s\n' \
		"$SITE/gpfs-mounted" >"$SITE/nhc.conf"
	chmod 0644 "$SITE/nhc.conf"
	conf_add "AdmissionNhc=$SITE/nhc.conf" "AdmissionNhcProgram=$ONRAMP_REPO/testsuite/fake-nhc/nhc"
	wait_for 60 "$node idle and admitted" admitted_idle "$node"
	reboot_nodes "$node"
	wait_for 120 "$node drained" drained_with "$node" "^onramp:NHC: check_file_test: "
	[ "$(record_field "$node" status)" = FAIL ]
	[ "$(record_field "$node" detail)" = "check_file_test:  $SITE/gpfs-mounted does not exist" ]
	[ "$(verdict_check "$node" nhc)" = "FAIL NHC" ]
	touch "$SITE/gpfs-mounted"
	restore_nodes "$node"
	[ "$(record_field "$node" status)" = PASS ]
	[ "$(verdict_check "$node" nhc)" = "PASS OK" ]
}
