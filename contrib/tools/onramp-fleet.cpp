// onramp-fleet: onrampctl diagnose, probe and spine-check (onrampctl(8)).
// Parses options, calls common/fleet/, prints; no policy lives here.
//
//   diagnose [--json|--prometheus] [--pairs FILE]
//                                      which component slows the fleet's pairs
//   probe [--budget N] [--nodes HOSTLIST] [--dry-run] [--json]
//                                      run a planned set of pairs, record, diagnose
//   spine-check (JOBID | --nodes HOSTLIST | --leaves A,B) [--json]
//                                      does one spine's loss cut the leaves apart
//
// Exit status: 0 nothing suspected / no cut, 1 a suspect / a cut, 2 error.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli.hpp"
#include "config.hpp"
#include "fleet/diagnose.hpp"
#include "hostlist.hpp"
#include "json.hpp"
#include "log.hpp"
#include "number.hpp"
#include "slurm/client.hpp"

using namespace onramp;
using namespace onramp::fleet;

namespace {

const char *kProg = "onramp-fleet";

int die(const std::string &msg)
{
	fprintf(stderr, "%s: %s\n", kProg, msg.c_str());
	return 2;
}

void usage(FILE *f)
{
	fprintf(f, "usage: onrampctl diagnose [--json | --prometheus] [--pairs FILE]\n"
	           "       onrampctl probe [--budget N] [--nodes HOSTLIST] [--dry-run] [--json]\n"
	           "       onrampctl spine-check (JOBID | --nodes HOSTLIST | --leaves A,B) "
	           "[--json]\n"
	           "common: [--conf FILE] [--topology FILE]\n");
}

void print_diagnosis(const Diagnosis &d, bool json)
{
	if (json) {
		printf("%s\n", d.to_json().dump(true).c_str());
		return;
	}
	printf("%zu pairs, %zu slow (below %.1f GB/s): %s\n", d.pairs, d.slow, d.good_gbs,
	       d.summary().c_str());
	for (const auto &s : d.suspects) {
		printf("  %s %s confidence %.2f; evidence:", kind_name(s.kind), s.name.c_str(),
		       s.confidence);
		for (size_t i = 0; i < s.evidence.size() && i < 8; i++)
			printf(" %s-%s(%.1f)", s.evidence[i].a.c_str(), s.evidence[i].b.c_str(),
			       s.evidence[i].busbw_gbs);
		printf("%s\n", s.evidence.size() > 8 ? " ..." : "");
	}
}

// --pairs FILE: a JSON array of {a, b, busbw_gbs}, added to the evidence.
Status read_pairs_file(const std::string &path, std::vector<PairResult> *out)
{
	auto j = json_load_file(path);
	if (!j.ok())
		return j.status();
	auto pairs = pairs_from_json(j->get(), path, "");
	if (!pairs.ok())
		return pairs.status();
	for (const auto &s : pairs.value())
		out->push_back({s.a, s.b, s.busbw_gbs});
	return Status::Ok();
}

// The nodes of a job, from slurmctld (libslurm).
Result<std::vector<std::string>> job_nodes(const std::string &job)
{
	auto id = parse_int(job, 1, UINT32_MAX);
	if (!id.ok())
		return Status::Error("'" + job + "' is not a job id: " + id.status().message());
	auto j = slurm::default_client().job(static_cast<uint32_t>(id.value()));
	if (!j.ok())
		return Status::Error("job " + job + ": " + j.status().message());
	std::string nodes = j.value() ? j.value()->nodes : "";
	if (nodes.empty())
		return Status::Error("job " + job + " has no nodes (not running?)");
	return hostlist_expand(nodes);
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program(kProg);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	std::string cmd = argv[1], conf, topo, pairs_file, nodes, leaves;
	bool json = false, dry_run = false, prometheus = false;
	long budget = 0;
	bool help = false;
	cli::Parser opts;
	opts.value("conf", &conf).value("topology", &topo).value("pairs", &pairs_file);
	opts.value("nodes", &nodes).value("leaves", &leaves);
	opts.flag("json", &json).flag("dry-run", &dry_run).flag("prometheus", &prometheus);
	opts.flag("help", &help);
	opts.value("budget", [&budget](const std::string &v) {
		auto b = parse_int(v, 1, INT32_MAX);
		if (b.ok())
			budget = static_cast<long>(b.value());
		return b.status();
	});
	std::vector<std::string> args;
	Status parsed = opts.parse(argc - 1, argv + 1, &args);
	if (int rc = cli::after_parse(parsed, help, usage); rc != cli::kGoOn)
		return rc;
	// Probes launch pair tests on any node, diagnose reads every node's
	// history and spine-check any job: root or SlurmUser only.
	if (!slurm::is_admin(slurm::default_client(), getuid())) {
		log_error("only root or SlurmUser may run %s", cmd.c_str());
		return 2;
	}
	auto cfg = Config::load(conf.empty() ? default_conf_path() : conf);
	if (!cfg.ok())
		return die(cfg.status().message());
	auto policy = policy_from_config(cfg.value());
	if (!policy.ok())
		return die(policy.status().message());
	auto model = load_fabric_model(cfg.value(),
	                               topo.empty() ? default_topology_path(cfg.value()) : topo);
	if (!model.ok())
		return die(model.status().message());
	const FabricView &view = model.value()->view;
	LocaliseOptions lopt;
	lopt.margin = policy->margin;
	std::vector<std::string> node_list;
	if (!nodes.empty()) {
		auto h = hostlist_expand(nodes);
		if (!h.ok())
			return die("--nodes: " + h.status().message());
		node_list = h.value();
	}

	if (cmd == "diagnose" && args.empty()) {
		std::vector<PairResult> pairs = gather_pairs(policy.value(), time(nullptr));
		if (!pairs_file.empty()) {
			Status st = read_pairs_file(pairs_file, &pairs);
			if (!st.ok())
				return die(st.message());
		}
		Diagnosis d = localise(pairs, view, lopt);
		if (prometheus)
			fputs(diagnosis_metrics(d).c_str(), stdout);
		else
			print_diagnosis(d, json);
		return d.suspects.empty() ? 0 : 1;
	}
	if (cmd == "probe" && args.empty()) {
		ProbePlan plan = plan_probes(view, node_list, static_cast<size_t>(budget));
		if (!json || dry_run)
			fprintf(json ? stderr : stdout,
			        "probe plan: %zu pairs of %zu (%zu full rounds)\n",
			        plan.pairs.size(), plan.all_pairs, plan.rounds);
		if (dry_run) {
			for (const auto &[a, b] : plan.pairs)
				printf("%s %s %s\n", a.c_str(), b.c_str(),
				       view.route(a, b).c_str());
			return 0;
		}
		auto measured = run_probes(cfg.value(), plan);
		if (!measured.ok())
			return die(measured.status().message());
		Status st = record_probe_results(policy.value(), measured.value());
		if (!st.ok())
			return die(st.message());
		std::vector<PairResult> pairs;
		for (const auto &s : measured.value())
			pairs.push_back({s.a, s.b, s.busbw_gbs});
		Diagnosis d = localise(pairs, view, lopt);
		print_diagnosis(d, json);
		return d.suspects.empty() ? 0 : 1;
	}
	if (cmd == "spine-check" && args.size() <= 1 &&
	    (!args.empty() + !nodes.empty() + !leaves.empty()) == 1) {
		std::vector<std::string> ls;
		if (!leaves.empty()) {
			for (size_t pos = 0; pos <= leaves.size();) {
				size_t comma = leaves.find(',', pos);
				std::string l = leaves.substr(
				    pos, comma == std::string::npos ? comma : comma - pos);
				pos = comma == std::string::npos ? leaves.size() + 1 : comma + 1;
				if (view.nodes_of(l).empty())
					return die("--leaves: '" + l +
					           "' is not a leaf switch of topology.conf");
				ls.push_back(l);
			}
		} else {
			if (!args.empty()) {
				auto jn = job_nodes(args[0]);
				if (!jn.ok())
					return die(jn.status().message());
				node_list = jn.value();
			}
			ls = leaves_of(view, node_list);
		}
		auto cuts = single_spine_cuts(view, ls);
		Json j = Json::object();
		Json jl = Json::array(), jc = Json::array();
		for (const auto &l : ls)
			jl.push(l);
		for (const auto &cut : cuts) {
			Json o = Json::object(), apart = Json::array();
			for (const auto &[a, b] : cut.apart)
				apart.push(a + "|" + b);
			o.set("spine", cut.spine).set("apart", apart);
			jc.push(o);
		}
		j.set("leaves", jl).set("cuts", jc);
		if (json)
			printf("%s\n", j.dump(true).c_str());
		else if (cuts.empty())
			printf("leaves %zu: no single spine's loss cuts them apart\n", ls.size());
		for (const auto &cut : cuts)
			if (!json)
				for (const auto &[a, b] : cut.apart)
					printf("%s cuts %s from %s\n",
					       cut.spine.empty() ? "(no common spine)"
					                         : cut.spine.c_str(),
					       a.c_str(), b.c_str());
		return cuts.empty() ? 0 : 1;
	}
	usage(stderr);
	return 2;
}
