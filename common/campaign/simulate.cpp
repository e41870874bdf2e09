#include "campaign/simulate.hpp"

#include "number.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "log.hpp"

namespace onramp {
namespace campaign {

namespace {

// Numbers of "name(x,y)" or a bare number.
bool parse_numbers(const std::string &s, std::vector<double> *out)
{
	size_t i = 0;
	while (i <= s.size()) {
		size_t j = s.find(',', i);
		if (j == std::string::npos)
			j = s.size();
		std::string t = s.substr(i, j - i);
		while (!t.empty() && t.front() == ' ')
			t.erase(0, 1);
		while (!t.empty() && t.back() == ' ')
			t.pop_back();
		char *end = nullptr;
		double d = strtod(t.c_str(), &end);
		if (t.empty() || *end || !std::isfinite(d))
			return false;
		out->push_back(d);
		i = j + 1;
	}
	return true;
}

class Rng {
public:
	explicit Rng(uint64_t seed) : g_(seed) {}
	// [0, 1) with 53 bits.
	double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
	double normal()
	{
		// Box-Muller; u1 in (0, 1].
		double u1 = 1.0 - uniform(), u2 = uniform();
		return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
	}

private:
	std::mt19937_64 g_;
};

// Minutes drawn from d.
double draw(const Dist &d, Rng &r)
{
	switch (d.kind) {
	case Dist::kConst:
		return d.a;
	case Dist::kUniform:
		return d.a + (d.b - d.a) * r.uniform();
	case Dist::kNormal:
		if (d.b == 0)
			return d.a;
		for (int i = 0; i < 1000; i++) {
			double x = d.a + d.b * r.normal();
			if (x > 0)
				return x;
		}
		return d.a; // unreachable in practice: mean > 0 is required
	}
	return d.a;
}

double quantile(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = static_cast<size_t>(std::ceil(q * v.size()));
	return v[i == 0 ? 0 : i - 1];
}

} // namespace

std::string Dist::str() const
{
	switch (kind) {
	case kConst:
		return strprintf("const(%g)", a);
	case kNormal:
		return strprintf("normal(%g,%g)", a, b);
	case kUniform:
		return strprintf("uniform(%g,%g)", a, b);
	}
	return "?";
}

Result<Dist> parse_dist(const std::string &text, const char *what, bool allow_zero)
{
	auto bad = [&](const std::string &why) {
		return Status::Error(strprintf("%s '%s': %s", what, text.c_str(), why.c_str()));
	};
	std::string name, args = text;
	size_t open = text.find('(');
	if (open != std::string::npos) {
		if (text.back() != ')')
			return bad("expected NAME(ARGS), e.g. normal(10,2)");
		name = text.substr(0, open);
		args = text.substr(open + 1, text.size() - open - 2);
	}
	std::vector<double> n;
	if (!parse_numbers(args, &n))
		return bad(
		    "not a number or a distribution (C, const(C), normal(MEAN,SD), uniform(A,B))");
	Dist d;
	if (name.empty() || name == "const") {
		if (n.size() != 1)
			return bad("a constant takes one number");
		if (n[0] < 0 || (!allow_zero && n[0] == 0))
			return bad(allow_zero ? "must be >= 0 minutes" : "must be > 0 minutes");
		d = {Dist::kConst, n[0], 0};
	} else if (name == "normal") {
		if (n.size() != 2)
			return bad("normal takes MEAN,SD");
		if (n[0] <= 0)
			return bad("the mean must be > 0 minutes");
		if (n[1] < 0)
			return bad("the standard deviation must be >= 0");
		d = {Dist::kNormal, n[0], n[1]};
	} else if (name == "uniform") {
		if (n.size() != 2)
			return bad("uniform takes A,B");
		if (n[0] < 0 || n[1] < n[0] || (!allow_zero && n[1] == 0))
			return bad("needs 0 <= A <= B and B > 0");
		d = {Dist::kUniform, n[0], n[1]};
	} else {
		return bad("unknown distribution '" + name + "' (const, normal, uniform)");
	}
	return d;
}

Status check_params(const SimParams &p)
{
	if (p.racks < 1)
		return Status::Error("--racks must be at least 1");
	if (p.nodes < p.racks)
		return Status::Error(strprintf(
		    "--nodes %d: need at least one node per rack (%d racks)", p.nodes, p.racks));
	Status st = check_fraction(p.fraction);
	if (!st.ok())
		return st;
	if (!(p.min_pass >= 0 && p.min_pass <= 1))
		return Status::Error(
		    strprintf("minimum wave pass rate %g is out of range [0,1]", p.min_pass));
	if (!(p.failure_rate >= 0 && p.failure_rate <= 1))
		return Status::Error(
		    strprintf("failure rate %g is out of range [0,1]", p.failure_rate));
	if (!(p.boot_timeout > 0))
		return Status::Error("boot timeout must be > 0 minutes");
	return Status::Ok();
}

std::vector<Member> synthetic_members(int nodes, int racks, std::map<std::string, int> *sizes)
{
	std::vector<Member> m;
	m.reserve(nodes);
	for (int r = 0; r < racks; r++) {
		int size = nodes / racks + (r < nodes % racks ? 1 : 0);
		std::string rack = strprintf("r%d", r + 1);
		(*sizes)[rack] = size;
		for (int i = 1; i <= size; i++)
			m.push_back({strprintf("%sn%d", rack.c_str(), i), rack});
	}
	return m;
}

Result<SimResult> simulate(const SimParams &p)
{
	Status st = check_params(p);
	if (!st.ok())
		return st;
	std::map<std::string, int> sizes;
	auto members = synthetic_members(p.nodes, p.racks, &sizes);
	auto planned = plan_waves(members, sizes, p.fraction);
	if (!planned.ok())
		return planned.status();
	SimResult res;
	res.planned_waves = static_cast<int>(planned->size());
	res.ideal = res.planned_waves * (p.reboot.mean() + p.test.mean()) * 60;
	res.rack_min = p.nodes / p.racks;
	res.rack_max = res.rack_min + (p.nodes % p.racks ? 1 : 0);
	Rng rng(p.seed);
	double t = 0;
	for (size_t k = 0; k < planned->size(); k++) {
		const Wave &w = planned.value()[k];
		SimWave sw;
		sw.wave = static_cast<int>(k + 1);
		sw.nodes = static_cast<int>(w.size());
		sw.start = t;
		std::map<std::string, int> per_rack;
		std::vector<double> times;
		times.reserve(w.size());
		for (const auto &m : w) {
			per_rack[m.rack]++;
			// Draw in a fixed order per node so a seed gives one answer.
			double boot = draw(p.reboot, rng) * 60;
			double test = draw(p.test, rng) * 60;
			bool fails = p.failure_rate > 0 && rng.uniform() < p.failure_rate;
			double dt;
			if (boot > p.boot_timeout * 60) {
				dt = p.boot_timeout * 60;
				sw.boot_timeouts++;
			} else {
				dt = boot + test;
				if (fails)
					sw.failed++;
				else
					sw.admitted++;
			}
			times.push_back(dt);
		}
		sw.racks = static_cast<int>(per_rack.size());
		for (const auto &[r, c] : per_rack)
			sw.max_per_rack = std::max(sw.max_per_rack, c);
		double sum = 0;
		for (double x : times)
			sum += x;
		sw.node_mean = times.empty() ? 0 : sum / times.size();
		sw.node_p50 = quantile(times, 0.5);
		sw.node_p95 = quantile(times, 0.95);
		sw.node_max = times.empty() ? 0 : *std::max_element(times.begin(), times.end());
		sw.end = t + sw.node_max;
		t = sw.end;
		res.admitted += sw.admitted;
		res.failed += sw.failed;
		res.boot_timeouts += sw.boot_timeouts;
		sw.paused = sw.pass_rate() + 1e-12 < p.min_pass;
		if (sw.paused) {
			res.pauses++;
			if (p.fix_minutes < 0) {
				res.waves.push_back(sw);
				res.stopped = true;
				break;
			}
			sw.fix = p.fix_minutes * 60;
			t += sw.fix;
		}
		res.waves.push_back(sw);
	}
	res.total = t;
	return res;
}

Status set_sim_option(SimParams *p, const std::string &o, const std::string &v)
{
	auto num = parse_number(v);
	const bool isnum = num.ok();
	const double d = isnum ? num.value() : 0;
	auto integer = [&](int *x) -> bool {
		auto n = parse_int(v, 0, 100000000);
		if (n.ok())
			*x = static_cast<int>(n.value());
		return n.ok();
	};
	bool ok = true;
	if (o == "--nodes")
		ok = integer(&p->nodes);
	else if (o == "--racks")
		ok = integer(&p->racks);
	else if (o == "--wave-fraction" || o == "--fraction")
		ok = isnum, p->fraction = d;
	else if (o == "--min-pass-rate" || o == "--min-pass")
		ok = isnum, p->min_pass = d;
	else if (o == "--failure-rate")
		ok = isnum, p->failure_rate = d;
	else if (o == "--boot-timeout")
		ok = isnum && d > 0, p->boot_timeout = d / 60;
	else if (o == "--fix-minutes")
		ok = isnum && d >= 0, p->fix_minutes = d;
	else if (o == "--seed") {
		auto n = parse_int(v, 0);
		ok = n.ok();
		p->seed = n.ok() ? static_cast<uint64_t>(n.value()) : 0;
	} else if (o == "--reboot-minutes" || o == "--test-minutes") {
		auto dist = parse_dist(v, o.c_str(), o == "--reboot-minutes");
		if (!dist.ok())
			return dist.status();
		(o == "--reboot-minutes" ? p->reboot : p->test) = dist.value();
	} else
		return Status::Error("simulate: unknown option '" + o + "'");
	if (!ok)
		return Status::Error(o + ": bad value '" + v + "'");
	return Status::Ok();
}

} // namespace campaign
} // namespace onramp
