// onramp-campaign: expansion campaigns for onrampctl expand: options,
// the driver (common/campaign/driver.hpp), text or --json out. Every
// journal step is one transaction on <StateDir>/onramp.db; the command can
// be killed at any point and run again. The commands (onrampctl-expand(8)):
//   plan --nodes HOSTLIST [--fraction F] [--min-pass R] --boot-timeout S
//   run --onrampctl F --admit F --smoke-job F [--admit-timeout S]
//       [--kick-after S] [--poll S]: the campaign from where its journal
//       stands (waves, pairs, smoke jobs); exit 3 when it paused
//   wave [--json]: the first wave not passed, its nodes and their states
//   open-wave --wave K
//   status|report [--json] [--live] [--exporter ok|WHY] [--budget S]
//       (no --id: all campaigns; --live: read slurmctld through libslurm
//       for the platform and network layers)
//   simulate --nodes N --racks R [...] (simulate --help)
//   nodes HOSTLIST [--json] [--offline]: one a line or {nodes, hostlist, unknown}
// All but status, report and simulate take --id ID; --conf F, --db F,
// --topology F (default $ONRAMP_TOPOLOGY_CONF, else beside onramp.conf) and
// --prefer-journal local|shared come first. With SharedStateDir, plan, run,
// wave and open-wave take the journal's lease and start from the newest
// copy (db/shared.hpp); status and report read this host's journal. Exit 0 ok, 1 error, 2 bad
// input, 3 paused.
#include <cstdio>
#include <cstring>
#include <string>

#include "atomic_file.hpp"
#include "cli.hpp"
#include "campaign/driver.hpp"
#include "campaign/report.hpp"
#include "config.hpp"
#include "db/shared.hpp"
#include "log.hpp"
#include "number.hpp"

using namespace onramp;
using namespace onramp::campaign;

namespace {

enum { kOk = 0, kError = 1, kRefused = 2, kBelowRate = 3 };

struct Args {
	std::string cmd, conf, db, id, nodes, onrampctl, admit, smoke_job;
	std::string lock; // --lock: the campaign's lock file (onrampctl expand)
	ReportInputs report;
	double fraction = -1, min_pass = -1, poll = 1;
	int64_t boot_timeout = -1, admit_timeout = 1800, kick_after = 60;
	int64_t wave = 0;
	bool json = false;
	db::Prefer prefer = db::Prefer::Newest;
};

int refuse(const std::string &msg)
{
	log_error("%s", msg.c_str());
	return kRefused;
}
int fail(const Status &st)
{
	log_error("%s", st.message().c_str());
	return kError;
}
int cmd_simulate(int argc, char **argv)
{
	SimParams p;
	bool json = false, help = false;
	cli::Parser opts;
	opts.flag("json", &json).flag("help", &help, 'h');
	for (const char *o : {"nodes", "racks", "wave-fraction", "fraction", "min-pass-rate",
	                      "min-pass", "failure-rate", "boot-timeout", "fix-minutes", "seed",
	                      "reboot-minutes", "test-minutes"})
		opts.value(o, [&p, o](const std::string &v) {
			return set_sim_option(&p, std::string("--") + o, v);
		});
	std::vector<std::string> rest;
	Status parsed = opts.parse(argc, argv, &rest); // argv[0]: "simulate"
	if (parsed.ok() && !rest.empty())
		parsed = Status::Error("simulate: unknown option '" + rest[0] + "'");
	if (!parsed.ok())
		return refuse(parsed.message());
	if (help) {
		printf("usage: onrampctl simulate --nodes N --racks R [--wave-fraction F] "
		       "[--min-pass-rate R]\n"
		       "         [--reboot-minutes DIST] [--test-minutes DIST] "
		       "[--failure-rate P]\n"
		       "         [--boot-timeout S] [--fix-minutes M] [--seed S] [--json]\n"
		       "DIST: C | const(C) | normal(MEAN,SD) | uniform(A,B), in minutes\n");
		return kOk;
	}
	if (p.nodes == 0 || p.racks == 0)
		return refuse("simulate: --nodes and --racks are required (positive integers)");
	auto r = simulate(p);
	if (!r.ok())
		return refuse(r.status().message());
	print_simulation(p, r.value(), json);
	return r->stopped ? kBelowRate : kOk;
}

int cmd_nodes(int argc, char **argv)
{
	bool json = false, offline = false;
	cli::Parser opts;
	opts.flag("json", &json).flag("offline", &offline);
	std::vector<std::string> rest;
	Status st = opts.parse(argc, argv, &rest); // argv[0]: "nodes"
	if (st.ok() && rest.size() != 1)
		st = Status::Error("usage: onramp-campaign nodes HOSTLIST [--json] [--offline]");
	auto r = st.ok() ? slurm::expand_nodes(rest[0]) : Result<slurm::NodeSet>(st);
	if (!r.ok())
		return refuse(r.status().message());
	if (!offline && !(st = slurm::find_unknown(slurm::default_client(), &r.value())).ok())
		return fail(st);
	Json o = Json::object().set("nodes", Json::array(r->nodes)).set("hostlist", r->hostlist);
	if (json)
		printf("%s\n", o.set("unknown", Json::array(r->unknown)).dump().c_str());
	for (size_t i = 0; !json && i < r->nodes.size(); i++)
		printf("%s\n", r->nodes[i].c_str());
	return kOk;
}

int cmd_plan(Driver &d, const Args &a, const Config &cfg)
{
	auto hosts = slurm::expand_nodes(a.nodes);
	if (!hosts.ok())
		return refuse(hosts.status().message());
	std::map<std::string, std::string> leaf_of;
	std::map<std::string, int> sizes;
	Status st = load_racks(a.report.topology, cfg, &leaf_of, &sizes);
	if (!st.ok())
		return fail(st);
	PlanRequest r{a.id, hosts->nodes, a.fraction, a.min_pass, a.boot_timeout};
	bool refused = false;
	auto out = d.plan(r, leaf_of, sizes, &refused);
	if (!out.ok())
		return refused ? refuse(out.status().message()) : fail(out.status());
	printf("%s\n", out->c_str());
	return kOk;
}

int cmd_wave(Driver &d, const Args &a)
{
	auto w = d.next_wave(a.id);
	if (!w.ok())
		return fail(w.status());
	if (w->done) // "done" or {"done": true}
		return printf(a.json ? "{\"done\": true}\n" : "done\n") < 0 ? kError : kOk;
	Json list = Json::array();
	std::string text = strprintf("wave %d\n", w->wave);
	for (const auto &n : w->nodes) {
		const int64_t since = n.times.count(n.state) ? n.times.at(n.state) : 0;
		list.push(
		    Json::object().set("node", n.node).set("state", n.state).set("since", since));
		text += strprintf("%s %s %lld\n", n.node.c_str(), n.state.c_str(),
		                  static_cast<long long>(since));
	}
	if (a.json)
		text = Json::object().set("wave", w->wave).set("nodes", list).dump() + "\n";
	fputs(text.c_str(), stdout);
	return kOk;
}

int cmd_run(Journal &j, const Args &a, const Config &cfg)
{
	auto &slurm = slurm::default_client();
	Settings s = settings_from(cfg, slurm);
	s.admit_timeout_s = a.admit_timeout;
	s.kick_after_s = a.kick_after;
	s.poll_s = a.poll;
	Validation v = validation_from(cfg, a.admit, a.smoke_job);
	// StateDir is SlurmUser's: expand/ may be a symlink it put there.
	Status st = make_dir_nofollow(v.out_dir, 0755);
	if (!st.ok())
		return fail(st);
	SpawnAdmission adm(a.onrampctl, a.admit_timeout, v.out_dir + "/admit.log",
	                   cfg.integer("LogMaxBytes"));
	Clock clock;
	CrashHook hook;
	Driver d(j, slurm, adm, s, clock, hook);
	std::string why;
	auto r = d.run(a.id, v, &why);
	if (!r.ok())
		return fail(r.status());
	if (r.value() == Outcome::Paused) // exit 3, why printed
		printf("%s\n", why.c_str());
	return r.value() == Outcome::Paused ? kBelowRate : kOk;
}

int cmd_status(Journal &j, const Args &a, const Config &cfg)
{
	bool unknown = false;
	auto r = status_report(j, a.id, a.report, cfg, &unknown);
	if (!r.ok())
		return unknown ? refuse(r.status().message()) : fail(r.status());
	if (a.json)
		printf("%s\n", r->dump(true).c_str());
	else if (a.cmd == "report")
		print_report(r.value());
	else
		print_status(r.value());
	return kOk;
}

int usage(FILE *f)
{
	fprintf(f, "usage: onramp-campaign [--conf F] [--db F] [--topology F] COMMAND [--id ID] "
	           "...\n(see onrampctl-expand(8))\n");
	return f == stdout ? kOk : kRefused;
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program("onramp-campaign");
	if (argc > 1 && strcmp(argv[1], "simulate") == 0)
		return cmd_simulate(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "nodes") == 0)
		return cmd_nodes(argc - 1, argv + 1);
	Args a;
	a.conf = default_conf_path();
	bool live = false, help = false;
	cli::Parser opts;
	opts.value("conf", &a.conf).value("db", &a.db).value("topology", &a.report.topology);
	opts.value("id", &a.id).value("nodes", &a.nodes).value("exporter", &a.report.exporter);
	opts.value("onrampctl", &a.onrampctl).value("admit", &a.admit);
	opts.value("smoke-job", &a.smoke_job).value("lock", &a.lock);
	opts.value("prefer-journal", [&a](const std::string &v) {
		auto p = db::parse_prefer(v);
		if (p.ok())
			a.prefer = p.value();
		return p.status();
	});
	opts.flag("json", &a.json).flag("live", &live).flag("help", &help, 'h');
	// Strict numbers: "--wave 1.9" or "--budget 12abc" are refused, never
	// truncated to another number.
	auto integer = [](int64_t *out, int64_t lo, int64_t hi) {
		return [=](const std::string &v) {
			auto r = parse_int(v, lo, hi);
			if (r.ok())
				*out = r.value();
			return r.status();
		};
	};
	auto number = [](double *out) {
		return [=](const std::string &v) {
			auto r = parse_number(v);
			if (r.ok())
				*out = r.value();
			return r.status();
		};
	};
	opts.value("boot-timeout", integer(&a.boot_timeout, INT64_MIN, INT64_MAX));
	opts.value("budget", integer(&a.report.budget, INT64_MIN, INT64_MAX));
	opts.value("admit-timeout", integer(&a.admit_timeout, 1, INT64_MAX));
	opts.value("kick-after", integer(&a.kick_after, 0, INT64_MAX));
	opts.value("wave", integer(&a.wave, 0, INT32_MAX));
	opts.value("fraction", number(&a.fraction)).value("min-pass", number(&a.min_pass));
	opts.value("poll", number(&a.poll));
	std::vector<std::string> rest;
	Status parsed = opts.parse(argc, argv, &rest);
	if (int rc = cli::after_parse(parsed, help, usage, kRefused); rc != cli::kGoOn)
		return rc;
	if (rest.size() > 1)
		return refuse("unexpected argument '" + rest[1] + "'");
	if (!rest.empty())
		a.cmd = rest[0];
	if (live)
		a.report.slurm = &slurm::default_client();
	if (a.cmd.empty())
		return usage(stderr);
	if (a.id.empty() && a.cmd != "status" && a.cmd != "report")
		return refuse(a.cmd + ": --id is required");
	// One campaign, one driver: onrampctl expand's lock, in
	// StateDir/locks (SlurmUser's in an unprivileged setup), taken here
	// without following a symlink or blocking on a FIFO planted there, on
	// a descriptor no admission started by this run inherits.
	std::unique_ptr<FileLock> lock;
	if (!a.lock.empty()) {
		lock = std::make_unique<FileLock>(a.lock, false);
		if (!lock->refused().empty())
			return fail(Status::Error("cannot open the lock file: " + lock->refused()));
		if (!lock->held())
			return refuse("campaign " + a.id +
			              " is being run by another onrampctl expand");
	}
	auto cfg = Config::load(a.conf);
	if (!cfg.ok())
		return fail(cfg.status());
	if (a.fraction < 0)
		a.fraction = cfg->number("MaxWaveFraction");
	if (a.min_pass < 0)
		a.min_pass = cfg->number("MinWavePassRate");
	if (a.db.empty()) {
		std::string dir = cfg->str("StateDir");
		Status st = make_dirs(dir, 0755);
		if (!st.ok())
			return fail(st);
		a.db = dir + "/onramp.db";
	}
	bool reads = a.cmd == "status" || a.cmd == "report";
	std::unique_ptr<db::SharedJournal> shared;
	if (!reads) {
		auto sj = db::SharedJournal::attach(cfg.value(), a.db, a.prefer);
		if (!sj.ok())
			return fail(sj.status());
		shared = std::move(sj.value());
	}
	auto jr = Journal::open(a.db);
	if (!jr.ok())
		return fail(jr.status());
	Journal &j = *jr.value();
	if (shared) {
		Status st = shared->follow(j.db());
		if (!st.ok())
			return fail(st);
	}
	if (reads)
		return cmd_status(j, a, cfg.value());
	if (a.cmd == "run")
		return a.onrampctl.empty() || a.admit.empty() || a.smoke_job.empty()
		           ? refuse("run: --onrampctl, --admit and --smoke-job are required")
		           : cmd_run(j, a, cfg.value());
	if (a.cmd == "open-wave") {
		Status st = j.set_wave(a.id, static_cast<int>(a.wave), "open",
		                       static_cast<int64_t>(time(nullptr)));
		return st.ok() ? kOk : fail(st);
	}
	if (a.cmd != "plan" && a.cmd != "wave")
		return refuse("unknown command '" + a.cmd + "'");
	// plan and wave ask Slurm nothing: a driver that starts no admission.
	struct NoAdmission : Admission {
		void start(const std::vector<std::string> &) override {}
	} none;
	Settings s;
	Clock clock;
	CrashHook hook;
	Driver d(j, slurm::default_client(), none, s, clock, hook);
	return a.cmd == "plan" ? cmd_plan(d, a, cfg.value()) : cmd_wave(d, a);
}
