#include "campaign/driver.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pwd.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "hostlist.hpp"
#include "json.hpp"
#include "log.hpp"
#include "number.hpp"
#include "proc.hpp"

namespace onramp {
namespace campaign {

void SpawnAdmission::start(const std::vector<std::string> &nodes)
{
	// A node the campaign admits again (drained earlier, then fixed) may
	// still be held by its previous admission while that one waits for
	// slurmctld's save (up to a minute): wait for it rather than skip.
	std::vector<std::string> args = {onrampctl_,
	                                 "admit",
	                                 "--timeout",
	                                 std::to_string(timeout_s_),
	                                 "--lock-wait",
	                                 std::to_string(kAdmitLockWaitS),
	                                 hostlist_compress(nodes)};
	// Detached: the admission outlives this process and leaves no zombie.
	bool failed = false;
	if (!detach_process(log_, log_max_bytes_, &failed)) {
		if (failed)
			log_error("cannot start the admission of %s: fork failed",
			          args.back().c_str());
		return;
	}
	// Nothing else goes along: a descriptor the campaign inherited without
	// close-on-exec (onrampctl expand's lock) would stay held as long as
	// the admission runs.
	close_range(3, ~0U, 0);
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(&a[0]);
	argv.push_back(nullptr);
	execv(argv[0], argv.data());
	_exit(127);
}

Settings settings_from(const Config &cfg, slurm::SlurmClient &slurm)
{
	Settings s;
	s.feature = cfg.str("AdmittedFeature");
	s.reservation = cfg.str("AdmissionReservation");
	auto su = slurm.slurm_user_uid();
	struct passwd *pw = su.ok() ? getpwuid(su.value()) : nullptr;
	if (pw && strcmp(pw->pw_name, "root") != 0)
		s.reservation_users += std::string(",") + pw->pw_name;
	return s;
}

namespace {

using slurm::has_feature;
using slurm::join;

} // namespace

// One look at Slurm: every node and every reservation name.
struct Driver::Snapshot {
	std::map<std::string, slurm::Node> nodes;
	std::set<std::string> resv;
	const slurm::Node *node(const std::string &n) const
	{
		auto it = nodes.find(n);
		return it == nodes.end() ? nullptr : &it->second;
	}
};

Status Driver::snapshot(Snapshot *s)
{
	auto nodes = s_.nodes();
	if (!nodes.ok())
		return nodes.status();
	auto resv = s_.reservations();
	if (!resv.ok())
		return resv.status();
	s->nodes.clear();
	for (auto &n : nodes.value())
		s->nodes[n.name] = n;
	s->resv = std::move(resv.value());
	return Status::Ok();
}

std::string Driver::resv_of(const std::string &node) const
{
	return set_.reservation + "_" + node;
}

Status Driver::set_node(const std::string &id, const std::string &node, const std::string &state,
                        const std::string &code, const std::string &detail)
{
	hook_.before(state);
	Status st = j_.set_node(id, node, state, code, detail, now());
	if (st.ok())
		hook_.after(state);
	return st;
}

Result<std::string> Driver::plan(const PlanRequest &r,
                                 const std::map<std::string, std::string> &leaf_of,
                                 const std::map<std::string, int> &sizes, bool *refused)
{
	*refused = true;
	Status st = check_fraction(r.fraction);
	if (!st.ok())
		return Status::Error(st.message() + " (--wave-fraction / MaxWaveFraction)");
	st = check_fraction(r.min_pass, "minimum wave pass rate");
	if (!st.ok())
		return Status::Error(st.message() + " (MinWavePassRate)");
	if (r.boot_timeout < 1)
		return Status::Error("boot timeout must be a positive number of seconds");
	std::vector<Member> members;
	std::vector<std::string> unknown;
	for (const auto &h : r.nodes) {
		auto it = leaf_of.find(h);
		if (it == leaf_of.end())
			unknown.push_back(h);
		else
			members.push_back({h, it->second});
	}
	if (!unknown.empty())
		return Status::Error("unknown node(s) " + hostlist_compress(unknown) +
		                     ": not under any leaf switch of topology.conf");
	*refused = false;
	auto ov = j_.overlaps(r.id, r.nodes);
	if (!ov.ok())
		return ov.status();
	if (!ov->empty()) {
		*refused = true;
		std::string m;
		for (const auto &o : ov.value())
			m += (m.empty() ? "" : ", ") + o;
		return Status::Error("node(s) already in another campaign that is not done: " + m);
	}
	bool found = false;
	auto existing = j_.campaign(r.id, &found);
	if (!existing.ok())
		return existing.status();
	std::string list = hostlist_compress(r.nodes);
	if (found) {
		if (existing->nodes != list) {
			*refused = true;
			return Status::Error("campaign " + r.id + " exists with nodes " +
			                     existing->nodes + ", not " + list +
			                     "; pick another --name");
		}
		if (existing->state == "done")
			return "done " + r.id;
		if (existing->state != "running" &&
		    !(st = j_.set_campaign(r.id, "running", "resumed", now())).ok())
			return st;
		return "resumed " + r.id;
	}
	auto waves = plan_waves(members, sizes, r.fraction);
	if (!waves.ok()) {
		*refused = true;
		return waves.status();
	}
	CampaignRow c;
	c.id = r.id;
	c.nodes = list;
	c.fraction = r.fraction;
	c.min_pass = r.min_pass;
	c.boot_timeout = r.boot_timeout;
	auto created = j_.create(c, waves.value(), now());
	if (!created.ok())
		return created.status();
	return strprintf("created %s %zu waves", r.id.c_str(), waves->size());
}

Result<WaveView> Driver::next_wave(const std::string &id)
{
	auto waves = j_.waves(id);
	if (!waves.ok())
		return waves.status();
	auto nodes = j_.nodes(id);
	if (!nodes.ok())
		return nodes.status();
	WaveView v;
	for (const auto &w : waves.value()) {
		if (w.state == "passed")
			continue;
		v.wave = w.wave;
		for (const auto &n : nodes.value())
			if (n.wave == w.wave)
				v.nodes.push_back(n);
		return v;
	}
	v.done = true;
	return v;
}

Result<Outcome> Driver::close_wave(const std::string &id, int k, std::string *why)
{
	bool found = false;
	auto c = j_.campaign(id, &found);
	if (!c.ok())
		return c.status();
	auto nodes = j_.nodes(id);
	if (!nodes.ok())
		return nodes.status();
	int total = 0, passed = 0;
	std::string failed;
	for (const auto &n : nodes.value()) {
		if (n.wave != k)
			continue;
		total++;
		if (n.state == "admitted")
			passed++;
		else
			failed += (failed.empty() ? "" : ", ") + n.node + " " +
			          (n.code.empty() ? n.state : n.code);
	}
	if (total == 0)
		return Status::Error(strprintf("campaign %s has no wave %d", id.c_str(), k));
	double rate = static_cast<double>(passed) / total;
	Status st;
	if (rate + 1e-9 >= c->min_pass) {
		*why = strprintf("wave %d passed %d/%d", k, passed, total);
		st = j_.set_wave(id, k, "passed", now());
		return st.ok() ? Result<Outcome>(Outcome::Done) : Result<Outcome>(st);
	}
	*why = strprintf("paused: wave %d pass rate %d/%d = %.2f < MinWavePassRate %.2f; "
	                 "not admitted: %s; fix the node(s) and run expand again",
	                 k, passed, total, rate, c->min_pass, failed.c_str());
	if (!(st = j_.set_wave(id, k, "failed", now())).ok() ||
	    !(st = j_.set_campaign(id, "paused", *why, now())).ok())
		return st;
	return Outcome::Paused;
}

// The admin fixed a node drained earlier in this campaign and ran expand
// again: admit it on its current boot, in its admission reservation.
void Driver::readmit(const std::string &node)
{
	auto resv = s_.reservations();
	if (resv.ok() && !resv->count(resv_of(node))) {
		Status st = s_.create_reservation(resv_of(node), node, set_.reservation_users);
		if (!st.ok()) {
			log_warn("node %s: %s", node.c_str(), st.message().c_str());
			return;
		}
	}
	bool left = false;
	Status st = slurm::resume_node(s_, node, slurm::kReasonPrefix, &left);
	if (!st.ok())
		log_warn("node %s: %s", node.c_str(), st.message().c_str());
	else if (left)
		log_info("node %s: its reason is not onramp's; leaving it drained", node.c_str());
}

Result<Outcome> Driver::run_wave(const std::string &id, const WaveView &w, std::string *why)
{
	const int k = w.wave;
	bool found = false;
	auto camp = j_.campaign(id, &found);
	if (!camp.ok())
		return camp.status();
	const int64_t boot_timeout = camp->boot_timeout;
	std::map<std::string, std::string> state;
	std::map<std::string, int64_t> since;
	for (const auto &n : w.nodes) {
		state[n.node] = n.state;
		since[n.node] = n.times.count(n.state) ? n.times.at(n.state) : 0;
	}
	Status st = j_.set_wave(id, k, "open", now());
	if (!st.ok())
		return st;
	Snapshot snap;
	if (!(st = snapshot(&snap)).ok())
		return st;
	auto booted_since = [&](const std::string &n) {
		const slurm::Node *x = snap.node(n);
		return x && x->boot_time > 0 && x->boot_time >= since[n];
	};
	auto back = [&](const std::string &n) {
		const slurm::Node *x = snap.node(n);
		return x && !x->reboot_pending && !x->down && booted_since(n);
	};
	std::vector<std::string> to_reboot, to_admit;
	for (const auto &[n, s] : state) {
		if (s == "planned") {
			to_reboot.push_back(n);
		} else if (s == "rebooting") {
			// Journaled before the reboot was issued: issue it only when
			// Slurm shows no reboot underway and the node has not booted
			// since.
			const slurm::Node *x = snap.node(n);
			if (!(x && x->reboot_pending) && !booted_since(n))
				to_reboot.push_back(n);
		} else if (s == "drained" || s == "boot_timeout") {
			log_info("node %s: %s earlier in campaign %s; admitting it again",
			         n.c_str(), s.c_str(), id.c_str());
			to_admit.push_back(n);
		}
	}
	if (!to_reboot.empty()) {
		for (const auto &n : to_reboot) {
			if (!(st = set_node(id, n, "rebooting")).ok())
				return st;
			state[n] = "rebooting";
			since[n] = now();
		}
		const std::string list = hostlist_compress(to_reboot);
		log_info("campaign %s wave %d: rebooting %s", id.c_str(), k,
		         join(to_reboot).c_str());
		hook_.before("reboot");
		st = s_.reboot_nodes(
		    list, strprintf("%s expand %s wave %d", slurm::kReasonPrefix, id.c_str(), k));
		if (!st.ok())
			log_warn("campaign %s wave %d: %s", id.c_str(), k, st.message().c_str());
		hook_.after("reboot");
	}
	for (const auto &n : to_admit) {
		readmit(n);
		if (!(st = set_node(id, n, "admitting")).ok())
			return st;
		state[n] = "admitting";
		since[n] = now();
	}
	if (!to_admit.empty())
		admission_.start(to_admit);
	std::set<std::string> kicked;
	for (bool left = true; left;) {
		left = false;
		std::vector<std::string> came_back;
		if (!(st = snapshot(&snap)).ok())
			return st;
		const int64_t t = now();
		for (auto &[n, s] : state) {
			if (s == "rebooting") {
				if (back(n)) {
					if (!(st = set_node(id, n, "booted")).ok() ||
					    !(st = set_node(id, n, "admitting")).ok())
						return st;
					s = "admitting";
					since[n] = t;
					came_back.push_back(n);
				} else if (t - since[n] > boot_timeout) {
					const std::string detail =
					    strprintf("not back %llds after reboot",
					              static_cast<long long>(boot_timeout));
					bool kept = false;
					st = slurm::drain_node(
					    s_, n,
					    strprintf("%sBOOT_TIMEOUT: expand %s wave %d: %s",
					              slurm::kReasonPrefix, id.c_str(), k,
					              detail.c_str()),
					    &kept);
					if (!st.ok())
						log_warn("node %s: %s", n.c_str(),
						         st.message().c_str());
					else if (kept)
						log_info("node %s: keeping the admin's reason",
						         n.c_str());
					if (snap.resv.count(resv_of(n)))
						s_.delete_reservation(resv_of(n));
					if (!(st = set_node(id, n, "boot_timeout", "BOOT_TIMEOUT",
					                    detail))
					         .ok())
						return st;
					s = "boot_timeout";
					log_info("node %s: BOOT_TIMEOUT", n.c_str());
					continue;
				}
				left = true;
			} else if (s == "booted" || s == "admitting") {
				s = "admitting";
				const slurm::Node *x = snap.node(n);
				const bool reserved = snap.resv.count(resv_of(n)) > 0;
				if (x && has_feature(x->features_active, set_.feature) &&
				    !reserved && !x->drain && !x->reboot_pending) {
					if (!(st = set_node(id, n, "admitted")).ok())
						return st;
					s = "admitted";
					log_info("node %s: admitted", n.c_str());
					continue;
				}
				if (x && x->drain) {
					std::string code = "ADMIN_DRAIN", detail = x->reason;
					bool ours =
					    slurm::has_prefix(x->reason, slurm::kReasonPrefix);
					if (ours) {
						std::string rest =
						    x->reason.substr(strlen(slurm::kReasonPrefix));
						code = rest.substr(0, rest.find(':'));
						detail = rest.size() > code.size() + 1
						             ? rest.substr(code.size() + 1)
						             : "";
						if (!detail.empty() && detail[0] == ' ')
							detail.erase(0, 1);
					}
					// "onramp: expand ..." (the reboot's reason) is no drain
					// code.
					bool is_code = !code.empty() &&
					               code.find_first_not_of(
					                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					                   "0123456789_") == std::string::npos;
					if (!ours || is_code) {
						if (!(st = set_node(id, n, "drained", code, detail))
						         .ok())
							return st;
						s = "drained";
						log_info("node %s: drained: %s: %s", n.c_str(),
						         code.c_str(), detail.c_str());
						continue;
					}
				}
				// Back but nobody admits it (no trigger): start it here.
				if (t - since[n] >= set_.kick_after_s && !kicked.count(n)) {
					kicked.insert(n);
					if (reserved && !admission_queued(n)) {
						log_info("node %s: no admission job queued; "
						         "starting one",
						         n.c_str());
						admission_.start({n});
					}
				}
				if (t - since[n] > set_.admit_timeout_s) {
					log_info("node %s: no admission outcome after %llds; it "
					         "stays in its "
					         "reservation",
					         n.c_str(),
					         static_cast<long long>(set_.admit_timeout_s));
					continue;
				}
				left = true;
			}
		}
		// Admit the nodes that are back now, without waiting for the trigger
		// (slurmctld runs triggers every 15 s).
		if (!came_back.empty())
			admission_.start(came_back);
		if (left)
			clock_.sleep(set_.poll_s);
	}
	return close_wave(id, k, why);
}

bool Driver::admission_queued(const std::string &node)
{
	auto jobs = s_.jobs();
	if (!jobs.ok())
		return true; // cannot tell: do not start a second one
	for (const auto &j : jobs.value())
		if (j.name == "onramp-admit:" + node && !j.finished() && slurm::is_admin(s_, j.uid))
			return true; // a user's job of that name does not count
	return false;
}

// An admission run killed before it released its reservation, or a
// slurmctld restarted from state saved before the release, leaves an
// admitted node in its admission reservation (MAINT, widened with the
// peers it borrowed): the smoke job, which must run as a user's would,
// then waits on reserved nodes until its timeout. Nothing else is using
// that reservation once the node is admitted and no admission job of it
// is queued.
void Driver::release_stale_reservations(const std::string &id, const std::string &nodes)
{
	auto hosts = hostlist_expand(nodes);
	auto resv = s_.reservations();
	if (!hosts.ok() || !resv.ok())
		return;
	for (const auto &n : hosts.value()) {
		if (!resv->count(resv_of(n)))
			continue;
		auto node = s_.node(n);
		if (!node.ok() || !node->has_value() ||
		    !slurm::has_feature(node->value().features_active, set_.feature) ||
		    admission_queued(n))
			continue;
		Status st = s_.delete_reservation(resv_of(n));
		log_info("campaign %s: node %s is admitted but still in %s (a run killed before "
		         "releasing it, or a controller restarted from older state): %s",
		         id.c_str(), n.c_str(), resv_of(n).c_str(),
		         st.ok() ? "released" : st.message().c_str());
	}
}

Result<Outcome> Driver::run_waves(const std::string &id, std::string *why)
{
	for (;;) {
		auto w = next_wave(id);
		if (!w.ok())
			return w.status();
		if (w->done)
			return Outcome::Done;
		std::string states;
		for (const auto &n : w->nodes)
			states += (states.empty() ? "" : " ") + n.node + "=" + n.state;
		log_info("campaign %s: wave %d: %s", id.c_str(), w->wave, states.c_str());
		auto r = run_wave(id, w.value(), why);
		if (!r.ok() || r.value() == Outcome::Paused)
			return r;
		log_info("campaign %s: %s", id.c_str(), why->c_str());
	}
}

Validation validation_from(const Config &cfg, const std::string &admit,
                           const std::string &smoke_job)
{
	Validation v;
	v.admit = admit;
	v.smoke_job = smoke_job;
	v.smoke_command = cfg.str("ExpandSmokeCommand");
	v.smoke_timeout_s = cfg.seconds("ExpandSmokeTimeout");
	v.account = cfg.str("AdmissionAccount");
	if (cfg.boolean("AdmissionExclusive"))
		v.job_args.push_back("--exclusive");
	if (!cfg.str("AdmissionGres").empty())
		v.job_args.push_back("--gres=" + cfg.str("AdmissionGres"));
	v.out_dir = cfg.str("StateDir") + "/expand";
	return v;
}

std::optional<slurm::Job> Driver::wait_job(uint32_t id, int64_t limit_s, bool *timed_out)
{
	const int64_t end = now() + limit_s;
	*timed_out = false;
	for (;;) {
		auto j = s_.job(id);
		if (!j.ok() || !j->has_value())
			return std::nullopt;
		const std::string &st = j->value().state;
		if (st != "PENDING" && st != "RUNNING" && st != "CONFIGURING" && st != "COMPLETING")
			return j->value();
		if (now() >= end) {
			*timed_out = true;
			Status c = s_.cancel(id);
			if (!c.ok())
				log_warn("cannot cancel job %u: %s", id, c.message().c_str());
			return std::nullopt;
		}
		clock_.sleep(set_.poll_s);
	}
}

// The campaign's cross-rack pair reservations: <AdmissionReservation>_pair_<id>_<i>,
// the id's characters other than letters and digits as '_'.
std::string Driver::pair_resv_prefix(const std::string &id) const
{
	std::string safe_id = id;
	for (char &c : safe_id)
		if (!isalnum(static_cast<unsigned char>(c)))
			c = '_';
	return set_.reservation + "_pair_" + safe_id + "_";
}

// Once the pairs are recorded none of their reservations is in use; one
// still there was brought back by a slurmctld restarted from state saved
// before its deletion (MAINT on a pair of new nodes: the smoke jobs would
// wait on it).
void Driver::release_pair_reservations(const std::string &id)
{
	auto resv = s_.reservations();
	if (!resv.ok())
		return;
	const std::string prefix = pair_resv_prefix(id);
	for (const auto &r : resv.value()) {
		if (r.compare(0, prefix.size(), prefix) != 0)
			continue;
		Status st = s_.delete_reservation(r);
		log_info("campaign %s: pair reservation %s still there after the pairs: %s",
		         id.c_str(), r.c_str(), st.ok() ? "released" : st.message().c_str());
	}
}

void Driver::run_pair(const std::string &id, int i, const PairRow &p, const Validation &v)
{
	const std::string resv = pair_resv_prefix(id) + std::to_string(i);
	const int64_t t0 = now();
	auto have = s_.reservations();
	if (!have.ok() || !have->count(resv)) {
		Status st = s_.create_reservation(resv, p.node + "," + p.peer, "root");
		if (!st.ok()) {
			log_warn("campaign %s: %s", id.c_str(), st.message().c_str());
			j_.set_pair(id, p.node, p.peer, "inconclusive",
			            "cannot reserve " + p.node + "," + p.peer, t0);
			return;
		}
	}
	const std::string out = strprintf("%s/%s.pair%d.out", v.out_dir.c_str(), id.c_str(), i);
	slurm::BatchJob b;
	b.name = "onramp-pair:" + p.node + ":" + p.peer;
	b.account = v.account;
	b.reservation = resv;
	b.options = v.job_args;
	b.num_nodes = 2;
	b.nodes = p.node + "," + p.peer;
	b.time_limit_min = 10;
	b.output = out;
	b.command = {"srun", "-N1",    "-n1",  "-w",     p.node, v.admit,
	             "pair", "--node", p.node, "--peer", p.peer, "--json-only"};
	auto job = s_.submit(b);
	std::string rc = "submit", result = "inconclusive", detail, jobname = "";
	bool timed_out = false;
	if (job.ok()) {
		jobname = std::to_string(job.value());
		auto end = wait_job(job.value(), set_.pair_wait_s, &timed_out);
		rc = end ? std::to_string(end->exit_status) : "";
	}
	// The pair test's JSON verdict line (the job's other lines skipped).
	// out_dir may be SlurmUser's: a symlink at the name is not followed.
	auto text = read_file_nofollow(out, 1u << 20);
	for (size_t a = 0; text.ok() && a < text->size() && detail.empty();) {
		size_t b = text->find('\n', a);
		auto line = text->substr(a, b == std::string::npos ? std::string::npos : b - a);
		auto o = json_parse(line, out);
		if (o.ok())
			detail = json_string_value(json_object_get(o->get(), "detail"))
			             ? json_string_value(json_object_get(o->get(), "detail"))
			             : "";
		a = b == std::string::npos ? text->size() : b + 1;
	}
	result = rc == "0" ? "pass" : rc == "1" ? "fail" : "inconclusive";
	if (timed_out)
		detail = strprintf("job %s not ended within %lld s: cancelled", jobname.c_str(),
		                   static_cast<long long>(set_.pair_wait_s));
	if (detail.empty())
		detail = "job " + (job.ok() ? jobname : job.status().message()) + " exit " +
		         (rc.empty() ? "?" : rc);
	s_.delete_reservation(resv);
	Status st = j_.set_pair(id, p.node, p.peer, result, detail, now());
	if (!st.ok())
		log_warn("campaign %s: %s", id.c_str(), st.message().c_str());
	log_info("campaign %s: pair %s <-> %s: %s (%s)", id.c_str(), p.node.c_str(), p.peer.c_str(),
	         result.c_str(), detail.c_str());
}

Status Driver::run_pairs(const std::string &id, const Validation &v)
{
	auto pairs = pairs_to_run(j_, id);
	if (!pairs.ok())
		return pairs.status();
	int i = 0;
	for (const auto &p : pairs.value()) {
		log_info("campaign %s: cross-rack pair %s (%s) <-> %s (%s)", id.c_str(),
		         p.node.c_str(), p.rack.c_str(), p.peer.c_str(), p.peer_rack.c_str());
		run_pair(id, ++i, p, v);
	}
	return Status::Ok();
}

Result<Outcome> Driver::run_smokes(const std::string &id, const Validation &v, std::string *why)
{
	auto smokes = smokes_to_run(j_, id);
	if (!smokes.ok())
		return smokes.status();
	struct Running {
		uint32_t job;
		int64_t started;
		std::string out, nodes;
	};
	std::map<std::string, Running> running;
	Status st;
	for (const auto &sm : smokes.value()) {
		const std::string out =
		    strprintf("%s/%s.smoke.%s.out", v.out_dir.c_str(), id.c_str(), sm.rack.c_str());
		auto known = parse_int(sm.job, 1, UINT32_MAX);
		if (sm.result == "running" && known.ok()) {
			auto j = s_.job(static_cast<uint32_t>(known.value()));
			// A slurmctld that lost its last seconds of state gives ids
			// again: the id journaled may now be another job's.
			if (j.ok() && j->has_value() &&
			    j->value().name != "onramp-smoke:" + id + ":" + sm.rack) {
				log_info("campaign %s: rack %s: smoke job %s is now another job "
				         "('%s'): submitting the rack's again",
				         id.c_str(), sm.rack.c_str(), sm.job.c_str(),
				         j->value().name.c_str());
			} else if (j.ok() && j->has_value()) {
				running[sm.rack] = {static_cast<uint32_t>(known.value()), now(),
				                    out, sm.nodes};
				log_info("campaign %s: rack %s: waiting for smoke job %s",
				         id.c_str(), sm.rack.c_str(), sm.job.c_str());
				continue;
			}
		}
		release_stale_reservations(id, sm.nodes);
		release_pair_reservations(id);
		auto hosts = hostlist_expand(sm.nodes);
		slurm::BatchJob b;
		b.name = "onramp-smoke:" + id + ":" + sm.rack;
		b.num_nodes = hosts.ok() ? static_cast<int>(hosts->size()) : 1;
		b.nodes = sm.nodes;
		b.constraint = set_.feature;
		b.time_limit_min = static_cast<int>((v.smoke_timeout_s + 59) / 60);
		b.output = out;
		// By path on the node: the job finds onramp's tools beside it.
		b.command = {v.smoke_job};
		if (!v.smoke_command.empty())
			b.command.push_back(v.smoke_command);
		auto job = s_.submit(b);
		for (int64_t until = now() + set_.submit_retry_s; !job.ok() && now() < until;) {
			log_info("campaign %s: rack %s: smoke job refused (%s); trying again",
			         id.c_str(), sm.rack.c_str(), job.status().message().c_str());
			clock_.sleep(std::max(set_.poll_s, 5.0));
			job = s_.submit(b);
		}
		if (!job.ok()) {
			const std::string m = job.status().message();
			if (!(st = j_.set_smoke(
			          id, sm.rack, "", "fail",
			          "cannot submit the smoke job on " + sm.nodes + ": " + m, now()))
			         .ok())
				return st;
			log_info("campaign %s: rack %s: cannot submit the smoke job: %s",
			         id.c_str(), sm.rack.c_str(), m.c_str());
			continue;
		}
		const std::string jid = std::to_string(job.value());
		if (!(st = j_.set_smoke(id, sm.rack, jid, "running", "", now())).ok())
			return st;
		log_info("campaign %s: rack %s: smoke job %s on %s", id.c_str(), sm.rack.c_str(),
		         jid.c_str(), sm.nodes.c_str());
		running[sm.rack] = {job.value(), now(), out, sm.nodes};
	}
	while (!running.empty()) {
		for (auto it = running.begin(); it != running.end();) {
			const Running &r = it->second;
			auto j = s_.job(r.job);
			std::string state = j.ok() && j->has_value() ? j->value().state : "";
			std::string result = "fail", detail;
			if (state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" ||
			    state == "COMPLETING" || state == "SUSPENDED" || state == "REQUEUED") {
				if (now() - r.started <= v.smoke_timeout_s) {
					++it;
					continue;
				}
				const std::string reason = j->value().state_desc;
				s_.signal_job(r.job, SIGKILL, slurm::SignalScope::Steps);
				detail = strprintf(
				    "not done within ExpandSmokeTimeout %llds (%s, reason %s)",
				    static_cast<long long>(v.smoke_timeout_s), state.c_str(),
				    reason.empty() ? "None" : reason.c_str());
			} else {
				auto text = read_file_nofollow(r.out, 1u << 20);
				for (size_t a = 0; text.ok() && a < text->size();) {
					size_t b = text->find('\n', a);
					auto line = text->substr(
					    a, b == std::string::npos ? std::string::npos : b - a);
					if (line.compare(0, 9, "verdict: ") == 0)
						detail = line.substr(9);
					a = b == std::string::npos ? text->size() : b + 1;
				}
				const int rc =
				    j.ok() && j->has_value() ? j->value().exit_status : -1;
				if (state == "COMPLETED" && rc == 0)
					result = "pass";
				for (const char *p : {"pass: ", "fail: "})
					if (detail.compare(0, strlen(p), p) == 0)
						detail.erase(0, strlen(p));
				if (detail.empty())
					detail = "job " + state + ", exit " +
					         (rc < 0 ? std::string("?") : std::to_string(rc));
			}
			const std::string jid = std::to_string(r.job);
			if (!(st = j_.set_smoke(id, it->first, jid, result, detail, now())).ok())
				return st;
			log_info("campaign %s: rack %s: smoke job %s on %s: %s (%s)", id.c_str(),
			         it->first.c_str(), jid.c_str(), r.nodes.c_str(), result.c_str(),
			         detail.c_str());
			it = running.erase(it);
		}
		if (!running.empty())
			clock_.sleep(set_.poll_s);
	}
	return close_smokes(j_, id, now(), why);
}

Result<Outcome> Driver::run(const std::string &id, const Validation &v, std::string *why)
{
	auto r = run_waves(id, why);
	if (!r.ok() || r.value() == Outcome::Paused)
		return r;
	Status st = make_dir_nofollow(v.out_dir, 0755);
	if (!st.ok())
		return st;
	if (!(st = run_pairs(id, v)).ok())
		return st;
	r = run_smokes(id, v, why);
	if (!r.ok() || r.value() == Outcome::Paused)
		return r;
	st = j_.set_campaign(
	    id, "done",
	    "all waves passed; cross-rack pairs recorded; smoke job passed on every rack", now());
	if (!st.ok())
		return st;
	log_info("campaign %s: done", id.c_str());
	return Outcome::Done;
}

Result<std::vector<PairRow>> pairs_to_run(Journal &j, const std::string &id)
{
	auto pairs = j.pairs(id);
	if (!pairs.ok())
		return pairs.status();
	if (pairs->empty()) {
		auto nodes = j.nodes(id);
		if (!nodes.ok())
			return nodes.status();
		std::vector<Member> admitted;
		for (const auto &n : nodes.value())
			if (n.state == "admitted")
				admitted.push_back({n.node, n.rack});
		for (const auto &p : plan_pairs(admitted)) {
			Status st = j.add_pair(id, p);
			if (!st.ok())
				return st;
		}
		pairs = j.pairs(id);
		if (!pairs.ok())
			return pairs.status();
	}
	std::vector<PairRow> out;
	for (const auto &p : pairs.value())
		if (p.result.empty())
			out.push_back(p);
	return out;
}

Result<std::vector<SmokeRow>> smokes_to_run(Journal &j, const std::string &id)
{
	auto smokes = j.smokes(id);
	if (!smokes.ok())
		return smokes.status();
	if (smokes->empty()) {
		auto nodes = j.nodes(id);
		if (!nodes.ok())
			return nodes.status();
		std::map<std::string, std::vector<std::string>> by_rack;
		for (const auto &n : nodes.value())
			if (n.state == "admitted")
				by_rack[n.rack].push_back(n.node);
		for (const auto &[rack, list] : by_rack) {
			Status st = j.add_smoke(id, rack, hostlist_compress(list));
			if (!st.ok())
				return st;
		}
		smokes = j.smokes(id);
		if (!smokes.ok())
			return smokes.status();
	}
	std::vector<SmokeRow> out;
	for (const auto &s : smokes.value())
		if (s.result != "pass")
			out.push_back(s);
	return out;
}

Result<Outcome> close_smokes(Journal &j, const std::string &id, int64_t now, std::string *why)
{
	auto smokes = j.smokes(id);
	if (!smokes.ok())
		return smokes.status();
	auto dash_or = [](const std::string &s) { return s.empty() ? std::string("-") : s; };
	std::string failed;
	for (const auto &s : smokes.value())
		if (s.result != "pass")
			failed += (failed.empty() ? "" : "; ") + s.rack + " (job " +
			          dash_or(s.job) + ": " +
			          (s.detail.empty() ? dash_or(s.result) : s.detail) + ")";
	if (failed.empty())
		return Outcome::Done;
	*why = "paused: application smoke job failed on rack " + failed +
	       "; fix it and run expand again";
	Status st = j.set_campaign(id, "paused", *why, now);
	if (!st.ok())
		return st;
	return Outcome::Paused;
}

} // namespace campaign
} // namespace onramp
