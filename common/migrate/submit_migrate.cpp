// Migration in job_submit/onramp (see common/submit.hpp).
//
// A job is migratable when it opted in: the SPANK option --checkpoint-dir
// (SPANK_ONRAMP_CHECKPOINT_DIR in its SPANK environment), a partition in
// MigratePartitions or a QOS in MigrateQos. The partition and QOS are the
// job's effective ones: a job that names none counts in the default
// partition (and its association's default QOS) the shim resolved; a job
// that lists several partitions opts in when any of them is listed (it may
// start in that one, and requeueability cannot wait for the choice).
// Migratable jobs are made requeueable, get their output opened in append
// mode (a requeued job goes on writing the same files) and the checkpoint
// signal as their warning unless they gave their own --signal. The
// checkpoint directory and signal are recorded in the job's comment as
// "onramp:ckpt=DIR; onramp:signal=T:SIG@SECS" for onrampctl migrate, which
// signals the job the same way (T: steps, batch shell, or both).
//
// While onrampctl migrate moves a job its AdminComment carries
// "onramp:migrating"; a modification that would make the job
// non-requeueable is refused then.
#include <csignal>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <strings.h>
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
	migrate::SignalTarget target = migrate::SignalTarget::Full;
};

const struct {
	const char *n;
	int v;
} kSignalNames[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
                    {"INT", SIGINT},   {"HUP", SIGHUP},   {"URG", SIGURG},
                    {"CONT", SIGCONT}, {"QUIT", SIGQUIT}, {"ALRM", SIGALRM}};

const struct {
	const char *name, *scancel;
	char prefix;
	migrate::SignalTarget t;
} kTargets[] = {{"steps", "", 'S', migrate::SignalTarget::Steps},
                {"batch", "--batch", 'B', migrate::SignalTarget::Batch},
                {"full", "--full", 'F', migrate::SignalTarget::Full}};

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
const char *const kSignalCommentKey = "onramp:signal=";
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
	int v = -1;
	if (!name.empty() && name.size() < 4 &&
	    name.find_first_not_of("0123456789") == std::string::npos) {
		v = atoi(name.c_str());
	} else {
		for (const auto &n : kSignalNames)
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

Status parse_signal_target(const std::string &name, SignalTarget *target)
{
	for (const auto &t : kTargets)
		if (strcasecmp(name.c_str(), t.name) == 0) {
			*target = t.t;
			return Status::Ok();
		}
	return Status::Error("'" + name + "' is not a signal target (steps, batch or full)");
}

const char *signal_target_name(SignalTarget target)
{
	for (const auto &t : kTargets)
		if (t.t == target)
			return t.name;
	return "?";
}

const char *scancel_target_option(SignalTarget target)
{
	for (const auto &t : kTargets)
		if (t.t == target)
			return t.scancel;
	return "";
}

Status parse_checkpoint_signal(const std::string &spec, int *sig, int *seconds,
                               SignalTarget *target, bool *has_target)
{
	*has_target = false;
	std::string rest = spec;
	if (spec.size() > 2 && spec[1] == ':') {
		const char p = static_cast<char>(toupper(static_cast<unsigned char>(spec[0])));
		for (const auto &t : kTargets)
			if (p == t.prefix) {
				*target = t.t;
				*has_target = true;
			}
		if (!*has_target)
			return Status::Error("'" + spec + "': '" + spec.substr(0, 2) +
			                     "' is not a signal target (B: batch shell, S: "
			                     "steps, F: both)");
		rest = spec.substr(2);
	}
	Status s = parse_signal_spec(rest, sig, seconds);
	if (!s.ok() && *has_target)
		return Status::Error("'" + spec + "': " + s.message());
	return s;
}

std::string format_checkpoint_signal(int sig, int seconds, SignalTarget target)
{
	std::string name = std::to_string(sig);
	for (const auto &n : kSignalNames)
		if (n.v == sig)
			name = n.n;
	char prefix = 'F';
	for (const auto &t : kTargets)
		if (t.t == target)
			prefix = t.prefix;
	return strprintf("%c:%s@%d", prefix, name.c_str(), seconds);
}

std::string comment_value(const std::string &comment, const char *key)
{
	const std::string k = key;
	auto p = comment.find(k);
	if (p == std::string::npos)
		return "";
	std::string v = comment.substr(p + k.size());
	auto end = v.find_first_of("; \t");
	return end == std::string::npos ? v : v.substr(0, end);
}

void checkpoint_signal_of(const std::string &comment, const Config &cfg, int *sig,
                          SignalTarget *target)
{
	int secs = 0;
	bool has = false;
	std::string spec = comment_value(comment, kSignalCommentKey);
	if (!spec.empty() && parse_checkpoint_signal(spec, sig, &secs, target, &has).ok() && has)
		return;
	*sig = SIGUSR2;
	*target = SignalTarget::Full;
	(void)parse_signal_spec(cfg.str("MigrateSignal"), sig, &secs);
	(void)parse_signal_target(cfg.str("MigrateSignalTarget"), target);
}

std::vector<std::string> scancel_signal_args(int sig, SignalTarget target, const std::string &job)
{
	std::vector<std::string> a = {"scancel", "--signal=" + std::to_string(sig)};
	if (*scancel_target_option(target))
		a.push_back(scancel_target_option(target));
	a.push_back(job);
	return a;
}

bool is_onramp_job_name(const std::string &name)
{
	for (const char *prefix : {"onramp-admit:", "onramp-pair:", "onramp-smoke:"})
		if (name.compare(0, strlen(prefix), prefix) == 0)
			return true;
	return false;
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
	// The job's effective partition and QOS: a job that names none runs in
	// the defaults the shim resolved.
	const std::string &part = job.partition.empty() ? job.default_partition : job.partition;
	const std::string &qos = job.qos.empty() ? job.default_qos : job.qos;
	const char *why = nullptr;
	// onramp's own jobs opt in only explicitly: an admission, pair or smoke
	// job in a migratable partition is not made requeueable or signalled.
	const bool own = job.submit_is_admin && migrate::is_onramp_job_name(job.name);
	if (!dir.empty())
		why = "--checkpoint-dir";
	else if (own)
		why = nullptr;
	else if (view && !part.empty() && any_in(part, view->partitions))
		why = job.partition.empty() ? "default partition" : "partition";
	else if (view && !qos.empty() && any_in(qos, view->qos))
		why = job.qos.empty() ? "default qos" : "qos";
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
	// The checkpoint signal: --checkpoint-signal, else the job's own
	// --signal (B: batch shell, else its steps), else MigrateSignal to
	// MigrateSignalTarget.
	int sig = view ? view->signal : SIGUSR2, secs = view ? view->warn_time : 120;
	migrate::SignalTarget target = view ? view->target : migrate::SignalTarget::Full;
	std::string sspec = migrate::spank_value(job.spank_env, migrate::kSpankCkptSignal);
	int s2, t2;
	migrate::SignalTarget tg2;
	bool has_tg = false;
	if (!sspec.empty() &&
	    migrate::parse_checkpoint_signal(sspec, &s2, &t2, &tg2, &has_tg).ok()) {
		sig = s2;
		secs = t2;
		if (has_tg)
			target = tg2;
	} else if (job.warn_signal) {
		sig = job.warn_signal;
		secs = job.warn_time;
		target =
		    job.warn_batch ? migrate::SignalTarget::Batch : migrate::SignalTarget::Steps;
	}
	// Only a batch job has a batch shell; Slurm signals the steps of others.
	if (!job.batch)
		target = migrate::SignalTarget::Steps;
	if (job.warn_signal == 0) {
		d->warn_signal = static_cast<uint16_t>(sig);
		d->warn_time = static_cast<uint16_t>(secs);
		d->warn_target = target;
	}
	std::string spec = migrate::format_checkpoint_signal(sig, secs, target);
	if (!dir.empty())
		d->comment_append = migrate::kCkptCommentKey + dir + "; ";
	d->comment_append += migrate::kSignalCommentKey + spec;
	d->ckpt_signal_env = spec.substr(2); // without the "T:" target
	std::string note =
	    strprintf("migratable (%s): requeue, append%s", why,
	              job.warn_signal ? ""
	                              : strprintf(", signal %d@%d to %s", sig, secs,
	                                          migrate::signal_target_name(target))
	                                    .c_str());
	d->message = d->message.empty() ? note : d->message + "; " + note;
}

Status migrate_load(const Config &cfg, std::shared_ptr<const void> *out)
{
	auto v = std::make_shared<MigrateView>();
	if (cfg.is_set("MigratePartitions"))
		v->partitions = split_set(cfg.str("MigratePartitions"));
	if (cfg.is_set("MigrateQos"))
		v->qos = split_set(cfg.str("MigrateQos"));
	Status s = migrate::parse_signal_spec(cfg.str("MigrateSignal"), &v->signal, &v->warn_time);
	migrate::SignalTarget t;
	bool has_target = false;
	if (!s.ok() && migrate::parse_checkpoint_signal(cfg.str("MigrateSignal"), &v->signal,
	                                                &v->warn_time, &t, &has_target)
	                   .ok())
		s = Status::Error("'" + cfg.str("MigrateSignal") +
		                  "': no B:/S:/F: prefix here, set MigrateSignalTarget");
	if (!s.ok())
		return Status::Error(strprintf("%s:%d: MigrateSignal: %s", cfg.origin().c_str(),
		                               cfg.line_of("MigrateSignal"), s.message().c_str()));
	s = migrate::parse_signal_target(cfg.str("MigrateSignalTarget"), &v->target);
	if (!s.ok())
		return Status::Error(
		    strprintf("%s:%d: MigrateSignalTarget: %s", cfg.origin().c_str(),
		              cfg.line_of("MigrateSignalTarget"), s.message().c_str()));
	*out = v;
	return Status::Ok();
}

} // namespace onramp
