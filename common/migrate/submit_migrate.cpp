// Migration in job_submit/onramp (see common/submit.hpp).
//
// A job is migratable when it opted in: the SPANK option --checkpoint-dir
// (SPANK_ONRAMP_CHECKPOINT_DIR in its SPANK environment), a partition in
// MigratePartitions or a QOS in MigrateQos. Migratable jobs are made
// requeueable, get their output opened in append mode (a requeued job goes
// on writing the same files) and the MigrateSignal warning unless they gave
// their own --signal. The checkpoint directory is recorded in the job's
// comment as "onramp:ckpt=DIR" for onrampctl migrate.
//
// While onrampctl migrates a job its AdminComment carries
// "onramp:migrating"; a modification that would make the job
// non-requeueable is refused then.
#include <csignal>
#include <cstdlib>
#include <set>
#include <sstream>

#include "log.hpp"
#include "migrate/migrate.hpp"
#include "submit.hpp"

namespace onramp {
namespace {

struct MigrateView {
	std::set<std::string> partitions, qos;
	int signal = SIGUSR2;
	int warn_time = 120;
	std::string signal_text;
};

std::set<std::string> split_set(const std::string &s)
{
	std::set<std::string> out;
	std::stringstream ss(s);
	std::string item;
	while (std::getline(ss, item, ','))
		if (!item.empty())
			out.insert(item);
	return out;
}

bool any_in(const std::string &list, const std::set<std::string> &set)
{
	for (const auto &p : split_set(list))
		if (set.count(p))
			return true;
	return false;
}

} // namespace

namespace migrate {

const char *const kMigratingMarker = "onramp:migrating";
const char *const kCkptCommentKey = "onramp:ckpt=";
const char *const kSpankCkptDir = "SPANK_ONRAMP_CHECKPOINT_DIR";
const char *const kSpankCkptSignal = "SPANK_ONRAMP_CHECKPOINT_SIGNAL";

Status parse_signal_spec(const std::string &spec, int *sig, int *seconds)
{
	std::string name = spec, secs;
	auto at = spec.find('@');
	if (at != std::string::npos) {
		name = spec.substr(0, at);
		secs = spec.substr(at + 1);
	}
	if (name.compare(0, 3, "SIG") == 0)
		name = name.substr(3);
	static const struct {
		const char *n;
		int v;
	} names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
	             {"INT", SIGINT},   {"HUP", SIGHUP},   {"URG", SIGURG},
	             {"CONT", SIGCONT}, {"QUIT", SIGQUIT}, {"ALRM", SIGALRM}};
	int v = -1;
	if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
		v = atoi(name.c_str());
	} else {
		for (const auto &n : names)
			if (name == n.n)
				v = n.v;
	}
	if (v <= 0 || v >= 65 || v == SIGKILL || v == SIGSTOP)
		return Status::Error(
		    "'" + spec + "': '" + name +
		    "' is not a usable signal (USR1, USR2, TERM, ... or a number)");
	int s = 120;
	if (at != std::string::npos) {
		if (secs.empty() || secs.size() > 5 ||
		    secs.find_first_not_of("0123456789") != std::string::npos)
			return Status::Error("'" + spec + "': '" + secs +
			                     "' is not a number of seconds (0 to 65535)");
		s = atoi(secs.c_str());
		if (s > 65535)
			return Status::Error("'" + spec + "': at most 65535 seconds");
	}
	*sig = v;
	if (seconds)
		*seconds = s;
	return Status::Ok();
}

std::string spank_value(const std::vector<std::string> &env, const char *name)
{
	// The job_submit plugin sees SPANK's job control environment as the
	// plugin set it ("ONRAMP_CHECKPOINT_DIR=..."); prolog, epilog and the
	// job see it with a "SPANK_" prefix. Either spelling counts.
	std::string full = std::string(name) + "=";
	std::string bare = full.compare(0, 6, "SPANK_") == 0 ? full.substr(6) : full;
	for (const auto &e : env) {
		if (e.compare(0, full.size(), full) == 0)
			return e.substr(full.size());
		if (e.compare(0, bare.size(), bare) == 0)
			return e.substr(bare.size());
	}
	return "";
}

} // namespace migrate

void migrate_decide(const PolicyState &st, const JobView &job, bool modify, Decision *d)
{
	auto view = std::static_pointer_cast<const MigrateView>(st.migrate);
	if (modify) {
		if (job.current_admin_comment.find(migrate::kMigratingMarker) !=
		        std::string::npos &&
		    job.requeue == 0) {
			d->reject = true;
			d->message =
			    strprintf("onramp: job %u is being migrated by onramp "
			              "(onrampctl migrate); it must stay requeueable until "
			              "the migration ends",
			              job.job_id);
		}
		return;
	}
	std::string dir = migrate::spank_value(job.spank_env, migrate::kSpankCkptDir);
	const char *why = nullptr;
	if (!dir.empty())
		why = "--checkpoint-dir";
	else if (view && !job.partition.empty() && any_in(job.partition, view->partitions))
		why = "partition";
	else if (view && !job.qos.empty() && any_in(job.qos, view->qos))
		why = "qos";
	if (!why)
		return;
	if (job.requeue == 0) {
		d->reject = true;
		d->message = strprintf("onramp: migratable jobs (%s) must be requeueable: drop "
		                       "--no-requeue, or do not opt in to migration",
		                       why);
		return;
	}
	d->requeue = 1;
	d->open_append = true;
	int sig = view ? view->signal : SIGUSR2, secs = view ? view->warn_time : 120;
	std::string sspec = migrate::spank_value(job.spank_env, migrate::kSpankCkptSignal);
	if (!sspec.empty()) {
		int s2, t2;
		if (migrate::parse_signal_spec(sspec, &s2, &t2).ok()) {
			sig = s2;
			secs = t2;
		}
	}
	if (job.warn_signal == 0) {
		d->warn_signal = static_cast<uint16_t>(sig);
		d->warn_time = static_cast<uint16_t>(secs);
	}
	if (!dir.empty())
		d->comment_append = migrate::kCkptCommentKey + dir;
	std::string note =
	    strprintf("migratable (%s): requeue, append%s", why,
	              job.warn_signal ? "" : strprintf(", signal %d@%d", sig, secs).c_str());
	d->message = d->message.empty() ? note : d->message + "; " + note;
}

Status migrate_load(const Config &cfg, std::shared_ptr<const void> *out)
{
	auto v = std::make_shared<MigrateView>();
	if (cfg.is_set("MigratePartitions"))
		v->partitions = split_set(cfg.str("MigratePartitions"));
	if (cfg.is_set("MigrateQos"))
		v->qos = split_set(cfg.str("MigrateQos"));
	v->signal_text = cfg.str("MigrateSignal");
	Status s = migrate::parse_signal_spec(v->signal_text, &v->signal, &v->warn_time);
	if (!s.ok())
		return Status::Error(strprintf("%s:%d: MigrateSignal: %s", cfg.origin().c_str(),
		                               cfg.line_of("MigrateSignal"), s.message().c_str()));
	*out = v;
	return Status::Ok();
}

} // namespace onramp
