#include "fleet/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <fcntl.h>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "hostlist.hpp"
#include "log.hpp"

namespace onramp {
namespace fleet {

Result<Policy> policy_from_config(const Config &cfg)
{
	Policy p;
	p.min_samples = cfg.integer("FleetMinSamples");
	p.window_s = cfg.seconds("FleetWindow");
	p.clear_window_s = cfg.seconds("FleetClearWindow");
	p.margin = cfg.number("FleetSlowMargin");
	p.drain = cfg.str("FleetSlowAction") == "drain";
	p.dir = cfg.is_set("FleetDir") ? cfg.str("FleetDir") : cfg.str("StateDir") + "/fleet";
	if (cfg.is_set("FleetExclude")) {
		auto ex = hostlist_expand(cfg.str("FleetExclude"));
		if (!ex.ok())
			return Status::Error(
			    strprintf("%s:%d: FleetExclude: %s", cfg.origin().c_str(),
			              cfg.line_of("FleetExclude"), ex.status().message().c_str()));
		p.exclude = ex.value();
	}
	return p;
}

std::string slow_code(const std::string &check)
{
	if (check == admit::kMemBw)
		return "SLOW_MEMBW";
	if (check == admit::kNcclAllreduce)
		return "SLOW_NCCL";
	if (check == admit::kNcclPair)
		return "SLOW_PAIR";
	return "";
}

Reference reference_of(const std::vector<double> &values)
{
	Reference r;
	r.samples = values.size();
	r.median = values.empty() ? 0 : median(values);
	r.mad = values.empty() ? 0 : mad(values);
	return r;
}

Judgement judge(double value, const std::vector<double> &fleet, const Policy &p)
{
	Judgement j;
	j.ref = reference_of(fleet);
	if (static_cast<int64_t>(j.ref.samples) < p.min_samples) {
		j.outcome = Outcome::TooFewSamples;
		j.note = strprintf("fleet reference needs %lld samples, has %zu: only the absolute "
		                   "floor applied",
		                   static_cast<long long>(p.min_samples), j.ref.samples);
		return j;
	}
	j.limit = std::min(j.ref.median * (1 - p.margin), j.ref.median - 3 * 1.4826 * j.ref.mad);
	double pct = j.ref.median > 0 ? 100 * value / j.ref.median : 0;
	j.note = strprintf("fleet median %.1f (MAD %.1f, %zu nodes), this node %.0f%% of it, "
	                   "slow below %.1f",
	                   j.ref.median, j.ref.mad, j.ref.samples, pct, j.limit);
	j.outcome = value < j.limit ? Outcome::Slow : Outcome::Ok;
	return j;
}

Json pairs_to_json(const std::vector<PairSample> &pairs)
{
	Json ps = Json::array();
	for (const auto &s : pairs) {
		Json o = Json::object();
		o.set("a", s.a).set("b", s.b).set("time", s.time);
		if (std::isfinite(s.busbw_gbs))
			o.set("busbw_gbs", s.busbw_gbs);
		ps.push(o);
	}
	return ps;
}

Result<std::vector<PairSample>> pairs_from_json(const json_t *array, const std::string &origin,
                                                const std::string &default_time)
{
	std::vector<PairSample> out;
	if (!json_is_array(array))
		return Status::Error(origin + ": not a JSON array of pairs");
	JsonReader r(origin);
	size_t i;
	const json_t *v;
	json_array_foreach(array, i, v)
	{
		std::string at = JsonReader::index("", i);
		PairSample s;
		s.a = r.str(v, at, "a");
		s.b = r.str(v, at, "b");
		s.time = r.str_or(v, at, "time", default_time);
		s.busbw_gbs = r.num_or(v, at, "busbw_gbs", NAN);
		out.push_back(s);
	}
	if (r.failed())
		return r.status();
	return out;
}

Json Entry::to_json() const
{
	Json j = Json::object();
	j.set("node", node).set("sku", sku).set("time", time).set("status", status);
	j.set("code", code);
	Json m = Json::object();
	for (const auto &[k, v] : metrics)
		m.set(k.c_str(), v);
	j.set("metrics", m).set("pairs", pairs_to_json(pairs));
	return j;
}

Result<Entry> Entry::from_json(const json_t *j, const std::string &origin)
{
	JsonReader r(origin);
	Entry e;
	if (!r.expect_object(j, ""))
		return r.status();
	r.only_keys(j, "", {"node", "sku", "time", "status", "code", "metrics", "pairs"});
	e.node = r.str(j, "", "node");
	e.sku = r.str_or(j, "", "sku", "");
	e.time = r.str(j, "", "time");
	e.status = r.str(j, "", "status");
	e.code = r.str_or(j, "", "code", "");
	if (const json_t *m = r.obj(j, "", "metrics", false)) {
		const char *k;
		const json_t *v;
		json_object_foreach(const_cast<json_t *>(m), k, v)
		{
			if (!json_is_number(v))
				r.error("metrics." + std::string(k), "not a number");
			else
				e.metrics[k] = json_number_value(v);
		}
	}
	if (r.failed())
		return r.status();
	if (const json_t *a = json_object_get(j, "pairs")) {
		auto ps = pairs_from_json(a, origin + ": pairs", e.time);
		if (!ps.ok())
			return ps.status();
		e.pairs = std::move(ps.value());
	}
	return e;
}

std::string history_path(const Policy &p, const std::string &node)
{
	return p.dir + "/" + node + ".json";
}

namespace {

constexpr size_t kHistoryMaxBytes = 4u << 20;

// A node's history from text read from path (named in errors).
Result<std::vector<Entry>> parse_history(const std::string &text, const std::string &path)
{
	std::vector<Entry> out;
	auto j = json_parse(text, path);
	if (!j.ok())
		return j.status();
	if (!json_is_array(j->get()))
		return Status::Error(path + ": not a JSON array of admissions");
	size_t i;
	const json_t *v;
	json_array_foreach(j->get(), i, v)
	{
		auto e = Entry::from_json(v, strprintf("%s[%zu]", path.c_str(), i));
		if (!e.ok())
			return e.status();
		out.push_back(std::move(e.value()));
	}
	return out;
}

} // namespace

namespace {

// name in the fleet directory open at dfd (path names it): a regular file,
// never a symlink followed, an absent one empty.
Result<std::vector<Entry>> history_at(int dfd, const std::string &name, const std::string &path)
{
	if (faccessat(dfd, name.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
		return std::vector<Entry>();
	auto text = read_file_at(dfd, name, path, kHistoryMaxBytes);
	if (!text.ok())
		return text.status();
	return parse_history(text.value(), path);
}

} // namespace

Result<std::vector<Entry>> read_history(const std::string &path)
{
	// The fleet directory may sit in SlurmUser's StateDir: a symlink
	// there is never read through (root would open its target and quote
	// its first word in the parse error).
	size_t slash = path.rfind('/');
	auto dir = open_dir_trusted(slash == std::string::npos ? "."
	                            : slash == 0               ? "/"
	                                                       : path.substr(0, slash));
	if (!dir.ok())
		return dir.status();
	auto h = history_at(dir.value(), path.substr(slash + 1), path);
	close(dir.value());
	return h;
}

Status append_history(const Policy &p, const Entry &e)
{
	if (e.node.empty() || e.node.find('/') != std::string::npos || e.node[0] == '.')
		return Status::Error("fleet history: bad node name '" + e.node + "'");
	// <StateDir>/fleet sits in a directory SlurmUser may own: everything
	// happens in the directory opened once (open_dir_trusted), so a symlink
	// put there, before or after a check, is never read or written through.
	auto dir = open_dir_trusted(p.dir);
	if (!dir.ok())
		return dir.status();
	int dfd = dir.value();
	std::string name = e.node + ".json", path = history_path(p, e.node);
	auto h = history_at(dfd, name, path);
	std::vector<Entry> entries;
	if (h.ok())
		entries = std::move(h.value());
	else // a damaged history is replaced, not a reason to lose this admission
		log_warn("%s; starting it again", h.status().message().c_str());
	entries.push_back(e);
	if (entries.size() > kHistoryMax)
		entries.erase(entries.begin(),
		              entries.begin() + static_cast<long>(entries.size() - kHistoryMax));
	Json a = Json::array();
	for (const auto &x : entries)
		a.push(x.to_json());
	Status st = write_file_atomic_at(dfd, name, path, a.dump(true) + "\n", 0644);
	close(dfd);
	return st;
}

Entry entry_of(const admit::Verdict &v)
{
	Entry e;
	e.node = v.node;
	e.sku = v.sku;
	e.time = v.time;
	e.status = v.status();
	e.code = v.code();
	for (const auto &c : v.checks) {
		if (!slow_code(c.name).empty() && c.status == admit::CheckStatus::Pass &&
		    std::isfinite(c.value))
			e.metrics[c.name] = c.value;
		if (c.name != admit::kNcclPair || !c.data || !json_is_object(c.data.get()))
			continue;
		const json_t *att = json_object_get(c.data.get(), "attempts");
		size_t i;
		const json_t *t;
		json_array_foreach(att, i, t)
		{
			PairSample s;
			s.a = v.node;
			const json_t *peer = json_object_get(t, "peer");
			const json_t *bw = json_object_get(t, "busbw_gbs");
			const json_t *st = json_object_get(t, "status");
			if (!json_is_string(peer))
				continue;
			s.b = json_string_value(peer);
			bool measured =
			    json_is_string(st) && !strcmp(json_string_value(st), "PASS");
			s.busbw_gbs = measured && json_is_number(bw) ? json_number_value(bw) : NAN;
			s.time = v.time;
			e.pairs.push_back(s);
		}
	}
	return e;
}

namespace {

bool excluded(const Policy &p, const std::string &node)
{
	return std::find(p.exclude.begin(), p.exclude.end(), node) != p.exclude.end();
}

// Every history under p.dir: node -> entries.
std::map<std::string, std::vector<Entry>> read_all(const Policy &p,
                                                   std::vector<std::string> *warnings)
{
	std::map<std::string, std::vector<Entry>> out;
	// Read through the directory opened once, as append_history writes
	// it: neither it nor a history in it followed when another account's
	// symlink.
	struct stat sb;
	if (lstat(p.dir.c_str(), &sb) != 0)
		return out;
	auto dir = open_dir_trusted(p.dir);
	if (!dir.ok()) {
		if (warnings)
			warnings->push_back(dir.status().message());
		return out;
	}
	int dfd = dir.value();
	int lfd = dup(dfd);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : nullptr;
	if (!d) {
		if (lfd >= 0)
			close(lfd);
		close(dfd);
		return out;
	}
	while (struct dirent *de = readdir(d)) {
		std::string name = de->d_name;
		if (name.size() <= 5 || name[0] == '.' || name.substr(name.size() - 5) != ".json")
			continue;
		std::string node = name.substr(0, name.size() - 5);
		if (excluded(p, node))
			continue;
		auto h = history_at(dfd, name, p.dir + "/" + name);
		if (!h.ok()) {
			if (warnings)
				warnings->push_back(h.status().message());
			continue;
		}
		out[node] = std::move(h.value());
	}
	closedir(d);
	close(dfd);
	return out;
}

bool in_window(const Policy &p, const std::string &time, long long now)
{
	long long t = admit::parse_iso_time(time);
	return t >= 0 && now - t <= p.window_s;
}

} // namespace

std::vector<Entry> load_fleet(const Policy &p, long long now, std::vector<std::string> *warnings)
{
	std::vector<Entry> out;
	for (auto &[node, entries] : read_all(p, warnings)) {
		for (auto it = entries.rbegin(); it != entries.rend(); ++it)
			if (it->node == node && in_window(p, it->time, now)) {
				out.push_back(*it);
				break;
			}
	}
	return out;
}

std::vector<PairSample> fleet_pairs(const Policy &p, long long now)
{
	std::vector<PairSample> out;
	for (auto &[node, entries] : read_all(p, nullptr))
		for (const auto &e : entries)
			for (const auto &s : e.pairs)
				if (in_window(p, s.time, now))
					out.push_back(s);
	return out;
}

std::vector<double> fleet_values(const std::vector<Entry> &fleet, const std::string &sku,
                                 const std::string &check, const std::string &node)
{
	std::vector<double> out;
	for (const auto &e : fleet) {
		if (e.node == node || e.sku != sku)
			continue;
		auto it = e.metrics.find(check);
		if (it != e.metrics.end() && std::isfinite(it->second))
			out.push_back(it->second);
	}
	return out;
}

int apply_fleet(const Policy &p, const std::vector<Entry> &fleet, admit::Verdict *v)
{
	int slow = 0;
	for (auto &c : v->checks) {
		std::string code = slow_code(c.name);
		if (code.empty() || c.status != admit::CheckStatus::Pass || !std::isfinite(c.value))
			continue;
		Judgement j = judge(c.value, fleet_values(fleet, v->sku, c.name, v->node), p);
		Json f = Json::object();
		f.set("samples", static_cast<int64_t>(j.ref.samples));
		f.set("median", j.ref.median).set("mad", j.ref.mad).set("limit", j.limit);
		f.set("outcome", j.outcome == Outcome::Slow            ? "SLOW"
		                 : j.outcome == Outcome::TooFewSamples ? "TOO_FEW_SAMPLES"
		                                                       : "OK");
		if (!c.data || !json_is_object(c.data.get()))
			c.data = Json::object();
		c.data.set("fleet", f);
		c.detail += "; " + j.note;
		if (j.outcome != Outcome::Slow)
			continue;
		slow++;
		c.code = code;
		c.detail = strprintf("%s %.1f %s passes the floor %.1f but is slow against the "
		                     "fleet: %s (FleetSlowAction=%s)",
		                     c.name.c_str(), c.value, c.unit.c_str(), c.threshold,
		                     j.note.c_str(), p.drain ? "drain" : "warn");
		if (p.drain)
			c.status = admit::CheckStatus::Fail;
	}
	return slow;
}

} // namespace fleet
} // namespace onramp
