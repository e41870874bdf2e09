// onramp-rewire: the model side of "onrampctl rewire" and "onrampctl
// topology check": validates plans against the live topology.conf and
// fabric file, changes window state crash-safely, answers fault-domain
// questions, and reads and acts on slurmctld through libslurm
// (common/rewire/live.hpp). The shell side (contrib/libexec/onrampctl-rewire)
// orchestrates the steps.
//
//   onramp-rewire [--conf F] validate [PLAN]       exit 0, or 2 naming the item
//   onramp-rewire [--conf F] install PLAN          validate, then write RewirePlan
//   onramp-rewire [--conf F] set ID STATE          planned|active|done
//   onramp-rewire [--conf F] stage ID N            record the ECMP stage index
//   onramp-rewire [--conf F] status                one line per window
//   onramp-rewire [--conf F] cut ID [--json]       the leaves ID cuts, "leaf nodes";
//                                                  --json: {"window", "leaves": [{"leaf",
//                                                  "nodes"}]} for the shell (jq)
//   onramp-rewire [--conf F] check [--fail SW...]  fault domains (exit 1: a single
//                                                  spine failure cuts a leaf)
//   onramp-rewire [--conf F] derive [LEAF...]      print topology.conf for stock
//                                                  topology/tree with LEAF... cut
//   onramp-rewire [--conf F] across ID             "JOB NODES": running multi-leaf
//                                                  jobs on the leaves ID cuts
//   onramp-rewire [--conf F] confirm ID cut|whole  wait (30 s) until slurmctld's
//                                                  switch table shows it
//   onramp-rewire [--conf F] settle                wait (30 s) until job_submit/onramp
//                                                  has RewirePlan in force
//   onramp-rewire [--conf F] release ID            release the jobs held for ID
//                                                  (marked in AdminComment); their ids
//   onramp-rewire [--conf F] sync-topology         Slurm 24.05+: the topology.conf
//                                                  Slurm reads follows the plan (the
//                                                  active window's derived file, else
//                                                  the admin's); before 24.05 nothing
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <slurm/slurm_version.h>

#include "atomic_file.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "hostlist.hpp"
#include "json.hpp"
#include "log.hpp"
#include "rewire/live.hpp"
#include "rewire/window.hpp"

using namespace onramp;

namespace {

constexpr int kBadInput = 2;

struct Ctx {
	Config cfg;
	TopologyConf topo;
	std::shared_ptr<const Fabric> fabric;
};

int fail(const std::string &msg)
{
	log_error("%s", msg.c_str());
	return kBadInput;
}

Result<Ctx> load_ctx(const std::string &conf)
{
	auto cfg = Config::load(conf);
	if (!cfg.ok())
		return cfg.status();
	Ctx c{cfg.value(), {}, nullptr};
	auto topo = topology_load(default_topology_path(c.cfg));
	if (!topo.ok())
		return topo.status();
	c.topo = topo.value();
	if (c.cfg.is_set("FabricFile")) {
		auto f = fabric_load(c.cfg.str("FabricFile"), c.topo);
		if (!f.ok())
			return f.status();
		c.fabric = std::make_shared<const Fabric>(f.value());
	}
	return c;
}

Result<Plan> live_plan(const Ctx &c)
{
	if (!c.cfg.is_set("RewirePlan"))
		return Status::Error(c.cfg.origin() + ": RewirePlan is not set");
	return plan_load(c.cfg.str("RewirePlan"), c.topo, c.fabric.get());
}

Status write_plan(const Ctx &c, const Plan &p)
{
	Status st = plan_validate(p, c.topo, c.fabric.get());
	if (!st.ok())
		return st;
	return write_file_atomic(c.cfg.str("RewirePlan"), plan_dump(p) + "\n", 0644);
}

int cmd_check(const Ctx &c, const std::vector<std::string> &fails)
{
	auto nodes = topology_leaf_nodes(c.topo);
	if (!fails.empty()) {
		auto sp = fault_spines(c.topo, c.fabric.get());
		for (const auto &f : fails)
			if (c.topo.find(f) < 0 && std::find(sp.begin(), sp.end(), f) == sp.end())
				return fail("unknown switch '" + f + "' (neither in " +
				            c.topo.origin + " nor a spine of the fabric)");
		for (const auto &l :
		     leaves_cut_by(c.topo, c.fabric.get(), {fails.begin(), fails.end()}))
			printf("%s %s\n", l.c_str(), nodes[l].c_str());
		return 0;
	}
	int rc = 0;
	for (const auto &sp : fault_spines(c.topo, c.fabric.get())) {
		auto cut = leaves_cut_by(c.topo, c.fabric.get(), {sp});
		for (const auto &l : cut)
			printf("%s %s %s\n", sp.c_str(), l.c_str(), nodes[l].c_str());
		if (!cut.empty())
			rc = 1;
	}
	return rc;
}

// VERSION: from 24.05 the switch table is the topology plugin's own and
// topology/onramp is not built; stock topology/tree reads topology.conf, so a
// window's cut is the file onramp derives (README, "Slurm versions"). Before,
// topology/onramp cuts inside slurmctld from the plan and the file stays the
// admin's.
constexpr bool kTreeReadsDerivedFile = SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0);

// The file Slurm reads follows the plan (topology_sync_with_plan).
int cmd_sync_topology(const Ctx &c)
{
	if (!kTreeReadsDerivedFile)
		return 0;
	Status st = topology_sync_with_plan(c.cfg, c.topo, c.fabric.get(),
	                                    topology_path_beside(c.cfg.origin()));
	return st.ok() ? 0 : fail(st.message());
}

int usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: onramp-rewire [--conf FILE] validate [PLAN] | install PLAN | set ID "
	    "planned|active|done | stage ID N | status | cut ID [--json] | check [--fail SW...] |\n"
	    "  derive [LEAF...] | sync-topology | across ID | confirm ID cut|whole | settle |\n"
	    "  release ID\n");
	return f == stdout ? 0 : kBadInput;
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program("onramp-rewire");
	std::string conf = default_conf_path();
	bool json = false, fail_given = false, help = false;
	cli::Parser opts;
	// --fail is a flag: the switches that fail are the arguments after it.
	opts.value("conf", &conf).flag("json", &json).flag("fail", &fail_given);
	opts.flag("help", &help, 'h');
	std::vector<std::string> args;
	Status parsed = opts.parse(argc, argv, &args);
	if (int rc = cli::after_parse(parsed, help, usage, kBadInput); rc != cli::kGoOn)
		return rc;
	if (args.empty())
		return usage(stderr);
	std::string cmd = args.front();
	args.erase(args.begin());
	if ((json && cmd != "cut" && cmd != "status") || (fail_given && cmd != "check"))
		return usage(stderr);
	auto ctx = load_ctx(conf);
	if (!ctx.ok())
		return fail(ctx.status().message());
	const Ctx &c = ctx.value();

	if (cmd == "validate" || cmd == "install") {
		if (cmd == "install" && args.size() != 1)
			return usage(stderr);
		auto p = args.empty() ? live_plan(c) : plan_load(args[0], c.topo, c.fabric.get());
		if (!p.ok())
			return fail(p.status().message());
		if (cmd == "install") {
			if (!c.cfg.is_set("RewirePlan"))
				return fail(c.cfg.origin() + ": RewirePlan is not set");
			Status st = write_plan(c, p.value());
			if (!st.ok())
				return fail(st.message());
		}
		return 0;
	}
	if (cmd == "check")
		return args.empty() || fail_given ? cmd_check(c, args) : usage(stderr);
	if (cmd == "derive") {
		auto d = topology_derive(c.topo, std::set<std::string>(args.begin(), args.end()));
		if (!d.ok())
			return fail(d.status().message());
		fputs(d->c_str(), stdout);
		return 0;
	}
	if (cmd == "sync-topology")
		return args.empty() ? cmd_sync_topology(c) : usage(stderr);
	auto plan = live_plan(c);
	if (!plan.ok())
		return fail(plan.status().message());
	Plan p = plan.value();
	if (cmd == "status") {
		for (const auto &w : p.windows)
			printf("%s\n", window_status_line(w).c_str());
		return 0;
	}
	if (cmd == "settle") {
		if (!args.empty())
			return usage(stderr);
		std::string note;
		Status st = rewire_settle_submit(slurm::default_client(), c.cfg.str("RewirePlan"),
		                                 RewireWait{60, 0.5, nullptr}, &note);
		if (!note.empty())
			log_warn("%s", note.c_str());
		return st.ok() ? 0 : fail(st.message());
	}
	if (args.empty())
		return usage(stderr);
	Window *w = p.find(args[0]);
	if (!w)
		return fail(p.origin + ": no window '" + args[0] + "'");
	if (cmd == "across" && args.size() == 1) {
		auto jobs = rewire_jobs_across(slurm::default_client(), c.topo,
		                               window_cut(*w, c.topo, c.fabric.get()));
		if (!jobs.ok())
			return fail(jobs.status().message());
		for (const auto &j : jobs.value())
			printf("%u %s\n", j.id, j.nodes.c_str());
		return 0;
	}
	if (cmd == "confirm" && args.size() == 2 && (args[1] == "cut" || args[1] == "whole")) {
		Status st = rewire_confirm_table(slurm::default_client(), w->id,
		                                 window_cut(*w, c.topo, c.fabric.get()),
		                                 args[1] == "cut", RewireWait{});
		return st.ok() ? 0 : fail(st.message());
	}
	if (cmd == "release" && args.size() == 1) {
		std::vector<std::string> failed;
		auto ids = rewire_release_held(slurm::default_client(), w->id, &failed);
		if (!ids.ok())
			return fail(ids.status().message());
		std::string line;
		for (uint32_t id : ids.value())
			line += (line.empty() ? "" : " ") + std::to_string(id);
		if (!line.empty())
			printf("%s\n", line.c_str());
		return failed.empty() ? 0 : kBadInput;
	}
	if (cmd == "cut") {
		if (args.size() != 1)
			return usage(stderr);
		auto nodes = topology_leaf_nodes(c.topo);
		Json leaves = Json::array();
		for (const auto &l : window_cut(*w, c.topo, c.fabric.get())) {
			if (!json)
				printf("%s %s\n", l.c_str(), nodes[l].c_str());
			leaves.push(Json::object().set("leaf", l).set("nodes", nodes[l]));
		}
		if (json)
			printf("%s\n", Json::object()
			                   .set("window", w->id)
			                   .set("leaves", leaves)
			                   .dump(false)
			                   .c_str());
		return 0;
	}
	if (cmd == "set" && args.size() == 2) {
		if (!window_state_parse(args[1], &w->state))
			return fail("state '" + args[1] + "' is not planned, active or done");
	} else if (cmd == "stage" && args.size() == 2) {
		Status st = window_set_stage(w, args[1]);
		if (!st.ok())
			return fail(st.message());
	} else {
		return usage(stderr);
	}
	Status st = write_plan(c, p);
	if (!st.ok())
		return fail(st.message());
	return 0;
}
