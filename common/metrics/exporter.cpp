// onramp's Prometheus exporter on libmicrohttpd (exporter.hpp).
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <memory>
#include <microhttpd.h>
#include <mutex>
#include <netinet/in.h>
#include <pthread.h>

#include "config.hpp"
#include "log.hpp"
#include "metrics/collect.hpp"
#include "metrics/exporter.hpp"
#include "number.hpp"
#include "slurm/client.hpp"

namespace onramp {
namespace metrics {
namespace {

constexpr unsigned kPoolThreads = 4;
constexpr unsigned kMaxConnections = 64;
constexpr unsigned kMaxPerIp = 32;
constexpr unsigned kConnTimeout = 10; // seconds
constexpr size_t kConnMemory = 32 * 1024;
constexpr size_t kMaxUrl = 256;

struct Exporter {
	std::string conf, textfile_dir;
	// A scrape never waits for slurmctld: one attempt, then a read error.
	std::unique_ptr<slurm::SlurmClient> client = slurm::libslurm_client(0);
	std::mutex collect;
};

std::string scrape(Exporter &x, unsigned *code)
{
	std::lock_guard<std::mutex> lock(x.collect);
	try {
		auto cfg = Config::load(x.conf);
		if (cfg.ok())
			return controller_text(cfg.value(), *x.client, x.textfile_dir,
			                       double(time(nullptr)));
		Exposition e;
		e.read_error("onramp.conf", cfg.status().message());
		log_warn("%s", cfg.status().message().c_str());
		return e.text();
	} catch (const std::exception &ex) {
		*code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		return std::string("error: ") + ex.what() + "\n";
	}
}

MHD_Result reply(MHD_Connection *conn, unsigned code, const std::string &body)
{
	MHD_Response *r = MHD_create_response_from_buffer(
	    body.size(), const_cast<char *>(body.data()), MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
	                                            : "text/plain; charset=utf-8");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

MHD_Result answer(void *cls, MHD_Connection *conn, const char *url, const char *method,
                  const char *, const char *, size_t *upload_size, void **)
{
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		*upload_size = 0; // the body is not read
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
		             "onramp exporter: GET or HEAD only\n");
	}
	if (strlen(url) > kMaxUrl)
		return reply(conn, MHD_HTTP_URI_TOO_LONG, "onramp exporter: URL too long\n");
	if (strcmp(url, "/metrics") != 0)
		return reply(conn, MHD_HTTP_NOT_FOUND, "onramp exporter: try /metrics\n");
	unsigned code = MHD_HTTP_OK;
	std::string body = scrape(*static_cast<Exporter *>(cls), &code);
	return reply(conn, code, body);
}

} // namespace

int serve(const std::string &conf, const std::string &listen_at, const std::string &textfile_dir)
{
	size_t colon = listen_at.rfind(':');
	std::string host = colon == std::string::npos ? "127.0.0.1" : listen_at.substr(0, colon);
	auto port = parse_int(colon == std::string::npos ? listen_at : listen_at.substr(colon + 1),
	                      1, 65535);
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_port = htons(static_cast<uint16_t>(port.ok() ? port.value() : 0));
	if (!port.ok() || inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
		log_error("--listen %s: not an IPv4 ADDR:PORT", listen_at.c_str());
		return 2;
	}
	// SIGTERM/SIGINT are taken by sigwait below: blocked before the pool's
	// threads start, so they inherit the mask and no thread is interrupted.
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, nullptr);
	signal(SIGPIPE, SIG_IGN);
	Exporter x;
	x.conf = conf;
	x.textfile_dir = textfile_dir;
	MHD_Daemon *d = MHD_start_daemon(
	    MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, nullptr, nullptr, &answer, &x,
	    MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr *>(&addr),
	    MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_THREAD_POOL_SIZE, kPoolThreads,
	    MHD_OPTION_CONNECTION_LIMIT, kMaxConnections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    kMaxPerIp, MHD_OPTION_CONNECTION_TIMEOUT, kConnTimeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnMemory, MHD_OPTION_END);
	if (!d) {
		log_error("cannot listen on %s: %s", listen_at.c_str(), strerror(errno));
		return 1;
	}
	log_info("serving /metrics on %s", listen_at.c_str());
	int sig = 0;
	sigwait(&stop, &sig);
	MHD_stop_daemon(d);
	return 0;
}

} // namespace metrics
} // namespace onramp
