#!/bin/bash
# onramp-accounting.sh: the accounting onramp needs at a site with
# AccountingStorageEnforce=associations[,limits,qos,safe].
#
# onramp's admission jobs are submitted by root ("onrampctl admit") and by
# SlurmUser (the permanent triggers slurmctld runs as SlurmUser) under the
# account AdmissionAccount of onramp.conf (default "onramp"), inside each
# node's admission reservation (Users=root,SlurmUser). So the account needs an
# association for exactly those two users, and no one else: a user job that
# names the account, or the reservation, is refused by Slurm itself.
#
# usage: onramp-accounting.sh [--cluster NAME] [--slurm-user USER]
#                             [--account NAME] [--dry-run]
# --cluster and --slurm-user default to slurmctld's ClusterName and SlurmUser
# (read with onramp-config --slurm --json) when it answers; SlurmUser falls
# back to "slurm". Idempotent: what exists already is left as is. --dry-run
# prints the sacctmgr commands instead of running them. The test harness runs this file
# (onramp-cluster --profile site), so the commands below are the tested ones.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# onramp's tools as onrampctl finds them (onramp-lib.sh's onramp_tool): in
# the checkout this file is in (the test harness runs it there), else
# installed.
for libexec in "$here/../contrib/libexec" /usr/libexec/onramp /usr/local/libexec/onramp; do
	[[ -f $libexec/onramp-lib.sh ]] && break
done
# shellcheck source=../contrib/libexec/onramp-lib.sh
[[ ! -f $libexec/onramp-lib.sh ]] || . "$libexec/onramp-lib.sh"

cluster=
slurm_user=
account=onramp
dry=false
while (($#)); do
	case $1 in
	--cluster) cluster=${2:?--cluster needs a name}; shift 2 ;;
	--slurm-user) slurm_user=${2:?--slurm-user needs a user}; shift 2 ;;
	--account) account=${2:?--account needs a name}; shift 2 ;;
	--dry-run) dry=true; shift ;;
	*) echo "onramp-accounting.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
# Defaults from slurmctld when it answers (onramp-config --slurm: libslurm,
# asked once), the options when it does not yet.
if [[ -z $cluster || -z $slurm_user ]]; then
	config=$("$(onramp_tool onramp-config 2>/dev/null)" --slurm --json 2>/dev/null) || config='{}'
	[[ -n $cluster ]] || cluster=$(jq -r '.cluster_name // empty' <<<"$config")
	[[ -n $slurm_user ]] || slurm_user=$(jq -r '.slurm_user.name // empty' <<<"$config")
fi
[[ -n $cluster ]] || { echo "onramp-accounting.sh: no cluster name (give --cluster)" >&2; exit 2; }
[[ -n $slurm_user ]] || slurm_user=slurm

run() {
	if $dry; then
		echo "$*"
	else
		"$@"
	fi
}
exists() { [[ -n $(sacctmgr -nP "$@" 2>/dev/null) ]]; }

exists show account "$account" format=account ||
	run sacctmgr -i add account "$account" cluster="$cluster" \
		description="onramp admission jobs" organization=onramp
for user in root "$slurm_user"; do
	exists show assoc where cluster="$cluster" account="$account" user="$user" format=user ||
		run sacctmgr -i add user "$user" account="$account" cluster="$cluster"
done
