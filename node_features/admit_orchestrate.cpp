// "onramp-admit orchestrate": the thin main that "onrampctl admit" runs on
// the controller. Options and onramp.conf in, common/admit/orchestrate.hpp's
// driver, text (stderr) or --json (stdout) out. See onramp-admit(8).
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>
#include <vector>

#include "atomic_file.hpp"
#include "admit/orchestrate.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "hostlist.hpp"
#include "json.hpp"
#include "log.hpp"
#include "number.hpp"
#include "proc.hpp"
#include "slurm/client.hpp"

namespace onramp {
namespace admit {

namespace {

void usage(FILE *f)
{
	fprintf(f, "usage: onramp-admit orchestrate [--conf FILE] [--timeout S] [--no-wait] "
	           "[--json]\n"
	           "                   [--lock-wait S]\n"
	           "                   --job-program PATH NODES\n"
	           "exit status: 0 admitted, 1 a node failed, 2 a node could not be judged\n");
}

// The lock descriptors this process holds (a detached run keeps them).
std::vector<int> held_locks;

// flock the node's lock file in dir for the rest of the process (the
// descriptor stays open). A file left by root serves SlurmUser and vice
// versa: it is opened read-only. A lock another run holds is waited for
// until deadline (one deadline for every node of the run), then given up.
bool lock_node(const std::string &dir, const std::string &node, time_t deadline)
{
	std::string path = dir + "/admit." + node + ".lock";
	int fd = open_lock_file(path);
	if (fd < 0) {
		log_error("cannot open %s: %s", path.c_str(), strerror(errno));
		exit(1);
	}
	bool told = false;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (time(nullptr) >= deadline) {
			close(fd);
			return false;
		}
		if (!told)
			log_info("node %s: waiting up to %llds for the admission that holds %s",
			         node.c_str(), static_cast<long long>(deadline - time(nullptr)),
			         path.c_str());
		told = true;
		usleep(500 * 1000);
	}
	held_locks.push_back(fd);
	return true;
}

// Close every descriptor above 2 but the held locks: the caller's (a
// terminal's, a test runner's) must not stay open in a detached run.
void close_all_but_locks()
{
	std::vector<int> keep = held_locks;
	std::sort(keep.begin(), keep.end());
	unsigned from = 3;
	for (int fd : keep) {
		if (static_cast<unsigned>(fd) > from)
			close_range(from, static_cast<unsigned>(fd) - 1, 0);
		from = static_cast<unsigned>(fd) + 1;
	}
	close_range(from, ~0U, 0);
}

Json outcome_json(const NodeOutcome &n)
{
	Json j = Json::object();
	j.set("node", n.node).set("result", n.result);
	if (n.job)
		j.set("job", static_cast<int64_t>(n.job));
	Json peers = Json::array();
	for (const auto &p : n.peers)
		peers.push(p);
	j.set("peers", peers);
	if (!n.reason.empty())
		j.set("reason", n.reason);
	return j;
}

} // namespace

int orchestrate_main(int argc, char **argv)
{
	log_set_program("onrampctl");
	OrchestrateOptions o;
	std::string conf = default_conf_path();
	bool json = false, no_wait = false, help = false, bad_timeout = false;
	int lock_wait_s = 0;
	bool bad_lock_wait = false;
	cli::Parser opts;
	opts.value("conf", &conf).value("job-program", &o.job_program);
	opts.flag("no-wait", &no_wait).flag("json", &json).flag("help", &help);
	opts.value("timeout", [&](const std::string &v) {
		auto t = parse_int(v, 1, INT_MAX / 2);
		if (t.ok())
			o.timeout_s = static_cast<int>(t.value());
		bad_timeout = !t.ok();
		return t.status();
	});
	opts.value("lock-wait", [&](const std::string &v) {
		auto t = parse_int(v, 0, 86400);
		if (t.ok())
			lock_wait_s = static_cast<int>(t.value());
		bad_lock_wait = !t.ok();
		return t.status();
	});
	std::vector<std::string> hostlists;
	Status parsed = opts.parse(argc, argv, &hostlists);
	if (bad_timeout) {
		log_error("admit: --timeout must be a positive number of seconds");
		return 1;
	}
	if (bad_lock_wait) {
		log_error("admit: --lock-wait must be 0 to 86400 seconds");
		return 1;
	}
	if (int rc = cli::after_parse(parsed, help, usage); rc != cli::kGoOn)
		return rc;
	if (no_wait)
		o.wait = false;
	if (hostlists.size() != 1 || o.job_program.empty()) {
		log_error(hostlists.empty() ? "admit: no nodes given"
		                            : "admit: give one hostlist and --job-program");
		return 1;
	}
	auto cfg = Config::load(conf);
	if (!cfg.ok()) {
		log_error("onramp.conf is invalid: %s", cfg.status().message().c_str());
		return 2;
	}
	o.feature = cfg->str("AdmittedFeature");
	o.peer_wait_s = static_cast<int>(cfg->seconds("AdmissionPeerWait"));
	o.account = cfg->str("AdmissionAccount");
	o.resv_base = cfg->str("AdmissionReservation");
	std::string state = cfg->str("StateDir");
	o.output_dir = state + "/admit";
	if (cfg->boolean("AdmissionExclusive"))
		o.job_options.push_back("--exclusive");
	if (!cfg->str("AdmissionGres").empty())
		o.job_options.push_back("--gres=" + cfg->str("AdmissionGres"));

	slurm::SlurmClient &c = slurm::default_client();
	auto nodes = slurm::known_nodes(c, hostlists[0]);
	if (!nodes.ok()) {
		log_error("%s", nodes.status().message().c_str());
		return 1;
	}
	o.users = reservation_users(c);
	OrchestrateHooks hooks;
	std::string lockdir = state + "/locks";
	const time_t lock_deadline = time(nullptr) + lock_wait_s;
	hooks.lock = [&lockdir, lock_deadline](const std::string &node) {
		return lock_node(lockdir, node, lock_deadline);
	};
	// --no-wait: the caller gets "submitted" at once; a detached process
	// (its output appended to StateDir/admit/orchestrate.log) waits,
	// judges, shrinks the reservations back and confirms the save.
	bool detached = false;
	const std::string detach_log = o.output_dir + "/orchestrate.log";
	const int64_t log_max = cfg->integer("LogMaxBytes");
	hooks.detach = [&detached, &detach_log, log_max] {
		bool failed = false;
		if (!detach_process(detach_log, log_max, &failed)) {
			if (failed)
				log_warn("cannot detach the wait (fork failed): the admissions are "
				         "judged by the next onrampctl admit");
			return false;
		}
		close_all_but_locks();
		detached = true;
		return true;
	};
	std::vector<NodeOutcome> out;
	int rc = orchestrate_admission(c, o, nodes.value(), hooks, &out);
	if (detached) {
		fflush(nullptr);
		_exit(rc);
	}
	if (json) {
		Json a = Json::array();
		for (const auto &n : out)
			a.push(outcome_json(n));
		printf("%s\n", Json::object().set("exit", rc).set("nodes", a).dump().c_str());
	}
	return rc;
}

} // namespace admit
} // namespace onramp
