#include "fleet/diagnose.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <cmath>
#include <cstring>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

#include "admit/backend.hpp"
#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "log.hpp"
#include "metrics/exposition.hpp"

namespace onramp {
namespace fleet {

const char *const kPairLinkFault = "PAIR_LINK_FAULT";

std::string probe_results_path(const Policy &p)
{
	return p.dir + "/probe/results.json";
}

namespace {

// results.json in the probe directory open at dfd (path names it): a
// regular file, never a symlink followed; absent, no samples.
Result<std::vector<PairSample>> probe_results_at(int dfd, const std::string &path)
{
	if (faccessat(dfd, "results.json", F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
		return std::vector<PairSample>();
	auto text = read_file_at(dfd, "results.json", path);
	if (!text.ok())
		return text.status();
	auto j = json_parse(text.value(), path);
	if (!j.ok())
		return j.status();
	return pairs_from_json(j->get(), path, "");
}

} // namespace

Result<std::vector<PairSample>> read_probe_results(const Policy &p)
{
	// FleetDir may sit in SlurmUser's StateDir: neither it, probe/ nor
	// results.json is read through another account's symlink.
	std::string path = probe_results_path(p);
	struct stat sb;
	if (lstat(p.dir.c_str(), &sb) != 0 && errno == ENOENT)
		return std::vector<PairSample>();
	auto dir = open_dir_trusted(p.dir);
	if (!dir.ok())
		return dir.status();
	int sub = openat(dir.value(), "probe", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int err = errno;
	close(dir.value());
	if (sub < 0) {
		if (err == ENOENT)
			return std::vector<PairSample>();
		return Status::Error(p.dir + "/probe: " +
		                     (err == ELOOP || err == ENOTDIR
		                          ? "a symlink or not a directory, refused"
		                          : std::string(strerror(err))));
	}
	auto r = probe_results_at(sub, path);
	close(sub);
	return r;
}

Status record_probe_results(const Policy &p, const std::vector<PairSample> &samples)
{
	// FleetDir/probe, opened once without following a symlink another
	// account put there (open_dir_trusted), read and written through that
	// descriptor.
	auto dir = open_dir_trusted(p.dir);
	if (!dir.ok())
		return dir.status();
	auto sub = open_subdir_nofollow(dir.value(), "probe", p.dir + "/probe");
	close(dir.value());
	if (!sub.ok())
		return sub.status();
	int dfd = sub.value();
	std::string path = probe_results_path(p);
	auto old = probe_results_at(dfd, path);
	if (!old.ok()) {
		close(dfd);
		return old.status();
	}
	std::vector<PairSample> all = std::move(old.value());
	all.insert(all.end(), samples.begin(), samples.end());
	if (all.size() > kProbeMax)
		all.erase(all.begin(), all.begin() + static_cast<long>(all.size() - kProbeMax));
	Status st =
	    write_file_atomic_at(dfd, "results.json", path, pairs_to_json(all).dump() + "\n", 0644);
	close(dfd);
	return st;
}

std::vector<PairResult> gather_pairs(const Policy &p, long long now)
{
	std::vector<PairResult> out;
	for (const auto &s : fleet_pairs(p, now))
		out.push_back({s.a, s.b, s.busbw_gbs});
	auto probes = read_probe_results(p);
	if (!probes.ok()) {
		log_warn("%s", probes.status().message().c_str());
		return out;
	}
	for (const auto &s : probes.value()) {
		long long t = admit::parse_iso_time(s.time);
		if (t >= 0 && now - t <= p.window_s)
			out.push_back({s.a, s.b, s.busbw_gbs});
	}
	return out;
}

Result<std::vector<PairSample>> run_probes(const Config &cfg, const ProbePlan &plan)
{
	std::vector<PairSample> out;
	for (const auto &[a, b] : plan.pairs) {
		auto be = admit::make_backend(cfg, a);
		if (!be.ok())
			return be.status();
		auto obs = be.value()->pair_busbw(b);
		if (!obs.ok())
			return obs.status();
		PairSample s;
		s.a = a;
		s.b = b;
		// Wrong sums are a measured fault (0 GB/s); no number is NaN,
		// kept in the results and left out by the localiser.
		s.busbw_gbs = !obs->measured ? NAN : obs->wrong ? 0 : obs->busbw_gbs;
		s.time = admit::iso_time(time(nullptr));
		out.push_back(s);
	}
	return out;
}

std::string diagnosis_metrics(const Diagnosis &d)
{
	Exposition e;
	e.family("onramp_fleet_pairs", "gauge", "Node pairs the fleet diagnosis was made from.");
	e.family("onramp_fleet_slow_pairs", "gauge",
	         "Of them, pairs below the healthy line (median less FleetSlowMargin).");
	e.family("onramp_fleet_suspect_confidence", "gauge",
	         "A component the diagnosis blames for slow pairs, with its confidence (0-1).");
	e.sample("onramp_fleet_pairs", {}, static_cast<double>(d.pairs));
	e.sample("onramp_fleet_slow_pairs", {}, static_cast<double>(d.slow));
	for (const auto &s : d.suspects)
		e.sample("onramp_fleet_suspect_confidence",
		         {{"kind", kind_name(s.kind)}, {"name", s.name}}, s.confidence);
	return e.text();
}

namespace {

// The localiser's say on a failed nccl_pair of v.
void review_pair(const Config &cfg, const Policy &p, admit::Verdict *v)
{
	admit::CheckResult *pair = nullptr;
	for (auto &c : v->checks)
		if (c.name == admit::kNcclPair && c.code == admit::code::kPairBwLow)
			pair = &c;
	if (!pair)
		return;
	auto model = load_fabric_model(cfg, default_topology_path(cfg));
	if (!model.ok()) {
		pair->detail += "; no fault localisation (" + model.status().message() +
		                "): the pair rule applies";
		return;
	}
	// Fresh evidence only (FleetClearWindow, this run's attempts), and
	// the node is cleared only when the other nodes' pairs alone blame
	// the link: its own slow pairs never clear it by themselves.
	Policy fresh = p;
	fresh.window_s = std::min(p.window_s, p.clear_window_s);
	std::vector<PairResult> pairs = gather_pairs(fresh, time(nullptr));
	for (const auto &s : entry_of(*v).pairs)
		pairs.push_back({s.a, s.b, s.busbw_gbs});
	LocaliseOptions opt;
	opt.good_gbs = pair->threshold;
	std::string why;
	if (!cleared_independently(pairs, model.value()->view, opt, v->node, &why)) {
		pair->detail += "; localiser: " + why +
		                " - not enough to clear the node, the pair rule applies";
		return;
	}
	Diagnosis d = localise(pairs, model.value()->view, opt);
	pair->status = admit::CheckStatus::Pass;
	pair->code = kPairLinkFault;
	pair->detail =
	    "nccl_pair below the floor, blamed on the fabric, not the node: " + d.summary();
	if (!pair->data || !json_is_object(pair->data.get()))
		pair->data = Json::object();
	pair->data.set("diagnosis", d.to_json());
}

} // namespace

Status review_verdict(const Config &cfg, admit::Verdict *v)
{
	auto p = policy_from_config(cfg);
	if (!p.ok())
		return p.status();
	std::vector<std::string> warnings;
	auto fleet = load_fleet(p.value(), time(nullptr), &warnings);
	for (const auto &w : warnings)
		log_warn("fleet history: %s", w.c_str());
	apply_fleet(p.value(), fleet, v);
	review_pair(cfg, p.value(), v);
	return Status::Ok();
}

Status remember_verdict(const Config &cfg, const admit::Verdict &v)
{
	auto p = policy_from_config(cfg);
	if (!p.ok())
		return p.status();
	return append_history(p.value(), entry_of(v));
}

} // namespace fleet
} // namespace onramp
