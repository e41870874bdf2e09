# site-profile.bash: onramp-cluster's "--profile site", a cluster configured
# like a production site (sourced by onramp-cluster; never run directly).
# shellcheck shell=bash
#
# On top of the minimal profile:
#   - slurmctld runs as the unprivileged SlurmUser "slurm" (created if
#     missing); slurmd stays root, as at every site;
#   - accounting: slurmdbd with a private MariaDB (data directory and socket
#     in DIR/mariadb, TCP on 127.0.0.1 only), AccountingStorageEnforce=
#     associations,limits,qos,safe, the accounts of etc/onramp-accounting.sh
#     plus an account "users" for the test user;
#   - configless slurmds (slurmd --conf-server, SlurmctldParameters=
#     enable_configless): each node runs from the files slurmctld ships into
#     its SlurmdSpoolDir/conf-cache; onramp's settings reach it inside
#     plugstack.conf (onramp.conf(5), CONFIGLESS NODES);
#   - cgroup tracking and confinement (proctrack/cgroup, task/cgroup,
#     ConstrainDevices=yes; etc/cgroup.conf) when the kernel lets this host
#     create cgroups (site_cgroup_ok), else proctrack/linuxproc + task/none
#     and a note saying why.
# The production part of slurm.conf is etc/slurm.conf.site, appended as is;
# only host-specific values (ports, paths) are added here.
#
# The slurmds are started with "-f DIR/etc/slurm.conf --conf-server ...":
# --conf-server takes precedence (slurmd(8): configuration precedence), -f
# only names the cluster in the command line so that this harness, reboot-node
# and crash-node recognise their daemons as in the minimal profile.

SITE_SLURM_USER=slurm
SITE_DB_USER=mysql

site_paths() {
	DB_DIR=$DIR/mariadb
	DB_SOCKET=$DB_DIR/mysqld.sock
	DB_PID=$DB_DIR/mariadbd.pid
	DBD_CONF=$ETC/slurmdbd.conf
	DBD_RUN=$RUN/slurm
	DBD_PID=$DBD_RUN/slurmdbd.pid
	DB_PORT=${ONRAMP_DB_PORT:-${P_DB_PORT:-$((CTLD_PORT + 3))}}
	DBD_PORT=${ONRAMP_DBD_PORT:-${P_DBD_PORT:-$((CTLD_PORT + 2))}}
}

# Whether this host lets slurmd create job cgroups (v1 controllers or a v2
# hierarchy, writable by root here). Prints why not on failure.
site_cgroup_ok() {
	local c probe
	if [[ $(stat -fc %T /sys/fs/cgroup 2>/dev/null) == cgroup2fs ]]; then
		probe=/sys/fs/cgroup/onramp_probe_$$
		if ! mkdir "$probe" 2>/dev/null; then
			echo "cgroup v2 at /sys/fs/cgroup is not writable"
			return 1
		fi
		rmdir "$probe"
		return 0
	fi
	for c in freezer cpuset memory devices; do
		probe=/sys/fs/cgroup/$c/onramp_probe_$$
		if ! mkdir "$probe" 2>/dev/null; then
			echo "cgroup v1 controller $c is not mounted or not writable at /sys/fs/cgroup/$c"
			return 1
		fi
		rmdir "$probe"
	done
}

ensure_slurm_user() {
	if ! id "$SITE_SLURM_USER" >/dev/null 2>&1; then
		useradd --system --no-create-home -s /usr/sbin/nologin "$SITE_SLURM_USER" ||
			die "cannot create user $SITE_SLURM_USER"
	fi
	id "$SITE_DB_USER" >/dev/null 2>&1 || die "user $SITE_DB_USER is missing (install mariadb-server: contrib/install-deps)"
	local t
	for t in mariadb-install-db mariadbd mariadb slurmdbd sacctmgr runuser; do
		command -v "$t" >/dev/null || die "'$t' not found (the site profile needs slurmdbd, slurm-wlm-mysql-plugin and mariadb-server: contrib/install-deps)"
	done
	# slurmdbd must be at least slurmctld's version, and sacctmgr and sacct
	# speak its protocol: another Slurm (--slurm PREFIX) brings its own, which
	# use_slurm put first in PATH.
	if [[ -n ${P_SLURM:-} ]]; then
		for t in sbin/slurmdbd bin/sacctmgr bin/sacct lib/slurm/accounting_storage_mysql.so; do
			[[ -e $P_SLURM/$t ]] ||
				die "--profile site with --slurm $P_SLURM: no $t there (contrib/slurm-source --version X.Y.Z adds accounting to its build once libmariadb-dev is installed: contrib/install-deps)"
		done
	fi
}

# slurm.conf and the files beside it for the site profile (after write_config).
site_write_config() {
	local why key
	# The fragment's keys replace the minimal profile's (Slurm would take the
	# last value too, with an error line for each).
	for key in $(sed -n 's/^\([A-Za-z]*\)=.*/\1/p' "$REPO_ROOT/etc/slurm.conf.site"); do
		sed -i "/^$key=/d" "$CONF"
	done
	{
		echo "# --- site profile: $REPO_ROOT/etc/slurm.conf.site"
		grep -v '^[[:space:]]*#' "$REPO_ROOT/etc/slurm.conf.site" | grep -v '^[[:space:]]*$'
		echo "AccountingStorageHost=localhost"
		echo "AccountingStoragePort=$DBD_PORT"
		# For munge, the socket of the munged that signs slurmdbd traffic.
		echo "AccountingStoragePass=$MUNGE_SOCKET"
		# Job cgroups are slurm_<node>/uid_<uid>/job_<id> on the host (v1):
		# clusters side by side (other sessions) must not reuse job ids, or
		# one's job end removes the other's cgroup and kills its job.
		echo "FirstJobId=$((CTLD_PORT * 1000))"
	} >>"$CONF"
	if ! why=$(site_cgroup_ok); then
		sed -i -e 's|^ProctrackType=.*|ProctrackType=proctrack/linuxproc|' \
			-e 's|^TaskPlugin=.*|TaskPlugin=task/none|' \
			-e 's|^JobAcctGatherType=.*|JobAcctGatherType=jobacct_gather/none|' "$CONF"
		echo "# cgroups unavailable on this host ($why): linuxproc tracking, no confinement" >>"$CONF"
		note "site profile: $why; falling back to proctrack/linuxproc, task/none"
	fi
	# Configless nodes read plugstack.conf from their conf cache: an absolute
	# PlugStackConfig would send them to the controller's copy.
	sed -i '/^PlugStackConfig=/d' "$CONF"
	install -m 0644 "$REPO_ROOT/etc/cgroup.conf" "$ETC/cgroup.conf"
	# onramp's settings for the configless nodes, embedded in plugstack.conf.
	[[ -e $ETC/plugstack.conf ]] || : >"$ETC/plugstack.conf"
	SLURM_CONF=$CONF "$REPO_ROOT/contrib/onrampctl" ship-conf --no-reconfigure >/dev/null ||
		die "onrampctl ship-conf failed"
	chmod 0644 "$ETC/plugstack.conf"
	{
		echo "# Generated by onramp-cluster (site profile)."
		echo "DbdHost=localhost"
		echo "DbdPort=$DBD_PORT"
		echo "SlurmUser=$SITE_SLURM_USER"
		echo "AuthType=auth/munge"
		echo "AuthInfo=socket=$MUNGE_SOCKET"
		echo "StorageType=accounting_storage/mysql"
		echo "StorageHost=127.0.0.1"
		echo "StoragePort=$DB_PORT"
		echo "StorageUser=slurm"
		echo "StoragePass=$(cat "$DB_DIR/slurm.pass")"
		echo "StorageLoc=slurm_acct_db"
		# The daemons' plugins (a --slurm prefix's), whatever slurmdbd was
		# compiled for.
		echo "PluginDir=$(system_plugin_dir)"
		echo "LogFile=$LOG/slurmdbd.log"
		echo "PidFile=$DBD_PID"
		echo "DebugLevel=info"
	} >"$DBD_CONF.tmp"
	chown "$SITE_SLURM_USER:" "$DBD_CONF.tmp"
	chmod 0600 "$DBD_CONF.tmp"
	mv -f "$DBD_CONF.tmp" "$DBD_CONF"
}

# Directories the unprivileged daemons write (after make_dirs).
site_make_dirs() {
	local f
	mkdir -p "$DB_DIR" "$DB_DIR/data" "$DBD_RUN"
	chown "$SITE_DB_USER:" "$DB_DIR" "$DB_DIR/data"
	chmod 0750 "$DB_DIR"
	chown "$SITE_SLURM_USER:" "$DBD_RUN"
	chown -R "$SITE_SLURM_USER:" "$DIR/var/state"
	for f in "$LOG/slurmctld.log" "$LOG/slurmdbd.log" "$CTLD_PID"; do
		[[ -e $f ]] || : >"$f"
		chown "$SITE_SLURM_USER:" "$f"
	done
	if [[ ! -s $DB_DIR/slurm.pass ]]; then
		head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$DB_DIR/slurm.pass"
		chmod 0600 "$DB_DIR/slurm.pass"
	fi
	# Admission jobs run as root or SlurmUser on the nodes: NodeStateDir is
	# theirs (a package creates /var/lib/onramp/node so on a real node).
	for f in "$DIR"/nodes/node*; do
		mkdir -p "$f/onramp"
		chown "$SITE_SLURM_USER:" "$f/onramp"
	done
}

# site_pids mariadbd|slurmdbd: live daemons of this cluster directory.
site_pids() {
	local which=$1 p pid cmd
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		cmd=$(cmdline "$pid")
		case $which:${cmd%% *} in
		mariadbd:*mariadbd) [[ $cmd == *" --datadir=$DB_DIR/data "* ]] && pid_alive "$pid" && echo "$pid" ;;
		slurmdbd:*slurmdbd) tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF" && pid_alive "$pid" && echo "$pid" ;;
		esac
	done
}

db_sql() {
	mariadb --no-defaults -S "$DB_SOCKET" -u root "$@"
}

site_start_mariadb() {
	local i
	if [[ ! -d $DB_DIR/data/mysql ]]; then
		mariadb-install-db --no-defaults --user="$SITE_DB_USER" --datadir="$DB_DIR/data" \
			--auth-root-authentication-method=socket --skip-test-db >>"$LOG/mariadb-install.log" 2>&1 ||
			die "mariadb-install-db failed; see $LOG/mariadb-install.log"
	fi
	: >>"$LOG/mariadb.log"
	chown "$SITE_DB_USER:" "$LOG/mariadb.log"
	setsid mariadbd --no-defaults --user="$SITE_DB_USER" --datadir="$DB_DIR/data" \
		--socket="$DB_SOCKET" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
		--pid-file="$DB_PID" --log-error="$LOG/mariadb.log" \
		--innodb-buffer-pool-size=64M --innodb-flush-log-at-trx-commit=2 \
		--innodb-lock-wait-timeout=900 </dev/null >>"$LOG/mariadb.out" 2>&1 &
	for ((i = 0; i < 150; i++)); do
		if db_sql -e 'SELECT 1' >/dev/null 2>&1; then
			break
		fi
		((i < 149)) || die "MariaDB does not answer on $DB_SOCKET; $LOG/mariadb.log says:$(echo; tail -n 10 "$LOG/mariadb.log")"
		sleep 0.2
	done
	local pw
	pw=$(cat "$DB_DIR/slurm.pass")
	db_sql <<EOF || die "cannot create MariaDB user slurm"
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pw';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
}

site_start_slurmdbd() {
	local i
	SLURM_CONF=$CONF setsid slurmdbd -D </dev/null >>"$LOG/slurmdbd.out" 2>&1 &
	for ((i = 0; i < 150; i++)); do
		if SLURM_CONF=$CONF timeout 10 sacctmgr -n show cluster >/dev/null 2>&1; then
			return 0
		fi
		if ((i > 10)) && [[ -z $(site_pids slurmdbd) ]]; then
			die "slurmdbd exited during startup; $LOG/slurmdbd.log says:$(echo; tail -n 20 "$LOG/slurmdbd.log")"
		fi
		sleep 0.2
	done
	die "slurmdbd does not answer; $LOG/slurmdbd.log says:$(echo; tail -n 20 "$LOG/slurmdbd.log")"
}

# The associations: the cluster, onramp's (etc/onramp-accounting.sh, as a site
# runs it) and the test user's.
site_accounts() {
	local -a sam=(env SLURM_CONF="$CONF" sacctmgr -i)
	if [[ -z $(SLURM_CONF=$CONF sacctmgr -nP show cluster onramp-test format=cluster) ]]; then
		"${sam[@]}" add cluster onramp-test >/dev/null || die "sacctmgr add cluster failed"
	fi
	SLURM_CONF=$CONF "$REPO_ROOT/etc/onramp-accounting.sh" --cluster onramp-test \
		--slurm-user "$SITE_SLURM_USER" >>"$LOG/accounting.log" 2>&1 ||
		die "etc/onramp-accounting.sh failed; see $LOG/accounting.log"
	if [[ -z $(SLURM_CONF=$CONF sacctmgr -nP show assoc where user="$TEST_USER" account=users format=user) ]]; then
		"${sam[@]}" add account users cluster=onramp-test description="test users" organization=test >/dev/null 2>&1 || true
		"${sam[@]}" add user "$TEST_USER" account=users cluster=onramp-test >/dev/null ||
			die "sacctmgr add user $TEST_USER failed"
	fi
}

# After munged, before slurmctld.
site_start() {
	local running
	running=$(site_pids mariadbd; site_pids slurmdbd)
	[[ -z $running ]] || die "accounting daemons of $DIR are already running (pids: $(echo $running)); use '$PROG stop'"
	site_start_mariadb
	site_start_slurmdbd
	site_accounts
}

# After slurmctld is stopped.
site_stop() {
	local -a dbd db
	mapfile -t dbd < <(site_pids slurmdbd)
	terminate slurmdbd "${dbd[@]}"
	mapfile -t db < <(site_pids mariadbd)
	terminate mariadbd "${db[@]}"
}

site_status() {
	local pid
	for pid in $(site_pids slurmdbd); do
		echo "slurmdbd   pid $pid"
	done
	for pid in $(site_pids mariadbd); do
		echo "mariadbd   pid $pid"
	done
}
