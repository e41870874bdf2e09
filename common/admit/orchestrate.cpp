#include "admit/orchestrate.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <pwd.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "json.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

using slurm::kReasonPrefix;

using slurm::has_feature;
using slurm::join;

bool one_of(const std::string &s, std::initializer_list<const char *> set)
{
	for (const char *x : set)
		if (s == x)
			return true;
	return false;
}

// Still to wait for (squeue's names; a state flag is named first).
bool active(const std::string &state)
{
	return one_of(state, {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED",
	                      "REQUEUED", "SIGNALING", "STAGE_OUT", "RESIZING"});
}

std::string lower(std::string s)
{
	std::transform(s.begin(), s.end(), s.begin(),
	               [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
	return s;
}

// Whether a node other than node has the admitted feature active.
bool other_admitted(const std::vector<slurm::Node> &all, const std::string &node,
                    const std::string &feature)
{
	return std::any_of(all.begin(), all.end(), [&](const slurm::Node &n) {
		return n.name != node && has_feature(n.features_active, feature);
	});
}

std::string whoami()
{
	struct passwd *pw = getpwuid(geteuid());
	return pw ? pw->pw_name : std::to_string(geteuid());
}

class Run {
public:
	Run(slurm::SlurmClient &c, const OrchestrateOptions &o, const OrchestrateHooks &h,
	    std::vector<NodeOutcome> *out)
	    : c_(c), o_(o), h_(h), out_(out)
	{
		if (!h_.now)
			h_.now = [] {
				return std::chrono::duration<double>(
				           std::chrono::steady_clock::now().time_since_epoch())
				    .count();
			};
		if (!h_.sleep)
			h_.sleep = [](double s) {
				std::this_thread::sleep_for(std::chrono::duration<double>(s));
			};
		if (!h_.wall)
			h_.wall = [] {
				return std::chrono::duration<double>(
				           std::chrono::system_clock::now().time_since_epoch())
				    .count();
			};
		if (!h_.saved)
			h_.saved = [this](double since, const std::vector<std::string> &files) {
				return saved_since(since, files);
			};
	}

	int run(const std::vector<std::string> &nodes)
	{
		// The controller this run acts through, before its first change:
		// only a restart or a takeover after this can undo what it sets.
		boot_ = ctld_boot();
		nodes_ = nodes;
		for (const auto &n : nodes)
			start(n);
		if (!o_.wait && (launched_.empty() || !h_.detach || !h_.detach()))
			return worst_;
		wait_all();
		confirm_saved();
		return worst_;
	}

private:
	struct Launched {
		uint32_t job;
		size_t outcome;
		int repicks = 0; // times its peers were chosen again
	};

	void note(int rc) { worst_ = std::max(worst_, rc); }
	size_t outcome(const std::string &node, const std::string &result)
	{
		outs_.push_back({node, result, 0, {}, ""});
		if (out_)
			out_->push_back(outs_.back());
		return outs_.size() - 1;
	}
	void set_outcome(size_t i, const std::string &result, const std::string &reason = "")
	{
		outs_[i].result = result;
		outs_[i].reason = reason;
		if (out_)
			(*out_)[i] = outs_[i];
		if (result == "admitted" || result == "failed" || result == "unjudged" ||
		    result == "timeout")
			remember(outs_[i]);
	}

	// <output_dir>/outcome.NODE.json: the node's last judged admission, so
	// that "onrampctl status" can say why a node is still in its
	// reservation (INCONCLUSIVE_<CHECK>: not admitted, not drained).
	void remember(const NodeOutcome &n)
	{
		if (o_.output_dir.empty() || n.node.find('/') != std::string::npos)
			return;
		Json j = Json::object();
		j.set("node", n.node).set("result", n.result).set("reason", n.reason);
		j.set("job", static_cast<int64_t>(n.job)).set("time", iso_time(time(nullptr)));
		Status st = write_file_atomic(o_.output_dir + "/outcome." + n.node + ".json",
		                              j.dump() + "\n", 0644);
		if (!st.ok())
			log_verbose("node %s: outcome not kept: %s", n.node.c_str(),
			            st.message().c_str());
	}

	void start(const std::string &node)
	{
		auto n = c_.node(node);
		if (n.ok() && n.value() && n.value()->drain && !n.value()->reason.empty() &&
		    !slurm::has_prefix(n.value()->reason, kReasonPrefix)) {
			// Admission jobs cannot run on a drained node, and onramp
			// never resumes a node whose reason it did not write.
			log_info("node %s: drained by an admin ('%s'); resume it to admit it",
			         node.c_str(), n.value()->reason.c_str());
			outcome(node, "refused");
			note(2);
			return;
		}
		if (h_.lock && !h_.lock(node)) {
			log_info("node %s: an admission is already running; skipped", node.c_str());
			outcome(node, "skipped");
			return;
		}
		cancel_stale(node);
		std::string resv = reservation_name(o_.resv_base, node);
		if (!reserve_node(c_, resv, node, o_.users)) {
			outcome(node, "not-submitted");
			return;
		}
		// With the lock held no live run borrowed peers into it: a wider
		// reservation is a dead run's leftover, peers kept from production.
		auto r = c_.reservation(resv);
		if (r.ok() && r.value() && !r.value()->nodes.empty() && r.value()->nodes != node) {
			log_info(
			    "node %s: returning %s, left in %s by an earlier run, to production",
			    node.c_str(), r.value()->nodes.c_str(), resv.c_str());
			shrink(node);
		}
		// A node onramp drained earlier is resumed inside its reservation,
		// where no production job can start, so the admission job can run.
		resume_if_ours(c_, node);
		size_t i = outcome(node, "not-submitted");
		uint32_t job = submit(node, resv, &outs_[i].peers);
		if (out_)
			(*out_)[i].peers = outs_[i].peers;
		if (!job) {
			note(2); // nothing judged this node: not a success
			return;
		}
		ordinal_++;
		outs_[i].job = job;
		if (out_)
			(*out_)[i].job = job;
		set_outcome(i, "submitted");
		launched_[node] = {job, i, 0};
	}

	// A pending admission job whose peer can no longer run it (drained or
	// down since it was chosen: a controller restarted from older state
	// drains a node "Duplicate jobid", an admin drains one; not merely
	// not responding, as every node is for a moment after a slurmctld
	// restart) would wait out
	// the timeout and leave its node unjudged. Such a job is cancelled and
	// submitted again with peers usable now, at most kMaxRepicks times.
	// Returns kKept (nothing done), kRepicked, or kLost (the new submission
	// failed: the node is done, unjudged).
	static constexpr int kMaxRepicks = 2;
	enum Repick { kKept, kRepicked, kLost };
	Repick repick_if_peer_lost(const std::string &node, Launched *l, const slurm::Job &j)
	{
		if (j.state != "PENDING" || l->repicks >= kMaxRepicks)
			return kKept;
		const auto &peers = outs_[l->outcome].peers;
		if (peers.empty())
			return kKept;
		auto all = c_.nodes();
		if (!all.ok())
			return kKept;
		std::string lost;
		for (const auto &n : all.value())
			if (std::find(peers.begin(), peers.end(), n.name) != peers.end() &&
			    (n.drain || n.state == "DOWN"))
				lost += (lost.empty() ? "" : ", ") + n.name +
				        (n.reason.empty() ? "" : " ('" + n.reason + "')");
		if (lost.empty())
			return kKept;
		log_info("node %s: admission job %u pending on peers no longer usable (%s); "
		         "submitting it again with other peers",
		         node.c_str(), l->job, lost.c_str());
		Status st = c_.cancel(l->job);
		if (!st.ok())
			log_warn("node %s: %s", node.c_str(), st.message().c_str());
		shrink(node);
		l->repicks++;
		std::string resv = reservation_name(o_.resv_base, node);
		uint32_t job = submit(node, resv, &outs_[l->outcome].peers);
		if (out_)
			(*out_)[l->outcome].peers = outs_[l->outcome].peers;
		if (!job) {
			set_outcome(l->outcome, "not-submitted");
			note(2);
			return kLost;
		}
		l->job = job;
		outs_[l->outcome].job = job;
		if (out_)
			(*out_)[l->outcome].job = job;
		return kRepicked;
	}

	// A run that died (kill -9) may have left its admission job behind;
	// with the lock held no live run owns it, and it would keep the
	// reservation in use after this run admits the node. Only jobs root or
	// SlurmUser submitted are onramp's: a user's job of that name is not
	// cancelled (any user may name a job so).
	void cancel_stale(const std::string &node)
	{
		auto jobs = c_.jobs();
		if (!jobs.ok()) {
			log_warn("node %s: %s", node.c_str(), jobs.status().message().c_str());
			return;
		}
		std::vector<uint32_t> stale;
		for (const auto &j : jobs.value())
			if (j.name == "onramp-admit:" + node && slurm::is_admin(c_, j.uid) &&
			    one_of(j.state,
			           {"PENDING", "RUNNING", "CONFIGURING", "SUSPENDED", "REQUEUED"}))
				stale.push_back(j.id);
		if (stale.empty())
			return;
		std::string ids;
		for (uint32_t id : stale)
			ids += (ids.empty() ? "" : " ") + std::to_string(id);
		log_info("node %s: cancelling admission job(s) %s left by an earlier run",
		         node.c_str(), ids.c_str());
		for (uint32_t id : stale) {
			Status st = c_.cancel(id);
			if (!st.ok())
				log_warn("node %s: %s", node.c_str(), st.message().c_str());
		}
	}

	// Shrink the reservation back to the node alone.
	void shrink(const std::string &node)
	{
		std::string resv = reservation_name(o_.resv_base, node);
		Status st = c_.set_reservation_nodes(resv, node);
		if (!st.ok())
			log_info("node %s: cannot return the peers from %s: %s", node.c_str(),
			         resv.c_str(), st.message().c_str());
	}

	// The admission job's id, 0 when it could not be submitted.
	uint32_t submit(const std::string &node, const std::string &resv,
	                std::vector<std::string> *peers)
	{
		std::vector<std::string> untested;
		auto all = c_.nodes();
		// An admitted node that is not usable now (not responding yet after
		// a slurmctld restart, busy) is waited for, never replaced by an
		// untested one.
		double until = h_.now() + o_.peer_wait_s;
		bool said = false;
		while (all.ok()) {
			*peers =
			    pick_peers(all.value(), node, o_.feature, ordinal_, o_.peers_wanted);
			bool admitted = other_admitted(all.value(), node, o_.feature);
			// Not responding: a slurmctld that restarted, a node re-registering;
			// what its features say is not known yet.
			// A slurmctld that started moments ago has not heard every
			// node's features yet either.
			bool pending =
			    std::any_of(all->begin(), all->end(),
			                [&](const slurm::Node &n) {
				                return n.name != node && !n.responding;
			                }) ||
			    (boot_ > 0 && h_.wall() - static_cast<double>(boot_) < o_.peer_wait_s);
			if (!peers->empty() || !(admitted || pending) || h_.now() >= until)
				break;
			if (!said)
				log_info("node %s: no admitted peer usable now; waiting up to %ds "
				         "for one",
				         node.c_str(), o_.peer_wait_s);
			said = true;
			h_.sleep(o_.poll_s);
			all = c_.nodes();
		}
		if (all.ok()) {
			bool admitted = other_admitted(all.value(), node, o_.feature);
			if (peers->empty() && !admitted)
				untested = pick_untested_peers(all.value(), node, nodes_, ordinal_,
				                               o_.peers_wanted);
			if (!untested.empty())
				log_info(
				    "node %s: no admitted peer; pairing it with %s of this run "
				    "(not admitted themselves: a failure blames nobody)",
				    node.c_str(), join(untested).c_str());
			peers->insert(peers->end(), untested.begin(), untested.end());
		} else
			log_warn("node %s: %s; node-local checks only", node.c_str(),
			         all.status().message().c_str());
		if (!peers->empty()) {
			// Known-good peers join the reservation for the pairwise test only.
			Status st = c_.set_reservation_nodes(resv, node + "," + join(*peers));
			if (!st.ok()) {
				log_info(
				    "node %s: peers %s could not join %s; node-local checks only",
				    node.c_str(), join(*peers).c_str(), resv.c_str());
				peers->clear();
			}
		}
		slurm::BatchJob b;
		b.name = "onramp-admit:" + node;
		b.account = o_.account;
		b.reservation = resv;
		b.options = o_.job_options;
		b.num_nodes = 1 + static_cast<int>(peers->size());
		b.nodes = peers->empty() ? node : node + "," + join(*peers);
		b.time_limit_min = (o_.timeout_s + 59) / 60;
		b.output = o_.output_dir + "/%x.%j.out";
		b.command = {"srun", "-N1", "-n1", "-w", node, o_.job_program};
		if (!untested.empty() && !peers->empty())
			b.command.insert(b.command.end(), {"--untested-peers", join(*peers)});
		else if (!peers->empty())
			b.command.insert(b.command.end(), {"--peers", join(*peers)});
		auto job = c_.submit(b);
		if (!job.ok()) {
			// The borrowed peers go back to production at once.
			if (!peers->empty())
				shrink(node);
			std::string why = job.status().message();
			log_info(
			    "node %s: error: cannot submit the admission job as %s (account %s, "
			    "reservation %s): %s",
			    node.c_str(), whoami().c_str(), o_.account.c_str(), resv.c_str(),
			    why.c_str());
			std::string l = lower(why);
			if (l.find("association") != std::string::npos ||
			    l.find("account") != std::string::npos ||
			    l.find("qos") != std::string::npos)
				log_info("node %s: the admission account needs associations for "
				         "root and "
				         "SlurmUser (%s): see etc/onramp-accounting.sh",
				         node.c_str(), o_.users.c_str());
			return 0;
		}
		log_info("node %s: admission job %u in %s%s", node.c_str(), job.value(),
		         resv.c_str(),
		         peers->empty() ? "" : (" (peers " + join(*peers) + ")").c_str());
		return job.value();
	}

	void wait_all()
	{
		double deadline = h_.now() + o_.timeout_s + 60;
		while (!launched_.empty()) {
			for (auto it = launched_.begin(); it != launched_.end();) {
				auto j = c_.job(it->second.job);
				Repick rp =
				    j.ok() && j.value()
				        ? repick_if_peer_lost(it->first, &it->second, *j.value())
				        : kKept;
				if (rp == kLost) {
					it = launched_.erase(it);
					continue;
				}
				if (rp == kRepicked) {
					// The new job gets the whole timeout.
					deadline = std::max(deadline, h_.now() + o_.timeout_s + 60);
					++it;
					continue;
				}
				if (!j.ok() || (j.value() && active(j.value()->state))) {
					++it;
					continue;
				}
				finish(it->first, it->second, j.value());
				it = launched_.erase(it);
			}
			if (launched_.empty())
				break;
			if (h_.now() > deadline) {
				for (const auto &l : launched_) {
					Status st = c_.cancel(l.second.job);
					if (!st.ok())
						log_warn("node %s: %s", l.first.c_str(),
						         st.message().c_str());
					shrink(l.first);
					log_info(
					    "node %s: admission timed out after %ds; node stays in "
					    "its reservation",
					    l.first.c_str(), o_.timeout_s);
					set_outcome(l.second.outcome, "timeout");
				}
				launched_.clear();
				note(2);
				return;
			}
			h_.sleep(o_.poll_s);
		}
	}

	void finish(const std::string &node, const Launched &l, const std::optional<slurm::Job> &j)
	{
		std::string resv = reservation_name(o_.resv_base, node);
		shrink(node);
		std::string state = j ? j->state : "", reason = j ? j->admin_comment : "";
		int status = j ? j->exit_status : -1, sig = j ? j->exit_signal : 0;
		if (state == "COMPLETED" && status == 0) {
			log_info("node %s: admitted (job %u)", node.c_str(), l.job);
			unreserve(node, resv);
			resume_if_ours(c_, node);
			set_outcome(l.outcome, "admitted");
			return;
		}
		if (status == 1) {
			if (reason.empty())
				reason = strprintf("%sADMIT_FAILED: admission job %u failed",
				                   kReasonPrefix, l.job);
			else if (!slurm::has_prefix(reason, kReasonPrefix))
				reason = std::string(kReasonPrefix) + "ADMIT_FAILED: " + reason;
			log_info("node %s: admission failed: %s (job %u)", node.c_str(),
			         reason.c_str(), l.job);
			Status st = slurm::drain_node(c_, node, reason);
			if (!st.ok())
				log_warn("node %s: %s", node.c_str(), st.message().c_str());
			else
				drained_[node] = reason;
			unreserve(node, resv);
			set_outcome(l.outcome, "failed", reason);
			note(1);
			return;
		}
		// Could not judge (our own input, a timeout, a cancelled job): the
		// node stays out of production in its reservation, undrained.
		log_info(
		    "node %s: admission could not judge (job %u %s exit %d:%d%s%s); node stays "
		    "in %s",
		    node.c_str(), l.job, state.empty() ? "gone" : state.c_str(),
		    status < 0 ? 0 : status, sig, reason.empty() ? "" : ": ", reason.c_str(),
		    resv.c_str());
		set_outcome(l.outcome, "unjudged", reason);
		note(2);
	}

	void unreserve(const std::string &node, const std::string &resv)
	{
		Status st = c_.delete_reservation(resv);
		if (!st.ok()) {
			log_warn("node %s: %s", node.c_str(), st.message().c_str());
			return;
		}
		deleted_[resv] = node;
		changed_ = h_.wall();
	}

	// The default hooks.saved: every file's mtime in StateSaveLocation.
	std::optional<bool> saved_since(double since, const std::vector<std::string> &files)
	{
		if (ssl_.empty()) {
			auto conf = c_.ctl_conf();
			if (!conf.ok() || conf->state_save_location.empty())
				return std::nullopt;
			ssl_ = conf->state_save_location;
		}
		for (const auto &f : files) {
			struct stat st;
			if (stat((ssl_ + "/" + f).c_str(), &st) != 0)
				return std::nullopt;
			if (static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9 <
			    since)
				return false;
		}
		return true;
	}

	// When the answering slurmctld started; 0 when it cannot be read.
	int64_t ctld_boot()
	{
		auto conf = c_.ctl_conf();
		return conf.ok() ? conf->boot_time : 0;
	}

	// Contract 7: redo what a controller that restarted from older state
	// lost, until its save holds the last change. Only a controller that
	// started since the run began can have lost it: with the same
	// slurmctld a missing drain or a reservation back is someone's newer
	// decision (an admin's resume, a campaign admitting the node again),
	// never undone here. Unknown start times redo, as before.
	bool redo_lost()
	{
		int64_t boot = ctld_boot();
		if (boot != 0 && boot == boot_)
			return false;
		if (boot != 0)
			boot_ = boot;
		bool redone = false;
		for (const auto &[resv, node] : deleted_) {
			auto r = c_.reservation(resv);
			if (!r.ok() || !r.value())
				continue;
			log_warn("node %s: reservation %s is back (slurmctld restarted from a "
			         "state saved "
			         "before its deletion); deleting it again",
			         node.c_str(), resv.c_str());
			Status st = c_.delete_reservation(resv);
			if (!st.ok())
				log_warn("node %s: %s", node.c_str(), st.message().c_str());
			redone = true;
		}
		for (const auto &[node, reason] : drained_) {
			auto n = c_.node(node);
			if (!n.ok() || !n.value() || n.value()->drain)
				continue;
			log_warn("node %s: its drain is gone (slurmctld restarted from a state "
			         "saved before "
			         "it); draining it again",
			         node.c_str());
			Status st = slurm::drain_node(c_, node, reason);
			if (!st.ok())
				log_warn("node %s: %s", node.c_str(), st.message().c_str());
			redone = true;
		}
		return redone;
	}

	void confirm_saved()
	{
		if (deleted_.empty() && drained_.empty())
			return;
		std::vector<std::string> files = {"resv_state"};
		if (!drained_.empty())
			files.push_back("node_state");
		double deadline = h_.now() + o_.save_wait_s;
		for (;;) {
			if (redo_lost())
				changed_ = h_.wall();
			auto saved = h_.saved(changed_, files);
			if (!saved) {
				log_warn(
				    "cannot confirm that slurmctld saved this run's changes "
				    "(StateSaveLocation not readable here): a controller crash in "
				    "the next seconds could undo them; run onrampctl admit again "
				    "if a reservation comes back");
				return;
			}
			// Saved after the last change, and nothing came back since the
			// check above (a controller restarted in between saves again).
			if (*saved) {
				if (!redo_lost())
					return;
				changed_ = h_.wall();
			}
			if (h_.now() >= deadline) {
				log_warn("slurmctld has not saved its state within %ds of this "
				         "run's last change: "
				         "a controller crash now would undo it",
				         o_.save_wait_s);
				return;
			}
			h_.sleep(o_.poll_s);
		}
	}

	slurm::SlurmClient &c_;
	const OrchestrateOptions &o_;
	OrchestrateHooks h_;
	std::vector<NodeOutcome> *out_;
	std::vector<NodeOutcome> outs_;
	std::map<std::string, Launched> launched_;
	std::map<std::string, std::string> deleted_; // reservation -> node
	std::map<std::string, std::string> drained_; // node -> reason
	double changed_ = 0;                         // wall time of the last change
	int64_t boot_ = 0;                           // slurmctld's start, as last seen
	std::string ssl_;                            // StateSaveLocation
	std::vector<std::string> nodes_;             // this run's nodes
	int ordinal_ = 0;
	int worst_ = 0;
};

} // namespace

std::string reservation_name(const std::string &resv_base, const std::string &node)
{
	return resv_base + "_" + node;
}

std::string slurm_user_name(slurm::SlurmClient &c)
{
	auto uid = c.slurm_user_uid();
	struct passwd *pw = uid.ok() ? getpwuid(uid.value()) : nullptr;
	return pw ? pw->pw_name : "root";
}

std::string reservation_users(slurm::SlurmClient &c)
{
	std::string su = slurm_user_name(c);
	return su == "root" ? su : "root," + su;
}

bool reserve_node(slurm::SlurmClient &c, const std::string &resv, const std::string &node,
                  const std::string &users)
{
	auto r = c.reservation(resv);
	if (r.ok() && r.value())
		return true;
	Status st = r.ok() ? c.create_reservation({resv, node}, users) : r.status();
	if (st.ok())
		return true;
	auto again = c.reservation(resv); // another run made it meanwhile
	if (again.ok() && again.value())
		return true;
	log_info("node %s: cannot create reservation %s: %s", node.c_str(), resv.c_str(),
	         st.message().c_str());
	return false;
}

void resume_if_ours(slurm::SlurmClient &c, const std::string &node)
{
	auto n = c.node(node);
	if (!n.ok() || !n.value() || !(n.value()->drain || n.value()->state == "DOWN"))
		return;
	Status st = slurm::resume_node(c, node, kReasonPrefix);
	if (!st.ok())
		log_warn("node %s: %s", node.c_str(), st.message().c_str());
}

std::vector<std::string> pick_peers(const std::vector<slurm::Node> &nodes, const std::string &node,
                                    const std::string &feature, int ordinal, int want)
{
	std::vector<std::string> free, busy, out;
	std::vector<slurm::Node> sorted = nodes;
	std::sort(sorted.begin(), sorted.end(),
	          [](const slurm::Node &a, const slurm::Node &b) { return a.name < b.name; });
	for (const auto &n : sorted) {
		if (n.name == node || n.state != "IDLE" || n.drain || !n.responding ||
		    !has_feature(n.features_active, feature))
			continue;
		(n.reserved ? busy : free).push_back(n.name);
	}
	size_t nf = free.size(), w = want > 0 ? static_cast<size_t>(want) : 0;
	size_t k = ordinal > 0 ? static_cast<size_t>(ordinal) : 0;
	for (size_t i = 0; i < w && i < nf; i++)
		out.push_back(free[(k * w + i) % nf]);
	for (size_t j = 0; out.size() < w && j < busy.size(); j++)
		out.push_back(busy[j]);
	return out;
}

std::vector<std::string> pick_untested_peers(const std::vector<slurm::Node> &nodes,
                                             const std::string &node,
                                             const std::vector<std::string> &run_nodes, int ordinal,
                                             int want)
{
	std::vector<std::string> ok, out;
	for (const auto &name : run_nodes) {
		if (name == node || std::find(ok.begin(), ok.end(), name) != ok.end())
			continue;
		auto n = std::find_if(nodes.begin(), nodes.end(),
		                      [&](const slurm::Node &x) { return x.name == name; });
		// Responding or not right now (a node of this run may be
		// re-registering after its own admission): its job waits for it.
		if (n == nodes.end() || (n->drain && !n->reason.empty() &&
		                         !slurm::has_prefix(n->reason, kReasonPrefix)))
			continue;
		ok.push_back(name);
	}
	size_t w = want > 0 ? static_cast<size_t>(want) : 0;
	size_t k = ordinal > 0 ? static_cast<size_t>(ordinal) : 0;
	for (size_t i = 0; i < w && i < ok.size(); i++)
		out.push_back(ok[(k * w + i) % ok.size()]);
	return out;
}

int orchestrate_admission(slurm::SlurmClient &c, const OrchestrateOptions &o,
                          const std::vector<std::string> &nodes, const OrchestrateHooks &hooks,
                          std::vector<NodeOutcome> *outcomes)
{
	if (outcomes)
		outcomes->clear();
	return Run(c, o, hooks, outcomes).run(nodes);
}

} // namespace admit
} // namespace onramp
