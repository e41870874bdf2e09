#include "admit/verdict.hpp"

#include <cctype>
#include <cmath>

#include "admit/dcgm.hpp"
#include "admit/host.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

const char *const kInventory = "inventory";
const char *const kVersions = "versions";
const char *const kGpuHealth = "gpu_health";
const char *const kMemBw = "mem_bw";
const char *const kNcclAllreduce = "nccl_allreduce";
const char *const kNcclPair = "nccl_pair";
const char *const kFabric = "fabric";
const char *const kTopology = "topology";
const char *const kNhc = "nhc";
const char *const kSitePrefix = "site_";
const char *const kGpuDepth = "gpu_depth";
const char *const kSimulatedMarker = "[SIMULATED]";

namespace code {
const char *const kOk = "OK";
const char *const kSkipped = "SKIPPED";
const char *const kNoGpu = "NO_GPU";
const char *const kGpuCount = "GPU_COUNT";
const char *const kGpuModel = "GPU_MODEL";
const char *const kVersionMismatch = "VERSION_MISMATCH";
const char *const kEccUncorrected = "ECC_UNCORRECTED";
const char *const kRowRemap = "ROW_REMAP";
const char *const kXidCritical = "XID_CRITICAL";
const char *const kNvlinkDown = "NVLINK_DOWN";
const char *const kMemBwLow = "MEM_BW_LOW";
const char *const kNcclBwLow = "NCCL_BW_LOW";
const char *const kNcclCorrupt = "NCCL_CORRUPT";
const char *const kPairBwLow = "PAIR_BW_LOW";
const char *const kPairInconclusive = "PAIR_INCONCLUSIVE";
const char *const kRailBwLow = "RAIL_BW_LOW";
const char *const kPortDown = "PORT_DOWN";
const char *const kPortRateLow = "PORT_RATE_LOW";
const char *const kPortFlapping = "PORT_FLAPPING";
const char *const kPortMissing = "PORT_MISSING";
const char *const kAffinityMismatch = "AFFINITY_MISMATCH";
const char *const kPortErrors = "PORT_ERRORS";
const char *const kPortWidthLow = "PORT_WIDTH_LOW";
const char *const kPortMtuLow = "PORT_MTU_LOW";
const char *const kGpuThrottled = "GPU_THROTTLED";
const char *const kGpuTempHigh = "GPU_TEMP_HIGH";
const char *const kGpuPowerHigh = "GPU_POWER_HIGH";
const char *const kPcieDegraded = "PCIE_DEGRADED";
const char *const kEccCorrectedHigh = "ECC_CORRECTED_HIGH";
const char *const kRowRemapHigh = "ROW_REMAP_HIGH";
const char *const kNvlinkErrors = "NVLINK_ERRORS";
const char *const kGpuMemory = "GPU_MEMORY";
const char *const kPersistenceOff = "PERSISTENCE_OFF";
const char *const kGpuForeignProcess = "GPU_FOREIGN_PROCESS";
const char *const kCheckTimeout = "CHECK_TIMEOUT";
const char *const kCheckError = "CHECK_ERROR";
const char *const kBadInput = "BAD_INPUT";
const char *const kNhc = "NHC";
const char *const kSitePrefix = "SITE_";
const char *const kInconclusivePrefix = "INCONCLUSIVE_";
} // namespace code

namespace {
std::string code_word(const std::string &s)
{
	std::string out;
	for (char ch : s) {
		unsigned char c = static_cast<unsigned char>(ch);
		out += (c < 128 && isalnum(c)) ? static_cast<char>(toupper(c)) : '_';
	}
	return out;
}
} // namespace

std::string inconclusive_code(const std::string &check)
{
	if (check == kNcclAllreduce)
		return std::string(code::kInconclusivePrefix) + "NCCL";
	return code::kInconclusivePrefix + code_word(check);
}

std::string site_code(const std::string &file)
{
	return code::kSitePrefix + code_word(file);
}

const std::vector<std::string> &local_checks()
{
	static const std::vector<std::string> v = {kInventory,     kVersions, kGpuHealth, kMemBw,
	                                           kNcclAllreduce, kFabric,   kTopology,  kGpuDepth,
	                                           kHost,          kDcgm};
	return v;
}

bool is_check_name(const std::string &name)
{
	for (const auto &c : local_checks())
		if (c == name)
			return true;
	return name == kNcclPair;
}

const char *check_status_name(CheckStatus s)
{
	switch (s) {
	case CheckStatus::Pass:
		return "PASS";
	case CheckStatus::Fail:
		return "FAIL";
	case CheckStatus::Timeout:
		return "TIMEOUT";
	case CheckStatus::Skip:
		return "SKIP";
	case CheckStatus::Error:
		return "ERROR";
	}
	return "ERROR";
}

bool parse_check_status(const std::string &text, CheckStatus *out)
{
	for (CheckStatus s : {CheckStatus::Pass, CheckStatus::Fail, CheckStatus::Timeout,
	                      CheckStatus::Skip, CheckStatus::Error})
		if (text == check_status_name(s)) {
			*out = s;
			return true;
		}
	return false;
}

Json CheckResult::to_json() const
{
	Json j = Json::object();
	j.set("name", name).set("status", check_status_name(status)).set("code", code);
	j.set("value", value).set("threshold", threshold).set("unit", unit);
	j.set("duration_s", duration_s).set("detail", detail);
	Json s = Json::array();
	for (double x : samples)
		s.push(Json::adopt(std::isfinite(x) ? json_real(x) : json_null()));
	j.set("samples", s).set_bool("simulated", simulated);
	if (data)
		j.set("data", data);
	return j;
}

Result<CheckResult> CheckResult::from_json(const json_t *j, const std::string &origin)
{
	JsonReader r(origin);
	CheckResult c;
	if (!r.expect_object(j, ""))
		return r.status();
	r.only_keys(j, "",
	            {"name", "status", "code", "value", "threshold", "unit", "duration_s", "detail",
	             "samples", "simulated", "data"});
	c.name = r.str(j, "", "name");
	std::string st = r.str(j, "", "status");
	if (!r.failed() && !parse_check_status(st, &c.status))
		r.error("status", "'" + st + "' is not PASS, FAIL, TIMEOUT, SKIP or ERROR");
	c.code = r.str(j, "", "code");
	c.value = r.num_or(j, "", "value", NAN);
	c.threshold = r.num_or(j, "", "threshold", NAN);
	c.unit = r.str_or(j, "", "unit", "");
	c.duration_s = r.num_or(j, "", "duration_s", 0);
	c.detail = r.str_or(j, "", "detail", "");
	c.simulated = r.boolean_or(j, "", "simulated", false);
	if (const json_t *a = r.arr(j, "", "samples", false)) {
		size_t i;
		const json_t *v;
		json_array_foreach(a, i, v)
		{
			if (json_is_number(v))
				c.samples.push_back(json_number_value(v));
			else if (json_is_null(v))
				c.samples.push_back(NAN);
			else
				r.error(JsonReader::index("samples", i), "expected a number");
		}
	}
	if (const json_t *d = json_object_get(j, "data"))
		if (!json_is_null(d))
			c.data = Json::adopt(json_incref(const_cast<json_t *>(d)));
	if (r.failed())
		return r.status();
	return c;
}

CheckResult make_pass(const std::string &name, const std::string &detail)
{
	CheckResult c;
	c.name = name;
	c.status = CheckStatus::Pass;
	c.code = code::kOk;
	c.value = NAN;
	c.threshold = NAN;
	c.detail = detail;
	return c;
}

CheckResult make_fail(const std::string &name, const std::string &code, const std::string &detail)
{
	CheckResult c = make_pass(name, detail);
	c.status = CheckStatus::Fail;
	c.code = code;
	return c;
}

bool Verdict::passed() const
{
	return first_failure() == nullptr;
}

const CheckResult *Verdict::first_failure() const
{
	for (const auto &c : checks)
		if (c.status == CheckStatus::Fail)
			return &c;
	for (const auto &c : checks)
		if (!c.passed())
			return &c;
	return nullptr;
}

bool Verdict::has_measured_failure() const
{
	for (const auto &c : checks)
		if (c.status == CheckStatus::Fail)
			return true;
	return false;
}

namespace {
// A passing check that still has something to say (fleet SLOW_<CHECK> with
// FleetSlowAction=warn, a pair failure a link was blamed for).
bool is_warning(const CheckResult &c)
{
	return c.status == CheckStatus::Pass && c.code != code::kOk && c.code != code::kSkipped;
}
} // namespace

std::string Verdict::code() const
{
	if (const CheckResult *f = first_failure())
		return f->code;
	for (const auto &c : checks)
		if (is_warning(c))
			return c.code;
	return code::kOk;
}

std::string Verdict::detail() const
{
	if (const CheckResult *f = first_failure())
		return f->detail;
	size_t run = 0;
	for (const auto &c : checks)
		run += c.status == CheckStatus::Pass;
	std::string d = strprintf("%zu check%s passed", run, run == 1 ? "" : "s");
	for (const auto &c : checks) // the pair test names its peer and suspects
		if ((c.name == kNcclPair && c.status == CheckStatus::Pass) || is_warning(c)) {
			std::string pd = c.detail;
			size_t m = pd.find(kSimulatedMarker);
			if (m != std::string::npos)
				pd = pd.substr(0, m > 0 ? m - 1 : 0);
			d += "; " + pd;
		}
	if (simulated)
		d += std::string(" ") + kSimulatedMarker;
	return d;
}

Json Verdict::to_json() const
{
	Json j = Json::object();
	j.set("node", node).set("boot_id", boot_id).set("baseline_digest", baseline_digest);
	j.set("backend", backend).set_bool("simulated", simulated).set("sku", sku);
	j.set("time", time).set("status", status()).set("code", code()).set("detail", detail());
	Json a = Json::array();
	for (const auto &c : checks)
		a.push(c.to_json());
	j.set("checks", a);
	return j;
}

} // namespace admit
} // namespace onramp
