// common/slurm over FakeSlurm: drain/resume never touch a reason onramp
// did not write, retry while slurmctld is down (bounded), the admin check,
// the JSON the tools print of jobs and slurmctld's configuration.
#include "unit.hpp"

#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.hpp"

#include "slurm/client.hpp"
#include "slurm/fake.hpp"
#include "slurm/to_json.hpp"

using namespace onramp;
using slurm::FakeSlurm;

static void test_drain_keeps_admin_reason(void **)
{
	FakeSlurm f;
	f.add_node("n1", "rack1");
	f.add_node("n2", "rack1");
	f.nodes_["n2"].reason = "bad fan (admin)";
	f.nodes_["n2"].drain = true;
	bool kept = true;
	assert_true(slurm::drain_node(f, "n1", "onramp:MIGRATE: job 1 to rack2", &kept).ok());
	assert_false(kept);
	assert_true(f.nodes_["n1"].drain);
	assert_true(slurm::drain_node(f, "n2", "onramp:MIGRATE: job 1 to rack2", &kept).ok());
	assert_true(kept);
	assert_string_equal(f.nodes_["n2"].reason.c_str(), "bad fan (admin)");
	// A reason that is not onramp's is refused outright.
	assert_false(slurm::drain_node(f, "n1", "maintenance").ok());
	// An unknown node is an error, not a silent success.
	assert_false(slurm::drain_node(f, "n9", "onramp:X: y").ok());
}

static void test_resume_only_our_prefix(void **)
{
	FakeSlurm f;
	f.add_node("n1", "");
	f.add_node("n2", "");
	f.add_node("n3", "");
	f.nodes_["n1"].reason = "onramp:MIGRATE: job 1 to rack2";
	f.nodes_["n2"].reason = "onramp:XID: 79 on GPU 3";
	f.nodes_["n3"].reason = "admin: cable";
	for (auto n : {"n1", "n2", "n3"})
		f.nodes_[n].drain = true;
	bool left = false;
	assert_true(slurm::resume_node(f, "n1", "onramp:MIGRATE:", &left).ok());
	assert_false(left);
	assert_false(f.nodes_["n1"].drain);
	assert_true(slurm::resume_node(f, "n2", "onramp:MIGRATE:", &left).ok());
	assert_true(left);
	assert_true(f.nodes_["n2"].drain);
	assert_true(slurm::resume_node(f, "n3", "onramp:MIGRATE:", &left).ok());
	assert_true(left);
	assert_true(f.nodes_["n3"].drain);
	// Only onramp's own prefixes may be resumed.
	assert_false(slurm::resume_node(f, "n3", "admin:").ok());
	assert_true(f.nodes_["n3"].drain);
}

static void test_retry_while_down(void **)
{
	FakeSlurm f;
	f.add_node("n1", "");
	f.down_calls = 3; // slurmctld restarting: 3 attempts unanswered
	auto n = f.node("n1");
	assert_true(n.ok());
	assert_true(n.value().has_value());
	assert_true(f.waited_s > 3.0); // 0.5 + 1 + 2 of backoff
	assert_true(f.waited_s < 4.0);
	f.down_forever = true;
	f.ctld_timeout_s = 20;
	f.waited_s = 0;
	auto gone = f.node("n1");
	assert_false(gone.ok());
	assert_contains(gone.status().message(), "Unable to contact slurm controller");
	assert_true(f.waited_s >= 20 && f.waited_s < 26); // bounded by the timeout
}

static void test_backoff_doubles_up_to_max(void **)
{
	std::vector<double> sleeps;
	slurm::Backoff b;
	b.timeout_s = 30;
	b.sleep = [&](double s) { sleeps.push_back(s); };
	int calls = 0;
	assert_true(slurm::retry_while_unreachable(
	    b, [&] { return ++calls == 6; }, "t"));
	assert_int_equal(calls, 6);
	std::vector<double> want = {0.5, 1, 2, 4, 5};
	assert_int_equal(sleeps.size(), want.size());
	for (size_t i = 0; i < want.size(); i++)
		assert_true(sleeps[i] == want[i]);
}

static void test_is_admin(void **)
{
	FakeSlurm f;
	f.slurm_user = 64030;
	assert_true(slurm::is_admin(f, 0));
	assert_true(slurm::is_admin(f, 64030));
	assert_false(slurm::is_admin(f, 1000));
	f.down_forever = true;
	f.ctld_timeout_s = 1;
	assert_false(slurm::is_admin(f, 64030)); // cannot tell: not an admin
}

static void test_set_active_feature(void **)
{
	FakeSlurm f;
	f.add_node("n1", "rack1,gpu");
	assert_true(slurm::set_active_feature(f, "n1", "admitted", true).ok());
	assert_string_equal(f.nodes_["n1"].features_active.c_str(), "rack1,gpu,admitted");
	f.actions.clear();
	assert_true(slurm::set_active_feature(f, "n1", "admitted", true).ok());
	assert_true(f.actions.empty()); // already there: no update
	assert_true(slurm::set_active_feature(f, "n1", "admitted", false).ok());
	assert_string_equal(f.nodes_["n1"].features_active.c_str(), "rack1,gpu");
}

static void test_split_keeps_empty_items_and_inverts_join(void **)
{
	auto v = slurm::split("a,,b", ',');
	assert_int_equal(v.size(), 3);
	assert_string_equal(v[1].c_str(), "");
	assert_string_equal(v[2].c_str(), "b");
	assert_int_equal(slurm::split("", ',').size(), 1);
	assert_string_equal(slurm::join(slurm::split("rack1,onramp_ok", ',')).c_str(),
	                    "rack1,onramp_ok");
}

// scontrol show topology's records (the real client's route on 24.05+).
static void test_switch_lines_parse_scontrol_records(void **)
{
	auto t = slurm::parse_switch_lines(
	    "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-2]\n"
	    "SwitchName=spine1 Level=1 LinkSpeed=1 Nodes=node[1-8] Switches=leaf[1,3-4]\n\n");
	assert_true(t.ok());
	assert_int_equal(t->size(), 2);
	assert_string_equal(t.value()[0].name.c_str(), "leaf1");
	assert_int_equal(t.value()[0].level, 0);
	assert_string_equal(t.value()[0].nodes.c_str(), "node[1-2]");
	assert_true(t.value()[0].switches.empty());
	assert_int_equal(t.value()[1].level, 1);
	assert_string_equal(t.value()[1].switches.c_str(), "leaf[1,3-4]");
	// A partition's block or ring records (topology.yaml) are not switches.
	auto mixed = slurm::parse_switch_lines(
	    "BlockName=b1 BlockIndex=0 Nodes=node[1-4] BlockSize=4\n"
	    "AggregatedBlock=b1-2 BlockIndex=1 Nodes=node[1-8] BlockSize=8\n"
	    "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-2]\n"
	    "RingName=r1 Nodes=node[1-2] RingSize=2\n");
	assert_true(mixed.ok());
	assert_int_equal(mixed->size(), 1);
	assert_string_equal(mixed.value()[0].name.c_str(), "leaf1");
	// A line that is not a record is named, not skipped.
	auto bad = slurm::parse_switch_lines("SwitchName=leaf1 Level=0\nLevel=x\n");
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "line 2");
	assert_false(slurm::parse_switch_lines("SwitchName=s Level=-1\n").ok());
}

// What onrampctl expand checks its NODES with (onramp-campaign nodes):
// ranges and lists expand in order, each node once, compressed back; every
// node slurmctld does not know is named, not only the first.
static void test_nodes_expand_and_every_unknown_node_is_named(void **)
{
	FakeSlurm f;
	for (auto n : {"node1", "node2", "node3", "node4", "gpu07"})
		f.add_node(n, "");
	auto s = slurm::expand_nodes("node[3,1-2],gpu07,node1");
	assert_true(s.ok());
	assert_string_equal(slurm::join(s->nodes).c_str(), "node3,node1,node2,gpu07");
	assert_string_equal(s->hostlist.c_str(), "gpu07,node[1-3]");
	assert_true(slurm::find_unknown(f, &s.value()).ok());
	assert_true(s->unknown.empty());
	s = slurm::expand_nodes("node[4-6],gpu[07-09]");
	assert_true(s.ok());
	assert_true(slurm::find_unknown(f, &s.value()).ok());
	assert_string_equal(slurm::join(s->unknown).c_str(), "node5,node6,gpu08,gpu09");
	auto k = slurm::known_nodes(f, "node[4-6],gpu[07-09]");
	assert_false(k.ok());
	assert_contains(k.status().message(), "unknown node(s): node5 node6 gpu08 gpu09");
	k = slurm::known_nodes(f, "node[1-2]");
	assert_true(k.ok());
	assert_string_equal(slurm::join(k.value()).c_str(), "node1,node2");
	// slurmctld down: its error, not "every node unknown".
	f.down_forever = true;
	f.ctld_timeout_s = 0;
	assert_false(slurm::known_nodes(f, "node1").ok());
}

// Bad and hostile expressions are refused naming the expression; a huge
// range is refused by the hostlist limits before anything is allocated.
static void test_nodes_refuse_bad_and_hostile_expressions(void **)
{
	for (auto e : {"", ",", "node[1-99999999]", "node[", "node]1[", "node[3-1]",
	               "node[1-2][3-4]", "node;rm -rf /", "node 1", "node[1-2"}) {
		auto s = slurm::expand_nodes(e);
		assert_false(s.ok());
		assert_contains(s.status().message(), (std::string("'") + e + "'").c_str());
	}
	FakeSlurm f;
	f.add_node("node1", "");
	assert_false(slurm::known_nodes(f, "node[1-99999999]").ok());
	assert_true(f.actions.empty());
}

// Every job onramp submits goes through sbatch_args: options in a fixed
// order, Slurm's defaults where a field is empty, and each command word
// single-quoted so that no shell on the node parses data.
static void test_sbatch_args_quote_every_word(void **)
{
	slurm::BatchJob b;
	b.name = "onramp-admit:node1";
	b.account = "ops";
	b.reservation = "onramp_admission_node1";
	b.options = {"--exclusive"};
	b.num_nodes = 2;
	b.nodes = "node1,node2";
	b.constraint = "onramp_admitted";
	b.time_limit_min = 30;
	b.output = "/var/lib/onramp/admit/%x.%j.out";
	b.command = {"/usr/libexec/onramp/onramp-smoke-job", "echo it's $HOME; `id`"};
	// The output is not slurmstepd's -o (it follows symlinks as the job's
	// user): the script writes it itself into the directory, by name.
	auto args = slurm::sbatch_args(b);
	assert_int_equal(args.size(), 17);
	std::string wrap = args.back();
	args.pop_back();
	assert_string_equal(
	    slurm::join(args).c_str(),
	    "-J,onramp-admit:node1,-A,ops,--reservation=onramp_admission_node1,--exclusive,-N,2,"
	    "-w,node1,node2,--constraint=onramp_admitted,-t,30,-o,/dev/null,--wrap");
	assert_int_equal(wrap.rfind("exec '/bin/bash' '-c' '", 0), 0);
	const std::string tail =
	    "'onramp-job' '/var/lib/onramp/admit' '%x.%j.out' "
	    "'/usr/libexec/onramp/onramp-smoke-job' 'echo it'\\''s $HOME; `id`'";
	assert_true(wrap.size() > tail.size());
	assert_string_equal(wrap.substr(wrap.size() - tail.size()).c_str(), tail.c_str());
	slurm::BatchJob m;
	m.name = "x";
	m.command = {"true"};
	assert_string_equal(slurm::join(slurm::sbatch_args(m)).c_str(), "-J,x,-N,1,--wrap,'true'");
}

// run_output_script DIR: run the batch script sbatch_args makes for a job
// whose output is DIR/%x.%j.out (job 7, named j), as the node would.
static void run_output_script(const std::string &dir)
{
	slurm::BatchJob b;
	b.name = "j";
	b.output = dir + "/%x.%j.out";
	b.command = {"echo", "the job's output"};
	std::string wrap = slurm::sbatch_args(b).back();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("SLURM_JOB_ID", "7", 1);
		setenv("SLURM_JOB_NAME", "j", 1);
		execl("/bin/bash", "bash", "-c", wrap.c_str(), static_cast<char *>(nullptr));
		_exit(127);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The output directory's own name is not resolved when the job is
// submitted: SlurmUser, who owns StateDir, can swap admit/ (or expand/)
// for a symlink to a root-owned directory just before onramp submits, and
// the job (root's) then created its output there. The script must find
// the symlink (pwd -P) and drop the output; a real directory gets it.
static void test_job_output_never_lands_behind_a_swapped_in_symlink(void **)
{
	std::string t = unit_tmpdir();
	std::string victim = t + "/victim", admit = t + "/admit";
	assert_int_equal(mkdir(victim.c_str(), 0755), 0);
	assert_int_equal(symlink(victim.c_str(), admit.c_str()), 0);
	run_output_script(admit);
	assert_true(list_dir(victim).empty());
	assert_int_equal(unlink(admit.c_str()), 0);
	assert_int_equal(mkdir(admit.c_str(), 0755), 0);
	run_output_script(admit);
	auto out = read_file(admit + "/j.7.out", 4096);
	assert_true(out.ok());
	assert_string_equal(out.value().c_str(), "the job's output\n");
	// A symlinked parent (root's, as an admin may set StateDir) is fine.
	std::string via = t + "/via";
	assert_int_equal(symlink(t.c_str(), via.c_str()), 0);
	assert_int_equal(unlink((admit + "/j.7.out").c_str()), 0);
	run_output_script(via + "/admit");
	assert_true(read_file(admit + "/j.7.out", 4096).ok());
}

// What onramp-config --slurm prints (etc/onramp-accounting.sh reads its
// defaults from it with jq): ClusterName and SlurmUser's name and uid, and
// how many SlurmctldHost.
static void test_ctl_conf_json_names_cluster_and_slurm_user(void **)
{
	FakeSlurm f;
	f.slurm_user = 64030;
	f.conf_.slurm_user_name = "slurm";
	f.conf_.cluster_name = "onramp-test";
	f.conf_.job_submit_plugins = "onramp";
	f.conf_.state_save_location = "/var/spool/slurmctld";
	f.conf_.controllers = 2; // a backup controller (onramp-config --check)
	auto c = f.ctl_conf();
	assert_true(c.ok());
	assert_string_equal(slurm::to_json(c.value()).dump().c_str(),
	                    "{\"cluster_name\":\"onramp-test\","
	                    "\"slurm_user\":{\"name\":\"slurm\",\"uid\":64030},"
	                    "\"job_submit_plugins\":\"onramp\",\"controllers\":2,"
	                    "\"state_save_location\":\"/var/spool/slurmctld\"}");
	f.down_forever = true;
	f.ctld_timeout_s = 0;
	assert_false(f.ctl_conf().ok()); // no answer: an error, never empty defaults
}

// What onramp-migrate job prints (contrib/demo and onrampctl read it with
// jq): state, nodes, restarts, the hold, the --switches request as
// update_job set it; the comment stays one string whatever it holds.
static void test_job_json_carries_state_nodes_hold_and_switches(void **)
{
	FakeSlurm f;
	f.add_job(7, "n[1-2]", "onramp:ckpt=/ck Switches=9 \"x\"").job.restarts = 1;
	auto j = f.job(7);
	assert_true(j.ok() && j.value());
	assert_string_equal(slurm::to_json(*j.value()).dump().c_str(),
	                    "{\"job\":7,\"uid\":1000,\"state\":\"RUNNING\",\"finished\":false,"
	                    "\"held\":false,\"nodes\":\"n[1-2]\",\"restarts\":1,\"switches\":0,"
	                    "\"switch_wait_s\":0,"
	                    "\"comment\":\"onramp:ckpt=/ck Switches=9 \\\"x\\\"\","
	                    "\"admin_comment\":\"\"}");
	slurm::FakeSlurm::FakeJob &p = f.add_job(8, "", "");
	p.job.state = "PENDING";
	slurm::JobUpdate u;
	u.admin_comment = "onramp:rewire-held window=w1";
	u.req_switch = 2;
	u.wait4switch = 300;
	assert_true(f.update_job(8, u).ok());
	assert_true(f.hold(8).ok());
	j = f.job(8);
	assert_true(j.ok() && j.value());
	assert_string_equal(slurm::to_json(*j.value()).dump().c_str(),
	                    "{\"job\":8,\"uid\":1000,\"state\":\"PENDING\",\"finished\":false,"
	                    "\"held\":true,\"nodes\":\"\",\"restarts\":0,\"switches\":2,"
	                    "\"switch_wait_s\":300,\"comment\":\"\","
	                    "\"admin_comment\":\"onramp:rewire-held window=w1\"}");
	p.job.state = "COMPLETED";
	assert_contains(slurm::to_json(p.job).dump(), "\"finished\":true");
}

// The two tests below put a fake slurmd on the host and ask
// reregister_slurmd to find one. Test runs side by side (the CI run's
// version lanes) must not see each other's: a lone root slurmd of another
// run was signalled as "the only slurmd here", failing both runs' tests.
// One machine-wide lock for the time a fake lives.
class FakeSlurmdLock {
public:
	FakeSlurmdLock()
	    : fd_(open("/tmp/onramp-unit-fake-slurmd.lock",
	               O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600))
	{
		if (fd_ >= 0)
			(void)flock(fd_, LOCK_EX);
	}
	~FakeSlurmdLock()
	{
		if (fd_ >= 0)
			close(fd_);
	}

private:
	int fd_;
};

// A process running bin (a shell) with argv "slurmd -c ... -N node", as
// slurmd's command line reads, as nobody when as_nobody; returns once its
// command line shows (up to 10 s on a loaded machine).
static pid_t fake_slurmd(const std::string &bin, const char *node, bool as_nobody)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (as_nobody && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(3);
		execl(bin.c_str(), "slurmd", "-c", "sleep 30; :", "-N", node, nullptr);
		_exit(4);
	}
	assert_true(pid > 0);
	std::string cmd = "/proc/" + std::to_string(pid) + "/cmdline";
	for (int i = 0; i < 500; i++) {
		auto c = onramp::read_file(cmd, 4096);
		if (c.ok() && c->compare(0, 7, "slurmd") == 0)
			break;
		usleep(20000);
	}
	return pid;
}

// A user's process named slurmd, with -N NODE in its argv, takes no SIGHUP
// meant for the node's slurmd.
static void test_a_look_alike_slurmd_gets_no_signal(void **)
{
	if (geteuid() != 0)
		skip(); // needs another account for the look-alike
	FakeSlurmdLock one_at_a_time;
	pid_t pid = fake_slurmd("/bin/sh", "onramp-unit-node", true);
	onramp::Status st = onramp::reregister_slurmd("onramp-unit-node");
	usleep(100000);
	int status = 0;
	pid_t done = waitpid(pid, &status, WNOHANG);
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, 0);
	if (done == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGHUP)
		fail_msg("a user's look-alike slurmd took the SIGHUP");
	assert_int_equal(done, 0);
	assert_false(st.ok());
	assert_contains(st.message(), "no slurmd for node onramp-unit-node");
}

// The node's own slurmd (root's, its binary Debian's slurmd-wlm) does get it.
static void test_the_nodes_slurmd_gets_the_signal(void **)
{
	if (geteuid() != 0)
		skip();
	FakeSlurmdLock one_at_a_time;
	std::string bin = unit_tmpdir() + "/slurmd-wlm";
	assert_int_equal(system(("cp /bin/sh " + bin).c_str()), 0);
	pid_t pid = fake_slurmd(bin, "onramp-unit-node2", false);
	onramp::Status st = onramp::reregister_slurmd("onramp-unit-node2");
	int status = 0;
	pid_t done = 0;
	for (int i = 0; i < 50 && done == 0; i++) {
		usleep(20000);
		done = waitpid(pid, &status, WNOHANG);
	}
	if (done == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
	}
	if (!st.ok())
		fail_msg("%s", st.message().c_str());
	assert_int_equal(done, pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGHUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drain_keeps_admin_reason),
	    cmocka_unit_test(test_resume_only_our_prefix),
	    cmocka_unit_test(test_retry_while_down),
	    cmocka_unit_test(test_backoff_doubles_up_to_max),
	    cmocka_unit_test(test_is_admin),
	    cmocka_unit_test(test_set_active_feature),
	    cmocka_unit_test(test_switch_lines_parse_scontrol_records),
	    cmocka_unit_test(test_split_keeps_empty_items_and_inverts_join),
	    cmocka_unit_test(test_nodes_expand_and_every_unknown_node_is_named),
	    cmocka_unit_test(test_nodes_refuse_bad_and_hostile_expressions),
	    cmocka_unit_test(test_sbatch_args_quote_every_word),
	    cmocka_unit_test(test_job_output_never_lands_behind_a_swapped_in_symlink),
	    cmocka_unit_test(test_ctl_conf_json_names_cluster_and_slurm_user),
	    cmocka_unit_test(test_job_json_carries_state_nodes_hold_and_switches),
	    cmocka_unit_test(test_a_look_alike_slurmd_gets_no_signal),
	    cmocka_unit_test(test_the_nodes_slurmd_gets_the_signal),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
