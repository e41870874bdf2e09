#include "admit/pair.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admit/baseline.hpp"
#include "admit/gpu_bench.hpp"
#include "admit/gpu_dl.hpp"
#include "admit/record.hpp"
#include "json.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "number.hpp"
#include "proc.hpp"

namespace onramp {
namespace admit {

bool pair_attempt_ok(const PairAttempt &a, double threshold_gbs)
{
	return a.measured && a.wrong == 0 && a.busbw_gbs >= threshold_gbs;
}

namespace {

std::string describe(const PairAttempt &a, bool with_note = true)
{
	if (!a.measured)
		return a.peer + " (no result: " + a.why + ")";
	if (a.wrong)
		return strprintf("%s (%llu wrong results)", a.peer.c_str(),
		                 static_cast<unsigned long long>(a.wrong));
	if (with_note && !a.note.empty())
		return strprintf("%s (%.1f GB/s; %s)", a.peer.c_str(), a.busbw_gbs, a.note.c_str());
	return strprintf("%s (%.1f GB/s)", a.peer.c_str(), a.busbw_gbs);
}

// Distinct peers whose attempts measured a failure: the only evidence
// against the node. An attempt with no number (a rendezvous nobody
// finished, a launch that failed) is evidence of nothing.
std::vector<const PairAttempt *> distinct_failures(const std::vector<PairAttempt> &attempts,
                                                   double threshold)
{
	std::vector<const PairAttempt *> out;
	for (const auto &a : attempts) {
		if (!a.measured || pair_attempt_ok(a, threshold))
			continue;
		bool seen = std::any_of(out.begin(), out.end(),
		                        [&](const PairAttempt *p) { return p->peer == a.peer; });
		if (!seen)
			out.push_back(&a);
	}
	return out;
}

// "; no result with p1 (why), p2 (why)" for the unmeasured attempts, the
// last one with each peer; "" when every attempt measured.
std::string unmeasured_note(const std::vector<PairAttempt> &attempts)
{
	std::vector<const PairAttempt *> none;
	for (const auto &a : attempts) {
		if (a.measured)
			continue;
		auto it = std::find_if(none.begin(), none.end(),
		                       [&](const PairAttempt *p) { return p->peer == a.peer; });
		if (it == none.end())
			none.push_back(&a);
		else
			*it = &a;
	}
	std::string out;
	for (size_t i = 0; i < none.size(); i++)
		out += (i ? ", " : "; no result with ") + none[i]->peer + " (" +
		       (none[i]->why.empty() ? "no reason given" : none[i]->why) + ")";
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
	std::string unmeasured = unmeasured_note(attempts);
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
		d.detail += unmeasured;
		return d;
	}
	if (failures.size() >= 2) {
		bool all_corrupt = std::all_of(failures.begin(), failures.end(),
		                               [](const PairAttempt *a) { return a->wrong > 0; });
		d.status = CheckStatus::Fail;
		d.code = all_corrupt ? code::kNcclCorrupt : code::kPairBwLow;
		// The part the backend named, said first when every failure names it
		// (a node's reason is cut short in Slurm).
		std::string note = failures[0]->note;
		for (const auto *f : failures)
			if (f->note != note)
				note.clear();
		d.detail =
		    strprintf("nccl_pair below %.1f GB/s with %zu peers%s: ", threshold_gbs,
		              failures.size(), note.empty() ? "" : (" (" + note + ")").c_str());
		for (size_t i = 0; i < failures.size(); i++)
			d.detail += (i ? ", " : "") + describe(*failures[i], note.empty());
		d.detail += unmeasured;
		return d;
	}
	d.status = CheckStatus::Error;
	d.code = code::kPairInconclusive;
	if (failures.empty() && unmeasured.empty())
		d.detail = "nccl_pair: no peer to test with";
	else if (failures.empty())
		d.detail = "nccl_pair: not measured" + unmeasured;
	else
		d.detail =
		    strprintf("nccl_pair failed only with %s, below %.1f GB/s; no second peer "
		              "to tell a bad peer from a bad node",
		              describe(*failures[0]).c_str(), threshold_gbs) +
		    unmeasured;
	return d;
}

bool rail_ok(const RailObs &r, double threshold_gbs)
{
	return r.measured && r.wrong == 0 && r.busbw_gbs >= threshold_gbs;
}

namespace {

// One rail's attempts, in the order made.
struct RailSeen {
	int gpu = 0;
	std::string hca;
	int port = 1;
	std::vector<const RailAttempt *> tries;
};

std::vector<RailSeen> by_rail(const std::vector<RailAttempt> &attempts)
{
	std::vector<RailSeen> out;
	for (const auto &a : attempts) {
		auto it = std::find_if(out.begin(), out.end(),
		                       [&](const RailSeen &r) { return r.gpu == a.obs.gpu; });
		if (it == out.end()) {
			out.push_back(RailSeen{a.obs.gpu, a.obs.hca, a.obs.port, {}});
			it = out.end() - 1;
		}
		if (it->hca.empty())
			it->hca = a.obs.hca, it->port = a.obs.port;
		it->tries.push_back(&a);
	}
	std::sort(out.begin(), out.end(),
	          [](const RailSeen &x, const RailSeen &y) { return x.gpu < y.gpu; });
	return out;
}

// Distinct peers with which the rail measured a failure.
std::vector<const RailAttempt *> rail_failures(const RailSeen &r, double threshold)
{
	std::vector<const RailAttempt *> out;
	for (const RailAttempt *a : r.tries) {
		if (!a->obs.measured || rail_ok(a->obs, threshold))
			continue;
		if (std::none_of(out.begin(), out.end(),
		                 [&](const RailAttempt *p) { return p->peer == a->peer; }))
			out.push_back(a);
	}
	return out;
}

bool rail_passed(const RailSeen &r, double threshold)
{
	return std::any_of(r.tries.begin(), r.tries.end(),
	                   [&](const RailAttempt *a) { return rail_ok(a->obs, threshold); });
}

std::string rail_name(const std::string &node, const RailSeen &r)
{
	return strprintf("%s%s%s port %d (GPU %d)", node.c_str(), node.empty() ? "" : " ",
	                 r.hca.empty() ? "no HCA" : r.hca.c_str(), r.port, r.gpu);
}

} // namespace

bool rails_decided(const std::vector<RailAttempt> &attempts, double threshold_gbs)
{
	for (const auto &r : by_rail(attempts))
		if (!rail_passed(r, threshold_gbs) && rail_failures(r, threshold_gbs).size() < 2)
			return false;
	return true;
}

RailDecision decide_rails(const std::string &node, const std::vector<RailAttempt> &attempts,
                          double threshold_gbs)
{
	RailDecision d;
	std::vector<std::string> failed, undecided;
	auto seen = by_rail(attempts);
	d.rails = seen.size();
	for (const auto &r : seen) {
		if (rail_passed(r, threshold_gbs))
			continue;
		auto f = rail_failures(r, threshold_gbs);
		if (f.size() >= 2) {
			const RailAttempt *best = f[0];
			bool corrupt = true;
			std::string peers;
			for (const RailAttempt *a : f) {
				if (a->obs.busbw_gbs > best->obs.busbw_gbs)
					best = a;
				corrupt = corrupt && a->obs.wrong > 0;
				peers += (peers.empty() ? "" : ", ") + a->peer;
			}
			failed.push_back(
			    corrupt ? strprintf("%s %llu wrong results with %s",
			                        rail_name(node, r).c_str(),
			                        static_cast<unsigned long long>(best->obs.wrong),
			                        peers.c_str())
			            : strprintf("%s %.1f GB/s < %.1f GB/s with %s",
			                        rail_name(node, r).c_str(), best->obs.busbw_gbs,
			                        threshold_gbs, peers.c_str()));
			d.failed_gpus.push_back(r.gpu);
			continue;
		}
		std::string why;
		if (!f.empty())
			why = strprintf("%.1f GB/s with %s only", f[0]->obs.busbw_gbs,
			                f[0]->peer.c_str());
		else
			why = "not measured: " + (r.tries.back()->obs.why.empty()
			                              ? std::string("no reason given")
			                              : r.tries.back()->obs.why);
		undecided.push_back(rail_name("", r) + " " + why);
	}
	auto list = [](const std::vector<std::string> &v) {
		std::string out;
		for (const auto &x : v)
			out += (out.empty() ? "" : "; ") + x;
		return out;
	};
	if (!failed.empty()) {
		d.status = CheckStatus::Fail;
		d.code = code::kRailBwLow;
		d.detail = list(failed);
		if (!undecided.empty())
			d.detail += "; undecided: " + list(undecided);
		return d;
	}
	if (attempts.empty()) {
		d.code = code::kPairInconclusive;
		d.detail = "per-rail pass: no rail measured";
		return d;
	}
	if (!undecided.empty()) {
		d.code = code::kPairInconclusive;
		d.detail = "per-rail pass undecided: " + list(undecided);
		return d;
	}
	d.status = CheckStatus::Pass;
	d.code = code::kOk;
	d.detail = strprintf("%zu rails >= %.1f GB/s", by_rail(attempts).size(), threshold_gbs);
	return d;
}

Status parse_rendezvous(const std::string &text, std::string *host, int *port)
{
	size_t colon = text.rfind(':');
	if (colon == 0 || text.empty())
		return Status::Error("rendezvous '" + text + "' is not HOST[:PORT]");
	if (colon == std::string::npos) {
		*host = text;
		*port = 0; // the step's kPairPortEnv says
		return Status::Ok();
	}
	char *end = nullptr;
	long p = strtol(text.c_str() + colon + 1, &end, 10);
	if (*end || p < 1 || p > 65535)
		return Status::Error("rendezvous '" + text + "': bad port");
	*host = text.substr(0, colon);
	*port = static_cast<int>(p);
	return Status::Ok();
}

int pick_pair_port()
{
	for (int family : {AF_INET6, AF_INET}) {
		int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			continue;
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof ss);
		ss.ss_family = static_cast<sa_family_t>(family);
		socklen_t len =
		    family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
		int port = 0;
		if (bind(s, reinterpret_cast<struct sockaddr *>(&ss), len) == 0 &&
		    getsockname(s, reinterpret_cast<struct sockaddr *>(&ss), &len) == 0)
			port = ntohs(family == AF_INET6
			                 ? reinterpret_cast<struct sockaddr_in6 *>(&ss)->sin6_port
			                 : reinterpret_cast<struct sockaddr_in *>(&ss)->sin_port);
		close(s);
		if (port > 0)
			return port;
	}
	return 0;
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
		ssize_t k = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
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

const char kMagic[4] = {'O', 'R', 'P', '1'};
constexpr size_t kNonce = 32, kMac = 32, kId = 128;

std::string hmac(const std::string &secret, const std::string &label, const std::string &a,
                 const std::string &b, const std::string &c = "")
{
	std::string msg = label;
	msg += '\0';
	msg += a + b + c;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
	          reinterpret_cast<const unsigned char *>(msg.data()), msg.size(), md, &len))
		return std::string(kMac, '\0');
	return std::string(reinterpret_cast<char *>(md), len);
}

// The id XOR the attempt's keystream (its own inverse).
std::string crypt_id(const std::string &secret, const std::string &ns, const std::string &nc,
                     const std::string &in)
{
	std::string out = in;
	for (size_t i = 0; i < out.size(); i++) {
		if (i % kMac == 0) {
			std::string block =
			    hmac(secret, "onramp-pair key",
			         std::string(1, static_cast<char>(i / kMac)), ns, nc);
			for (size_t k = 0; k < kMac && i + k < out.size(); k++)
				out[i + k] = static_cast<char>(out[i + k] ^ block[k]);
		}
	}
	return out;
}

bool same(const std::string &a, const std::string &b)
{
	return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Status read_n(int fd, std::string *out, size_t n, double deadline)
{
	out->assign(n, '\0');
	return full_io(fd, &(*out)[0], n, false, deadline);
}

Status write_all(int fd, const std::string &data, double deadline)
{
	return full_io(fd, const_cast<char *>(data.data()), data.size(), true, deadline);
}

Result<std::string> random_bytes(size_t n)
{
	std::string out(n, '\0');
	size_t got = 0;
	while (got < n) {
		ssize_t k = getrandom(&out[got], n - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return Status::Error(strprintf("getrandom: %s", strerror(errno)));
		got += static_cast<size_t>(k);
	}
	return out;
}

// Listening socket on port bound to host's addresses (all when host is ""
// or none can be bound); -1 with *why.
int listen_on(const std::string &host, int port, std::string *why)
{
	auto try_bind = [&](int family, const struct sockaddr *sa, socklen_t len) {
		// Non-blocking: pair_serve_id accepts until the queue is empty.
		int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (s < 0)
			return -1;
		int one = 1, zero = 0;
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (family == AF_INET6)
			setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		if (bind(s, sa, len) != 0 || listen(s, 128) != 0) {
			*why = strprintf("listen on port %d: %s", port, strerror(errno));
			close(s);
			return -1;
		}
		return s;
	};
	if (!host.empty()) {
		struct addrinfo hints, *res = nullptr;
		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_PASSIVE;
		if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) == 0) {
			int s = -1;
			for (struct addrinfo *a = res; a && s < 0; a = a->ai_next)
				s = try_bind(a->ai_family, a->ai_addr, a->ai_addrlen);
			freeaddrinfo(res);
			if (s >= 0)
				return s;
		}
		log_verbose("nccl_pair: cannot bind to %s's address; listening on all",
		            host.c_str());
	}
	struct sockaddr_in6 a6;
	memset(&a6, 0, sizeof a6);
	a6.sin6_family = AF_INET6;
	a6.sin6_addr = in6addr_any;
	a6.sin6_port = htons(static_cast<uint16_t>(port));
	int s = try_bind(AF_INET6, reinterpret_cast<struct sockaddr *>(&a6), sizeof a6);
	if (s >= 0)
		return s;
	struct sockaddr_in a4;
	memset(&a4, 0, sizeof a4);
	a4.sin_family = AF_INET;
	a4.sin_addr.s_addr = htonl(INADDR_ANY);
	a4.sin_port = htons(static_cast<uint16_t>(port));
	return try_bind(AF_INET, reinterpret_cast<struct sockaddr *>(&a4), sizeof a4);
}

// The client's side of one connection: the id, or why not.
Result<std::string> fetch_one(int s, const std::string &secret, double deadline)
{
	std::string hello, enc, mac;
	Status st = read_n(s, &hello, sizeof kMagic + kNonce, deadline);
	if (!st.ok())
		return st;
	if (hello.compare(0, sizeof kMagic, std::string(kMagic, sizeof kMagic)) != 0)
		return Status::Error("rendezvous: not an onramp pair server");
	std::string ns = hello.substr(sizeof kMagic);
	auto nc = random_bytes(kNonce);
	if (!nc.ok())
		return nc.status();
	st =
	    write_all(s, nc.value() + hmac(secret, "onramp-pair client", ns, nc.value()), deadline);
	if (st.ok())
		st = read_n(s, &mac, kMac, deadline);
	if (st.ok())
		st = read_n(s, &enc, kId, deadline);
	if (!st.ok())
		return st;
	if (!same(mac, hmac(secret, "onramp-pair server", nc.value(), ns, enc)))
		return Status::Error("rendezvous: the server does not hold the attempt's secret");
	return crypt_id(secret, ns, nc.value(), enc);
}

} // namespace

std::string new_pair_secret()
{
	auto r = random_bytes(32);
	if (!r.ok())
		return "";
	std::string hex;
	for (unsigned char c : r.value())
		hex += strprintf("%02x", c);
	return hex;
}

namespace {

// The textual address of a peer, an IPv4-mapped IPv6 address as IPv4.
std::string addr_text(const struct sockaddr_storage &ss)
{
	char buf[INET6_ADDRSTRLEN] = "";
	if (ss.ss_family == AF_INET) {
		const auto *a = reinterpret_cast<const struct sockaddr_in *>(&ss);
		inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
	} else if (ss.ss_family == AF_INET6) {
		const auto *a = reinterpret_cast<const struct sockaddr_in6 *>(&ss);
		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr))
			inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], buf, sizeof buf);
		else
			inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
	}
	return buf;
}

// Every address peer resolves to, as addr_text writes them.
Result<std::vector<std::string>> peer_addresses(const std::string &peer)
{
	if (peer.empty())
		return Status::Error("rendezvous: no peer named, so no address to accept");
	struct addrinfo hints, *res = nullptr;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int g = getaddrinfo(peer.c_str(), nullptr, &hints, &res);
	if (g != 0)
		return Status::Error("rendezvous: resolve the peer " + peer + ": " +
		                     gai_strerror(g));
	std::vector<std::string> out;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof ss);
		memcpy(&ss, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof ss));
		std::string t = addr_text(ss);
		if (!t.empty() && std::find(out.begin(), out.end(), t) == out.end())
			out.push_back(t);
	}
	freeaddrinfo(res);
	if (out.empty())
		return Status::Error("rendezvous: the peer " + peer + " has no address");
	return out;
}

// One connection of the rendezvous, served without blocking the others.
struct Conn {
	int fd = -1;
	double deadline = 0;
	std::string from, ns, out, in;
	size_t sent = 0;
	bool answered = false; // out holds the id's answer
};

} // namespace

Status pair_serve_id(const std::string &bind_host, int port, const std::string &secret,
                     const std::string &id, double timeout_s, const std::string &peer)
{
	if (secret.empty())
		return Status::Error("rendezvous: no secret for this attempt");
	if (id.size() != kId)
		return Status::Error("rendezvous: the id is not 128 bytes");
	auto allowed = peer_addresses(peer);
	if (!allowed.ok())
		return allowed.status();
	double deadline = now_s() + timeout_s;
	std::string why;
	int s = listen_on(bind_host, port, &why);
	if (s < 0)
		return Status::Error(why);
	std::vector<Conn> conns;
	std::string last;
	size_t refused = 0; // connections from an address not the peer's
	std::string refused_from;
	auto drop = [&](size_t i, const std::string &reason) {
		close(conns[i].fd);
		last = conns[i].from + ": " + reason;
		log_verbose("nccl_pair: rendezvous: %s; still waiting", last.c_str());
		conns.erase(conns.begin() + static_cast<long>(i));
	};
	auto finish = [&](Status st) {
		for (auto &c : conns)
			close(c.fd);
		close(s);
		return st;
	};
	for (;;) {
		double now = now_s();
		for (size_t i = conns.size(); i-- > 0;)
			if (now >= conns[i].deadline)
				drop(i, "no handshake in time");
		if (now >= deadline) {
			std::string why = last;
			if (refused)
				why += strprintf("%srefused %zu connection%s (the last from %s), "
				                 "not the peer %s",
				                 why.empty() ? "" : "; ", refused,
				                 refused > 1 ? "s" : "", refused_from.c_str(),
				                 peer.c_str());
			return finish(Status::Error(
			    strprintf("no authenticated peer on port %d in time%s", port,
			              why.empty() ? "" : (" (" + why + ")").c_str())));
		}
		double wake = deadline;
		std::vector<struct pollfd> pfds;
		pfds.push_back({s, POLLIN, 0});
		for (const auto &c : conns) {
			wake = std::min(wake, c.deadline);
			pfds.push_back(
			    {c.fd, static_cast<short>(c.sent < c.out.size() ? POLLOUT : POLLIN),
			     0});
		}
		int ms = std::max(1, static_cast<int>((wake - now) * 1000) + 1);
		int n = poll(pfds.data(), pfds.size(), ms);
		if (n < 0 && errno != EINTR)
			return finish(
			    Status::Error(strprintf("rendezvous: poll: %s", strerror(errno))));
		if (n <= 0)
			continue;
		// Each connection in turn, from the last, so that dropping one
		// leaves the indices of those not yet seen in place.
		for (size_t k = pfds.size(); k-- > 1;) {
			size_t i = k - 1;
			short ev = pfds[k].revents;
			if (!ev)
				continue;
			Conn &c = conns[i];
			if (c.sent < c.out.size()) {
				ssize_t w = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent,
				                 MSG_NOSIGNAL);
				if (w < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				if (w <= 0) {
					drop(i, w < 0 ? strerror(errno) : "connection closed");
					continue;
				}
				c.sent += static_cast<size_t>(w);
				if (c.sent == c.out.size() && c.answered)
					return finish(Status::Ok());
				continue;
			}
			char buf[kNonce + kMac];
			ssize_t r = recv(c.fd, buf, kNonce + kMac - c.in.size(), 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0 || c.answered) {
				drop(i, r < 0    ? strerror(errno)
				        : r == 0 ? "connection closed"
				                 : "spoke out of turn");
				continue;
			}
			c.in.append(buf, static_cast<size_t>(r));
			if (c.in.size() < kNonce + kMac)
				continue;
			std::string nc = c.in.substr(0, kNonce), mac = c.in.substr(kNonce);
			if (!same(mac, hmac(secret, "onramp-pair client", c.ns, nc))) {
				drop(i, "a peer without the attempt's secret");
				continue;
			}
			std::string enc = crypt_id(secret, c.ns, nc, id);
			c.out = hmac(secret, "onramp-pair server", nc, c.ns, enc) + enc;
			c.sent = 0;
			c.answered = true;
		}
		if (!(pfds[0].revents & POLLIN))
			continue;
		// At most a table's worth per round, so that a flood cannot keep
		// this loop from serving the connections it holds.
		for (size_t taken = 0; taken < kPairMaxConnections; taken++) {
			struct sockaddr_storage ss;
			socklen_t len = sizeof ss;
			int c = accept4(s, reinterpret_cast<struct sockaddr *>(&ss), &len,
			                SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (c < 0)
				break;
			std::string from = addr_text(ss);
			if (std::find(allowed->begin(), allowed->end(), from) == allowed->end()) {
				close(c);
				refused_from = from.empty() ? "?" : from;
				// The first one said; a flood does not fill the log.
				if (refused++ == 0) {
					std::string names;
					for (const auto &a : allowed.value())
						names += (names.empty() ? "" : ", ") + a;
					log_info(
					    "nccl_pair: rendezvous on port %d: refused a "
					    "connection from %s, not an address of the peer %s "
					    "(%s)",
					    port, refused_from.c_str(), peer.c_str(),
					    names.c_str());
				}
				continue;
			}
			auto ns = random_bytes(kNonce);
			if (!ns.ok()) {
				close(c);
				return finish(ns.status());
			}
			// Full: the oldest connection that has not proved the secret
			// makes room (the real peer proves it within a round trip).
			if (conns.size() >= kPairMaxConnections) {
				size_t old = 0;
				while (old + 1 < conns.size() && conns[old].answered)
					old++;
				drop(old, "evicted: too many connections at once");
			}
			Conn conn;
			conn.fd = c;
			conn.from = from;
			conn.deadline = std::min(deadline, now_s() + kPairHandshakeS);
			conn.ns = ns.value();
			conn.out = std::string(kMagic, sizeof kMagic) + conn.ns;
			conns.push_back(std::move(conn));
		}
	}
}

namespace {

// Bind s to one of source's addresses of family, when one is this host's;
// else leave it to the kernel's choice.
void bind_source(int s, int family, const std::string &source)
{
	if (source.empty())
		return;
	struct addrinfo hints, *res = nullptr;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(source.c_str(), nullptr, &hints, &res) != 0)
		return;
	for (struct addrinfo *a = res; a; a = a->ai_next)
		if (bind(s, a->ai_addr, a->ai_addrlen) == 0)
			break;
	freeaddrinfo(res);
}

} // namespace

Result<std::string> pair_fetch_id(const std::string &host, int port, const std::string &secret,
                                  double timeout_s, const std::string &source)
{
	if (secret.empty())
		return Status::Error("rendezvous: no secret for this attempt");
	double deadline = now_s() + timeout_s;
	std::string last = "no attempt", refused;
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
				bind_source(s, a->ai_family, source);
				if (connect(s, a->ai_addr, a->ai_addrlen) == 0) {
					auto id = fetch_one(
					    s, secret,
					    std::min(deadline, now_s() + kPairHandshakeS));
					close(s);
					if (id.ok()) {
						freeaddrinfo(res);
						return id;
					}
					last = id.status().message();
					if (last.find("secret") != std::string::npos)
						refused = last; // said first: it names a stranger
					continue;
				}
				last = strprintf("connect %s:%d: %s", host.c_str(), port,
				                 strerror(errno));
				close(s);
			}
			freeaddrinfo(res);
		}
		usleep(200000);
	}
	if (!refused.empty())
		return Status::Error(refused + " (then: " + last + ")");
	return Status::Error("rendezvous: " + last);
}

namespace {} // namespace

Result<PairObs> run_pair_rank(const PairRankOptions &opt)
{
	gpu::Cudart cuda;
	gpu::Nccl nccl;
	Status st = gpu::load_cudart_nccl(&cuda, &nccl);
	if (!st.ok())
		return st;
	gpu::ncclUniqueIdT id;
	memset(&id, 0, sizeof id);
	if (opt.rank == 0) {
		gpu::ncclResult r = nccl.GetUniqueId(&id);
		if (r != gpu::kNcclSuccess)
			return Status::Error("ncclGetUniqueId: " + nccl.err(r));
		st = pair_serve_id(opt.host, opt.port, opt.secret,
		                   std::string(id.internal, sizeof id.internal),
		                   opt.connect_timeout_s, opt.peer);
	} else {
		auto got =
		    pair_fetch_id(opt.host, opt.port, opt.secret, opt.connect_timeout_s, opt.self);
		if (got.ok())
			memcpy(id.internal, got->data(), sizeof id.internal);
		st = got.status();
	}
	if (!st.ok())
		return st;
	std::vector<int> devices;
	if (opt.gpus > 0)
		for (int d = 0; d < opt.gpus; d++)
			devices.push_back(d);
	else
		devices.push_back(opt.device);
	return gpu::measure_allreduce_pair(cuda, nccl, opt.rank, devices, id, opt.bytes, opt.warmup,
	                                   opt.iterations, opt.best_of);
}

Result<PairObs> run_pair_launch(const Config &cfg, const std::string &node, const std::string &peer,
                                int device, const std::string &ib_hca)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return Status::Error("cannot find onramp-admit's own path (/proc/self/exe)");
	exe[n] = '\0';
	auto argv = split_command(cfg.str("PairLaunchCommand"), [&](char x, std::string *v) {
		if (x == 'p')
			*v = peer;
		else if (x == 'n')
			*v = node;
		else
			return false;
		return true;
	});
	if (!argv.ok())
		return Status::Error(cfg.where("PairLaunchCommand") + ": " +
		                     argv.status().message());
	std::string secret = new_pair_secret();
	if (secret.empty())
		return Status::Error("nccl_pair: cannot make the attempt's secret (getrandom)");
	// PairPort=0: a port free on this node now, for this attempt only.
	long long port = cfg.integer("PairPort");
	if (port == 0)
		port = pick_pair_port();
	PairObs none;
	if (port <= 0) {
		none.why = "nccl_pair: no free TCP port for the rendezvous";
		return none;
	}
	for (const std::string &w :
	     {std::string(exe), std::string("pair-rank"), std::string("--conf"), cfg.origin(),
	      std::string("--rendezvous"), node})
		argv->push_back(w);
	if (device < 0) {
		argv->push_back("--all-gpus");
	} else {
		argv->push_back("--device");
		argv->push_back(std::to_string(device));
	}
	log_verbose("nccl_pair: %s", argv_str(argv.value()).c_str());
	ProcOptions po;
	po.separate_stderr = true;
	po.env.push_back(std::string(kPairSecretEnv) + "=" + secret);
	po.env.push_back(strprintf("%s=%lld", kPairPortEnv, port));
	po.env.push_back(std::string(kPairPeerEnv) + "=" + peer);
	if (!ib_hca.empty())
		po.env.push_back("NCCL_IB_HCA=" + ib_hca); // srun passes it to both ranks
	ProcResult pr = run_argv(argv.value(), po);
	PairObs obs;
	size_t pos = 0;
	while (pos < pr.out.size()) {
		size_t nl = pr.out.find('\n', pos);
		std::string line = pr.out.substr(pos, nl == std::string::npos ? nl : nl - pos);
		pos = nl == std::string::npos ? pr.out.size() : nl + 1;
		auto j = json_parse(line, "pair-rank output");
		if (!j.ok() || !json_is_object(j->get()))
			continue;
		JsonReader r("pair-rank output");
		if (r.integer_or(j->get(), "", "rank", -1) != 0)
			continue;
		obs.measured = r.boolean_or(j->get(), "", "measured", false);
		obs.busbw_gbs = r.num_or(j->get(), "", "busbw_gbs", 0);
		obs.wrong = static_cast<uint64_t>(r.integer_or(j->get(), "", "wrong", 0));
		obs.why = r.str_or(j->get(), "", "why", "");
		obs.nranks = static_cast<int>(r.integer_or(j->get(), "", "nranks", 0));
		if (const json_t *a = r.arr(j->get(), "", "samples", false)) {
			size_t i;
			const json_t *v;
			json_array_foreach(a, i, v) obs.samples.push_back(json_number_value(v));
		}
	}
	if (!pr.err.empty()) // the launcher's own messages, as before
		fprintf(stderr, "%s\n", pr.err.c_str());
	if (!obs.measured && obs.why.empty())
		obs.why =
		    pr.rc < 0
		        ? "pair launch: " + pr.out
		        : strprintf("pair launch exited with status %d and gave no result", pr.rc);
	return obs;
}

Result<PairRankOptions> pair_rank_options(const Config &cfg, const std::string &node,
                                          const std::string &rendezvous, int rank, int device,
                                          bool all_gpus)
{
	PairRankOptions p;
	std::string rv = rendezvous;
	std::vector<std::string> step_nodes;
	const char *nl = getenv("SLURM_STEP_NODELIST");
	if (!nl)
		nl = getenv("SLURM_JOB_NODELIST");
	if (nl) {
		auto hosts = hostlist_expand(nl);
		if (hosts.ok())
			step_nodes = hosts.value();
	}
	if (rv.empty()) {
		if (!nl)
			return Status::Error(
			    "pair-rank: no --rendezvous and no SLURM_STEP_NODELIST");
		if (step_nodes.empty())
			return Status::Error("pair-rank: cannot expand the step's node list");
		rv = step_nodes.front();
	}
	Status st = parse_rendezvous(rv, &p.host, &p.port);
	if (!st.ok())
		return st;
	if (p.port == 0) {
		// The launching rank's choice (PairPort=0: ephemeral), else PairPort.
		const char *env_port = getenv(kPairPortEnv);
		if (env_port && *env_port) {
			auto v = parse_int(env_port, 1, 65535);
			if (!v.ok())
				return Status::Error(std::string(kPairPortEnv) + ": " +
				                     v.status().message());
			p.port = static_cast<int>(v.value());
		} else if (cfg.integer("PairPort") > 0) {
			p.port = static_cast<int>(cfg.integer("PairPort"));
		} else {
			return Status::Error(std::string("pair-rank: no port: no ") + kPairPortEnv +
			                     " in the environment and PairPort=0");
		}
	}
	p.rank = rank >= 0 ? rank : (node == p.host ? 0 : 1);
	p.self = node;
	// Rank 0 accepts connections from the peer's addresses only: the
	// launching rank names it; else the step's other node.
	const char *peer = getenv(kPairPeerEnv);
	if (peer && *peer)
		p.peer = peer;
	else
		for (const auto &h : step_nodes)
			if (h != p.host) {
				p.peer = h;
				break;
			}
	if (p.rank == 0 && p.peer.empty())
		return Status::Error(std::string("pair-rank: rank 0 has no peer to accept (no ") +
		                     kPairPeerEnv + ", no second node in the step)");
	// The attempt's secret, from the launching rank through the step's
	// environment (never on a command line).
	const char *secret = getenv(kPairSecretEnv);
	if (!secret || !*secret)
		return Status::Error(std::string("pair-rank: no ") + kPairSecretEnv +
		                     " in the environment (run by onramp-admit pair)");
	p.secret = secret;
	const char *local = getenv("SLURM_LOCALID");
	auto localid = parse_int(local ? local : "0", 0, 1023);
	if (!localid.ok())
		return Status::Error("SLURM_LOCALID: " + localid.status().message());
	p.device = device >= 0 ? device : static_cast<int>(localid.value());
	auto bpath = baseline_path(cfg);
	if (!bpath.ok())
		return bpath.status();
	auto b = load_baseline(bpath.value());
	if (!b.ok())
		return b.status();
	p.bytes = b->nccl_bytes;
	p.warmup = b->nccl_warmup;
	p.iterations = b->nccl_iterations;
	p.best_of = b->nccl_best_of;
	if (all_gpus) {
		if (b->gpu_count < 1)
			return Status::Error("pair-rank --all-gpus: the baseline counts no GPU");
		p.gpus = b->gpu_count;
	}
	return p;
}

} // namespace admit
} // namespace onramp
