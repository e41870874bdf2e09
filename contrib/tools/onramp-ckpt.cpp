// onramp-ckpt: the checkpoint protocol (onramp-checkpoint(7)) for shell and
// Python jobs.
//
//   onramp-ckpt begin  [--dir DIR]                     mkdir the next generation, print its path
//   onramp-ckpt commit [--dir DIR] [--generation G] --step N SHARD...
//   onramp-ckpt verify [--dir DIR] [--threads N] [GENERATION]
//   onramp-ckpt latest [--dir DIR] [--threads N]      print "GENERATION STEP MANIFEST"
//   onramp-ckpt prune  [--dir DIR] [--keep DURATION]  retention (default: RollbackWindow)
// DIR defaults to $ONRAMP_CKPT_DIR. commit without --generation commits the
// newest generation directory that has no manifest yet. Exit 0 ok, 1 the
// checkpoint is bad or missing, 2 bad usage.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <chrono>

#include "atomic_file.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "log.hpp"
#include "migrate/manifest.hpp"

using namespace onramp;

static int usage(FILE *f)
{
	fprintf(f, "usage: onramp-ckpt begin [--dir DIR]\n"
	           "       onramp-ckpt commit [--dir DIR] [--generation G] --step N SHARD...\n"
	           "       onramp-ckpt verify [--dir DIR] [--threads N] [GENERATION]\n"
	           "       onramp-ckpt latest [--dir DIR] [--threads N]\n"
	           "       onramp-ckpt prune [--dir DIR] [--keep DURATION]\n"
	           "DIR defaults to $ONRAMP_CKPT_DIR.\n");
	return f == stdout ? 0 : 2;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return false;
	char *end = nullptr;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || s[0] == '-')
		return false;
	*out = v;
	return true;
}

// CheckpointVerifyMaxGiB and CheckpointVerifyTimeout of onramp.conf when
// there is one (a job's node may have none: the defaults then).
static ckpt::VerifyLimits limits()
{
	auto cfg = Config::load(default_conf_path());
	return cfg.ok() ? ckpt::verify_limits(cfg.value()) : ckpt::VerifyLimits();
}

int main(int argc, char **argv)
{
	log_set_program("onramp-ckpt");
	if (argc < 2)
		return usage(stderr);
	std::string cmd = argv[1];
	if (cmd == "-h" || cmd == "--help")
		return usage(stdout);
	// Root's verification of a user's checkpoint and its looks into his
	// directory, in the child that became the user (not for people: see
	// ckpt::verify_child_main and ckpt::look_child_main).
	if (cmd == "verify-child")
		return ckpt::verify_child_main(std::vector<std::string>(argv + 2, argv + argc));
	if (cmd == "look-child")
		return ckpt::look_child_main(std::vector<std::string>(argv + 2, argv + argc));
	const char *env = getenv("ONRAMP_CKPT_DIR");
	std::string dir = env ? env : "";
	uint64_t gen = 0, step = 0, threads = 0;
	bool have_gen = false, have_step = false, help = false;
	int64_t keep = -1;
	std::vector<std::string> args;
	// A number option: "what" says which numbers it takes.
	auto number = [](uint64_t *out, bool *given, uint64_t max, const char *what) {
		return [=](const std::string &v) {
			if (!parse_u64(v.c_str(), out) || *out > max)
				return Status::Error(std::string("needs ") + what);
			if (given)
				*given = true;
			return Status::Ok();
		};
	};
	cli::Parser opts;
	opts.value("dir", &dir).flag("help", &help, 'h');
	opts.value("generation", number(&gen, &have_gen, UINT64_MAX, "a number"));
	opts.value("step", number(&step, &have_step, INT64_MAX, "a non-negative number"));
	opts.value("threads", number(&threads, nullptr, 1024, "a number up to 1024"));
	opts.value("keep", [&keep](const std::string &v) {
		auto d = parse_duration(v);
		if (!d.ok())
			return d.status();
		keep = d.value();
		return Status::Ok();
	});
	Status parsed = opts.parse(argc - 1, argv + 1, &args);
	if (int rc = cli::after_parse(parsed, help, usage); rc != cli::kGoOn)
		return rc;
	if (dir.empty()) {
		log_error("no checkpoint directory: give --dir or set ONRAMP_CKPT_DIR");
		return 2;
	}
	unsigned th = static_cast<unsigned>(threads);

	if (cmd == "begin") {
		uint64_t g = ckpt::next_generation(dir);
		Status st = make_dirs(ckpt::generation_dir(dir, g));
		if (!st.ok()) {
			log_error("%s", st.message().c_str());
			return 1;
		}
		printf("%s\n", ckpt::generation_dir(dir, g).c_str());
		return 0;
	}
	if (cmd == "commit") {
		if (!have_step || args.empty()) {
			log_error("commit needs --step N and at least one shard");
			return 2;
		}
		if (!have_gen) {
			for (uint64_t g : ckpt::list_generations(dir)) {
				struct stat sb;
				if (stat(ckpt::manifest_path(dir, g).c_str(), &sb) != 0) {
					gen = g;
					have_gen = true;
				}
				break;
			}
			if (!have_gen) {
				log_error("%s: no uncommitted generation (run 'onramp-ckpt begin' "
				          "first or give --generation)",
				          dir.c_str());
				return 2;
			}
		}
		auto m = ckpt::commit(dir, gen, static_cast<int64_t>(step), args, th);
		if (!m.ok()) {
			log_error("%s", m.status().message().c_str());
			return 1;
		}
		printf("%s\n", ckpt::manifest_path(dir, gen).c_str());
		return 0;
	}
	if (cmd == "verify") {
		if (args.size() > 1)
			return usage(stderr);
		if (args.empty()) {
			auto g = ckpt::list_generations(dir);
			if (g.empty()) {
				log_error("%s: no checkpoint generation", dir.c_str());
				return 1;
			}
			gen = g.front();
		} else if (!parse_u64(args[0].c_str(), &gen)) {
			log_error("'%s' is not a generation number", args[0].c_str());
			return 2;
		}
		auto m = ckpt::verify(dir, gen, limits(), th);
		if (!m.ok()) {
			log_error("%s", m.status().message().c_str());
			return 1;
		}
		printf("generation %llu step %lld: %zu shards ok\n",
		       static_cast<unsigned long long>(gen), static_cast<long long>(m->step),
		       m->shards.size());
		return 0;
	}
	if (cmd == "latest") {
		std::vector<std::string> skipped;
		auto m = ckpt::latest(dir, limits(), &skipped, th);
		for (const auto &s : skipped)
			log_warn("skipped: %s", s.c_str());
		if (!m.ok()) {
			log_error("%s", m.status().message().c_str());
			return 1;
		}
		printf("%llu %lld %s\n", static_cast<unsigned long long>(m->generation),
		       static_cast<long long>(m->step),
		       ckpt::manifest_path(dir, m->generation).c_str());
		return 0;
	}
	if (cmd == "prune") {
		if (keep < 0) {
			auto cfg = Config::load(default_conf_path());
			keep = cfg.ok() ? cfg->seconds("RollbackWindow") : 7200;
		}
		auto r = ckpt::prune(dir, keep,
		                     std::chrono::duration_cast<std::chrono::milliseconds>(
		                         std::chrono::system_clock::now().time_since_epoch())
		                         .count(),
		                     th);
		if (!r.ok()) {
			log_error("%s", r.status().message().c_str());
			return 1;
		}
		for (uint64_t g : r.value())
			printf("removed generation %llu\n", static_cast<unsigned long long>(g));
		return 0;
	}
	log_error("unknown command '%s'", cmd.c_str());
	return usage(stderr);
}
