#include "admit/jobcheck.hpp"

#include <algorithm>
#include <ctime>

#include "admit/record.hpp"
#include "admit/runner.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {
namespace {

bool is_critical(const Baseline &b, int xid)
{
	const auto &list = b.critical_xids.empty() ? default_critical_xids() : b.critical_xids;
	return std::find(list.begin(), list.end(), xid) != list.end();
}

// First critical XID at most age_s old, as "xid 79 on GPU 0000:...".
std::string new_critical_xid(const GpuHealthObs &h, const Baseline &b, double age_s)
{
	for (const auto &x : h.xids)
		if (x.age_s <= age_s && is_critical(b, x.xid))
			return strprintf("xid %d on GPU %s %.0fs ago", x.xid, x.gpu.c_str(),
			                 x.age_s);
	return "";
}

JobCheck from(const IsolatedRun &run, const char *prefix)
{
	JobCheck jc;
	if (run.result.passed())
		return jc;
	jc.ok = false;
	jc.code = std::string(prefix) + (run.timed_out ? "TIMEOUT" : run.result.code);
	jc.detail = run.result.detail;
	return jc;
}

} // namespace

JobCheck prolog_check(AdmitInputs &in, double timeout_s)
{
	std::string why;
	if (judge(in.cfg, in.node, &why) != Judgement::Admitted)
		return JobCheck{false, "PROLOG_NOT_ADMITTED", why};
	auto rec = read_record(record_path(in.cfg, in.node));
	long long admitted_at = rec.ok() ? parse_iso_time(rec->time) : -1;
	double since = admitted_at > 0 ? std::max(0.0, double(time(nullptr) - admitted_at)) : 0;
	auto run = run_isolated("prolog", timeout_s, [&]() {
		auto inv = in.backend->inventory();
		if (!inv.ok() || inv->gpus.empty())
			return make_fail("prolog", "NO_GPU",
			                 inv.ok() ? "no GPU found" : inv.status().message());
		if (static_cast<int>(inv->gpus.size()) != in.baseline.gpu_count)
			return make_fail("prolog", "GPU_COUNT",
			                 strprintf("%zu GPUs, SKU %s has %d", inv->gpus.size(),
			                           in.baseline.sku.c_str(), in.baseline.gpu_count));
		auto h = in.backend->gpu_health(since + 1);
		if (!h.ok())
			return make_fail("prolog", "GPU_HEALTH", h.status().message());
		std::string x = new_critical_xid(h.value(), in.baseline, since + 1);
		if (!x.empty())
			return make_fail("prolog", "XID", x + " (after admission)");
		return make_pass("prolog", "ok");
	});
	return from(run, "PROLOG_");
}

JobCheck epilog_check(AdmitInputs &in, double since_epoch, double timeout_s)
{
	double age = std::max(0.0, double(time(nullptr)) - since_epoch) + 1;
	auto run = run_isolated("epilog", timeout_s, [&]() {
		auto h = in.backend->gpu_health(age);
		if (!h.ok())
			return make_fail("epilog", "GPU_HEALTH", h.status().message());
		std::string x = new_critical_xid(h.value(), in.baseline, age);
		if (!x.empty())
			return make_fail("epilog", "XID", x + " during the job");
		for (const auto &g : h->gpus)
			if (g.ecc_uncorrected > 0)
				return make_fail(
				    "epilog", "ECC",
				    strprintf("%llu volatile uncorrected ECC errors on GPU %s",
				              (unsigned long long)g.ecc_uncorrected,
				              g.pci.c_str()));
		return make_pass("epilog", "ok");
	});
	return from(run, "EPILOG_");
}

} // namespace admit
} // namespace onramp

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "slurm/client.hpp"
#include "submit.hpp"

namespace onramp {
namespace admit {
namespace {

constexpr double kJobCheckCtldWait = 30; // seconds for an unreachable slurmctld, all calls

std::string env(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "";
}

// Per-job start marker written by the prolog, read by the epilog.
std::string marker_path(const Config &cfg, const std::string &node, const std::string &job)
{
	return expand_node(cfg.str("NodeStateDir"), node) + "/jobs/" + job + ".start";
}

void append_log(const Config &cfg, const std::string &node, const std::string &line)
{
	std::string dir = expand_node(cfg.str("NodeStateDir"), node);
	// Root appends here, in a directory SlurmUser may own: never through
	// a symlink put in its place; bounded, the previous LogMaxBytes kept
	// as jobcheck.log.1 (open_log).
	const std::string path = dir + "/jobcheck.log";
	Status st = make_private_dir(dir);
	auto fd = st.ok() ? open_log(path, cfg.integer("LogMaxBytes"), 0640) : Result<int>(st);
	if (!fd.ok()) {
		log_error("%s; not logged: %s", fd.status().message().c_str(), line.c_str());
		return;
	}
	std::string text = iso_time(time(nullptr)) + " " + line + "\n";
	if (write(fd.value(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
		log_error("%s: short write", path.c_str());
	close(fd.value());
}

} // namespace

int jobcheck_main(JobCheckMode mode, int argc, char **argv)
{
	const bool prolog = mode == JobCheckMode::Prolog;
	const char *prog = prolog ? "onramp-prolog" : "onramp-epilog";
	log_set_program(prog);
	// slurmd waits on us (PrologEpilogTimeout) and the node stays
	// COMPLETING meanwhile: a slurmctld away is waited for briefly, then a
	// drain that could not be set fails the script, and slurmd drains.
	slurm::set_default_ctld_budget(kJobCheckCtldWait);
	std::string conf_path = default_conf_path();
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--conf" && i + 1 < argc) {
			conf_path = argv[++i];
		} else {
			log_error("usage: %s [--conf FILE] (run by slurmd as Prolog/Epilog)", prog);
			return 0;
		}
	}
	std::string node = env("SLURMD_NODENAME"), job = env("SLURM_JOB_ID");
	if (node.empty()) {
		log_error("SLURMD_NODENAME is not set; nothing checked");
		return 0;
	}
	if (!Config::findable(conf_path)) {
		// A node that was never given onramp's settings (e.g. a configless
		// node whose plugstack.conf lacks them) cannot tell an admitted node
		// from another: fail closed, never let the job run unchecked.
		std::string reason = std::string("onramp:") +
		                     (prolog ? "PROLOG_NO_CONFIG" : "EPILOG_NO_CONFIG") + ": " +
		                     conf_path + " not found (nor its plugstack.conf block)";
		log_error("node %s job %s: %s", node.c_str(), job.c_str(), reason.c_str());
		Status st = drain_node(node, reason.substr(0, 200));
		if (!st.ok())
			log_error("%s", st.message().c_str());
		return 1;
	}
	auto cfg = Config::load(conf_path);
	if (!cfg.ok()) {
		// Our own bad input never drains a node.
		log_error("node %s: %s; nothing checked", node.c_str(),
		          cfg.status().message().c_str());
		return 0;
	}
	if (is_admission_reservation(cfg.value(), env("SLURM_JOB_RESERVATION")))
		return 0; // admission jobs run on nodes not admitted yet
	auto in = prepare_admission(cfg.value(), node);
	if (!in.ok()) {
		log_error("node %s: %s; nothing checked", node.c_str(),
		          in.status().message().c_str());
		append_log(cfg.value(), node,
		           std::string(prog) + " job " + job + " ERROR " + in.status().message());
		return 0;
	}
	double timeout = 10;
	JobCheck jc;
	if (prolog) {
		jc = prolog_check(*in.value(), timeout);
		// NodeStateDir is SlurmUser's where it runs admission jobs: jobs/
		// may be a symlink it put there, which root must not write
		// through (make_private_dir refuses it). Without the marker the
		// epilog looks back to the record.
		const std::string dir = expand_node(cfg->str("NodeStateDir"), node);
		// The marker is written through a descriptor of jobs/: one swapped
		// for a symlink after the check is never written through (seen:
		// root's prolog made JOB.start in the symlink's target).
		Status made = job.empty() ? Status::Ok() : make_private_dir(dir);
		if (made.ok() && !job.empty())
			made =
			    write_file_in_private_dir(dir + "/jobs", job + ".start",
			                              std::to_string(time(nullptr)) + "\n", 0640);
		if (!made.ok())
			append_log(cfg.value(), node,
			           std::string(prog) + " job " + job + " ERROR " + made.message() +
			               "; no start marker");
	} else {
		double since = 0;
		auto m = read_file(marker_path(cfg.value(), node, job), 64);
		if (m.ok())
			since = atof(m->c_str());
		if (since <= 0) {
			auto rec = read_record(record_path(cfg.value(), node));
			since = rec.ok() ? double(parse_iso_time(rec->time))
			                 : double(time(nullptr) - 3600);
		}
		jc = epilog_check(*in.value(), since, timeout);
		if (!job.empty())
			(void)unlink_nofollow(marker_path(cfg.value(), node, job));
	}
	if (jc.ok) {
		append_log(cfg.value(), node, std::string(prog) + " job " + job + " ok");
		return 0;
	}
	std::string reason = reason_string(jc.code, jc.detail);
	append_log(cfg.value(), node, std::string(prog) + " job " + job + " " + reason);
	log_error("node %s job %s: %s", node.c_str(), job.c_str(), reason.c_str());
	// Drained first: a node that reports the admitted feature inactive while
	// in production is fenced by node_features/onramp as NOT_ADMITTED, and
	// the finding's own reason must be the one it keeps.
	bool kept = false;
	Status drained = drain_node(node, reason, &kept);
	if (!drained.ok())
		log_error("%s", drained.message().c_str());
	if (!prolog) {
		Status st = revoke_record(cfg.value(), node, jc.code, jc.detail);
		if (!st.ok())
			log_error("node %s: cannot revoke admission: %s", node.c_str(),
			          st.message().c_str());
		// Report the revocation to slurmctld now, not at the next
		// registration: the controller's copy at once, and slurmd
		// re-registers from the record.
		st = set_active_feature(node, cfg->str("AdmittedFeature"), false);
		if (!st.ok())
			log_error("node %s: %s", node.c_str(), st.message().c_str());
		st = reregister_slurmd(node);
		if (!st.ok())
			log_error("node %s: %s", node.c_str(), st.message().c_str());
	}
	// A failing prolog makes Slurm requeue the job and drain the node (our
	// reason, set first, is kept); the epilog has drained it itself, or
	// fails so that slurmd drains it when slurmctld could not be told.
	return prolog || !drained.ok() ? 1 : 0;
}

} // namespace admit
} // namespace onramp
