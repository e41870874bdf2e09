#include "admit/pair.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admit/gpu_bench.hpp"
#include "admit/gpu_dl.hpp"
#include "admit/record.hpp"
#include "json.hpp"
#include "log.hpp"
#include "proc.hpp"

namespace onramp {
namespace admit {

bool pair_attempt_ok(const PairAttempt &a, double threshold_gbs)
{
	return a.measured && a.wrong == 0 && a.busbw_gbs >= threshold_gbs;
}

namespace {

std::string describe(const PairAttempt &a)
{
	if (!a.measured)
		return a.peer + " (no result: " + a.why + ")";
	if (a.wrong)
		return strprintf("%s (%llu wrong results)", a.peer.c_str(),
		                 static_cast<unsigned long long>(a.wrong));
	return strprintf("%s (%.1f GB/s)", a.peer.c_str(), a.busbw_gbs);
}

std::vector<const PairAttempt *> distinct_failures(const std::vector<PairAttempt> &attempts,
                                                   double threshold)
{
	std::vector<const PairAttempt *> out;
	for (const auto &a : attempts) {
		if (pair_attempt_ok(a, threshold))
			continue;
		bool seen = std::any_of(out.begin(), out.end(),
		                        [&](const PairAttempt *p) { return p->peer == a.peer; });
		if (!seen)
			out.push_back(&a);
	}
	return out;
}

} // namespace

bool pair_decided(const std::vector<PairAttempt> &attempts, double threshold_gbs)
{
	for (const auto &a : attempts)
		if (pair_attempt_ok(a, threshold_gbs))
			return true;
	return distinct_failures(attempts, threshold_gbs).size() >= 2;
}

PairDecision decide_pair(const std::vector<PairAttempt> &attempts, double threshold_gbs)
{
	PairDecision d;
	auto failures = distinct_failures(attempts, threshold_gbs);
	for (const auto &a : attempts) {
		if (!pair_attempt_ok(a, threshold_gbs))
			continue;
		d.status = CheckStatus::Pass;
		d.code = code::kOk;
		d.detail = strprintf("nccl_pair busbw %.1f GB/s >= %.1f GB/s with %s", a.busbw_gbs,
		                     threshold_gbs, a.peer.c_str());
		if (!failures.empty()) {
			d.detail += "; suspect peer";
			d.detail += failures.size() > 1 ? "s " : " ";
			for (size_t i = 0; i < failures.size(); i++) {
				d.detail += (i ? ", " : "") + describe(*failures[i]);
				d.suspects.push_back(failures[i]->peer);
			}
		}
		return d;
	}
	if (failures.size() >= 2) {
		bool all_corrupt = std::all_of(failures.begin(), failures.end(),
		                               [](const PairAttempt *a) { return a->wrong > 0; });
		d.status = CheckStatus::Fail;
		d.code = all_corrupt ? code::kNcclCorrupt : code::kPairBwLow;
		d.detail = strprintf("nccl_pair below %.1f GB/s with %zu peers: ", threshold_gbs,
		                     failures.size());
		for (size_t i = 0; i < failures.size(); i++)
			d.detail += (i ? ", " : "") + describe(*failures[i]);
		return d;
	}
	d.status = CheckStatus::Error;
	d.code = code::kPairInconclusive;
	if (failures.empty())
		d.detail = "nccl_pair: no peer to test with";
	else
		d.detail =
		    strprintf("nccl_pair failed only with %s, below %.1f GB/s; no second peer "
		              "to tell a bad peer from a bad node",
		              describe(*failures[0]).c_str(), threshold_gbs);
	return d;
}

Status parse_rendezvous(const std::string &text, std::string *host, int *port)
{
	size_t colon = text.rfind(':');
	if (colon == std::string::npos || colon == 0)
		return Status::Error("rendezvous '" + text + "' is not HOST:PORT");
	char *end = nullptr;
	long p = strtol(text.c_str() + colon + 1, &end, 10);
	if (*end || p < 1 || p > 65535)
		return Status::Error("rendezvous '" + text + "': bad port");
	*host = text.substr(0, colon);
	*port = static_cast<int>(p);
	return Status::Ok();
}

namespace {

double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

Status full_io(int fd, void *buf, size_t n, bool writing, double deadline)
{
	char *p = static_cast<char *>(buf);
	while (n > 0) {
		struct pollfd pfd = {fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
		int ms = static_cast<int>((deadline - now_s()) * 1000);
		if (ms <= 0)
			return Status::Error("rendezvous timed out");
		if (poll(&pfd, 1, ms) <= 0)
			continue;
		ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return Status::Error(std::string("rendezvous ") +
			                     (writing ? "write" : "read") + ": " +
			                     (k == 0 ? "connection closed" : strerror(errno)));
		p += k;
		n -= static_cast<size_t>(k);
	}
	return Status::Ok();
}

Status serve_id(int port, const gpu::ncclUniqueIdT &id, double deadline)
{
	int s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool v6 = s >= 0;
	if (!v6)
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return Status::Error(strprintf("socket: %s", strerror(errno)));
	int one = 1, zero = 0;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	int rc;
	if (v6) {
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		struct sockaddr_in6 a;
		memset(&a, 0, sizeof a);
		a.sin6_family = AF_INET6;
		a.sin6_addr = in6addr_any;
		a.sin6_port = htons(static_cast<uint16_t>(port));
		rc = bind(s, reinterpret_cast<struct sockaddr *>(&a), sizeof a);
	} else {
		struct sockaddr_in a;
		memset(&a, 0, sizeof a);
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_ANY);
		a.sin_port = htons(static_cast<uint16_t>(port));
		rc = bind(s, reinterpret_cast<struct sockaddr *>(&a), sizeof a);
	}
	if (rc != 0 || listen(s, 1) != 0) {
		Status st =
		    Status::Error(strprintf("listen on port %d: %s", port, strerror(errno)));
		close(s);
		return st;
	}
	for (;;) {
		struct pollfd pfd = {s, POLLIN, 0};
		int ms = static_cast<int>((deadline - now_s()) * 1000);
		if (ms <= 0) {
			close(s);
			return Status::Error(
			    strprintf("no peer connected to port %d in time", port));
		}
		if (poll(&pfd, 1, ms) <= 0)
			continue;
		int c = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		Status st =
		    full_io(c, const_cast<char *>(id.internal), sizeof id.internal, true, deadline);
		close(c);
		close(s);
		return st;
	}
}

Status fetch_id(const std::string &host, int port, gpu::ncclUniqueIdT *id, double deadline)
{
	std::string last = "no attempt";
	while (now_s() < deadline) {
		struct addrinfo hints, *res = nullptr;
		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		int g = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
		if (g != 0) {
			last = std::string("resolve ") + host + ": " + gai_strerror(g);
		} else {
			for (struct addrinfo *a = res; a; a = a->ai_next) {
				int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
				if (s < 0)
					continue;
				if (connect(s, a->ai_addr, a->ai_addrlen) == 0) {
					freeaddrinfo(res);
					Status st = full_io(s, id->internal, sizeof id->internal,
					                    false, deadline);
					close(s);
					return st;
				}
				last = strprintf("connect %s:%d: %s", host.c_str(), port,
				                 strerror(errno));
				close(s);
			}
			freeaddrinfo(res);
		}
		usleep(200000);
	}
	return Status::Error("rendezvous: " + last);
}

} // namespace

Result<PairObs> run_pair_rank(const PairRankOptions &opt)
{
	gpu::Cudart cuda;
	gpu::Nccl nccl;
	Status st = gpu::load_cudart_nccl(&cuda, &nccl);
	if (!st.ok())
		return st;
	gpu::ncclUniqueIdT id;
	memset(&id, 0, sizeof id);
	double deadline = now_s() + opt.connect_timeout_s;
	if (opt.rank == 0) {
		gpu::ncclResult r = nccl.GetUniqueId(&id);
		if (r != gpu::kNcclSuccess)
			return Status::Error("ncclGetUniqueId: " + nccl.err(r));
		st = serve_id(opt.port, id, deadline);
	} else {
		st = fetch_id(opt.host, opt.port, &id, deadline);
	}
	if (!st.ok())
		return st;
	return gpu::measure_allreduce_pair(cuda, nccl, opt.rank, opt.device, id, opt.bytes,
	                                   opt.warmup, opt.iterations, opt.best_of);
}

Result<PairObs> run_pair_launch(const Config &cfg, const std::string &node, const std::string &peer)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return Status::Error("cannot find onramp-admit's own path (/proc/self/exe)");
	exe[n] = '\0';
	// Split into words (never a shell: node names and paths are data).
	auto argv = split_command(cfg.str("PairLaunchCommand"), [&](char c, std::string *v) {
		if (c != 'n' && c != 'p')
			return false;
		*v = c == 'n' ? node : peer;
		return true;
	});
	if (!argv.ok())
		return Status::Error("PairLaunchCommand: " + argv.status().message());
	std::vector<std::string> cmd = argv.value();
	cmd.insert(cmd.end(), {exe, "pair-rank", "--conf", cfg.origin(), "--rendezvous",
	                       strprintf("%s:%lld", node.c_str(),
	                                 static_cast<long long>(cfg.integer("PairPort")))});
	log_verbose("nccl_pair: %s", argv_str(cmd).c_str());
	PairObs obs;
	ProcOptions opt;
	opt.separate_stderr = true;
	opt.on_line = [&obs](const std::string &line) {
		auto j = json_parse(line, "pair-rank output");
		if (!j.ok() || !json_is_object(j->get()))
			return;
		JsonReader r("pair-rank output");
		if (r.integer_or(j->get(), "", "rank", -1) != 0)
			return;
		obs.measured = r.boolean_or(j->get(), "", "measured", false);
		obs.busbw_gbs = r.num_or(j->get(), "", "busbw_gbs", 0);
		obs.wrong = static_cast<uint64_t>(r.integer_or(j->get(), "", "wrong", 0));
		obs.why = r.str_or(j->get(), "", "why", "");
		if (const json_t *a = r.arr(j->get(), "", "samples", false)) {
			size_t i;
			const json_t *v;
			json_array_foreach(a, i, v) obs.samples.push_back(json_number_value(v));
		}
	};
	ProcResult res = run_argv(cmd, opt);
	if (!res.err.empty()) // the launcher's own messages, as before
		fprintf(stderr, "%s\n", res.err.c_str());
	if (res.rc < 0)
		return Status::Error("PairLaunchCommand: " + res.out);
	if (!obs.measured && obs.why.empty())
		obs.why = strprintf("pair launch exited with status %d and gave no result", res.rc);
	return obs;
}

} // namespace admit
} // namespace onramp
