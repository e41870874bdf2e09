// onramp's metrics collectors (common/metrics/collect.hpp), each against
// its source faked: slurmctld through FakeSlurm, the campaign and
// migration journals written through their own modules into a temporary
// StateDir, a node's admission record, verdicts and sysfs ports as files.
// The text is checked line by line as Prometheus reads it.
#include "unit.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "campaign/journal.hpp"
#include "config.hpp"
#include "metrics/collect.hpp"
#include "migrate/journal.hpp"
#include "slurm/fake.hpp"

using namespace onramp;

// haystack holds needle (which may be a std::string).
#define expect_line(haystack, needle) assert_contains(haystack, std::string(needle).c_str())

static void put(const std::string &path, const std::string &text)
{
	assert_true(make_dirs(path.substr(0, path.rfind('/'))).ok());
	assert_true(write_file_atomic(path, text).ok());
}

// onramp.conf in a fresh directory with StateDir and NodeStateDir under it.
struct Site {
	std::string dir = unit_tmpdir();
	Config cfg;
	explicit Site(const std::string &extra = "")
	{
		auto c = Config::parse("StateDir=" + dir + "/state\nNodeStateDir=" + dir +
		                           "/node/%n\nBootIdFile=" + dir + "/boot/%n\n" + extra,
		                       dir + "/onramp.conf");
		assert_true(c.ok());
		cfg = c.value();
		assert_true(make_dirs(dir + "/state").ok());
	}
};

static const char *const kNodesHead =
    "# HELP onramp_nodes Nodes by admission state as slurmctld sees them.\n"
    "# TYPE onramp_nodes gauge\n";
static const char *const kNoErrors =
    "# HELP onramp_metrics_read_errors Inputs this collection could not read, by source (see "
    "the log).\n"
    "# TYPE onramp_metrics_read_errors gauge\n";

static void each_node_is_counted_in_exactly_one_state(void **)
{
	Site s;
	slurm::FakeSlurm c;
	c.add_node("node1", "rack1,onramp_ok");
	c.add_node("node2", "rack1");
	c.add_node("node3", "rack1,onramp_ok"); // drained by onramp wins over admitted
	c.nodes_["node3"].drain = true;
	c.nodes_["node3"].reason = "onramp:NCCL_BW_LOW: 301 GB/s";
	c.add_node("node4", "rack2");
	c.nodes_["node4"].drain = true;
	c.nodes_["node4"].reason = "fan broken onramp:X"; // an admin's reason
	c.add_node("node5", "rack2");
	c.nodes_["node5"].drain = true; // in its reservation: under admission
	c.nodes_["node5"].reason = "onramp:ADMITTING";
	c.resvs_["onramp_admission_node5"] = {"onramp_admission_node5", "node5"};
	c.resvs_["onramp_admission"] = {"onramp_admission", "node2"}; // not per node
	c.resvs_["maint_node2"] = {"maint_node2", "node2"};
	Exposition e;
	metrics::collect_nodes(e, s.cfg, c);
	assert_string_equal(e.text().c_str(), (std::string(kNodesHead) +
	                                       "onramp_nodes{state=\"admitted\"} 1\n"
	                                       "onramp_nodes{state=\"drained_by_onramp\"} 1\n"
	                                       "onramp_nodes{state=\"drained_other\"} 1\n"
	                                       "onramp_nodes{state=\"not_admitted\"} 1\n"
	                                       "onramp_nodes{state=\"under_admission\"} 1\n" +
	                                       kNoErrors)
	                                          .c_str());
}

static void slurmctld_down_is_a_read_error_without_samples(void **)
{
	Site s;
	slurm::FakeSlurm c;
	c.add_node("node1", "onramp_ok");
	c.down_forever = true;
	c.ctld_timeout_s = 0;
	Exposition e;
	metrics::collect_nodes(e, s.cfg, c);
	assert_string_equal(e.text().c_str(),
	                    (std::string(kNodesHead) + kNoErrors +
	                     "onramp_metrics_read_errors{source=\"slurmctld\"} 1\n")
	                        .c_str());
	assert_int_equal(e.errors().size(), 1);
}

static void campaigns_by_wave_and_state_with_nodes_in_flight(void **)
{
	Site s;
	{
		auto j = campaign::Journal::open(s.dir + "/state/onramp.db");
		assert_true(j.ok());
		campaign::CampaignRow c;
		c.id = "c1";
		c.nodes = "node[1-2,5-6]";
		std::vector<campaign::Wave> waves = {{{"node1", "leaf1"}, {"node5", "leaf2"}},
		                                     {{"node2", "leaf1"}, {"node6", "leaf2"}}};
		assert_true(j.value()->create(c, waves, 100).ok());
		assert_true(j.value()->set_node("c1", "node1", "rebooting", "", "", 1000).ok());
		assert_true(j.value()->set_node("c1", "node1", "booted", "", "", 1100).ok());
		assert_true(j.value()->set_node("c1", "node5", "rebooting", "", "", 1000).ok());
		assert_true(j.value()->set_node("c1", "node5", "admitted", "", "", 1200).ok());
	}
	Exposition e;
	metrics::collect_campaigns(e, s.cfg, 1250);
	std::string t = e.text();
	expect_line(t, "onramp_campaign_state{campaign=\"c1\",state=\"running\"} 1\n");
	expect_line(t, "onramp_campaign_nodes{campaign=\"c1\",wave=\"1\",state=\"admitted\"} 1\n"
	               "onramp_campaign_nodes{campaign=\"c1\",wave=\"1\",state=\"booted\"} 1\n"
	               "onramp_campaign_nodes{campaign=\"c1\",wave=\"2\",state=\"planned\"} 2\n");
	// Only node1 is between reboot and a final state: 1250 - 1000 s.
	expect_line(t, "onramp_campaign_node_in_flight_seconds{campaign=\"c1\",node=\"node1\"} "
	               "2.5e+02\n# HELP");
	assert_true(e.errors().empty());
}

// (Values are written in the shortest form that reads back exactly:
// 250 is "2.5e+02", as the exporter has always written it.)

static void no_journal_yet_gives_the_families_without_samples(void **)
{
	Site s;
	Exposition e;
	metrics::collect_campaigns(e, s.cfg, 0);
	metrics::collect_migrations(e, s.cfg);
	std::string t = e.text();
	expect_line(t, "# TYPE onramp_campaign_nodes gauge\n# HELP");
	expect_line(t, "# TYPE onramp_migration_duration_seconds gauge\n# HELP");
	assert_true(e.errors().empty());
}

static void migrations_by_state_with_the_journaled_duration(void **)
{
	Site s;
	{
		auto j = migrate::Journal::open(s.dir + "/state/migrate.db");
		assert_true(j.ok());
		migrate::Migration a, b;
		a.job = 7;
		b.job = 8;
		assert_true(j.value()->plan(a, 10000).ok());
		assert_true(j.value()->save(a, "SIGNALLED", "signalled", 11500).ok());
		assert_true(j.value()->save(a, "DONE", "done", 12500).ok());
		assert_true(j.value()->plan(b, 20000).ok());
	}
	Exposition e;
	metrics::collect_migrations(e, s.cfg);
	std::string t = e.text();
	expect_line(t, "onramp_migrations{state=\"DONE\"} 1\n");
	expect_line(t, "onramp_migrations{state=\"PLANNED\"} 1\n");
	// From the first journaled step (SIGNALLED at 11.5 s) to the last.
	expect_line(t, "onramp_migration_duration_seconds{migration=\"1\",job_id=\"7\","
	               "state=\"DONE\"} 1\n");
	// Planned only: no step journaled yet, no duration.
	assert_true(t.find("migration=\"2\"") == std::string::npos);
	assert_true(e.errors().empty());
}

static void a_journal_that_is_not_sqlite_is_a_read_error(void **)
{
	Site s;
	put(s.dir + "/state/migrate.db", "not a database, just text long enough to be read\n");
	Exposition e;
	metrics::collect_migrations(e, s.cfg);
	expect_line(e.text(), "onramp_metrics_read_errors{source=\"journal\"} 1\n");
	assert_int_equal(e.errors().size(), 1);
}

// The exporter runs as its own unprivileged user (contrib/systemd): a
// journal that root wrote and closed, in a directory only root may write,
// is still readable to it (the journal keeps its -wal and -shm files).
static void a_journal_written_by_root_is_readable_by_an_unprivileged_reader(void **)
{
	if (geteuid() != 0)
		skip();
	Site s;
	assert_int_equal(chmod(s.dir.c_str(), 0755), 0);
	assert_int_equal(chmod((s.dir + "/state").c_str(), 0755), 0);
	{
		auto j = migrate::Journal::open(s.dir + "/state/migrate.db");
		assert_true(j.ok());
		migrate::Migration m;
		m.job = 7;
		assert_true(j.value()->plan(m, 10000).ok());
		assert_true(j.value()->save(m, "DONE", "done", 12500).ok());
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		Exposition e;
		metrics::collect_migrations(e, s.cfg);
		bool ok =
		    e.errors().empty() &&
		    e.text().find("onramp_migrations{state=\"DONE\"} 1\n") != std::string::npos;
		for (const auto &m : e.errors())
			fprintf(stderr, "as nobody: %s\n", m.c_str());
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

// A node's record (FAIL, written before a reboot) and three kept verdicts.
static void node_record_checks_and_verdicts(void **)
{
	Site s;
	put(s.dir + "/boot/node6", "boot-2\n");
	admit::Record r;
	r.node = "node6";
	r.boot_id = "boot-1";
	r.status = admit::kRecordFail;
	r.code = "NCCL_BW_LOW";
	r.time = "2026-11-30T12:00:00Z";
	auto v = json_parse("{\"checks\":[{\"name\":\"nccl_allreduce\",\"status\":\"FAIL\","
	                    "\"value\":301.2,\"threshold\":387.9,\"unit\":\"GB/s\","
	                    "\"duration_s\":12.5},{\"name\":\"inventory\",\"status\":\"SKIP\"}]}",
	                    "verdict");
	assert_true(v.ok());
	r.verdict = v.value();
	assert_true(admit::write_record(admit::record_path(s.cfg, "node6"), r).ok());
	std::string vd = s.dir + "/node/node6/verdicts/";
	put(vd + "verdict.1.json",
	    "{\"checks\":[{\"name\":\"nccl_allreduce\",\"status\":\"TIMEOUT\"}]}\n");
	put(vd + "verdict.2.json", "{\"checks\":[{\"name\":\"nccl_allreduce\",\"status\":"
	                           "\"PASS\"},{\"name\":\"mem_bw\",\"status\":\"PASS\"}]}\n");
	put(vd + "verdict.3.json", "{\"checks\":[{\"name\":\"inventory\",\"status\":\"PASS\"}]}");
	put(vd + "verdict.4.json", ""); // onramp-admit wrote no verdict
	put(vd + "verdict.5.json", "{\"checks\":[");
	// One planted by whoever can write verdicts/ (SlurmUser on a site):
	// the exporter follows no symlink there.
	put(s.dir + "/elsewhere.json",
	    "{\"checks\":[{\"name\":\"nccl_allreduce\",\"status\":\"TIMEOUT\"}]}\n");
	assert_int_equal(
	    symlink((s.dir + "/elsewhere.json").c_str(), (vd + "verdict.6.json").c_str()), 0);
	Exposition e;
	metrics::collect_node(e, s.cfg, "node6", s.dir + "/nosysfs");
	std::string t = e.text();
	expect_line(t, "onramp_node_admitted{node=\"node6\"} 0\n");
	expect_line(t, "onramp_node_admission_status{node=\"node6\",status=\"FAIL\"} 1\n");
	expect_line(t, "onramp_node_admission_timestamp_seconds{node=\"node6\"} 1.79604e+09\n");
	expect_line(t, "onramp_node_boot_changed{node=\"node6\"} 1\n");
	expect_line(t, "onramp_check_value{node=\"node6\",check=\"nccl_allreduce\","
	               "unit=\"bytes_per_second\"} 3.012e+11\n");
	expect_line(t, "onramp_check_threshold{node=\"node6\",check=\"nccl_allreduce\","
	               "unit=\"bytes_per_second\"} 3.879e+11\n");
	expect_line(t, "onramp_check_pass{node=\"node6\",check=\"nccl_allreduce\"} 0\n"
	               "onramp_check_pass{node=\"node6\",check=\"inventory\"} 1\n");
	expect_line(t, "onramp_nccl_allreduce_busbw_bytes_per_second{node=\"node6\"} "
	               "3.012e+11\n");
	expect_line(t, "onramp_check_duration_seconds{node=\"node6\",check=\"nccl_allreduce\"} "
	               "12.5\n");
	// Verdicts 1 and 2 ran NCCL, 1 timed out; 4 is empty; 5 is garbage; 6
	// is a symlink, not read.
	expect_line(t, "onramp_nccl_checks_total{node=\"node6\"} 2\n");
	expect_line(t, "onramp_nccl_check_timeouts_total{node=\"node6\"} 1\n");
	expect_line(t, "onramp_metrics_read_errors{node=\"node6\",source=\"" + vd +
	                   "verdict.5.json\"} 1\n");
	expect_line(t, "onramp_metrics_read_errors{node=\"node6\",source=\"" + vd +
	                   "verdict.6.json\"} 1\n");
	assert_int_equal(e.errors().size(), 2);
}

static void a_node_without_record_is_status_none(void **)
{
	Site s;
	Exposition e;
	metrics::collect_node(e, s.cfg, "node9", s.dir + "/nosysfs");
	std::string t = e.text();
	expect_line(t, "onramp_node_admitted{node=\"node9\"} 0\n");
	expect_line(t, "onramp_node_admission_status{node=\"node9\",status=\"NONE\"} 1\n");
	expect_line(t, "onramp_nccl_checks_total{node=\"node9\"} 0\n");
	assert_true(t.find("onramp_node_boot_changed{") == std::string::npos);
	assert_true(e.errors().empty());
}

static void ports_from_sysfs_with_garbage_counted_as_read_errors(void **)
{
	std::string root = unit_tmpdir(), p = root + "/sys/class/infiniband/mlx5_0/ports/1";
	put(p + "/state", "4: ACTIVE\n");
	put(p + "/phys_state", "5: LinkUp\n");
	put(p + "/rate", "400 Gb/sec (4X NDR)\n");
	put(p + "/counters/port_xmit_data", "garbage\n");
	put(p + "/counters/port_rcv_data", "10\n");
	put(p + "/counters/link_downed", "-1\n");
	put(p + "/hw_counters/rx_pause_ctrl_phy", "12\n");
	put(p + "/hw_counters/rx_crc_errors", "3\n");
	Exposition e;
	metrics::collect_ports(e, "node1", root);
	std::string t = e.text(), l = "{node=\"node1\",device=\"mlx5_0\",port=\"1\"}";
	expect_line(t, "onramp_ib_port_up" + l + " 1\n");
	expect_line(t, "onramp_ib_port_rate_bytes_per_second" + l + " 5e+10\n");
	expect_line(t, "onramp_ib_port_receive_bytes_total" + l + " 4e+01\n");
	expect_line(t, "onramp_ib_port_pause_frames_total{node=\"node1\",device=\"mlx5_0\","
	               "port=\"1\",counter=\"rx_pause_ctrl_phy\"} 12\n");
	assert_true(t.find("rx_crc_errors") == std::string::npos);
	assert_true(t.find("onramp_ib_port_transmit_bytes_total{") == std::string::npos);
	assert_true(t.find("onramp_ib_port_link_downed_total{") == std::string::npos);
	expect_line(t,
	            "onramp_metrics_read_errors{source=\"" + p + "/counters/port_xmit_data\"} 1\n");
	expect_line(t, "onramp_metrics_read_errors{source=\"" + p + "/counters/link_downed\"} 1\n");
	expect_line(e.errors()[0], "port_xmit_data: not a counter: 'garbage'");
}

static void controller_text_orders_the_families_and_merges_textfiles(void **)
{
	Site s;
	put(s.dir + "/topology.conf", "SwitchName=leaf1 Nodes=node[1-2]\n"
	                              "SwitchName=spine Switches=leaf1\n");
	slurm::FakeSlurm c;
	c.add_node("node1", "onramp_ok");
	std::string tf = s.dir + "/text";
	put(tf + "/onramp-node1.prom", "# HELP onramp_node_admitted h\n"
	                               "# TYPE onramp_node_admitted gauge\n"
	                               "onramp_node_admitted{node=\"node1\"} 1\n");
	put(tf + "/bad.prom", "onramp_orphan_sample 1\n");
	put(tf + "/notes.txt", "onramp_ignored 1\n");
	std::string t = metrics::controller_text(s.cfg, c, tf, 0);
	size_t nodes = t.find("# HELP onramp_nodes "), leaf = t.find("# HELP onramp_node_leaf "),
	       camp = t.find("# HELP onramp_campaign_nodes "),
	       mig = t.find("# HELP onramp_migrations "),
	       merged = t.find("# HELP onramp_node_admitted h\n"),
	       errs = t.find("# HELP onramp_metrics_read_errors ");
	assert_true(nodes < leaf && leaf < camp && camp < mig && mig < merged && merged < errs &&
	            errs != std::string::npos);
	expect_line(t, "onramp_nodes{state=\"admitted\"} 1\n");
	expect_line(t, "onramp_node_leaf{node=\"node2\",leaf=\"leaf1\"} 1\n");
	expect_line(t, "onramp_node_admitted{node=\"node1\"} 1\n");
	expect_line(t, "onramp_metrics_read_errors{source=\"" + tf + "/bad.prom\"} 1\n");
	assert_true(t.find("onramp_ignored") == std::string::npos);
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(each_node_is_counted_in_exactly_one_state),
	    cmocka_unit_test(slurmctld_down_is_a_read_error_without_samples),
	    cmocka_unit_test(campaigns_by_wave_and_state_with_nodes_in_flight),
	    cmocka_unit_test(no_journal_yet_gives_the_families_without_samples),
	    cmocka_unit_test(migrations_by_state_with_the_journaled_duration),
	    cmocka_unit_test(a_journal_that_is_not_sqlite_is_a_read_error),
	    cmocka_unit_test(a_journal_written_by_root_is_readable_by_an_unprivileged_reader),
	    cmocka_unit_test(node_record_checks_and_verdicts),
	    cmocka_unit_test(a_node_without_record_is_status_none),
	    cmocka_unit_test(ports_from_sysfs_with_garbage_counted_as_read_errors),
	    cmocka_unit_test(controller_text_orders_the_families_and_merges_textfiles),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
