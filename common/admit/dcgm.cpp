#include "admit/dcgm.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <unistd.h>

#include "admit/host.hpp"
#include "json.hpp"
#include "log.hpp"
#include "proc.hpp"

namespace onramp {
namespace admit {

const char *const kDcgm = "dcgm";

namespace {

// gpu_ids: an integer, or a string "3" / "0,1,2". False when malformed.
bool parse_gpu_ids(const json_t *v, std::vector<int> *out)
{
	if (!v || json_is_null(v))
		return true;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0 || i > 4096)
			return false;
		out->push_back(static_cast<int>(i));
		return true;
	}
	if (!json_is_string(v))
		return false;
	std::string s = json_string_value(v);
	size_t pos = 0;
	while (pos < s.size()) {
		size_t comma = s.find(',', pos);
		std::string part = s.substr(pos, comma == std::string::npos ? comma : comma - pos);
		pos = comma == std::string::npos ? s.size() : comma + 1;
		while (!part.empty() && isspace(static_cast<unsigned char>(part[0])))
			part.erase(0, 1);
		while (!part.empty() && isspace(static_cast<unsigned char>(part.back())))
			part.pop_back();
		if (part.empty() || part.size() > 4)
			return false;
		for (char c : part)
			if (!isdigit(static_cast<unsigned char>(c)))
				return false;
		out->push_back(atoi(part.c_str()));
	}
	return true;
}

// The first text of a "warnings"/"info" array (strings or {"warning": ...}).
std::string first_text(const json_t *a)
{
	if (!a || !json_is_array(a))
		return "";
	size_t i;
	const json_t *e;
	json_array_foreach(a, i, e)
	{
		if (json_is_string(e))
			return json_string_value(e);
		if (json_is_object(e))
			for (const char *k : {"warning", "message", "info"}) {
				const json_t *t = json_object_get(e, k);
				if (t && json_is_string(t))
					return json_string_value(t);
			}
	}
	return "";
}

std::string gpu_list(const std::vector<int> &g)
{
	std::string s;
	for (size_t i = 0; i < g.size(); i++)
		s += (i ? "," : "") + std::to_string(g[i]);
	return s;
}

std::string one_line(std::string s, size_t max)
{
	for (char &c : s)
		if (c == '\n' || c == '\r' || c == '\t')
			c = ' ';
	if (s.size() > max)
		s = s.substr(0, max) + "...";
	return s;
}

} // namespace

Result<DcgmReport> parse_dcgm_diag(const std::string &text)
{
	size_t brace = text.find('{');
	if (brace == std::string::npos)
		return Status::Error("dcgmi diag: no JSON object in its output");
	auto doc = json_parse(text.substr(brace), "dcgmi diag -j");
	if (!doc.ok())
		return doc.status();
	const json_t *top = doc->get();
	const json_t *d =
	    json_is_object(top) ? json_object_get(top, "DCGM GPU Diagnostic") : nullptr;
	if (!d || !json_is_object(d))
		return Status::Error("dcgmi diag -j: no \"DCGM GPU Diagnostic\" object");
	DcgmReport r;
	if (const json_t *v = json_object_get(d, "version"))
		if (json_is_string(v))
			r.version = json_string_value(v);
	if (const json_t *e = json_object_get(d, "runtime_error"))
		if (json_is_string(e))
			r.runtime_error = json_string_value(e);
	const json_t *cats = json_object_get(d, "test_categories");
	if (!cats || json_is_null(cats))
		return r;
	if (!json_is_array(cats))
		return Status::Error("dcgmi diag -j: test_categories is not an array");
	size_t ci, ti, ri;
	const json_t *c, *t, *res;
	json_array_foreach(cats, ci, c)
	{
		if (json_is_null(c))
			continue;
		if (!json_is_object(c))
			return Status::Error(strprintf("dcgmi diag -j: test_categories[%zu] is not "
			                               "an object",
			                               ci));
		const json_t *cn = json_object_get(c, "category");
		std::string category = cn && json_is_string(cn) ? json_string_value(cn) : "";
		const json_t *tests = json_object_get(c, "tests");
		if (!tests || !json_is_array(tests))
			return Status::Error(strprintf(
			    "dcgmi diag -j: test_categories[%zu].tests is not an array", ci));
		json_array_foreach(tests, ti, t)
		{
			if (json_is_null(t)) // DCGM 3.1 prints null between tests
				continue;
			const json_t *tn = json_is_object(t) ? json_object_get(t, "name") : nullptr;
			const json_t *rs =
			    json_is_object(t) ? json_object_get(t, "results") : nullptr;
			if (!tn || !json_is_string(tn) || !rs || !json_is_array(rs))
				return Status::Error(
				    strprintf("dcgmi diag -j: test_categories[%zu]."
				              "tests[%zu] has no name or results",
				              ci, ti));
			json_array_foreach(rs, ri, res)
			{
				const json_t *st =
				    json_is_object(res) ? json_object_get(res, "status") : nullptr;
				if (!st || !json_is_string(st))
					return Status::Error(
					    strprintf("dcgmi diag -j: %s result %zu has no status",
					              json_string_value(tn), ri));
				DcgmResult x;
				x.category = category;
				x.test = json_string_value(tn);
				x.status = json_string_value(st);
				const json_t *ids = json_object_get(res, "gpu_ids");
				if (!ids)
					ids = json_object_get(res, "gpu_id");
				if (!parse_gpu_ids(ids, &x.gpus))
					return Status::Error(
					    strprintf("dcgmi diag -j: %s result %zu: bad gpu_ids",
					              x.test.c_str(), ri));
				x.message = first_text(json_object_get(res, "warnings"));
				if (x.message.empty())
					x.message = first_text(json_object_get(res, "info"));
				r.results++;
				if (strcasecmp(x.status.c_str(), "fail") == 0)
					r.failures.push_back(x);
				else if (strcasecmp(x.status.c_str(), "warn") == 0)
					r.warnings.push_back(x);
			}
		}
	}
	return r;
}

std::string dcgm_code(const std::string &test)
{
	std::string out;
	bool sep = false;
	for (char c : test) {
		if (isalnum(static_cast<unsigned char>(c))) {
			if (sep && !out.empty())
				out += '_';
			out += static_cast<char>(toupper(static_cast<unsigned char>(c)));
			sep = false;
		} else {
			sep = true;
		}
		if (out.size() >= 48)
			break;
	}
	return "DCGM_" + (out.empty() ? std::string("UNNAMED") : out);
}

CheckResult evaluate_dcgm(const DcgmObs &obs, bool required)
{
	CheckResult r;
	Json data = Json::object();
	data.set("level", obs.level);
	if (obs.level == 0) {
		r = make_pass(kDcgm, "dcgm: DcgmDiagLevel=0, not run");
		r.status = CheckStatus::Skip;
		r.code = code::kSkipped;
		r.data = data;
		return r;
	}
	if (!obs.available) {
		r = make_fail(kDcgm, code::kNotAvailable,
		              "dcgm: NOT_AVAILABLE: " + obs.why +
		                  (required ? " (DcgmRequired=yes: the node stays fenced)"
		                            : " (DcgmRequired=no: not judged)"));
		r.status = required ? CheckStatus::Error : CheckStatus::Skip;
		r.data = data;
		return r;
	}
	const DcgmReport &rep = obs.report;
	data.set("version", rep.version).set("exit", obs.rc);
	data.set("results", rep.results);
	auto list = [](const std::vector<DcgmResult> &v) {
		Json a = Json::array();
		for (const auto &x : v) {
			Json o = Json::object();
			o.set("category", x.category).set("test", x.test).set("status", x.status);
			o.set("gpus", gpu_list(x.gpus)).set("message", x.message);
			a.push(o);
		}
		return a;
	};
	data.set("failures", list(rep.failures)).set("warnings", list(rep.warnings));
	if (!obs.parsed) {
		r = make_fail(kDcgm, code::kCheckError,
		              strprintf("dcgm: dcgmi diag -r %d exited %d: %s", obs.level, obs.rc,
		                        obs.why.c_str()));
		r.status = CheckStatus::Error;
	} else if (!rep.failures.empty()) {
		std::vector<std::string> parts;
		for (const auto &f : rep.failures)
			parts.push_back(f.test +
			                (f.gpus.empty() ? "" : " GPU " + gpu_list(f.gpus)) +
			                (f.message.empty() ? "" : ": " + one_line(f.message, 200)));
		std::string d;
		for (size_t i = 0; i < parts.size(); i++)
			d += (i ? "; " : "") + parts[i];
		r = make_fail(kDcgm, dcgm_code(rep.failures[0].test),
		              strprintf("dcgm: diag -r %d failed: %s", obs.level, d.c_str()));
	} else if (!rep.runtime_error.empty() || rep.results == 0) {
		r = make_fail(kDcgm, code::kCheckError,
		              strprintf("dcgm: diag -r %d ran no test: %s", obs.level,
		                        rep.runtime_error.empty()
		                            ? "no results"
		                            : one_line(rep.runtime_error, 300).c_str()));
		r.status = CheckStatus::Error;
	} else if (obs.rc != 0) {
		r = make_fail(kDcgm, code::kCheckError,
		              strprintf("dcgm: dcgmi diag -r %d exited %d without a failed test",
		                        obs.level, obs.rc));
		r.status = CheckStatus::Error;
	} else {
		r = make_pass(kDcgm, strprintf("dcgm: diag -r %d passed (%d results, %zu warnings, "
		                               "DCGM %s)",
		                               obs.level, rep.results, rep.warnings.size(),
		                               rep.version.empty() ? "?" : rep.version.c_str()));
	}
	r.value = static_cast<double>(rep.failures.size());
	r.threshold = 0;
	r.unit = "failed tests";
	r.data = data;
	return r;
}

DcgmObs observe_dcgm(const Config &cfg, const std::string &node)
{
	DcgmObs o;
	o.level = static_cast<int>(cfg.integer("DcgmDiagLevel"));
	if (o.level == 0)
		return o;
	std::string path = expand_node(cfg.str("DcgmiCommand"), node);
	if (access(path.c_str(), X_OK) != 0) {
		o.why = path + " not installed (" + strerror(errno) + ")";
		return o;
	}
	ProcOptions po;
	po.timeout_s = static_cast<double>(cfg.seconds("DcgmTimeout"));
	po.separate_stderr = true;
	po.max_output = 32u << 20;
	ProcResult pr = run_argv({path, "diag", "-r", std::to_string(o.level), "-j"}, po);
	o.rc = pr.rc;
	std::string all = pr.out + "\n" + pr.err;
	std::string lower = all;
	for (char &c : lower)
		c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
	if (pr.rc == -1) {
		o.why = path + " could not be started: " + one_line(pr.out, 200);
		return o;
	}
	if (lower.find("unable to establish a connection") != std::string::npos) {
		o.why = "no DCGM host engine: " + one_line(all, 200);
		return o;
	}
	o.available = true;
	if (pr.timed_out) {
		o.why = strprintf("did not finish within %lld s (DcgmTimeout)",
		                  static_cast<long long>(cfg.seconds("DcgmTimeout")));
		return o;
	}
	auto rep = parse_dcgm_diag(pr.out);
	if (!rep.ok()) {
		o.why = rep.status().message() + "; " + one_line(pr.err, 200);
		return o;
	}
	o.parsed = true;
	o.report = rep.value();
	return o;
}

} // namespace admit
} // namespace onramp
