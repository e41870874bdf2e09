// onramp-admit: the admission check runner. Runs on the node under test
// (as root or SlurmUser), prints one JSON verdict on stdout and a one-line
// summary on stderr, and exits 0 (pass), 1 (fail) or 2 (could not judge:
// our own bad input, never a reason to drain). See onramp-admit(8).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "admit/admission.hpp"
#include "admit/pair.hpp"
#include "admit/record.hpp"
#include "admit/site.hpp"
#include "atomic_file.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "fleet/diagnose.hpp"
#include "hostlist.hpp"
#include "json.hpp"
#include "log.hpp"
#include "number.hpp"

using namespace onramp;
using namespace onramp::admit;

namespace {

const char *kProg = "onramp-admit";

enum Exit { kExitPass = 0, kExitFail = 1, kExitUnjudged = 2 };

void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: %s [--conf FILE] [--node NAME] [--checks LIST] [--peers HOSTLIST]\n"
	    "                    [--record [--reregister]] [--json-only] [--reason-file FILE]\n"
	    "                    [--output FILE] [--require-pair] [--untested-peers HOSTLIST]\n"
	    "       %s pair (--peer NODE | --peers HOSTLIST) [--conf FILE] [--node NAME]\n"
	    "                    [--record] [--json-only]\n"
	    "       %s pair-rank [--conf FILE] [--rendezvous HOST:PORT] [--rank N] "
	    "[--device N | --all-gpus]\n"
	    "       %s orchestrate [--timeout S] [--no-wait] [--json] --job-program PATH "
	    "NODES\n"
	    "       %s nodes [NODES] | node (drain|resume|reserve|unreserve) NODE | slurm-user\n"
	    "       %s state-dir [--owner USER] DIR...\n"
	    "       %s prune-verdicts [--conf FILE] [--node NAME]\n"
	    "checks: "
	    "inventory,versions,gpu_health,mem_bw,nccl_allreduce,fabric,topology,gpu_depth,host,"
	    "dcgm\n"
	    "exit status: 0 pass, 1 fail, 2 could not judge\n",
	    kProg, kProg, kProg, kProg, kProg, kProg, kProg);
}

std::string default_node()
{
	if (const char *e = getenv("SLURMD_NODENAME"); e && *e)
		return e;
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	std::string h = host;
	return h.substr(0, h.find('.'));
}

struct Options {
	std::string mode; // "", "pair", "pair-rank", "prune-verdicts"
	std::string conf, node, checks, peers, rendezvous;
	std::string reason_file; // where to write "onramp:<CODE>: <detail>"
	std::string output;      // the verdict's file, created here (0640)
	bool reregister = false; // SIGHUP the node's slurmd after recording
	int rank = -1, device = -1;
	bool record = false, json_only = false;
	bool all_gpus = false; // pair-rank: every GPU of the node, one NCCL rank each
	// A full run with no peer at all is PAIR_INCONCLUSIVE, never a pass.
	bool require_pair = false;
	std::string untested; // peers not admitted themselves (bring-up)
};

// Write the structured reason for onrampctl (Slurm's node reason format).
void write_reason(const Options &o, const std::string &code, const std::string &detail)
{
	if (o.reason_file.empty())
		return;
	Status st = write_file_atomic(o.reason_file, reason_string(code, detail) + "\n", 0644);
	if (!st.ok())
		fprintf(stderr, "%s: --reason-file: %s\n", kProg, st.message().c_str());
}

// Could not judge: a JSON object on stdout, the reason on stderr, exit 2.
int unjudged(const Options &o, const std::string &why)
{
	write_reason(o, code::kBadInput, why);
	Json j = Json::object();
	j.set("node", o.node).set("status", "ERROR").set("code", code::kBadInput);
	j.set("detail", why);
	printf("%s\n", j.dump().c_str());
	fflush(stdout);
	fprintf(stderr, "%s: %s could not judge: %s\n", kProg, o.node.c_str(), why.c_str());
	return kExitUnjudged;
}

// Print the verdict, record it when asked, and map it to the exit status.
int finish(const Options &o, const Config &cfg, Verdict v, bool pair_only)
{
	// A recorded admission is judged against its fleet too (fleet/diagnose.hpp).
	if (o.record && !v.inconclusive) {
		Status fs = fleet::review_verdict(cfg, &v);
		if (!fs.ok())
			return unjudged(o, fs.message());
	}
	printf("%s\n", v.to_json().dump().c_str());
	fflush(stdout);
	if (!o.json_only)
		fprintf(stderr, "%s: %s\n", kProg, verdict_summary(v).c_str());
	write_reason(o, v.code(), v.detail());
	// Inconclusive: recorded (a full run) so that the node stays fenced and
	// says why, never counted in the fleet's history, exit 2.
	if (v.inconclusive && (!o.record || pair_only))
		return kExitUnjudged;
	int rc = v.inconclusive ? kExitUnjudged : v.passed() ? kExitPass : kExitFail;
	if (o.record) {
		Status st;
		if (!pair_only)
			st = record_verdict(cfg, v);
		else if (rc == kExitFail) // a failed pair test downgrades the record
			st = revoke_record(cfg, v.node, v.code(), v.detail(), kRecordFail);
		if (!st.ok()) {
			// onramp's own I/O error: the reason says so, not the checks'.
			std::string why = "cannot write the admission record: " + st.message();
			fprintf(stderr, "%s: %s: %s\n", kProg, v.node.c_str(), why.c_str());
			write_reason(o, code::kBadInput, why);
			return kExitUnjudged;
		}
		Status hs = v.inconclusive ? Status::Ok() : fleet::remember_verdict(cfg, v);
		if (!hs.ok())
			fprintf(stderr, "%s: %s: fleet history not kept: %s\n", kProg,
			        v.node.c_str(), hs.message().c_str());
		if (o.reregister) // slurmctld's copy at once; slurmd re-registers
			publish_admission(cfg, v.node);
	}
	return rc;
}

int cmd_pair_rank(const Options &o, const Config &cfg)
{
	auto opt = pair_rank_options(cfg, o.node, o.rendezvous, o.rank, o.device, o.all_gpus);
	if (!opt.ok())
		return unjudged(o, opt.status().message());
	const PairRankOptions &p = opt.value();
	auto r = run_pair_rank(p);
	Json j = Json::object();
	j.set("rank", p.rank).set("node", o.node);
	if (r.ok()) {
		j.set_bool("measured", r->measured).set("busbw_gbs", r->busbw_gbs);
		Json s = Json::array();
		for (double x : r->samples)
			s.push(Json::adopt(json_real(x)));
		j.set("samples", s).set("wrong", static_cast<int64_t>(r->wrong));
		j.set("nranks", r->nranks);
	} else {
		j.set_bool("measured", false).set("why", r.status().message());
	}
	printf("%s\n", j.dump().c_str());
	fflush(stdout);
	return r.ok() && r->measured ? kExitPass : kExitFail;
}

// The admission job's housekeeping: VerdictsKept verdicts and the one the
// record holds stay (prune_verdicts). Exit 0, or 2 naming why not.
int cmd_prune_verdicts(const Options &o, const Config &cfg)
{
	auto n = prune_verdicts(cfg, o.node);
	if (!n.ok()) {
		fprintf(stderr, "%s: %s: verdicts not pruned: %s\n", kProg, o.node.c_str(),
		        n.status().message().c_str());
		return kExitUnjudged;
	}
	return kExitPass;
}

} // namespace

namespace onramp {
namespace admit {
// The controller-side subcommands (admit_orchestrate.cpp); -1 for others.
int controller_main(int argc, char **argv);
} // namespace admit
} // namespace onramp

int main(int argc, char **argv)
{
	if (int rc = controller_main(argc, argv); rc >= 0)
		return rc;
	log_set_program(kProg);
	Options o;
	int first = 1;
	if (argc > 1 && (!strcmp(argv[1], "pair") || !strcmp(argv[1], "pair-rank") ||
	                 !strcmp(argv[1], "prune-verdicts"))) {
		o.mode = argv[1];
		first = 2;
	}
	bool help = false;
	cli::Parser opts;
	opts.value("conf", &o.conf).value("node", &o.node).value("checks", &o.checks);
	opts.value("reason-file", &o.reason_file).value("rendezvous", &o.rendezvous);
	opts.value("output", &o.output);
	opts.flag("record", &o.record).flag("json-only", &o.json_only);
	opts.flag("reregister", &o.reregister).flag("help", &help);
	opts.flag("all-gpus", &o.all_gpus).flag("require-pair", &o.require_pair);
	opts.value("untested-peers", &o.untested);
	// --peer NODE and --peers HOSTLIST, as often as wanted: one list.
	auto add_peers = [&o](const std::string &v) {
		o.peers += (o.peers.empty() ? "" : ",") + v;
		return Status::Ok();
	};
	opts.value("peers", add_peers).value("peer", add_peers);
	auto integer = [](int *out, int max) {
		return [=](const std::string &v) {
			auto r = parse_int(v, 0, max);
			if (r.ok())
				*out = static_cast<int>(r.value());
			return r.status();
		};
	};
	opts.value("rank", integer(&o.rank, 1)).value("device", integer(&o.device, 1023));
	Status parsed = opts.parse(argc - (first - 1), argv + (first - 1));
	if (int rc = cli::after_parse(parsed, help, usage, kExitUnjudged); rc != cli::kGoOn)
		return rc;
	if (!o.output.empty()) {
		// The verdict goes into NodeStateDir/verdicts, which SlurmUser may
		// own: whatever is at the name (an old verdict, a symlink, a FIFO)
		// is removed and a new file created exclusively, both in the
		// directory opened once without following a symlink
		// (create_replacing): never a path resolved twice.
		int fd = create_replacing(o.output, 0640);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) {
			fprintf(stderr, "%s: --output %s: %s\n", kProg, o.output.c_str(),
			        strerror(errno));
			return kExitUnjudged;
		}
		close(fd);
	}
	if (o.conf.empty())
		o.conf = default_conf_path();
	if (o.node.empty())
		o.node = default_node();
	if (o.node.empty())
		return unjudged(o, "no node name (--node, SLURMD_NODENAME or the host name)");

	auto cfg = Config::load(o.conf);
	if (!cfg.ok())
		return unjudged(o, cfg.status().message());

	if (o.mode == "pair-rank")
		return cmd_pair_rank(o, cfg.value());
	if (o.mode == "prune-verdicts")
		return cmd_prune_verdicts(o, cfg.value());
	if (o.mode == "pair" && o.peers.empty() && o.untested.empty())
		return unjudged(o, "pair: give --peer NODE or --peers HOSTLIST");
	if (o.mode == "pair" && !o.checks.empty())
		return unjudged(o, "pair: --checks does not apply to the pair test");

	std::vector<std::string> peers;
	if (!o.peers.empty()) {
		auto p = hostlist_expand(o.peers);
		if (!p.ok())
			return unjudged(o, "--peers: " + p.status().message());
		peers = p.value();
	}
	AdmitOptions opt;
	if (!o.untested.empty()) {
		// Tried after the admitted peers; a failure with one blames nobody.
		auto p = hostlist_expand(o.untested);
		if (!p.ok())
			return unjudged(o, "--untested-peers: " + p.status().message());
		opt.untested_peers = p.value();
		peers.insert(peers.end(), p->begin(), p->end());
	}
	if (!o.checks.empty()) {
		auto list = parse_check_list(o.checks);
		if (!list.ok())
			return unjudged(o, list.status().message());
		opt.checks = list.value();
	}
	auto in = prepare_admission(cfg.value(), o.node);
	if (!in.ok())
		return unjudged(o, in.status().message());
	if (o.mode.empty() && opt.checks.empty()) {
		// A full run ends with the site's checks: refuse a directory or
		// program another account could change before anything runs.
		Status site = validate_site_config(cfg.value());
		if (!site.ok())
			return unjudged(o, site.message());
	}

	if (o.mode == "pair") {
		auto v = run_pair_admission(*in.value(), peers, opt);
		if (!v.ok())
			return unjudged(o, v.status().message());
		return finish(o, cfg.value(), v.value(), true);
	}
	Verdict v = run_admission(*in.value(), opt);
	if (!peers.empty() && v.passed()) {
		auto pv = run_pair_admission(*in.value(), peers, opt);
		if (!pv.ok())
			return unjudged(o, pv.status().message());
		v.checks.push_back(pv->checks.front());
		v.inconclusive = pv->inconclusive;
	} else if (peers.empty() && o.require_pair && o.checks.empty()) {
		v = require_pair(std::move(v));
	}
	return finish(o, cfg.value(), v, false);
}
