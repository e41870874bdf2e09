#include "admit/admission.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "admit/checks.hpp"
#include "admit/host.hpp"
#include "admit/pair.hpp"
#include "admit/record.hpp"
#include "admit/runner.hpp"
#include "admit/site.hpp"
#include "log.hpp"
#include "slurm/client.hpp"

namespace onramp {
namespace admit {

Result<std::unique_ptr<AdmitInputs>> prepare_admission(const Config &cfg, const std::string &node)
{
	std::unique_ptr<AdmitInputs> in(new AdmitInputs);
	in->cfg = cfg;
	in->node = node;
	auto path = baseline_path(cfg);
	if (!path.ok())
		return path.status();
	auto b = load_baseline(path.value());
	if (!b.ok())
		return b.status();
	in->baseline = std::move(b.value());
	auto hs = host_spec(cfg, in->baseline.host_cmdline, in->baseline.host_sysctl,
	                    in->baseline.ckpt_write_min_gbs, in->baseline.ckpt_read_min_gbs);
	if (!hs.ok())
		return hs.status();
	auto be = make_backend(cfg, node);
	if (!be.ok())
		return be.status();
	in->backend = std::move(be.value());
	auto boot = read_boot_id(cfg, node);
	if (!boot.ok())
		return boot.status();
	in->boot_id = boot.value();
	return in;
}

Result<std::vector<std::string>> parse_check_list(const std::string &list)
{
	std::vector<std::string> out;
	size_t pos = 0;
	while (pos <= list.size()) {
		size_t comma = list.find(',', pos);
		std::string name =
		    list.substr(pos, comma == std::string::npos ? comma : comma - pos);
		pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
		if (name.empty())
			continue;
		if (name == kNcclPair)
			return Status::Error("--checks: nccl_pair is not a node-local check; use "
			                     "'onramp-admit pair --peers LIST'");
		if (!is_check_name(name))
			return Status::Error(
			    "--checks: unknown check '" + name +
			    "' (known: inventory, "
			    "versions, gpu_health, mem_bw, nccl_allreduce, fabric, "
			    "topology, gpu_depth, host, dcgm)");
		if (std::find(out.begin(), out.end(), name) == out.end())
			out.push_back(name);
	}
	if (out.empty())
		return Status::Error("--checks: no check named");
	// Always in run order, whatever order they were given in.
	std::vector<std::string> ordered;
	for (const auto &c : local_checks())
		if (std::find(out.begin(), out.end(), c) != out.end())
			ordered.push_back(c);
	return ordered;
}

namespace {

Verdict new_verdict(const AdmitInputs &in)
{
	Verdict v;
	v.node = in.node;
	v.boot_id = in.boot_id;
	v.baseline_digest = in.baseline.digest;
	v.backend = in.backend->name();
	v.simulated = in.backend->simulated();
	v.sku = in.cfg.str("Sku");
	v.time = iso_time(time(nullptr));
	return v;
}

// Run one check under the runner; one that could not measure (TIMEOUT,
// ERROR) is run again up to CheckRetries times, CheckRetryBackoff seconds
// apart (doubled each time); still unmeasured it is INCONCLUSIVE_<CHECK>.
CheckResult run_with_retries(AdmitInputs &in, const AdmitOptions &opt, const std::string &name,
                             double timeout, const std::function<CheckResult()> &fn)
{
	int retries = static_cast<int>(in.cfg.integer("CheckRetries"));
	double backoff = static_cast<double>(in.cfg.seconds("CheckRetryBackoff"));
	auto spawn = [&](pid_t pgid) {
		if (opt.on_spawn)
			opt.on_spawn(name, pgid);
	};
	IsolatedRun run;
	double took = 0;
	int tries = 0;
	for (;;) {
		run = run_isolated(name, timeout, fn, spawn);
		took += run.result.duration_s;
		tries++;
		if (!run.result.unmeasured() || tries > retries)
			break;
		double wait = backoff * static_cast<double>(1u << std::min(tries - 1, 16));
		log_info("%s: %s could not measure (%s: %s); trying again in %g s (%d of %d)",
		         in.node.c_str(), name.c_str(), run.result.code.c_str(),
		         run.result.detail.c_str(), wait, tries, retries);
		sleep_s(wait);
	}
	CheckResult r = std::move(run.result);
	r.duration_s = took;
	if (r.unmeasured()) {
		r.code = inconclusive_code(name);
		std::string note =
		    strprintf(" (unmeasured after %d tr%s)", tries, tries == 1 ? "y" : "ies");
		size_t m = r.detail.find(std::string(" ") + kSimulatedMarker);
		r.detail.insert(m == std::string::npos ? r.detail.size() : m, note);
	}
	// The site's checks run on the node itself, whatever the backend.
	if (in.backend->simulated() && is_check_name(name))
		mark_simulated(&r);
	return r;
}

} // namespace

Verdict run_admission(AdmitInputs &in, const AdmitOptions &opt)
{
	Verdict v = new_verdict(in);
	CheckContext ctx;
	ctx.cfg = &in.cfg;
	ctx.baseline = &in.baseline;
	ctx.backend = in.backend.get();
	ctx.node = in.node;
	auto note = [&](CheckResult r) {
		log_verbose("%s: %s %s %s (%.2f s)", in.node.c_str(), r.name.c_str(),
		            check_status_name(r.status), r.code.c_str(), r.duration_s);
		v.checks.push_back(std::move(r));
	};
	const std::vector<std::string> &names = opt.checks.empty() ? local_checks() : opt.checks;
	for (const auto &name : names) {
		double timeout = static_cast<double>(in.baseline.timeout_s(in.cfg, name));
		CheckResult r =
		    run_with_retries(in, opt, name, timeout, [&] { return run_check(name, ctx); });
		if (name == kInventory) {
			// An inventory that could not measure says nothing of the GPUs:
			// the checks after it take their own (gpu_gate).
			ctx.inventory_known = !r.unmeasured();
			ctx.no_gpu = r.code == code::kNoGpu;
			ctx.no_gpu_why = "inventory: " + r.detail;
		}
		note(std::move(r));
	}
	// The site's own checks, in a full run only.
	if (opt.checks.empty() && in.cfg.is_set("AdmissionNhc")) {
		int t = static_cast<int>(in.baseline.timeout_s(in.cfg, kNhc));
		int nhc_t = t > 10 ? t - 5 : std::max(1, t - 1); // its watchdog first
		note(run_with_retries(in, opt, kNhc, t,
		                      [&] { return run_nhc(in.cfg, in.node, nhc_t); }));
	}
	if (opt.checks.empty() && in.cfg.is_set("AdmissionSiteChecks")) {
		// Listed again: what was validated at the start may have changed.
		auto progs = list_site_checks(in.cfg.str("AdmissionSiteChecks"));
		if (!progs.ok()) {
			CheckResult r = make_fail(std::string(kSitePrefix) + "checks",
			                          code::kBadInput, progs.status().message());
			r.status = CheckStatus::Error;
			note(std::move(r));
		} else {
			for (const auto &p : progs.value()) {
				std::string name = kSitePrefix + p.name;
				double t = static_cast<double>(in.baseline.timeout_s(in.cfg, name));
				note(run_with_retries(in, opt, name, t, [&] {
					return run_site_program(p, in.cfg, in.node);
				}));
			}
		}
	}
	// Unmeasured checks and no measured failure: the node stays fenced.
	bool unmeasured = std::any_of(v.checks.begin(), v.checks.end(),
	                              [](const CheckResult &c) { return c.unmeasured(); });
	v.inconclusive = unmeasured && !v.has_measured_failure();
	return v;
}

namespace {

// One step of the pair test in a child process (the runner's timeout and
// process group): measure fills the result; its error is our own bad input
// (a malformed peer profile), code BAD_INPUT.
IsolatedRun pair_step(AdmitInputs &in, const AdmitOptions &opt, double timeout,
                      const std::function<Status(CheckResult *)> &measure)
{
	return run_isolated(
	    kNcclPair, timeout,
	    [&]() -> CheckResult {
		    in.backend->enter_check(kNcclPair);
		    CheckResult r = make_pass(kNcclPair, "");
		    Status st = measure(&r);
		    if (!st.ok()) {
			    r = make_fail(kNcclPair, code::kBadInput, st.message());
			    r.status = CheckStatus::Error;
		    }
		    return r;
	    },
	    [&](pid_t pgid) {
		    if (opt.on_spawn)
			    opt.on_spawn(kNcclPair, pgid);
	    });
}

// The per-rail pass after the all-GPU run passed (pair.hpp's decide_rails):
// each peer in turn until every rail is decided. A failed or undecided
// rail turns *d into RAIL_BW_LOW or PAIR_INCONCLUSIVE; its attempts go to
// *rails, each peer it tried to *tried. Without peak.rail_busbw_gbs in the
// baseline the pass is not run and the detail says so. An error is our own
// bad input.
Status rail_pass(AdmitInputs &in, const std::vector<std::string> &peers, const AdmitOptions &opt,
                 PairDecision *d, Json *rails, double *started, std::vector<std::string> *tried)
{
	double threshold = in.baseline.rail_threshold_gbs(in.cfg);
	if (threshold <= 0) {
		d->detail += "; per-rail pass off (no peak.rail_busbw_gbs in the baseline)";
		return Status::Ok();
	}
	double timeout = static_cast<double>(in.baseline.timeout_s(in.cfg, kNcclPair));
	std::vector<RailAttempt> attempts;
	std::vector<std::string> mine;
	for (const auto &peer : peers) {
		if (peer == in.node || std::find(mine.begin(), mine.end(), peer) != mine.end())
			continue;
		if (!attempts.empty() && rails_decided(attempts, threshold))
			break;
		mine.push_back(peer);
		if (std::find(tried->begin(), tried->end(), peer) == tried->end())
			tried->push_back(peer);
		IsolatedRun run = pair_step(in, opt, timeout, [&](CheckResult *r) -> Status {
			auto obs = in.backend->pair_rails(peer);
			if (!obs.ok())
				return obs.status();
			Json list = Json::array();
			for (const auto &o : obs.value()) {
				Json j = Json::object();
				j.set("gpu", o.gpu).set("hca", o.hca).set("port", o.port);
				j.set_bool("measured", o.measured).set("busbw_gbs", o.busbw_gbs);
				j.set("wrong", static_cast<int64_t>(o.wrong)).set("why", o.why);
				list.push(j);
			}
			r->data = list;
			return Status::Ok();
		});
		*started += run.result.duration_s;
		if (run.result.code == code::kBadInput)
			return Status::Error(run.result.detail);
		const json_t *list = run.result.data.get();
		if (run.result.status != CheckStatus::Pass || !json_is_array(list)) {
			// Nothing measured with this peer (timeout, crash): no evidence.
			log_info("%s: per-rail pass with %s measured nothing (%s)", in.node.c_str(),
			         peer.c_str(), run.result.detail.c_str());
			continue;
		}
		size_t i;
		const json_t *e;
		json_array_foreach(list, i, e)
		{
			RailAttempt a;
			a.peer = peer;
			JsonReader jr("per-rail result");
			a.obs.gpu = static_cast<int>(jr.integer_or(e, "", "gpu", 0));
			a.obs.hca = jr.str_or(e, "", "hca", "");
			a.obs.port = static_cast<int>(jr.integer_or(e, "", "port", 1));
			a.obs.measured = jr.boolean_or(e, "", "measured", false);
			a.obs.busbw_gbs = jr.num_or(e, "", "busbw_gbs", 0);
			a.obs.wrong = static_cast<uint64_t>(jr.integer_or(e, "", "wrong", 0));
			a.obs.why = jr.str_or(e, "", "why", "");
			attempts.push_back(a);
			Json t = Json::adopt(json_deep_copy(e));
			t.set("peer", peer);
			rails->push(t);
		}
	}
	RailDecision rd = decide_rails(in.node, attempts, threshold);
	if (attempts.empty())
		rd.detail = "per-rail pass: nothing measured with any peer";
	if (rd.status == CheckStatus::Pass &&
	    rd.rails < static_cast<size_t>(in.baseline.gpu_count)) {
		// A rail the backend did not list is a rail not tested.
		rd.status = CheckStatus::Error;
		rd.code = code::kPairInconclusive;
		rd.detail = strprintf("per-rail pass: only %zu of %d rails measured", rd.rails,
		                      in.baseline.gpu_count);
	}
	if (rd.status == CheckStatus::Pass) {
		d->detail += "; " + rd.detail;
		return Status::Ok();
	}
	d->status = rd.status;
	d->code = rd.code;
	d->detail = rd.detail + " (all-GPU run: " + d->detail + ")";
	return Status::Ok();
}

} // namespace

Result<Verdict> run_pair_admission(AdmitInputs &in, const std::vector<std::string> &peers,
                                   const AdmitOptions &opt)
{
	Verdict v = new_verdict(in);
	double threshold = in.baseline.pair_threshold_gbs(in.cfg);
	double timeout = static_cast<double>(in.baseline.timeout_s(in.cfg, kNcclPair));
	std::vector<PairAttempt> attempts;
	std::vector<std::string> tried;
	double started = 0;
	Json tries = Json::array();
	// One attempt with peer, appended to attempts; an error is our own bad
	// input (a malformed peer profile), checked before forking.
	auto attempt = [&](const std::string &peer) -> Status {
		IsolatedRun run = pair_step(in, opt, timeout, [&](CheckResult *r) -> Status {
			auto obs = in.backend->pair_busbw(peer);
			if (!obs.ok())
				return obs.status();
			r->value = obs->measured ? obs->busbw_gbs : NAN;
			r->samples = obs->samples;
			// No number is no verdict on anyone (decide_pair).
			r->status = obs->measured ? CheckStatus::Pass : CheckStatus::Error;
			r->detail = obs->why;
			Json d = Json::object();
			d.set("wrong", static_cast<int64_t>(obs->wrong));
			d.set("nranks", obs->nranks).set("note", obs->note);
			r->data = d;
			return Status::Ok();
		});
		started += run.result.duration_s;
		if (run.result.code == code::kBadInput)
			return Status::Error(run.result.detail);
		PairAttempt a;
		a.peer = peer;
		a.measured =
		    run.result.status == CheckStatus::Pass && std::isfinite(run.result.value);
		a.busbw_gbs = a.measured ? run.result.value : 0;
		if (run.result.data && json_is_object(run.result.data.get()))
			a.wrong = static_cast<uint64_t>(
			    json_integer_value(json_object_get(run.result.data.get(), "wrong")));
		a.why = run.result.detail;
		if (run.result.data && json_is_object(run.result.data.get()))
			if (const char *n =
			        json_string_value(json_object_get(run.result.data.get(), "note")))
				a.note = n;
		attempts.push_back(a);
		Json t = Json::object();
		t.set("peer", peer).set("status", check_status_name(run.result.status));
		t.set("busbw_gbs", run.result.value).set("duration_s", run.result.duration_s);
		t.set("wrong", static_cast<int64_t>(a.wrong)).set("detail", run.result.detail);
		if (run.result.data && json_is_object(run.result.data.get()))
			t.set("nranks", static_cast<int64_t>(json_integer_value(
			                    json_object_get(run.result.data.get(), "nranks"))));
		tries.push(t);
		return Status::Ok();
	};
	for (const auto &peer : peers) {
		if (peer == in.node || std::find(tried.begin(), tried.end(), peer) != tried.end())
			continue;
		if (pair_decided(attempts, threshold))
			break;
		tried.push_back(peer);
		// An attempt that measured nothing (a rendezvous nobody finished, a
		// launch that failed) is evidence of nothing: it is made again with
		// the same peer, then with the next peer, never counted as a failure.
		for (int round = 0; round <= kPairUnmeasuredRetries; round++) {
			if (round > 0) {
				if (attempts.back().measured)
					break;
				log_info(
				    "%s: nccl_pair with %s measured nothing (%s); trying again",
				    in.node.c_str(), peer.c_str(), attempts.back().why.c_str());
			}
			Status st = attempt(peer);
			if (!st.ok())
				return st;
		}
	}
	PairDecision d = decide_pair(attempts, threshold);
	Json rails = Json::array();
	auto untested = [&](const std::string &p) {
		return std::find(opt.untested_peers.begin(), opt.untested_peers.end(), p) !=
		       opt.untested_peers.end();
	};
	if (d.status == CheckStatus::Pass) {
		// Peers the all-GPU run passed with first, suspects last.
		std::vector<std::string> order;
		for (const auto &a : attempts)
			if (pair_attempt_ok(a, threshold))
				order.push_back(a.peer);
		for (const auto &p : peers)
			if (std::find(d.suspects.begin(), d.suspects.end(), p) == d.suspects.end())
				order.push_back(p);
		order.insert(order.end(), d.suspects.begin(), d.suspects.end());
		Status st = rail_pass(in, order, opt, &d, &rails, &started, &tried);
		if (!st.ok())
			return st;
	}
	// A failure with a peer that was not admitted itself blames nobody.
	std::string strangers;
	for (const auto &p : tried)
		if (untested(p))
			strangers += (strangers.empty() ? "" : ", ") + p;
	if (d.status == CheckStatus::Fail && !strangers.empty()) {
		d.status = CheckStatus::Error;
		d.detail = d.code +
		           " not blamed on the node: tried with peers not admitted themselves (" +
		           strangers + "): " + d.detail;
		d.code = code::kPairInconclusive;
	}
	CheckResult r = make_pass(kNcclPair, d.detail);
	r.status = d.status;
	r.code = d.code;
	r.threshold = threshold;
	r.unit = "GB/s";
	r.duration_s = started;
	double best = NAN;
	for (const auto &a : attempts) {
		if (a.measured)
			r.samples.push_back(a.busbw_gbs);
		if (a.measured && (!(best >= a.busbw_gbs)))
			best = a.busbw_gbs;
	}
	r.value = best;
	Json data = Json::object();
	Json sus = Json::array();
	for (const auto &s : d.suspects)
		sus.push(s);
	data.set("attempts", tries).set("suspect_peers", sus).set("rails", rails);
	r.data = data;
	if (in.backend->simulated())
		mark_simulated(&r);
	v.inconclusive = d.inconclusive();
	v.checks.push_back(r);
	return v;
}

Verdict require_pair(Verdict v)
{
	if (!v.passed())
		return v;
	CheckResult r =
	    make_pass(kNcclPair, "node-local checks passed; no tested peer for the pair "
	                         "test: kept fenced until one exists");
	r.status = CheckStatus::Error;
	r.code = code::kPairInconclusive;
	if (v.simulated)
		mark_simulated(&r);
	v.checks.push_back(r);
	v.inconclusive = true;
	return v;
}

Status record_verdict(const Config &cfg, const Verdict &v)
{
	// A PASS admits the node: it must come from every node-local check,
	// never from a partial run (--checks). A FAIL from any check stands.
	if (v.passed() && !v.inconclusive)
		for (const auto &name : local_checks())
			if (std::none_of(v.checks.begin(), v.checks.end(),
			                 [&](const CheckResult &c) { return c.name == name; }))
				return Status::Error("a PASS without the check '" + name +
				                     "' (a partial run) is not recorded");
	Record rec;
	rec.node = v.node;
	rec.boot_id = v.boot_id;
	rec.baseline_digest = v.baseline_digest;
	rec.status = v.inconclusive ? kRecordInconclusive : v.passed() ? kRecordPass : kRecordFail;
	rec.code = v.code();
	rec.detail = v.detail();
	rec.time = v.time;
	rec.verdict = v.to_json();
	return write_record(record_path(cfg, v.node), rec);
}

std::string verdict_summary(const Verdict &v)
{
	std::string s = v.node + " " + v.status();
	if (v.passed() && !v.inconclusive)
		return s + ": " + v.detail();
	return s + " " + v.code() + ": " + v.detail();
}

void publish_admission(const Config &cfg, const std::string &node)
{
	std::string why;
	bool admitted = judge(cfg, node, &why) == Judgement::Admitted;
	Status fs = set_active_feature(node, cfg.str("AdmittedFeature"), admitted);
	if (!fs.ok())
		log_warn("%s: %s", node.c_str(), fs.message().c_str());
	// Only root may signal root's slurmd; SlurmUser, which runs the
	// admission jobs of an unprivileged slurmctld's triggers, need not once
	// slurmctld's copy is set (node_features/onramp's watcher in slurmd
	// sees the record within seconds and makes slurmd re-register).
	if (fs.ok() && geteuid() != 0)
		return;
	Status rs = reregister_slurmd(node);
	if (!rs.ok())
		log_warn("%s: %s", node.c_str(), rs.message().c_str());
}

} // namespace admit
} // namespace onramp
