// onramp-admit's controller-side subcommands: "orchestrate" (admit_
// orchestrate.cpp) and the small ones that onrampctl and its helpers run
// instead of parsing scontrol/sinfo text: "nodes" (JSON), "node drain|
// resume|reserve|unreserve", "triggers" (JSON), "slurm-user" and "state-dir".
// See onramp-admit(8).
#include <cstdio>
#include <cstring>
#include <pwd.h>
#include <string>
#include <unistd.h>

#include "admit/orchestrate.hpp"
#include "atomic_file.hpp"
#include "config.hpp"
#include "json.hpp"
#include "log.hpp"
#include "slurm/client.hpp"

namespace onramp {
namespace admit {

int orchestrate_main(int argc, char **argv); // admit_orchestrate.cpp

namespace {

Result<Config> load_conf()
{
	auto cfg = Config::load(default_conf_path());
	if (!cfg.ok())
		log_error("onramp.conf is invalid: %s", cfg.status().message().c_str());
	return cfg;
}

// onramp-admit nodes [NODES]: every node (or NODES) as JSON.
int nodes_main(int argc, char **argv)
{
	auto cfg = load_conf();
	if (!cfg.ok())
		return 2;
	slurm::SlurmClient &c = slurm::default_client();
	std::vector<slurm::Node> nodes;
	if (argc > 1) {
		auto names = slurm::known_nodes(c, argv[1]);
		for (const auto &n : names.ok() ? names.value() : std::vector<std::string>()) {
			auto x = c.node(n);
			if (x.ok() && x.value())
				nodes.push_back(*x.value());
		}
		if (!names.ok() || nodes.size() != names->size()) {
			log_error("%s", names.ok() ? "slurmctld does not answer"
			                           : names.status().message().c_str());
			return 1;
		}
	} else {
		auto all = c.nodes();
		if (!all.ok()) {
			log_error("%s", all.status().message().c_str());
			return 1;
		}
		nodes = all.value();
	}
	Json a = Json::array();
	for (const auto &n : nodes) {
		std::string resv = reservation_name(cfg->str("AdmissionReservation"), n.name);
		auto r = c.reservation(resv);
		Json j = Json::object();
		j.set("node", n.name).set("state", n.state).set_bool("drain", n.drain);
		j.set_bool("reserved", n.reserved).set("reason", n.reason);
		j.set("features_active", n.features_active);
		j.set_bool("admitted",
		           slurm::has_feature(n.features_active, cfg->str("AdmittedFeature")));
		if (r.ok() && r.value())
			j.set("reservation", resv);
		else
			j.set_null("reservation");
		a.push(j);
	}
	printf("%s\n", a.dump().c_str());
	return 0;
}

// onramp-admit node drain NODE REASON | resume NODE | reserve NODE | unreserve NODE
int node_main(int argc, char **argv)
{
	std::string op = argc > 2 ? argv[1] : "", node = argc > 2 ? argv[2] : "";
	if (!(argc == 3 || (argc == 4 && op == "drain"))) {
		log_error(
		    "usage: onramp-admit node (drain NODE REASON | resume NODE | reserve NODE "
		    "| unreserve NODE)");
		return 2;
	}
	slurm::SlurmClient &c = slurm::default_client();
	if (op == "resume") {
		resume_if_ours(c, node);
		return 0;
	}
	if (op == "drain") {
		Status st = slurm::drain_node(c, node, argv[3]);
		if (!st.ok())
			log_error("node %s: %s", node.c_str(), st.message().c_str());
		return st.ok() ? 0 : 1;
	}
	auto cfg = load_conf();
	if (!cfg.ok())
		return 2;
	std::string resv = reservation_name(cfg->str("AdmissionReservation"), node);
	if (op == "reserve")
		return reserve_node(c, resv, node, reservation_users(c)) ? 0 : 1;
	if (op != "unreserve") {
		log_error("node: unknown operation '%s'", op.c_str());
		return 2;
	}
	auto r = c.reservation(resv);
	Status st = !r.ok() ? r.status() : r.value() ? c.delete_reservation(resv) : Status::Ok();
	if (!st.ok())
		log_error("node %s: %s", node.c_str(), st.message().c_str());
	return st.ok() ? 0 : 1;
}

// onramp-admit state-dir [--owner USER] DIR...: make onramp's shared
// state directories (onramp-lib.sh's onramp_state_dir, as root) and give
// them to USER (SlurmUser) without following a name another account put
// there (make_owned_dir). Exit 1 naming the first directory refused.
int state_dir_main(int argc, char **argv)
{
	int i = 1;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (argc > 2 && !strcmp(argv[1], "--owner")) {
		struct passwd *pw = getpwnam(argv[2]);
		if (!pw) {
			log_error("state-dir: no account '%s'", argv[2]);
			return 2;
		}
		uid = pw->pw_uid;
		gid = pw->pw_gid;
		i = 3;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		log_error("state-dir: give the directories");
		return 2;
	}
	for (; i < argc; i++) {
		Status st = make_owned_dir(argv[i], uid, gid);
		if (!st.ok()) {
			// The message names the directory already.
			std::string why = st.message();
			if (why.rfind(std::string(argv[i]) + ": ", 0) != 0)
				why = std::string(argv[i]) + ": " + why;
			fprintf(stderr, "onramp: refusing %s\n", why.c_str());
			return 1;
		}
	}
	return 0;
}

} // namespace

int controller_main(int argc, char **argv)
{
	std::string cmd = argc > 1 ? argv[1] : "";
	if (cmd == "orchestrate")
		return orchestrate_main(argc - 1, argv + 1);
	log_set_program("onramp-admit");
	if (cmd == "nodes")
		return nodes_main(argc - 1, argv + 1);
	if (cmd == "node")
		return node_main(argc - 1, argv + 1);
	if (cmd == "triggers") { // [{id, program}]
		auto t = slurm::default_client().triggers();
		if (!t.ok()) {
			log_error("%s", t.status().message().c_str());
			return 1;
		}
		Json a = Json::array();
		for (const auto &x : t.value())
			a.push(Json::object()
			           .set("id", static_cast<int64_t>(x.id))
			           .set("program", x.program));
		printf("%s\n", a.dump().c_str());
		return 0;
	}
	if (cmd == "state-dir")
		return state_dir_main(argc - 1, argv + 1);
	if (cmd == "slurm-user") {
		printf("%s\n", slurm_user_name(slurm::default_client()).c_str());
		return 0;
	}
	return -1;
}

} // namespace admit
} // namespace onramp
