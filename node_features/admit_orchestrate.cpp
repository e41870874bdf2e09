// "onramp-admit orchestrate": the thin main that "onrampctl admit" runs on
// the controller. Options and onramp.conf in, common/admit/orchestrate.hpp's
// driver, text (stderr) or --json (stdout) out. See onramp-admit(8).
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
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
#include "slurm/client.hpp"

namespace onramp {
namespace admit {

namespace {

void usage(FILE *f)
{
	fprintf(f, "usage: onramp-admit orchestrate [--conf FILE] [--timeout S] [--no-wait] "
	           "[--json]\n"
	           "                   --job-program PATH NODES\n"
	           "exit status: 0 admitted, 1 a node failed, 2 a node could not be judged\n");
}

// flock the node's lock file in dir for the rest of the process (the
// descriptor stays open). A file left by root serves SlurmUser and vice
// versa: it is opened read-only.
bool lock_node(const std::string &dir, const std::string &node)
{
	std::string path = dir + "/admit." + node + ".lock";
	int fd = open_nofollow(path, O_RDONLY | O_CREAT, 0644);
	if (fd < 0) {
		log_error("cannot open %s: %s", path.c_str(), strerror(errno));
		exit(1);
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return false;
	}
	return true;
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
	std::vector<std::string> hostlists;
	Status parsed = opts.parse(argc, argv, &hostlists);
	if (bad_timeout) {
		log_error("admit: --timeout must be a positive number of seconds");
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
	hooks.lock = [&lockdir](const std::string &node) { return lock_node(lockdir, node); };
	std::vector<NodeOutcome> out;
	int rc = orchestrate_admission(c, o, nodes.value(), hooks, &out);
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
