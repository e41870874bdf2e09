#include "config.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <strings.h>
#include <sys/stat.h>

#include "atomic_file.hpp"
#include "log.hpp"

namespace onramp {

const std::vector<KeySpec> &config_schema()
{
	static const std::vector<KeySpec> schema = {
	    {"AdmittedFeature", KeyType::Feature, "onramp_ok", nullptr, 0, 0,
	     "node feature reported active while the node's admission is valid"},
	    {"UnadmittedFeature", KeyType::Feature, "onramp_unadmitted", nullptr, 0, 0,
	     "node feature slurmd reports active while the node was never proven for its "
	     "current boot (no admission record, a record of another boot or node, a failed or "
	     "revoked one); never while onramp cannot judge or after a baseline edit"},
	    {"FenceUnadmitted", KeyType::Bool, "yes", nullptr, 0, 0,
	     "slurmctld drains a node that registers in production with UnadmittedFeature "
	     "active (onramp:NOT_ADMITTED) before any job is given to it; no: the prolog alone "
	     "catches it, per job (while onramp is installed on a running fleet)"},
	    {"GpuBackend", KeyType::Enum, "real", "real|sim", 0, 0,
	     "hardware backend: real (CUDA/NCCL/NVML/verbs/hwloc) or sim (test double)"},
	    {"SimProfileDir", KeyType::Path, nullptr, nullptr, 0, 0,
	     "directory of per-node simulated hardware profiles (GpuBackend=sim only)"},
	    {"StateDir", KeyType::Path, "/var/lib/onramp", nullptr, 0, 0,
	     "onramp's state: admission records, journal"},
	    {"SharedStateDir", KeyType::Path, nullptr, nullptr, 0, 0,
	     "high-availability admin hosts: a directory on shared storage (beside "
	     "StateSaveLocation) where each journal's copy and lease live, so that a campaign or "
	     "migration can be resumed on the other host (unset: none)"},
	    {"LeaseSeconds", KeyType::Duration, "300", nullptr, 3, 86400,
	     "how long an admin host's lease on a journal in SharedStateDir lasts without "
	     "renewal before another host may take it over"},
	    {"NodeStateDir", KeyType::Path, "/var/lib/onramp/node", nullptr, 0, 0,
	     "per-node admission records on the node itself (%n expands to the node name)"},
	    {"VerdictsKept", KeyType::Int, "50", nullptr, 1, 100000,
	     "how many admission verdicts each node keeps in <NodeStateDir>/verdicts (the newest; "
	     "the one its admission record holds is kept too)"},
	    {"LogMaxBytes", KeyType::Int, "4194304", nullptr, 4096, 1073741824,
	     "size past which onramp's log files (jobcheck.log, trigger.log, orchestrate.log, a "
	     "campaign's admit.log) become <log>.1, replacing the previous one"},
	    {"BootIdFile", KeyType::Path, "/proc/sys/kernel/random/boot_id", nullptr, 0, 0,
	     "where the node's boot identity is read (%n expands to the node name)"},
	    {"BaselineDir", KeyType::Path, "/etc/slurm/onramp/baselines", nullptr, 0, 0,
	     "per-SKU baseline and threshold files (JSON)"},
	    {"Sku", KeyType::String, nullptr, nullptr, 0, 0,
	     "the SKU name of this site's GPU nodes (baseline file <BaselineDir>/<Sku>.json)"},
	    {"AdmissionReservation", KeyType::String, "onramp_admission", nullptr, 0, 0,
	     "the MAINT reservation that holds nodes under admission"},
	    {"AdmissionAccount", KeyType::String, "onramp", nullptr, 0, 0,
	     "account admission jobs run under; only admins may use it"},
	    {"AdmissionExclusive", KeyType::Bool, "yes", nullptr, 0, 0,
	     "admission and pair-test jobs take their nodes whole (--exclusive), so no user's "
	     "job shares the GPUs under test"},
	    {"AdmissionGres", KeyType::String, nullptr, nullptr, 0, 0,
	     "GRES admission and pair-test jobs request per node (--gres, e.g. gpu:8), so that "
	     "with ConstrainDevices=yes the checks see the node's GPUs; unset: none"},
	    {"AdmissionPeerWait", KeyType::Duration, "60", nullptr, 0, 3600,
	     "how long onrampctl admit waits for an admitted peer for the pair test while "
	     "admitted nodes exist but none is usable, or nodes do not respond, or slurmctld "
	     "started less than this ago (their features not heard yet)"},
	    {"RebootCommand", KeyType::String, "/sbin/reboot", nullptr, 0, 0,
	     "the site's real reboot command, run by onramp's RebootProgram wrapper"},
	    {"CheckTimeout", KeyType::Duration, "300", nullptr, 1, 86400,
	     "default per-check timeout of onramp-admit"},
	    {"CheckRetries", KeyType::Int, "2", nullptr, 0, 10,
	     "how many more times onramp-admit runs a check that could not measure (timeout, "
	     "launch failure, missing tool) before the node stays fenced INCONCLUSIVE_<CHECK>"},
	    {"CheckRetryBackoff", KeyType::Duration, "30", nullptr, 0, 3600,
	     "wait before a check's first retry; doubled before each further one"},
	    {"AdmissionSiteChecks", KeyType::Path, nullptr, nullptr, 0, 0,
	     "directory of the site's own admission checks: each executable regular file "
	     "(root-owned, not group/other-writable) runs in name order; exit 0 passes, anything "
	     "else fails as SITE_<NAME>; unset: none"},
	    {"AdmissionNhc", KeyType::Path, nullptr, nullptr, 0, 0,
	     "LBNL NHC configuration file admission runs 'nhc -c FILE' with; a failure is NHC; "
	     "unset: NHC not run"},
	    {"AdmissionNhcProgram", KeyType::Path, "/usr/sbin/nhc", nullptr, 0, 0,
	     "the nhc program AdmissionNhc runs"},
	    {"AdmissionSiteUser", KeyType::String, nullptr, nullptr, 0, 0,
	     "user the site checks and NHC run as (the admission job must run as root to "
	     "switch); unset: the admission job's own user"},
	    {"NcclBusBwFraction", KeyType::Double, "0.9", nullptr, 0.01, 1.0,
	     "single-node NCCL busbw must reach this fraction of the SKU peak"},
	    {"MemBwFraction", KeyType::Double, "0.8", nullptr, 0.01, 1.0,
	     "GPU memory bandwidth must reach this fraction of the SKU peak"},
	    {"XidWindow", KeyType::Duration, "7200", nullptr, 60, 30 * 86400,
	     "how far back critical XIDs in the kernel log count"},
	    {"GpuLoadSeconds", KeyType::Duration, "30", nullptr, 1, 3600,
	     "how long gpu_depth loads every GPU while sampling clocks, throttle reasons, "
	     "temperature and power (a baseline's gpu_depth.load_s overrides it)"},
	    {"KernelLog", KeyType::Path, "/dev/kmsg", nullptr, 0, 0,
	     "kernel log scanned for XIDs by the real backend (kmsg device or dmesg-format file)"},
	    {"SysfsRoot", KeyType::Path, "/", nullptr, 0, 0,
	     "root under which the real backend reads sys/class/infiniband and sys/bus/pci "
	     "(fabric and gpu_depth checks)"},
	    {"HostRoot", KeyType::Path, "/", nullptr, 0, 0,
	     "root under which the host check reads proc/self/mountinfo, proc/cmdline, proc/sys "
	     "and finds the AdmissionMounts paths (%n expands to the node name; tests only)"},
	    {"AdmissionMounts", KeyType::String, nullptr, nullptr, 0, 0,
	     "filesystems the host check requires, PATH:TYPE[:MINFREEGIB],... (e.g. "
	     "/ckpt:lustre:500,/data:nfs4): mounted, of TYPE, writable by AdmissionTestUser, at "
	     "least MINFREEGIB GiB free; unset: none"},
	    {"AdmissionCheckpointMount", KeyType::Path, nullptr, nullptr, 0, 0,
	     "the checkpoint filesystem (one of AdmissionMounts) whose write and read bandwidth "
	     "the host check measures against the baseline's host.ckpt_write_gbs/ckpt_read_gbs; "
	     "unset: no bandwidth test"},
	    {"AdmissionTestUser", KeyType::String, "nobody", nullptr, 0, 0,
	     "the unprivileged user as whom the host check writes to each of AdmissionMounts "
	     "(root never writes there)"},
	    {"AdmissionIoBytes", KeyType::Int, "1073741824", nullptr, 0, 68719476736.0,
	     "the most bytes the checkpoint bandwidth test writes (and reads back); its file is "
	     "removed after"},
	    {"AdmissionIoTimeout", KeyType::Duration, "60", nullptr, 1, 3600,
	     "the longest the checkpoint write (and, again, the read) may take; a write cut "
	     "short is judged on the bytes written"},
	    {"AdmissionServices", KeyType::String, nullptr, nullptr, 0, 0,
	     "systemd services that must be active (systemctl is-active), e.g. "
	     "munge,nvidia-fabricmanager,nvidia-persistenced; unset: none"},
	    {"AdmissionClockMaxOffset", KeyType::Double, nullptr, nullptr, 0, 3600,
	     "the largest clock offset (seconds) chronyc -c tracking may report; chronyc missing "
	     "is NOT_AVAILABLE (inconclusive); unset: the clock is not checked"},
	    {"SystemctlCommand", KeyType::Path, "/bin/systemctl", nullptr, 0, 0,
	     "systemctl, for AdmissionServices (%n expands to the node name)"},
	    {"ChronycCommand", KeyType::Path, "/usr/bin/chronyc", nullptr, 0, 0,
	     "chronyc, for AdmissionClockMaxOffset (%n expands to the node name)"},
	    {"DcgmiCommand", KeyType::Path, "/usr/bin/dcgmi", nullptr, 0, 0,
	     "DCGM's dcgmi, run as 'dcgmi diag -r DcgmDiagLevel -j' by the dcgm check (%n "
	     "expands to the node name)"},
	    {"DcgmDiagLevel", KeyType::Int, "1", nullptr, 0, 4,
	     "the DCGM diagnostic level "
	     "(1 quick, 2 medium, 3 long, 4 extended); 0: the dcgm check is off"},
	    {"DcgmTimeout", KeyType::Duration, "900", nullptr, 10, 6 * 3600,
	     "how long dcgmi diag may run before the dcgm check is inconclusive"},
	    {"DcgmRequired", KeyType::Bool, "no", nullptr, 0, 0,
	     "yes: a node without dcgmi or a DCGM host engine stays fenced (NOT_AVAILABLE, "
	     "inconclusive); no: the dcgm check is skipped there (never a pass)"},
	    {"PairLaunchCommand", KeyType::String,
	     "srun --overlap --nodes=2 --ntasks=2 --ntasks-per-node=1 --nodelist=%n,%p", nullptr, 0,
	     0, "command that starts one pair-rank on this node (%n) and one on the peer (%p)"},
	    {"PairPort", KeyType::Int, "0", nullptr, 0, 65535,
	     "TCP port on which rank 0 of the 2-node NCCL test serves the NCCL unique id (0: a "
	     "free port picked for each attempt and passed to both ranks in ONRAMP_PAIR_PORT)"},
	    {"MaxWaveFraction", KeyType::Double, "0.2", nullptr, 0.01, 1.0,
	     "at most this fraction of a rack is rebooted or under admission at once"},
	    {"MinWavePassRate", KeyType::Double, "0.8", nullptr, 0.01, 1.0,
	     "an expansion wave must admit this fraction of its nodes before the next wave opens"},
	    {"ExpandSmokeCommand", KeyType::String, nullptr, nullptr, 0, 0,
	     "the application smoke test an expansion campaign runs once per task on each new "
	     "node of a rack (srun, one task per node); unset: each node reports its name"},
	    {"ExpandSmokeTimeout", KeyType::Duration, "600", nullptr, 10, 86400,
	     "how long a rack's smoke job may take, pending included, before it counts as failed"},
	    {"AlertRulesFile", KeyType::Path, "/etc/prometheus/rules/onramp-rules.yml", nullptr, 0,
	     0, "where Prometheus loads onramp's alert rules from (checked by onrampctl report)"},
	    {"MetricsTextfileDir", KeyType::Path, nullptr, nullptr, 0, 0,
	     "node_exporter's textfile directory where onramp-metrics node writes; onrampctl "
	     "report checks each new node has its file there"},
	    {"RollbackWindow", KeyType::Duration, "7200", nullptr, 0, 30 * 86400,
	     "how long the previous checkpoint generation is kept after a migration"},
	    {"CheckpointVerifyMaxGiB", KeyType::Int, "4096", nullptr, 1, 1048576,
	     "the most GiB one checkpoint verification may read: a manifest naming more is "
	     "refused before anything is hashed"},
	    {"CheckpointVerifyTimeout", KeyType::Duration, "3600", nullptr, 1, 7 * 86400,
	     "how long one checkpoint verification may take before it is refused"},
	    {"FabricFile", KeyType::Path, nullptr, nullptr, 0, 0,
	     "the fabric's Clos uplink map (JSON, onramp-rewire(5)), validated against "
	     "topology.conf"},
	    {"RewirePlan", KeyType::Path, nullptr, nullptr, 0, 0,
	     "the rewire plan (JSON, onramp-rewire(5)) that topology/onramp and job_submit/onramp "
	     "follow"},
	    {"RewireSwitchesWait", KeyType::Duration, "600", nullptr, 0, 86400,
	     "during a rewire window, the longest --switches wait a multi-node job gets"},
	    {"MetricsListen", KeyType::String, "127.0.0.1:9810", nullptr, 0, 0,
	     "where onramp-metrics serve listens (ADDR:PORT; loopback by default)"},
	    {"MigratePartitions", KeyType::String, nullptr, nullptr, 0, 0,
	     "comma-separated partitions whose jobs are migratable (opted in)"},
	    {"MigrateQos", KeyType::String, nullptr, nullptr, 0, 0,
	     "comma-separated QOS whose jobs are migratable (opted in)"},
	    {"MigrateSignal", KeyType::String, "USR2@120", nullptr, 0, 0,
	     "warning signal given to migratable jobs without one: SIG[@SECONDS]"},
	    {"MigrateSignalTarget", KeyType::Enum, "full", "full|batch|steps", 0, 0,
	     "whom the checkpoint signal reaches: full (batch shell and its processes), batch "
	     "(batch shell only, --signal=B:) or steps (job steps only)"},
	    {"MigrateAckTimeout", KeyType::Duration, "60", nullptr, 1, 86400,
	     "onrampctl migrate: how long a signalled job has to start its checkpoint"},
	    {"MigrateGrace", KeyType::Duration, "300", nullptr, 1, 86400,
	     "onrampctl migrate: how long a started checkpoint may take to commit"},
	    {"MigrateConfirmTimeout", KeyType::Duration, "300", nullptr, 1, 86400,
	     "onrampctl migrate: how long to wait for the job to run again on the target"},
	    {"MigrateCtldTimeout", KeyType::Duration, "600", nullptr, 1, 86400,
	     "onrampctl migrate: how long to retry while slurmctld does not answer"},
	    {"MigrateMaxPerJob", KeyType::Int, "4", nullptr, 1, 1000,
	     "onrampctl migrate: how many completed migrations one job may have (rollback "
	     "exempt)"},
	    {"FleetDir", KeyType::Path, nullptr, nullptr, 0, 0,
	     "where each node's admission history is kept, one file per node, for the fleet "
	     "reference (shared by the nodes; unset: <StateDir>/fleet)"},
	    {"FleetMinSamples", KeyType::Int, "8", nullptr, 1, 100000,
	     "the fewest other nodes of the SKU a fleet reference needs; below it only the "
	     "absolute floors apply"},
	    {"FleetWindow", KeyType::Duration, "2592000", nullptr, 3600, 365 * 86400,
	     "how recent an admission must be to count in the fleet reference"},
	    {"FleetClearWindow", KeyType::Duration, "86400", nullptr, 600, 365 * 86400,
	     "how recent the other nodes' pairs must be to clear a node's PAIR_BW_LOW as a "
	     "link's fault"},
	    {"FleetSlowMargin", KeyType::Double, "0.05", nullptr, 0.001, 0.9,
	     "how far below the fleet median (as a fraction) a passing figure is SLOW_<CHECK>"},
	    {"FleetSlowAction", KeyType::Enum, "warn", "warn|drain", 0, 0,
	     "what SLOW_<CHECK> does: warn (admitted, the record says SLOW) or drain"},
	    {"FleetExclude", KeyType::String, nullptr, nullptr, 0, 0,
	     "nodes (a hostlist) left out of the fleet reference"},
	    {"DebugFlags", KeyType::String, nullptr, nullptr, 0, 0,
	     "comma-separated onramp debug flags (e.g. submit)"},
	};
	return schema;
}

const KeySpec *config_key(const std::string &name)
{
	for (const auto &k : config_schema())
		if (strcasecmp(k.name, name.c_str()) == 0)
			return &k;
	return nullptr;
}

std::string default_conf_path()
{
	const char *e = getenv("ONRAMP_CONF");
	if (e && *e)
		return e;
	const char *sc = getenv("SLURM_CONF");
	if (sc && *sc) {
		std::string s(sc);
		auto pos = s.rfind('/');
		return (pos == std::string::npos ? std::string(".") : s.substr(0, pos)) +
		       "/onramp.conf";
	}
	return "/etc/slurm/onramp.conf";
}

std::string expand_node(const std::string &tmpl, const std::string &node)
{
	std::string out;
	for (size_t i = 0; i < tmpl.size(); i++) {
		if (tmpl[i] == '%' && i + 1 < tmpl.size() && tmpl[i + 1] == 'n') {
			out += node;
			i++;
		} else {
			out += tmpl[i];
		}
	}
	return out;
}

Result<int64_t> parse_duration(const std::string &text)
{
	if (text.empty())
		return Status::Error("empty duration");
	errno = 0;
	char *end = nullptr;
	long long v = strtoll(text.c_str(), &end, 10);
	if (errno || end == text.c_str() || v < 0)
		return Status::Error("'" + text +
		                     "' is not a duration (e.g. 90, 90s, 15m, 2h, 1d)");
	std::string unit(end);
	int64_t mult = 1;
	if (unit.empty() || unit == "s")
		mult = 1;
	else if (unit == "m" || unit == "min")
		mult = 60;
	else if (unit == "h")
		mult = 3600;
	else if (unit == "d")
		mult = 86400;
	else
		return Status::Error("'" + text + "' has an unknown unit '" + unit +
		                     "' (use s, m, h or d)");
	if (v > INT64_MAX / mult)
		return Status::Error("'" + text + "' is too large");
	return static_cast<int64_t>(v) * mult;
}

namespace {

Status check_value(const KeySpec &k, const std::string &v)
{
	auto range = [&](double x) -> Status {
		if (x < k.min || x > k.max)
			return Status::Error(
			    strprintf("%s is out of range [%g, %g]", v.c_str(), k.min, k.max));
		return Status::Ok();
	};
	switch (k.type) {
	case KeyType::String:
		if (v.empty())
			return Status::Error("empty value");
		return Status::Ok();
	case KeyType::Path:
		if (v.empty() || v[0] != '/')
			return Status::Error("'" + v + "' is not an absolute path");
		return Status::Ok();
	case KeyType::Feature:
		if (v.empty())
			return Status::Error("empty feature name");
		for (char c : v)
			if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' &&
			    c != '.')
				return Status::Error(
				    "'" + v +
				    "' is not a valid feature name (letters, digits, _ - .)");
		return Status::Ok();
	case KeyType::Int: {
		errno = 0;
		char *end = nullptr;
		long long x = strtoll(v.c_str(), &end, 10);
		if (errno || end == v.c_str() || *end)
			return Status::Error("'" + v + "' is not an integer");
		return range(static_cast<double>(x));
	}
	case KeyType::Double: {
		errno = 0;
		char *end = nullptr;
		double x = strtod(v.c_str(), &end);
		if (errno || end == v.c_str() || *end || !std::isfinite(x))
			return Status::Error("'" + v + "' is not a number");
		return range(x);
	}
	case KeyType::Bool:
		if (strcasecmp(v.c_str(), "yes") && strcasecmp(v.c_str(), "no") &&
		    strcasecmp(v.c_str(), "true") && strcasecmp(v.c_str(), "false") && v != "1" &&
		    v != "0")
			return Status::Error("'" + v + "' is not yes/no");
		return Status::Ok();
	case KeyType::Enum: {
		std::string choices = k.choices;
		size_t start = 0;
		while (start <= choices.size()) {
			size_t bar = choices.find('|', start);
			std::string c = choices.substr(start, bar - start);
			if (strcasecmp(c.c_str(), v.c_str()) == 0)
				return Status::Ok();
			if (bar == std::string::npos)
				break;
			start = bar + 1;
		}
		std::string list = choices;
		for (auto &ch : list)
			if (ch == '|')
				ch = ',';
		return Status::Error("'" + v + "' is not one of " + list);
	}
	case KeyType::Duration: {
		auto d = parse_duration(v);
		if (!d.ok())
			return d.status();
		return range(static_cast<double>(d.value()));
	}
	}
	return Status::Ok();
}

} // namespace

Status tokenize_conf_line(const std::string &line, std::vector<std::string> &out)
{
	std::string cur;
	bool in_tok = false, quoted = false;
	for (size_t i = 0; i < line.size(); i++) {
		char c = line[i];
		if (quoted) {
			if (c == '"')
				quoted = false;
			else
				cur += c;
			continue;
		}
		if (c == '#')
			break;
		if (c == '"') {
			quoted = true;
			in_tok = true;
			continue;
		}
		if (isspace(static_cast<unsigned char>(c))) {
			if (in_tok)
				out.push_back(cur);
			cur.clear();
			in_tok = false;
			continue;
		}
		cur += c;
		in_tok = true;
	}
	if (quoted)
		return Status::Error("unterminated quote");
	if (in_tok)
		out.push_back(cur);
	return Status::Ok();
}

bool next_conf_line(const std::string &text, size_t *pos, std::string *line)
{
	if (*pos >= text.size())
		return false;
	size_t end = text.find_first_of("\r\n", *pos);
	if (end == std::string::npos) {
		*line = text.substr(*pos);
		*pos = text.size();
		return true;
	}
	*line = text.substr(*pos, end - *pos);
	*pos = end + (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n' ? 2 : 1);
	return true;
}

namespace {

bool path_missing(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) != 0 && errno == ENOENT;
}

std::string plugstack_beside(const std::string &path)
{
	auto pos = path.rfind('/');
	return (pos == std::string::npos ? std::string(".") : path.substr(0, pos)) +
	       "/plugstack.conf";
}

// The embedded onramp.conf lines of a plugstack.conf text, every other line
// blanked so that line numbers stay those of plugstack.conf; empty when none.
std::string embedded_conf(const std::string &plugstack)
{
	static const std::string prefix = kConfEmbedPrefix;
	std::string out;
	bool any = false;
	size_t pos = 0;
	std::string line;
	while (next_conf_line(plugstack, &pos, &line)) {
		if (line.compare(0, prefix.size(), prefix) == 0) {
			out += line.substr(prefix.size());
			any = true;
		}
		out += '\n';
	}
	return any ? out : std::string();
}

} // namespace

Result<Config> Config::load(const std::string &path)
{
	if (path_missing(path)) {
		// A configless node: onramp.conf is not among the files slurmctld
		// ships, plugstack.conf is; onramp's settings travel inside it.
		std::string ps = plugstack_beside(path);
		auto text = read_file(ps, 1u << 20);
		std::string conf = text.ok() ? embedded_conf(text.value()) : std::string();
		if (conf.empty())
			return Status::Error(path + ": no such file, and " + ps + " carries no " +
			                     kConfEmbedPrefix +
			                     " lines: onramp's settings cannot be found");
		return parse(conf, ps);
	}
	auto text = read_file(path, 1u << 20);
	if (!text.ok())
		return text.status();
	return parse(text.value(), path);
}

bool Config::findable(const std::string &path)
{
	if (!path_missing(path))
		return true;
	auto text = read_file(plugstack_beside(path), 1u << 20);
	return text.ok() && !embedded_conf(text.value()).empty();
}

Result<Config> Config::parse(const std::string &text, const std::string &origin)
{
	Config cfg;
	cfg.origin_ = origin;
	int lineno = 0;
	size_t pos = 0;
	std::string line;
	while (next_conf_line(text, &pos, &line)) {
		lineno++;
		auto where = [&](const std::string &msg) {
			return Status::Error(
			    strprintf("%s:%d: %s", origin.c_str(), lineno, msg.c_str()));
		};
		if (line.find('\0') != std::string::npos)
			return where("NUL byte in line");
		std::vector<std::string> toks;
		Status st = tokenize_conf_line(line, toks);
		if (!st.ok())
			return where(st.message());
		for (const auto &tok : toks) {
			size_t eq = tok.find('=');
			if (eq == std::string::npos)
				return where("'" + tok + "' is not of the form Key=Value");
			std::string key = tok.substr(0, eq), value = tok.substr(eq + 1);
			if (key.empty())
				return where("'" + tok + "' has no key before '='");
			const KeySpec *spec = config_key(key);
			if (!spec)
				return where("unknown key '" + key + "'");
			auto it = cfg.values_.find(spec->name);
			if (it != cfg.values_.end())
				return where(strprintf("key '%s' repeated (first set at line %d)",
				                       spec->name, it->second.line));
			Status vs = check_value(*spec, value);
			if (!vs.ok())
				return where(std::string("key '") + spec->name +
				             "': " + vs.message());
			cfg.values_[spec->name] = Entry{value, lineno};
		}
	}
	if (cfg.str("UnadmittedFeature") == cfg.str("AdmittedFeature")) {
		auto it = cfg.values_.find("UnadmittedFeature");
		if (it == cfg.values_.end())
			it = cfg.values_.find("AdmittedFeature");
		return Status::Error(strprintf(
		    "%s:%d: key 'UnadmittedFeature': must differ from AdmittedFeature (both %s)",
		    origin.c_str(), it->second.line, cfg.str("AdmittedFeature").c_str()));
	}
	return cfg;
}

std::string Config::str(const std::string &key) const
{
	const KeySpec *spec = config_key(key);
	if (!spec)
		return "";
	auto it = values_.find(spec->name);
	if (it != values_.end())
		return it->second.value;
	return spec->def ? spec->def : "";
}

int64_t Config::integer(const std::string &key) const
{
	return strtoll(str(key).c_str(), nullptr, 10);
}

double Config::number(const std::string &key) const
{
	return strtod(str(key).c_str(), nullptr);
}

bool Config::boolean(const std::string &key) const
{
	std::string v = str(key);
	return !strcasecmp(v.c_str(), "yes") || !strcasecmp(v.c_str(), "true") || v == "1";
}

int64_t Config::seconds(const std::string &key) const
{
	auto d = parse_duration(str(key));
	return d.ok() ? d.value() : 0;
}

bool Config::is_set(const std::string &key) const
{
	const KeySpec *spec = config_key(key);
	return spec && values_.count(spec->name);
}

int Config::line_of(const std::string &key) const
{
	const KeySpec *spec = config_key(key);
	if (!spec)
		return 0;
	auto it = values_.find(spec->name);
	return it == values_.end() ? 0 : it->second.line;
}

} // namespace onramp

namespace onramp {

std::string Config::where(const std::string &key) const
{
	const KeySpec *spec = config_key(key);
	std::string name = spec ? spec->name : key;
	int line = line_of(key);
	return line ? strprintf("%s (%s:%d)", name.c_str(), origin_.c_str(), line)
	            : strprintf("%s (%s, default)", name.c_str(), origin_.c_str());
}

} // namespace onramp
