// onramp-config: validate onramp.conf and print effective values, for
// onramp's shell tools (one parser for everything: libonramp's).
//
//   onramp-config [--conf FILE] [--node NAME] [--check] [--seconds] [KEY...]
// Prints one value per line for each KEY (defaults applied, %n expanded
// when --node is given; --seconds: durations in seconds); --check only
// validates, and also refuses a StateDir on a network filesystem (its
// SQLite journals run in WAL mode; db::check_journal_dir). Exit 0 ok, 2 bad
// input or unsafe placement.
//   onramp-config --require-admin WHAT
// The admin check of onramp's shell tools: exit 0 when the caller is root
// or SlurmUser (from slurmctld's configuration), else 2 with "only root or
// SlurmUser (NAME) may WHAT" on stderr.
//   onramp-config [--conf FILE] --prepare-log FILE
// For a log a shell tool appends to (trigger.log): FILE becomes FILE.1 past
// LogMaxBytes, is created 0640 when missing and tightened to it (open_log:
// no symlink followed); exit 2, naming it, when it cannot be.
//   onramp-config --slurm [--json] [--timeout S]
// slurmctld's configuration values onramp's shell tools need, as one JSON
// object (slurm::to_json(CtlConf): cluster_name, slurm_user {name, uid},
// ...), read with libslurm; exit 1 when slurmctld has not answered within S
// seconds (default 0: asked once).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <pwd.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "admin.hpp"
#include "atomic_file.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "db/db.hpp"
#include "db/shared.hpp"
#include "log.hpp"
#include "slurm/client.hpp"
#include "slurm/to_json.hpp"

using namespace onramp;

static int usage(FILE *f)
{
	fprintf(f,
	        "usage: onramp-config [--conf FILE] [--node NAME] [--check] [--seconds] [--list] "
	        "[KEY...]\n"
	        "       onramp-config [--conf FILE] --prepare-log FILE\n"
	        "       onramp-config --require-admin WHAT\n"
	        "       onramp-config --slurm [--json] [--timeout S]\n");
	return f == stdout ? 0 : 2;
}

// SlurmUser's uid from slurmctld's configuration (root when it cannot be
// read: then only root passes).
static int require_admin(const std::string &what)
{
	if (is_slurm_admin(getuid(), 0))
		return 0;     // root: no need to ask slurmctld
	uid_t slurm_user = 0; // unknown: then only root passes
	std::string name = "unknown: slurmctld's configuration could not be read";
	auto su = slurm::default_client().slurm_user_uid();
	if (su.ok()) {
		slurm_user = su.value();
		struct passwd *pw = getpwuid(slurm_user);
		name = pw ? pw->pw_name : std::to_string(slurm_user);
	}
	if (is_slurm_admin(getuid(), slurm_user))
		return 0;
	log_error("only root or SlurmUser (%s) may %s", name.c_str(), what.c_str());
	return 2;
}

// onramp-config --slurm: slurmctld's configuration as JSON.
static int print_slurm(double timeout_s)
{
	auto conf = slurm::libslurm_client(timeout_s)->ctl_conf();
	if (!conf.ok()) {
		log_error("%s", conf.status().message().c_str());
		return 1;
	}
	printf("%s\n", slurm::to_json(conf.value()).dump(true).c_str());
	return 0;
}

// --check of SharedStateDir: root's directory, not StateDir, no group or
// other writer (an error); on a local filesystem while slurmctld has a
// backup (the other admin host cannot read it), a warning, and when
// slurmctld cannot tell, a note that this part was not checked.
static bool check_shared_state(const Config &cfg, double timeout_s)
{
	std::string dir = cfg.str("SharedStateDir");
	std::string key = cfg.where("SharedStateDir");
	Status st = db::check_shared_dir(dir, 0);
	if (st.ok() && dir == cfg.str("StateDir"))
		st = Status::Error(dir + ": the same directory as StateDir (the local journals)");
	if (!st.ok()) {
		log_error("%s: %s", key.c_str(), st.message().c_str());
		return false;
	}
	struct statfs sf;
	if (statfs(dir.c_str(), &sf) != 0) {
		log_error("%s: %s: cannot tell its filesystem: %s", key.c_str(), dir.c_str(),
		          strerror(errno));
		return false;
	}
	if (db::network_fs_name(static_cast<long>(sf.f_type)))
		return true;
	auto conf = slurm::libslurm_client(timeout_s)->ctl_conf();
	if (!conf.ok())
		log_warn("%s: %s is on a local filesystem; whether slurmctld has a backup "
		         "(SlurmctldHost twice) was not checked: %s",
		         key.c_str(), dir.c_str(), conf.status().message().c_str());
	else if (conf->controllers > 1)
		log_warn(
		    "%s: %s is on a local filesystem while slurmctld has %u SlurmctldHost: the "
		    "other admin host cannot read it; put it on the shared storage beside "
		    "StateSaveLocation (%s)",
		    key.c_str(), dir.c_str(), conf->controllers, conf->state_save_location.c_str());
	return true;
}

int main(int argc, char **argv)
{
	log_set_program("onramp-config");
	std::string path = default_conf_path(), node;
	std::string admin_what, prepare_log;
	bool admin = false, list = false, seconds = false, check = false, help = false;
	bool slurm_conf = false, json = false; // --json: --slurm's one output form
	double timeout_s = 0;
	std::vector<std::string> keys;
	cli::Parser opts;
	opts.value("require-admin", [&](const std::string &v) {
		admin = true;
		admin_what = v;
		return Status::Ok();
	});
	opts.value("conf", &path).value("node", &node).value("prepare-log", &prepare_log);
	// --check: validation happens below in every case.
	opts.flag("check", &check).flag("seconds", &seconds).flag("list", &list);
	opts.flag("slurm", &slurm_conf).flag("json", &json);
	opts.value("timeout", [&](const std::string &v) {
		auto d = parse_duration(v);
		if (!d.ok())
			return d.status();
		timeout_s = static_cast<double>(d.value());
		return Status::Ok();
	});
	opts.flag("help", &help, 'h');
	Status parsed = opts.parse(argc, argv, &keys);
	if (int rc = cli::after_parse(parsed, help, usage); rc != cli::kGoOn)
		return rc;
	if (admin)
		return require_admin(admin_what);
	if (slurm_conf)
		return keys.empty() && !list ? print_slurm(timeout_s) : usage(stderr);
	auto cfg = Config::load(path);
	if (!cfg.ok()) {
		log_error("%s", cfg.status().message().c_str());
		return 2;
	}
	if (!prepare_log.empty()) {
		if (!keys.empty() || list || check)
			return usage(stderr);
		auto fd = open_log(prepare_log, cfg->integer("LogMaxBytes"), 0640);
		if (!fd.ok()) {
			log_error("%s", fd.status().message().c_str());
			return 2;
		}
		close(fd.value());
		return 0;
	}
	if (check) {
		// The nearest existing directory of StateDir: where its journals
		// will be created.
		std::string dir = cfg->str("StateDir");
		while (dir.size() > 1 && access(dir.c_str(), F_OK) != 0)
			dir = dir.substr(0, std::max<size_t>(dir.rfind('/'), 1));
		Status fs = db::check_journal_dir(dir);
		if (!fs.ok()) {
			log_error("%s: StateDir=%s: %s", path.c_str(), cfg->str("StateDir").c_str(),
			          fs.message().c_str());
			return 2;
		}
		if (cfg->is_set("SharedStateDir") && !check_shared_state(cfg.value(), timeout_s))
			return 2;
	}
	for (const auto &k : keys) {
		if (!config_key(k)) {
			log_error("unknown key '%s' (see onramp.conf(5))", k.c_str());
			return 2;
		}
	}
	if (list)
		for (const auto &spec : config_schema())
			printf("%s=%s\n", spec.name,
			       expand_node(cfg->str(spec.name), node).c_str());
	for (const auto &k : keys)
		if (seconds && config_key(k)->type == KeyType::Duration)
			printf("%lld\n", static_cast<long long>(cfg->seconds(k)));
		else
			printf("%s\n", node.empty() ? cfg->str(k).c_str()
			                            : expand_node(cfg->str(k), node).c_str());
	return 0;
}
