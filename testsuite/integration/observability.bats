#!/usr/bin/env bats
# Observability: onramp-metrics' node textfiles and controller exporter,
# promtool on the output and the rules, a real Prometheus server scraping
# the exporter during an admission, and bad inputs that must not take the
# exporter down.

bats_require_minimum_version 1.5.0
load helpers
load admission_helpers

METRICS=$ONRAMP_REPO/contrib/tools/onramp-metrics
RULES=$ONRAMP_REPO/contrib/prometheus
TRAINER=$ONRAMP_REPO/contrib/examples/onramp-trainer
# Loopback ports of the exporters and Prometheus: a free range picked per
# file (another exporter on the machine must not fail the suite).
PORT_BASE=$(free_port_base 100)

setup() {
	require_cluster
}

teardown() {
	# Whatever a test started in the background ends with it.
	if [[ -f $BATS_TEST_TMPDIR/pids ]]; then
		# shellcheck disable=SC2046
		kill $(cat "$BATS_TEST_TMPDIR/pids") 2>/dev/null || true
	fi
	# The migration test's job, and onramp.conf as it was.
	if [[ -f $BATS_TEST_TMPDIR/job ]]; then
		scancel "$(cat "$BATS_TEST_TMPDIR/job")" 2>/dev/null || true
	fi
	if [[ -f $BATS_TEST_TMPDIR/onramp.conf.orig ]]; then
		put_back "$BATS_TEST_TMPDIR/onramp.conf.orig" "$ONRAMP_CLUSTER_DIR/etc/onramp.conf"
		scontrol reconfigure >/dev/null 2>&1 || true
	fi
}

# node_textfiles DIR: every node's textfile, as a node_exporter site would
# write them (e.g. from cron or the epilog).
node_textfiles() {
	local n
	mkdir -p "$1"
	for n in $(expand_hostlist "node[1-$ONRAMP_CLUSTER_NODES]"); do
		"$METRICS" node --node "$n" --textfile-dir "$1"
	done
}

@test "node and controller metrics follow Prometheus conventions (promtool check metrics)" {
	run "$METRICS" node --node node1
	[ "$status" -eq 0 ]
	[[ $output == *'onramp_node_admitted{node="node1"} 1'* ]]
	[[ $output == *'onramp_check_value{node="node1",check="nccl_allreduce",unit="bytes_per_second"}'* ]]
	echo "$output" | promtool check metrics
	run "$METRICS" controller
	[ "$status" -eq 0 ]
	# Every node is counted in exactly one state.
	[ "$(echo "$output" | sed -n 's/^onramp_nodes{state="[a-z_]*"} //p' | paste -sd+ - | bc)" -eq "$ONRAMP_CLUSTER_NODES" ]
	echo "$output" | promtool check metrics
}

@test "the alert rules load and their unit tests pass (promtool check/test rules)" {
	run promtool check rules "$RULES/onramp-rules.yml"
	[ "$status" -eq 0 ]
	run promtool test rules "$RULES/onramp-rules.test.yml"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *SUCCESS* ]]
}

# start_prometheus DIR: onramp-metrics serve (with the nodes' textfiles from
# DIR/text) and a Prometheus server on loopback scraping it every second,
# with onramp's rules loaded; both end with the test. Sets PROM_PORT.
start_prometheus() {
	local dir=$1 port=$((PORT_BASE + 10))
	PROM_PORT=$((PORT_BASE + 90))
	mkdir -p "$dir/text" "$dir/data"
	node_textfiles "$dir/text"
	# (fd 3 closed: background daemons must not hold bats' output open)
	"$METRICS" serve --listen "127.0.0.1:$port" --textfile-dir "$dir/text" 2>"$dir/exporter.log" 3>&- &
	echo $! >>"$BATS_TEST_TMPDIR/pids"
	cat >"$dir/prometheus.yml" <<EOC
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$RULES/onramp-rules.yml"]
scrape_configs:
  - job_name: onramp
    static_configs: [{targets: ["127.0.0.1:$port"]}]
EOC
	prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
		--web.listen-address="127.0.0.1:$PROM_PORT" >"$dir/prometheus.log" 2>&1 3>&- &
	echo $! >>"$BATS_TEST_TMPDIR/pids"
	wait_for 30 "Prometheus to scrape the exporter" \
		present "up{job=\"onramp\"} == 1" || {
		tail "$dir/exporter.log" "$dir/prometheus.log" >&2
		false
	}
}

# Prometheus' HTTP API: q QUERY (the JSON answer), value QUERY (the first
# sample's value), has QUERY VALUE, present QUERY.
q() { curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1"; }
value() { q "$1" | sed -n 's/.*"value":\[[0-9.]*,"\([^"]*\)"\].*/\1/p' | head -1; }
has() { q "$1" | grep -q "\"value\":\[[0-9.]*,\"$2\"\]"; }
present() { q "$1" | grep -q '"result":\[{'; }

@test "a real Prometheus server scrapes the exporter and sees an admission failure" {
	start_prometheus "$BATS_TEST_TMPDIR/prom"
	local admitted
	admitted=$("$METRICS" controller | sed -n 's/^onramp_nodes{state="admitted"} //p')
	wait_for 60 "the admitted nodes in Prometheus" has 'onramp_nodes{state="admitted"}' "$admitted"
	# An admission that fails on node6 (simulated low NCCL bandwidth).
	set_profile node6 low-nccl
	run "$ONRAMPCTL" admit node6
	[ "$status" -eq 1 ]
	node_textfiles "$BATS_TEST_TMPDIR/prom/text"
	wait_for 30 "the failure in Prometheus" present 'onramp_nodes{state="drained_by_onramp"} >= 1'
	wait_for 30 "node6's FAIL record" has 'onramp_node_admission_status{node="node6",status="FAIL"}' 1
	wait_for 30 "node6's NCCL busbw" has 'onramp_nccl_allreduce_busbw_bytes_per_second{node="node6"}' 301200000000
	has 'onramp_nccl_allreduce_threshold_bytes_per_second{node="node6"}' 387900000000
	has 'onramp_node_admitted{node="node6"}' 0
	has 'onramp_node_leaf{node="node6"}' 1
	restore_nodes node6
}

# A reference-trainer job on one rack1 node that opts in to migration
# through MigratePartitions and --comment=onramp:ckpt=DIR; prints its id.
trainer_job() {
	local dir=$ONRAMP_JOBS_DIR/$1.ckpt
	rm -rf "$dir"
	as_user mkdir -p "$dir"
	as_user sbatch --parsable -p batch -N1 --constraint=rack1 -J "$1" -o "$1.out" \
		--comment="onramp:ckpt=$dir" --wrap "ONRAMP_CKPT_DIR=$dir exec $TRAINER --step-ms 20 --steps 1000000"
}

trained() { [[ $(wc -l <"$ONRAMP_JOBS_DIR/$1.ckpt/loss.log" 2>/dev/null || echo 0) -ge $2 ]]; }

@test "a real Prometheus server follows a migration: in flight, then DONE with the journal's duration" {
	[[ -x $TRAINER ]] || skip "onramp-trainer not built"
	local conf=$ONRAMP_CLUSTER_DIR/etc/onramp.conf off job done0
	cp -p "$conf" "$BATS_TEST_TMPDIR/onramp.conf.orig"
	echo "MigratePartitions=batch" >>"$conf"
	off=$(log_offset "$ONRAMP_CTLD_LOG")
	scontrol reconfigure
	wait_for 30 "job_submit/onramp to reload onramp.conf" \
		log_since_has "$ONRAMP_CTLD_LOG" "$off" "job_submit/onramp: loaded"
	start_prometheus "$BATS_TEST_TMPDIR/prom"
	# Earlier tests on this cluster may have migrated jobs already.
	done0=$("$METRICS" controller | sed -n 's/^onramp_migrations{state="DONE"} //p')
	done0=${done0:-0}
	job=$(trainer_job obs)
	echo "$job" >"$BATS_TEST_TMPDIR/job"
	submit_wait "$job" RUNNING 60
	wait_for 60 "50 training steps" trained obs 50
	run "$ONRAMP_REPO/contrib/onrampctl" migrate --jobs "$job" --to rack2
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $(node_field "$(job_field "$job" NodeList)" AvailableFeatures) == *rack2* ]]
	# Prometheus saw it DONE, once more than before, with the journal's duration.
	wait_for 30 "the migration DONE in Prometheus" \
		has 'onramp_migrations{state="DONE"}' $((done0 + 1))
	local journal prom
	journal=$(sqlite3 "$ONRAMP_CLUSTER_DIR/onramp/migrate.db" \
		"select (max(e.time_ms) - min(e.time_ms)) / 1000.0 from events e
		 join migrations m on m.id = e.migration where m.job = $job")
	wait_for 30 "the migration's duration in Prometheus" \
		present "onramp_migration_duration_seconds{job_id=\"$job\",state=\"DONE\"}"
	prom=$(value "onramp_migration_duration_seconds{job_id=\"$job\",state=\"DONE\"}")
	echo "duration: journal $journal s, Prometheus $prom s"
	[ "$(echo "$prom > 0 && $prom == $journal" | bc)" = 1 ]
	# ... and in flight while it ran: the scrapes in between saw it in states
	# other than DONE, for no longer than it took in all.
	present "count_over_time(onramp_migration_duration_seconds{job_id=\"$job\",state!=\"DONE\"}[10m]) > 0"
	present "max_over_time(onramp_migration_duration_seconds{job_id=\"$job\",state!=\"DONE\"}[10m]) <= $prom"
	# No longer in flight (the series went stale when the state changed).
	run ! present "onramp_migration_duration_seconds{job_id=\"$job\",state!=\"DONE\"}"
}

@test "missing, unreadable and garbage inputs: the metrics say what they could not read and keep going" {
	local root=$BATS_TEST_TMPDIR/sysfs p dir=$BATS_TEST_TMPDIR/text exporter port=$((PORT_BASE + 11))
	p=$root/sys/class/infiniband/mlx5_0/ports/1
	mkdir -p "$p/counters" "$p/hw_counters"
	echo "4: ACTIVE" >"$p/state"
	echo "5: LinkUp" >"$p/phys_state"
	echo "400 Gb/sec (4X NDR)" >"$p/rate"
	echo "garbage" >"$p/counters/port_xmit_data"
	echo "18446744073709551615" >"$p/counters/link_downed"
	echo "12" >"$p/hw_counters/rx_pause_ctrl_phy"
	run --separate-stderr "$METRICS" node --node node1 --sysfs-root "$root"
	[ "$status" -eq 0 ]
	echo "$output" | promtool check metrics
	[[ $output == *'onramp_ib_port_up{node="node1",device="mlx5_0",port="1"} 1'* ]]
	[[ $output == *'onramp_ib_port_rate_bytes_per_second{node="node1",device="mlx5_0",port="1"} 5e+10'* ]]
	[[ $output == *'onramp_ib_port_link_downed_total{node="node1",device="mlx5_0",port="1"} 1.8446744073709552e+19'* ]]
	[[ $output == *'onramp_ib_port_pause_frames_total{node="node1",device="mlx5_0",port="1",counter="rx_pause_ctrl_phy"} 12'* ]]
	[[ $output == *"onramp_metrics_read_errors{node=\"node1\",source=\"$p/counters/port_xmit_data\"} 1"* ]]
	[[ $output == *"onramp_metrics_read_errors{node=\"node1\",source=\"$p/counters/port_rcv_data\"} 1"* ]]
	# shellcheck disable=SC2154 # set by run --separate-stderr
	[[ $stderr == *"port_xmit_data: not a counter: 'garbage'"* ]]
	# The exporter survives a malformed textfile and a missing onramp.conf key source.
	mkdir -p "$dir"
	printf 'onramp_orphan_sample 1\n' >"$dir/bad.prom"
	"$METRICS" serve --listen "127.0.0.1:$port" --textfile-dir "$dir" 2>/dev/null 3>&- &
	exporter=$!
	echo "$exporter" >"$BATS_TEST_TMPDIR/pids"
	wait_for 10 "the exporter" curl -sf "http://127.0.0.1:$port/metrics" -o /dev/null
	run curl -sf "http://127.0.0.1:$port/metrics"
	[ "$status" -eq 0 ]
	[[ $output == *"onramp_metrics_read_errors{source=\"$dir/bad.prom\"} 1"* ]]
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/other"
	[ "$output" = 404 ]
	kill -0 "$exporter"
	kill "$exporter"
}

@test "the exporter answers a scrape while idle and trickling clients hold connections, and GET/HEAD only" {
	local port=$((PORT_BASE + 12)) url i code
	url=http://127.0.0.1:$port/metrics
	"$METRICS" serve --listen "127.0.0.1:$port" 2>"$BATS_TEST_TMPDIR/exporter.log" 3>&- &
	echo $! >>"$BATS_TEST_TMPDIR/pids"
	wait_for 10 "the exporter" curl -sf "$url" -o /dev/null
	# Four clients connect and send nothing; one sends a byte a second.
	for i in 1 2 3 4; do
		(exec 5<>"/dev/tcp/127.0.0.1/$port" && sleep 25) 3>&- &
		echo $! >>"$BATS_TEST_TMPDIR/pids"
	done
	(exec 5<>"/dev/tcp/127.0.0.1/$port" && for c in G E T ' ' / m e t r; do
		printf %s "$c" >&5
		sleep 1
	done) 3>&- &
	echo $! >>"$BATS_TEST_TMPDIR/pids"
	sleep 1
	# Two scrapes at once both succeed, well before any client times out.
	curl -sf --max-time 8 "$url" -o "$BATS_TEST_TMPDIR/a" 3>&- &
	i=$!
	run curl -sf --max-time 8 "$url"
	[ "$status" -eq 0 ]
	[[ $output == *"onramp_nodes"* ]]
	wait "$i"
	grep -q onramp_nodes "$BATS_TEST_TMPDIR/a"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 8 -I "$url")
	[ "$code" = 200 ]
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 8 -X POST -d x=1 "$url")
	[ "$code" = 405 ]
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 8 "$url/$(printf 'a%.0s' {1..300})")
	[ "$code" = 414 ]
}

@test "the Grafana dashboard uses only metrics onramp exports or records" {
	local dash=$ONRAMP_REPO/contrib/grafana/onramp-dashboard.json m known
	known="$("$METRICS" node --node node1; "$METRICS" controller; cat "$RULES/onramp-rules.yml")
onramp_ib_port_link_downed_total onramp_migrations onramp_migration_duration_seconds onramp_campaign_node_in_flight_seconds"
	while read -r m; do
		[[ $known == *"$m"* ]] || { echo "dashboard uses unknown metric $m" >&2; false; }
	done < <(grep -o 'onramp[:_][a-z0-9_:]*' "$dash" | sort -u)
}
