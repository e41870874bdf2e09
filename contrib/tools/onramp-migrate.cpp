// onramp-migrate: the command line of the migration driver
// (common/migrate/driver.hpp, where the journaled state machine and its
// states are described; see onrampctl(8) and onramp-checkpoint(7)).
//
//   onramp-migrate migrate (--jobs IDS | --from NODES) --to FEATURE|NODES
//                  [--dry-run] [--grace S] [--ack-timeout S] [--confirm-timeout S]
//                  [--rollback] [--json]
//   onramp-migrate resume [--json] [--prefer-journal local|shared]
//                                   finish what an interrupted run left (on
//                                   this admin host or, with SharedStateDir,
//                                   on the other: db/shared.hpp)
//   onramp-migrate status [JOB] [--json]
//   onramp-migrate job JOB          the job as JSON from libslurm (uid,
//                                   state, nodes, restarts, held, switches,
//                                   checkpoint directory...: for onrampctl's
//                                   shell commands, never scontrol's text)
//
// Exit 0 all done, 1 some migration aborted or failed, 2 bad usage.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "atomic_file.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "db/shared.hpp"
#include "json.hpp"
#include "log.hpp"
#include "number.hpp"
#include "migrate/driver.hpp"
#include "migrate/journal.hpp"
#include "migrate/migrate.hpp"
#include "slurm/client.hpp"
#include "slurm/to_json.hpp"

using namespace onramp;
using migrate::Migration;

namespace {

int usage(FILE *f)
{
	fprintf(f, "usage: onramp-migrate migrate (--jobs IDS | --from NODES) --to FEATURE|NODES\n"
	           "                      [--dry-run] [--grace S] [--ack-timeout S] "
	           "[--confirm-timeout S] [--rollback] [--json]\n"
	           "  IDS: job ids, ARRAYID_TASK for one array task, or an array's id for\n"
	           "  all its running tasks (each moves under its own job id)\n"
	           "       onramp-migrate resume [--json] [--prefer-journal local|shared]\n"
	           "  (migrate takes --prefer-journal too: which journal wins when the copy in\n"
	           "  SharedStateDir is older than this host's)\n"
	           "       onramp-migrate status [JOB] [--json]\n"
	           "       onramp-migrate job JOB\n");
	return f == stdout ? 0 : 2;
}

Json to_json(const Migration &m)
{
	Json o = Json::object();
	o.set("id", m.id).set("job", static_cast<int64_t>(m.job)).set("state", m.state);
	o.set("from", m.src).set("to", m.target).set("generation", m.gen).set("error", m.error);
	return o;
}

// onramp-migrate job JOB: what the shell commands and contrib/demo need of
// a job, read with libslurm (slurm::to_json); the comment is the user's
// text, so it is printed as a string and only the onramp:ckpt= value is
// taken from it, never another field.
int print_job(slurm::SlurmClient &sc, const std::vector<std::string> &rest)
{
	if (rest.size() != 1)
		return usage(stderr);
	auto id = parse_int(rest[0], 1, UINT32_MAX);
	if (!id.ok()) {
		log_error("job: %s", id.status().message().c_str());
		return 2;
	}
	auto j = sc.job(static_cast<uint32_t>(id.value()));
	if (!j.ok() || !j.value()) {
		log_error("job %s: %s", rest[0].c_str(),
		          j.ok() ? "not known to slurmctld" : j.status().message().c_str());
		return 1;
	}
	Json o = slurm::to_json(*j.value());
	o.set("ckpt_dir", migrate::comment_value(j.value()->comment, migrate::kCkptCommentKey));
	printf("%s\n", o.dump(true).c_str());
	return 0;
}

void print(const std::vector<Migration> &ms, bool json, bool table)
{
	if (json) {
		Json a = Json::array();
		for (const auto &m : ms)
			a.push(to_json(m));
		printf("%s\n", a.dump(true).c_str());
		return;
	}
	if (table)
		printf("%-5s %-8s %-12s %-14s %-10s %-5s %s\n", "ID", "JOB", "STATE", "FROM", "TO",
		       "GEN", "ERROR");
	for (const auto &m : ms) {
		if (table)
			printf("%-5lld %-8u %-12s %-14s %-10s %-5lld %s\n",
			       static_cast<long long>(m.id), m.job, m.state.c_str(), m.src.c_str(),
			       m.target.c_str(), static_cast<long long>(m.gen), m.error.c_str());
		else
			printf("job %u: %s%s%s\n", m.job, m.state.c_str(),
			       m.error.empty() ? "" : ": ", m.error.c_str());
	}
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program("onrampctl migrate");
	if (argc < 2)
		return usage(stderr);
	std::string cmd = argv[1];
	if (cmd == "-h" || cmd == "--help")
		return usage(stdout);
	migrate::Request req;
	bool json = false, help = false;
	db::Prefer prefer = db::Prefer::Newest;
	std::vector<std::string> rest;
	auto dur = [](int64_t *out) {
		return [out](const std::string &v) {
			auto d = parse_duration(v);
			if (!d.ok())
				return d.status();
			if (d.value() <= 0)
				return Status::Error("must be positive");
			*out = d.value();
			return Status::Ok();
		};
	};
	cli::Parser opts;
	opts.value("jobs", &req.jobs).value("from", &req.from).value("to", &req.to);
	// --rollback: onrampctl rollback, exempt from MigrateMaxPerJob.
	opts.flag("dry-run", &req.dry_run).flag("rollback", &req.rollback);
	opts.value("grace", dur(&req.grace_s)).value("ack-timeout", dur(&req.ack_s));
	opts.value("confirm-timeout", dur(&req.confirm_s));
	opts.flag("json", &json).flag("help", &help, 'h');
	opts.value("prefer-journal", [&prefer](const std::string &v) {
		auto p = db::parse_prefer(v);
		if (p.ok())
			prefer = p.value();
		return p.status();
	});
	Status parsed = opts.parse(argc - 1, argv + 1, &rest);
	if (int rc = cli::after_parse(parsed, help, usage); rc != cli::kGoOn)
		return rc;
	if (cmd != "status" && cmd != "resume" && cmd != "migrate" && cmd != "job")
		return usage(stderr);
	auto cfg = Config::load(default_conf_path());
	if (!cfg.ok()) {
		log_error("%s", cfg.status().message().c_str());
		return 2;
	}
	std::string statedir = cfg->str("StateDir");
	slurm::set_default_client(
	    slurm::libslurm_client(static_cast<double>(cfg->seconds("MigrateCtldTimeout"))));
	slurm::SlurmClient &sc = slurm::default_client();
	if (cmd != "status" && !slurm::is_admin(sc, getuid())) {
		log_error("only root or SlurmUser may migrate jobs");
		return 2;
	}
	if (cmd == "job")
		return print_job(sc, rest);
	Status st = make_dirs(statedir, 0700);
	if (!st.ok()) {
		log_error("%s", st.message().c_str());
		return 1;
	}
	// Who writes takes the journal's lease on an HA site (SharedStateDir)
	// and starts from the newest copy; status reads this host's journal.
	std::unique_ptr<db::SharedJournal> shared;
	if (cmd != "status") {
		auto sj = db::SharedJournal::attach(cfg.value(), statedir + "/migrate.db", prefer);
		if (!sj.ok()) {
			log_error("%s", sj.status().message().c_str());
			return 1;
		}
		shared = std::move(sj.value());
	}
	auto jr = migrate::Journal::open(statedir + "/migrate.db");
	if (!jr.ok()) {
		log_error("%s", jr.status().message().c_str());
		return 1;
	}
	migrate::Journal &journal = *jr.value();
	if (shared && !(st = shared->follow(journal.db())).ok()) {
		log_error("%s", st.message().c_str());
		return 1;
	}
	if (cmd == "status") {
		std::optional<uint32_t> job;
		if (!rest.empty()) {
			auto id = parse_int(rest[0], 1, UINT32_MAX);
			if (!id.ok()) {
				log_error("status: %s", id.status().message().c_str());
				return 2;
			}
			job = static_cast<uint32_t>(id.value());
		}
		auto all = journal.list(job);
		if (!all.ok()) {
			log_error("%s", all.status().message().c_str());
			return 1;
		}
		print(all.value(), json, true);
		return 0;
	}
	migrate::Clock clock;
	migrate::EnvCrashHook hook;
	migrate::Driver driver(journal, sc, cfg.value(), clock, hook);
	std::vector<Migration> todo;
	bool bad = false;
	if (cmd == "resume") {
		auto act = journal.active();
		if (!act.ok()) {
			log_error("%s", act.status().message().c_str());
			return 1;
		}
		todo = act.value();
		if (todo.empty())
			log_info("nothing to resume");
	} else {
		bool usage_error = false;
		auto plan = driver.plan(req, &usage_error);
		if (!plan.ok()) {
			log_error("%s", plan.status().message().c_str());
			return usage_error ? 2 : 1;
		}
		if (req.dry_run) {
			for (const auto &line : plan->dry_run)
				printf("%s\n", line.c_str());
			return plan->bad ? 1 : 0;
		}
		todo = plan->planned;
		bad = plan->bad;
		if (bad && todo.empty())
			return 1;
	}
	bool ok = driver.drive_all(todo);
	print(todo, json, false);
	return ok ? 0 : 1;
}
