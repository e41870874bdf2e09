#include "migrate/driver.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <csignal>
#include <fcntl.h>
#include <map>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "atomic_file.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "onramp.h"
#include "migrate/manifest.hpp"
#include "migrate/migrate.hpp"
#include "proc.hpp"

namespace onramp {
namespace migrate {

const char *const kMigrateReasonPrefix = ONRAMP_REASON_PREFIX "MIGRATE:";

std::string steer_features(const std::string &own, const std::string &target, bool target_nodes,
                           const std::vector<std::string> &candidates, std::string *dropped)
{
	std::string fallback = target_nodes ? "" : target;
	if (own.empty())
		return fallback;
	// Terms of the top-level AND chain; a top-level OR is one term, kept
	// whole in parentheses (Slurm nests none).
	std::vector<std::string> terms;
	bool top_or = false, top_and = false;
	int depth = 0;
	std::string cur;
	for (char c : own) {
		depth += c == '(' ? 1 : c == ')' ? -1 : 0;
		top_or = top_or || (c == '|' && depth == 0);
		if (c == '&' && depth == 0) {
			top_and = true;
			terms.push_back(cur);
			cur.clear();
		} else {
			cur += c;
		}
	}
	terms.push_back(cur);
	if (own.find_first_of("[]*") != std::string::npos || depth != 0 ||
	    (top_or && (top_and || own.find_first_of("()") != std::string::npos))) {
		// Matching OR, counts, mixed levels: nothing to keep a term of.
		if (dropped)
			*dropped = own;
		return fallback;
	}
	auto satisfied = [&](const std::string &term) {
		for (const auto &features : candidates)
			if (slurm::satisfies_term(features, term))
				return true;
		return false;
	};
	std::vector<std::string> kept;
	for (const auto &t : terms) {
		if (t.empty())
			continue;
		if (satisfied(t))
			kept.push_back(top_or ? "(" + t + ")" : t);
		else if (dropped)
			*dropped += (dropped->empty() ? "" : "&") + t;
	}
	if (!target_nodes)
		kept.push_back(target);
	std::string out;
	for (const auto &t : kept)
		out += (out.empty() ? "" : "&") + t;
	return out;
}

namespace {

void env_crash(const char *when, const std::string &state)
{
	std::string var = std::string("ONRAMP_MIGRATE_CRASH_") + when;
	const char *c = getenv(var.c_str());
	if (c && state == c) {
		log_warn("%s=%s: exiting now (test hook)", var.c_str(), c);
		_exit(99);
	}
	// The fault campaign's boundary: the driver stops itself (the whole
	// process) until SIGCONT, or until the campaign kills it there.
	var = std::string("ONRAMP_MIGRATE_STOP_") + when;
	c = getenv(var.c_str());
	if (c && state == c) {
		log_warn("%s=%s: stopping until SIGCONT (test hook)", var.c_str(), c);
		raise(SIGSTOP);
	}
}

std::vector<std::string> expand(const std::string &hl)
{
	if (hl.empty())
		return {};
	auto r = hostlist_expand(hl);
	return r.ok() ? r.value() : std::vector<std::string>{};
}

std::string lock_path(const Config &cfg, const std::string &name)
{
	std::string dir = cfg.str("StateDir") + "/locks";
	(void)make_dirs(dir, 0755);
	return dir + "/" + name;
}

slurm::SignalScope scope_of(SignalTarget t)
{
	return t == SignalTarget::Batch  ? slurm::SignalScope::Batch
	       : t == SignalTarget::Full ? slurm::SignalScope::Full
	                                 : slurm::SignalScope::Steps;
}

// Whether j runs (or ran) again since m's signal: Slurm counted a restart,
// or, when slurmctld lost the requeue (killed before it saved the run's
// end, it recovers the job PENDING with its old Restarts), the run began
// after the signal.
// Redos of steps a restarted slurmctld lost, per run of the driver.
constexpr int kMaxRedos = 3;

bool new_run(const slurm::Job &j, const Migration &m)
{
	return static_cast<int64_t>(j.restarts) > m.restarts ||
	       (m.signal_ms > 0 && j.start_time * 1000 >= m.signal_ms);
}

bool is_job_id(const std::string &t)
{
	return !t.empty() && t.size() <= 10 &&
	       t.find_first_not_of("0123456789") == std::string::npos;
}

} // namespace

void EnvCrashHook::before(const std::string &state)
{
	env_crash("BEFORE", state);
}

void EnvCrashHook::after(const std::string &state)
{
	env_crash("AFTER", state);
}

std::optional<slurm::Job> Driver::job(uint32_t id)
{
	auto j = s_.job(id);
	if (!j.ok()) {
		log_warn("%s", j.status().message().c_str());
		return std::nullopt;
	}
	return j.value();
}

// The job's checkpoint directory is named in its comment, which its user
// writes: every look into it is the user's (as root, a child that became
// him) under CheckpointVerifyMaxGiB/Timeout and a look's deadline, and
// every file in it must be his (never the directory owner's, which may be
// another user's or root).
ckpt::VerifyLimits Driver::user_limits(uid_t uid) const
{
	ckpt::VerifyLimits lim = ckpt::verify_limits(cfg_);
	lim.uid = uid;
	return lim;
}

Status Driver::save(Migration &m, const std::string &state, const std::string &msg)
{
	hook_.before(state);
	Status st = j_.save(m, state, msg, clock_.now_ms());
	if (!st.ok())
		return st;
	log_info("job %u: %s%s%s", m.job, state.c_str(), msg.empty() ? "" : ": ", msg.c_str());
	hook_.after(state);
	return st;
}

bool Driver::step(Migration &m, const std::string &state, const std::string &msg)
{
	Status s = save(m, state, msg);
	if (!s.ok())
		log_error("job %u: %s", m.job, s.message().c_str());
	return s.ok();
}

void Driver::restore_marker(Migration &m)
{
	auto j = job(m.job);
	if (j && j->admin_comment.find(kMigratingMarker) != std::string::npos) {
		slurm::JobUpdate u;
		u.admin_comment = m.admin_comment;
		Status st = s_.update_job(m.job, u);
		if (!st.ok())
			log_warn("job %u: %s", m.job, st.message().c_str());
	}
}

std::set<std::string> Driver::nodes_held_by_others(int64_t id)
{
	std::set<std::string> out;
	auto act = j_.active();
	if (!act.ok())
		log_warn("%s", act.status().message().c_str());
	for (const auto &m : act.ok() ? act.value() : std::vector<Migration>{})
		if (m.id != id)
			for (const auto &n : expand(m.drained))
				out.insert(n);
	return out;
}

// Drain m's source nodes (under the drain lock); m.drained lists the nodes
// this migration holds. Returns the error of a failed drain, else "".
std::string Driver::drain_sources(Migration &m)
{
	std::vector<std::string> drained;
	std::string reason =
	    strprintf("%s job %u to %s", kMigrateReasonPrefix, m.job, m.target.c_str());
	std::string failed;
	for (const auto &n : expand(m.src)) {
		auto node = s_.node(n);
		std::string r = node.ok() && node.value() ? node.value()->reason : "";
		if (!node.ok()) {
			failed = node.status().message();
			break;
		}
		if (!r.empty() && !slurm::has_prefix(r, slurm::kReasonPrefix)) {
			log_info("node %s: keeping the admin's reason '%s'", n.c_str(), r.c_str());
			continue;
		}
		if (!r.empty() && !slurm::has_prefix(r, kMigrateReasonPrefix))
			continue; // another onramp flow drained it: not ours to undo
		if (r.empty()) {
			bool kept = false;
			Status s = slurm::drain_node(s_, n, reason, &kept);
			if (!s.ok()) {
				failed = s.message();
				break;
			}
			if (kept)
				continue; // an admin's reason appeared meanwhile
		}
		drained.push_back(n);
	}
	m.drained = hostlist_compress(drained);
	return failed;
}

void Driver::undo_drain(Migration &m)
{
	auto others = nodes_held_by_others(m.id);
	for (const auto &n : expand(m.drained)) {
		if (others.count(n))
			continue;
		Status s = slurm::resume_node(s_, n, kMigrateReasonPrefix);
		if (!s.ok())
			log_warn("node %s: %s", n.c_str(), s.message().c_str());
	}
}

bool Driver::aborted(Migration &m, const std::string &why)
{
	m.error = why;
	log_error("job %u: migration aborted: %s", m.job, why.c_str());
	restore_marker(m);
	FileLock lock(lock_path(cfg_, "drain.lock"), true);
	undo_drain(m);
	Status st = save(m, "ABORTED", why);
	if (!st.ok())
		log_error("job %u: %s", m.job, st.message().c_str());
	return false;
}

bool Driver::drive(Migration &m)
{
	// One driver per migration: a resume next to a live run skips it.
	FileLock lock(lock_path(cfg_, strprintf("migrate.%u.lock", m.job)), false);
	// The drain lock is waited for later, with nothing left to refuse
	// then: a lock file that cannot be opened stops the migration here.
	std::string refused = lock.refused();
	if (refused.empty())
		refused = FileLock(lock_path(cfg_, "drain.lock"), false).refused();
	if (!refused.empty()) {
		m.error = "cannot open a lock file: " + refused + "; skipped";
		log_error("job %u: %s", m.job, m.error.c_str());
		return false;
	}
	if (!lock.held()) {
		m.error = strprintf("migration %lld is being driven by another onrampctl; skipped",
		                    static_cast<long long>(m.id));
		log_warn("job %u: %s", m.job, m.error.c_str());
		return false;
	}
	// Re-read the row: the state may have moved on since it was listed.
	auto act = j_.active();
	if (act.ok())
		for (const auto &a : act.value())
			if (a.id == m.id)
				m = a;
	return drive_locked(m);
}

bool Driver::drive_locked(Migration &m)
{
	const std::string jid = std::to_string(m.job);
	auto signal_text = [&](const slurm::Job &j) {
		int recorded;
		SignalTarget t;
		checkpoint_signal_of(j.comment, cfg_, &recorded, &t);
		return std::make_pair(scope_of(t), argv_str(scancel_signal_args(m.sig, t, jid)));
	};

	if (m.state == "PLANNED") {
		slurm::JobUpdate u;
		u.admin_comment = strprintf("%s id=%lld to=%s", kMigratingMarker,
		                            static_cast<long long>(m.id), m.target.c_str());
		Status s = s_.update_job(m.job, u);
		if (!s.ok())
			return aborted(m, s.message());
		// Drain the source nodes, keeping an admin's reason. Nodes already
		// drained for another migration are shared (resumed by the last).
		std::string failed;
		{
			FileLock lock(lock_path(cfg_, "drain.lock"), true);
			failed = drain_sources(m);
			if (failed.empty() &&
			    !step(m, "DRAINED", "drained " + (m.drained.empty() ? "-" : m.drained)))
				return false;
		}
		if (!failed.empty())
			return aborted(m, failed); // undoes what was drained so far
	}

	if (m.state == "DRAINED") {
		auto j = job(m.job);
		if (!j)
			return aborted(m, "job " + jid + " is gone");
		if (j->finished())
			return aborted(m, "job " + jid + " ended by itself (" + j->state +
			                      ") before it was signalled; nothing to migrate");
		m.signal_ms = clock_.now_ms();
		if (!step(m, "SIGNALLING", "")) // signal_ms journaled before the signal
			return false;
		auto sig = signal_text(*j);
		if (j->running()) {
			Status s = s_.signal_job(m.job, m.sig, sig.first);
			if (!s.ok())
				return aborted(m, s.message());
		}
		if (!step(m, "SIGNALLED",
		          strprintf("signal %d (%s): %s", m.sig, j->state.c_str(),
		                    sig.second.c_str())))
			return false;
	}
	if (m.state == "SIGNALLING") {
		// Crashed between journaling signal_ms and the signal: send it again.
		auto j = job(m.job);
		if (j && j->running())
			(void)s_.signal_job(m.job, m.sig, signal_text(*j).first);
		if (!step(m, "SIGNALLED", "signal sent again after a restart"))
			return false;
	}

	if (m.state == "SIGNALLED") {
		// Wait for a generation newer than the signal: started within
		// ack_s, committed within ack_s + grace_s.
		int64_t ack_deadline = m.signal_ms + m.ack_s * 1000;
		int64_t deadline = ack_deadline + m.grace_s * 1000;
		int64_t ended_ms = 0;
		std::string unseen; // why the directory could not be looked at
		for (;;) {
			uint64_t newest = 0;
			bool committed = false;
			auto j = job(m.job);
			auto gens = j ? ckpt::scan(m.ckpt_dir, user_limits(j->uid))
			              : Result<std::vector<ckpt::Generation>>(
			                    std::vector<ckpt::Generation>());
			if (!gens.ok() && unseen != gens.status().message()) {
				unseen = gens.status().message();
				log_warn("job %u: %s", m.job, unseen.c_str());
			}
			for (const auto &g :
			     gens.ok() ? gens.value() : std::vector<ckpt::Generation>()) {
				if (static_cast<int64_t>(g.number) <= m.base_gen)
					break;
				if (!newest)
					newest = g.number;
				if (g.committed) {
					newest = g.number;
					committed = true;
					break;
				}
			}
			if (committed) {
				m.gen = static_cast<int64_t>(newest);
				break;
			}
			int64_t t = clock_.now_ms();
			if (j && j->pending()) {
				// Requeued by itself meanwhile: steer it from the newest
				// verified generation it has.
				m.gen = 0;
				break;
			}
			if (!j || j->finished()) {
				if (!ended_ms)
					ended_ms = t;
				if (t - ended_ms > 5000) {
					if (!newest)
						return aborted(m, "job " + jid + " ended (" +
						                      (j ? j->state : "") +
						                      ") without a new checkpoint; "
						                      "nothing to migrate");
					m.gen = 0;
					break;
				}
			}
			if (!newest && t > ack_deadline)
				return aborted(
				    m,
				    strprintf("no new checkpoint generation in %s within "
				              "%llds of the signal; the job keeps running",
				              m.ckpt_dir.c_str(), static_cast<long long>(m.ack_s)) +
				        (unseen.empty() ? "" : " (" + unseen + ")"));
			if (t > deadline)
				return aborted(
				    m, strprintf("generation %llu was not committed within "
				                 "%llds",
				                 static_cast<unsigned long long>(newest),
				                 static_cast<long long>(m.ack_s + m.grace_s)));
			clock_.sleep(0.5);
		}
		if (!step(m, "CHECKPOINTED",
		          m.gen ? strprintf("generation %lld committed",
		                            static_cast<long long>(m.gen))
		                : std::string("no new generation (the job stopped by itself)")))
			return false;
	}

	if (m.state == "CHECKPOINTED") {
		std::string note;
		auto owner = job(m.job);
		if (!owner)
			return aborted(m,
			               "job " + jid +
			                   " is gone (purged?); its checkpoint cannot be verified "
			                   "as its user");
		ckpt::VerifyLimits lim = user_limits(owner->uid);
		int64_t ckpt_step = -1;
		if (m.gen) {
			auto v = ckpt::verify(m.ckpt_dir, static_cast<uint64_t>(m.gen), lim);
			if (!v.ok()) {
				note = v.status().message();
				log_error("job %u: %s", m.job, note.c_str());
				auto j = job(m.job);
				if (j && j->running())
					return aborted(
					    m, "new checkpoint is bad (" + note +
					           ") and the job still runs; not moving it");
				m.gen = 0;
			} else {
				ckpt_step = v->step;
			}
		}
		if (!m.gen) {
			auto l = ckpt::latest(m.ckpt_dir, lim);
			if (!l.ok())
				return aborted(m, l.status().message() +
				                      (note.empty() ? "" : " (" + note + ")"));
			m.gen = static_cast<int64_t>(l->generation);
			ckpt_step = l->step;
			note += (note.empty() ? "" : "; ") +
			        strprintf("using the previous verified generation %lld",
			                  static_cast<long long>(m.gen));
		}
		if (!step(m, "VERIFIED",
		          strprintf("generation %lld step %lld", static_cast<long long>(m.gen),
		                    static_cast<long long>(ckpt_step)) +
		              (note.empty() ? "" : " (" + note + ")")))
			return false;
	}

	if (m.state == "VERIFIED") {
		auto j = job(m.job);
		if (!j)
			return aborted(m, "job " + jid + " is gone (purged?)");
		Status s = j->pending() ? s_.hold(m.job) : s_.requeue_hold(m.job);
		if (!s.ok()) {
			j = job(m.job);
			if (!(j && j->pending()))
				return aborted(m, s.message());
		}
		// Wait until the requeue went through.
		for (int i = 0; i < 120; i++) {
			j = job(m.job);
			if (j && j->pending())
				break;
			clock_.sleep(0.5);
		}
		if (!step(m, "HELD", j ? j->state : ""))
			return false;
	}

	if (m.state == "HELD") {
		// A slurmctld that restarted (or failed over) from a state saved
		// before the requeue has the job RUNNING in its old run: there is
		// nothing held to steer. Redo the move from the journal.
		auto held = job(m.job);
		if (held && held->running() && !new_run(*held, m) && m.redos < kMaxRedos)
			return redo_lost(m,
			                 strprintf("slurmctld lost the requeue (restarted from a "
			                           "state saved before it): job RUNNING on %s, "
			                           "Restarts %u, before its steering",
			                           held->nodes.c_str(), held->restarts));
		slurm::JobUpdate u;
		u.exc_nodes = m.src;
		auto all = s_.nodes();
		if (!all.ok())
			log_warn("%s", all.status().message().c_str());
		std::set<std::string> tgt;
		if (m.target_nodes)
			for (const auto &n : expand(m.target))
				tgt.insert(n);
		std::vector<std::string> exc, candidates;
		for (const auto &n : all.ok() ? all.value() : std::vector<slurm::Node>{}) {
			bool target = m.target_nodes
			                  ? tgt.count(n.name) > 0
			                  : slurm::has_feature(n.features_active, m.target);
			if (target)
				candidates.push_back(n.features_active);
			else if (m.target_nodes)
				exc.push_back(n.name); // exclude every node but the targets
		}
		if (m.target_nodes)
			u.exc_nodes = hostlist_compress(exc);
		std::string dropped;
		u.features =
		    steer_features(m.old_features, m.target, m.target_nodes, candidates, &dropped);
		std::string text = "ExcNodeList=" + *u.exc_nodes + " Features=" + *u.features;
		if (!dropped.empty())
			text += " (dropped from the job's constraint: " + dropped + ")";
		// Keep the job's shape: at most as many leaf switches as before.
		// Without a wait Slurm keeps the job's own switch wait, which is 0
		// for a job submitted without --switches, i.e. the count would be
		// dropped at once when the target cannot satisfy it right now.
		// Wait up to half the confirm timeout (Slurm caps it at
		// SchedulerParameters=max_switch_wait, default 300 s).
		if (m.leaves > 0) {
			int64_t minutes = std::max<int64_t>(1, m.confirm_s / 120);
			u.req_switch = static_cast<uint32_t>(m.leaves);
			u.wait4switch = static_cast<uint32_t>(minutes * 60);
			text += strprintf(" Switches=%lld@%lld", static_cast<long long>(m.leaves),
			                  static_cast<long long>(minutes));
		}
		Status s = s_.update_job(m.job, u);
		if (!s.ok()) {
			// Never leave the job held: release it where it may run.
			(void)s_.release(m.job);
			return aborted(m,
			               "cannot steer the job: " + s.message() +
			                   " (released unsteered; it resumes from its checkpoint)");
		}
		if (!step(m, "STEERED", text))
			return false;
	}

	if (m.state == "STEERED") {
		Status s = s_.release(m.job);
		if (!s.ok()) {
			auto j = job(m.job);
			if (!j || j->pending())
				log_warn("job %u: %s", m.job, s.message().c_str());
		}
		if (!step(m, "RELEASED", ""))
			return false;
	}

	if (m.state == "RELEASED") {
		int64_t deadline = clock_.now_ms() + m.confirm_s * 1000;
		std::set<std::string> tgt;
		if (m.target_nodes)
			for (const auto &n : expand(m.target))
				tgt.insert(n);
		std::string where, lost;
		for (;;) {
			auto j = job(m.job);
			bool on_target = false;
			// A slurmctld that restarted (or failed over) from a state
			// saved before the requeue has the job RUNNING in its old run:
			// the move never happened. Redo it from the journal.
			if (j && j->running() && !new_run(*j, m) && m.redos < kMaxRedos) {
				lost =
				    strprintf("slurmctld lost the requeue (restarted from a state "
				              "saved before it): job RUNNING on %s, Restarts %u",
				              j->nodes.c_str(), j->restarts);
				break;
			}
			// Or it lost only the release: the job is held again.
			if (j && j->pending() && j->held && m.redos < kMaxRedos) {
				m.redos++;
				log_warn(
				    "job %u: held again after its release (slurmctld restarted "
				    "from an older state?); releasing it again",
				    m.job);
				Status s = s_.release(m.job);
				if (!s.ok())
					log_warn("job %u: %s", m.job, s.message().c_str());
			}
			if (j && j->running() && new_run(*j, m)) {
				on_target = true;
				for (const auto &n : expand(j->nodes)) {
					if (m.target_nodes) {
						if (!tgt.count(n))
							on_target = false;
						continue;
					}
					auto node = s_.node(n);
					std::string f = node.ok() && node.value()
					                    ? node.value()->features_active
					                    : "";
					if (!slurm::has_feature(f, m.target))
						on_target = false;
				}
				where = j->nodes;
			}
			auto r = j ? ckpt::read_resumed(m.ckpt_dir, user_limits(j->uid))
			           : Result<ckpt::Resumed>(Status::Error(
			                 "unread (job " + jid + " gone, its user unknown)"));
			bool resumed = r.ok() && r->time_ms >= m.signal_ms &&
			               static_cast<int64_t>(r->generation) == m.gen;
			if (on_target && resumed)
				break;
			if (j && j->finished() && new_run(*j, m) && !on_target) {
				m.error = "job ended after the release (" + j->state + ")";
				break;
			}
			if (clock_.now_ms() > deadline) {
				m.error = strprintf(
				    "not confirmed within %llds (job %s on %s, resumed.json %s)",
				    static_cast<long long>(m.confirm_s), j ? j->state.c_str() : "",
				    j ? j->nodes.c_str() : "",
				    r.ok()
				        ? strprintf("generation %llu",
				                    static_cast<unsigned long long>(r->generation))
				              .c_str()
				        : r.status().message().c_str());
				break;
			}
			clock_.sleep(1);
		}
		if (!lost.empty())
			return redo_lost(m, lost);
		restore_marker(m);
		FileLock lock(lock_path(cfg_, "drain.lock"), true);
		if (!m.from_mode)
			undo_drain(m); // --jobs: the nodes were drained only for the move
		if (!m.error.empty()) {
			(void)step(m, "DONE", "moved, but " + m.error);
			log_error("job %u: %s", m.job, m.error.c_str());
			return false;
		}
		return step(m, "DONE",
		            strprintf("running on %s, resumed from generation %lld", where.c_str(),
		                      static_cast<long long>(m.gen)));
	}
	return m.state == "DONE" && m.error.empty();
}

// slurmctld lost the requeue (lost says how it shows): drain the sources
// again (their drain may be lost too), journal VERIFIED with why, and drive
// the move again from there (at most kMaxRedos times per run).
bool Driver::redo_lost(Migration &m, const std::string &lost)
{
	m.redos++;
	log_warn("job %u: %s; redoing the move from VERIFIED", m.job, lost.c_str());
	std::string failed;
	{
		FileLock lock(lock_path(cfg_, "drain.lock"), true);
		failed = drain_sources(m);
	}
	if (!failed.empty())
		log_warn("job %u: %s", m.job, failed.c_str());
	if (!step(m, "VERIFIED", lost + "; redone from here"))
		return false;
	return drive_locked(m);
}

bool Driver::drive_all(std::vector<Migration> &ms)
{
	// Every job moves in its own thread; the journal serialises writes.
	std::vector<int> ok(ms.size(), 0);
	std::vector<std::thread> th;
	for (size_t i = 0; i < ms.size(); i++)
		th.emplace_back([&, i]() { ok[i] = drive(ms[i]) ? 1 : 0; });
	for (auto &t : th)
		t.join();
	return std::all_of(ok.begin(), ok.end(), [](int v) { return v == 1; });
}

// One --jobs entry: a job id, ARRAYID_TASK (one array task) or an array's
// id (every running task); each array task moves under its own job id. An
// entry not running is passed on as given when numeric, so the caller
// reports its state.
Status Driver::resolve_job_ids(const std::string &entry, std::vector<uint32_t> *ids)
{
	size_t us = entry.find('_');
	if (!is_job_id(entry.substr(0, us)) ||
	    (us != std::string::npos && !is_job_id(entry.substr(us + 1))))
		return Status::Error("'" + entry + "' is not a job id (N or ARRAYID_TASK)");
	uint32_t id = static_cast<uint32_t>(strtoul(entry.c_str(), nullptr, 10));
	bool task = us != std::string::npos;
	uint32_t tid =
	    task ? static_cast<uint32_t>(strtoul(entry.c_str() + us + 1, nullptr, 10)) : 0;
	auto all = s_.jobs();
	if (!all.ok())
		return all.status();
	std::vector<uint32_t> found;
	for (const auto &j : all.value()) {
		if (!j.running())
			continue;
		bool match = task ? (j.array_job_id == id && j.array_task_id == tid)
		                  : (j.id == id || j.array_job_id == id);
		if (match)
			found.push_back(j.id);
	}
	std::sort(found.begin(), found.end());
	ids->insert(ids->end(), found.begin(), found.end());
	if (!found.empty())
		return Status::Ok();
	if (task)
		return Status::Error("array task " + entry + " is not running");
	ids->push_back(id);
	return Status::Ok();
}

Result<Plan> Driver::plan(const Request &r, bool *usage)
{
	*usage = true;
	if (r.jobs.empty() == r.from.empty())
		return Status::Error("give exactly one of --jobs IDS and --from NODES");
	if (r.to.empty())
		return Status::Error("--to FEATURE|NODES is required");
	int sig = SIGUSR2;
	if (!parse_signal_spec(cfg_.str("MigrateSignal"), &sig, nullptr).ok())
		return Status::Error("onramp.conf: MigrateSignal is invalid");
	std::vector<uint32_t> ids;
	std::vector<std::string> from_nodes;
	if (!r.jobs.empty()) {
		for (size_t p = 0; p <= r.jobs.size();) {
			size_t c = r.jobs.find(',', p);
			std::string id =
			    r.jobs.substr(p, c == std::string::npos ? std::string::npos : c - p);
			Status rs = resolve_job_ids(id, &ids);
			if (!rs.ok())
				return Status::Error("--jobs: " + rs.message());
			p = c == std::string::npos ? r.jobs.size() + 1 : c + 1;
		}
	} else {
		from_nodes = expand(r.from);
		if (from_nodes.empty())
			return Status::Error("--from: bad hostlist '" + r.from + "'");
		*usage = false;
		auto all = s_.jobs();
		if (!all.ok())
			return all.status();
		std::set<std::string> fn(from_nodes.begin(), from_nodes.end());
		for (const auto &j : all.value()) {
			if (!j.running())
				continue;
			bool on_source = false;
			for (const auto &n : expand(j.nodes))
				on_source = on_source || fn.count(n) > 0;
			if (!on_source)
				continue;
			// Admission, pair and smoke jobs finish where they are.
			if (is_onramp_job_name(j.name) &&
			    comment_value(j.comment, kCkptCommentKey).empty())
				log_info("job %u: %s is onramp's own job; not migrated", j.id,
				         j.name.c_str());
			else
				ids.push_back(j.id);
		}
		std::sort(ids.begin(), ids.end());
		if (ids.empty())
			log_info("no running jobs on %s", r.from.c_str());
	}
	*usage = false;
	std::set<uint32_t> seen;
	ids.erase(std::remove_if(ids.begin(), ids.end(),
	                         [&](uint32_t id) { return !seen.insert(id).second; }),
	          ids.end());
	auto tn = expand(r.to);
	auto first = tn.empty() ? Result<std::optional<slurm::Node>>(std::optional<slurm::Node>())
	                        : s_.node(tn[0]);
	bool to_nodes = first.ok() && first.value().has_value();
	auto lv = s_.node_leaves();
	std::map<std::string, std::string> leaves = lv.ok() ? lv.value() : decltype(leaves){};
	if (!lv.ok())
		log_warn("%s", lv.status().message().c_str());
	std::map<std::string, uint32_t> dirs; // checkpoint directory -> job
	Plan out;
	for (uint32_t id : ids) {
		auto j = job(id);
		if (!j) {
			log_error("job %u: no such job", id);
			out.bad = true;
			continue;
		}
		Migration m;
		m.job = id;
		m.ckpt_dir = comment_value(j->comment, kCkptCommentKey);
		if (m.ckpt_dir.empty() || !j->requeue || !j->batch) {
			log_error("job %u: not migratable (%s)", id,
			          m.ckpt_dir.empty()
			              ? "no onramp:ckpt=DIR in its comment"
			              : (!j->batch ? "not a batch job" : "not requeueable"));
			out.bad = true;
			continue;
		}
		if (!j->running()) {
			log_error("job %u: is %s, not running", id, j->state.c_str());
			out.bad = true;
			continue;
		}
		if (!r.rollback) {
			auto done = j_.done_count(id);
			if (!done.ok())
				return done.status();
			int64_t cap = cfg_.integer("MigrateMaxPerJob");
			if (done.value() >= cap) {
				log_error(
				    "job %u: already migrated %lld times (MigrateMaxPerJob=%lld); "
				    "not moving it again (onrampctl rollback is still allowed)",
				    id, static_cast<long long>(done.value()),
				    static_cast<long long>(cap));
				out.bad = true;
				continue;
			}
		}
		if (!dirs.insert({m.ckpt_dir, id}).second) {
			log_error(
			    "job %u: shares its checkpoint directory %s with job %u; give each "
			    "job (array task) its own",
			    id, m.ckpt_dir.c_str(), dirs[m.ckpt_dir]);
			out.bad = true;
			continue;
		}
		std::vector<std::string> jn = expand(j->nodes), src;
		if (!r.from.empty()) {
			for (const auto &n : jn)
				if (std::find(from_nodes.begin(), from_nodes.end(), n) !=
				    from_nodes.end())
					src.push_back(n);
		} else {
			src = jn;
		}
		std::set<std::string> lvs;
		for (const auto &n : jn)
			if (leaves.count(n))
				lvs.insert(leaves[n]);
		m.src = hostlist_compress(src);
		m.target = r.to;
		m.target_nodes = to_nodes;
		m.from_mode = !r.from.empty();
		// The newest generation before the signal, looked at as the job's
		// user: a directory he cannot list (or that stalls) holds no
		// checkpoint to move the job with.
		auto gens = ckpt::scan(m.ckpt_dir, user_limits(j->uid));
		if (!gens.ok()) {
			log_error("job %u: checkpoint directory: %s; not moving it", id,
			          gens.status().message().c_str());
			out.bad = true;
			continue;
		}
		m.base_gen = gens->empty() ? 0 : static_cast<int64_t>(gens->front().number);
		m.restarts = j->restarts;
		m.admin_comment = j->admin_comment;
		// The job's own constraint: as it was before its first migration
		// (the later ones carry an earlier target).
		m.old_features = j->features;
		auto earlier = j_.list(id);
		if (!earlier.ok())
			return earlier.status();
		int64_t first_ms = INT64_MAX;
		for (const auto &e : earlier.value())
			if (e.created_ms < first_ms) {
				first_ms = e.created_ms;
				m.old_features = e.old_features;
			}
		m.leaves = static_cast<int64_t>(lvs.size());
		SignalTarget tgt;
		checkpoint_signal_of(j->comment, cfg_, &m.sig, &tgt);
		m.ack_s = r.ack_s > 0 ? r.ack_s : cfg_.seconds("MigrateAckTimeout");
		m.grace_s = r.grace_s > 0 ? r.grace_s : cfg_.seconds("MigrateGrace");
		m.confirm_s = r.confirm_s > 0 ? r.confirm_s : cfg_.seconds("MigrateConfirmTimeout");
		if (r.dry_run) {
			out.dry_run.push_back(strprintf(
			    "job %u: would move from %s to %s%s (checkpoints %s, newest generation "
			    "%lld, %lld leaf switch%s, signal %d, ack %llds, grace %llds)",
			    id, m.src.c_str(), r.to.c_str(), to_nodes ? " (nodes)" : " (feature)",
			    m.ckpt_dir.c_str(), static_cast<long long>(m.base_gen),
			    static_cast<long long>(m.leaves), m.leaves == 1 ? "" : "es", m.sig,
			    static_cast<long long>(m.ack_s), static_cast<long long>(m.grace_s)));
			continue;
		}
		hook_.before("PLANNED");
		Status ps = j_.plan(m, clock_.now_ms());
		if (!ps.ok()) {
			log_error("%s", ps.message().c_str());
			out.bad = true;
			continue;
		}
		log_info("job %u: PLANNED: migration %lld from %s to %s", m.job,
		         static_cast<long long>(m.id), m.src.c_str(), m.target.c_str());
		hook_.after("PLANNED");
		out.planned.push_back(m);
	}
	return out;
}

} // namespace migrate
} // namespace onramp
