// onramp's Prometheus exporter (onramp-metrics serve): /metrics over
// libmicrohttpd. A small pool of polling threads multiplexes every
// connection, so an idle or slow client holds one of a bounded number of
// connection slots until a timeout, never a thread another scrape needs.
// Limits: GET and HEAD only (405 otherwise), URLs of at most 256 bytes
// (414), request line and headers within 32 KiB, other paths 404. Each
// scrape loads onramp.conf again and collects the controller metrics
// (collect.hpp); collecting is serialized (libslurm and SQLite one call at
// a time), sending is not.
#pragma once

#include <string>

namespace onramp {
namespace metrics {

// Serve until SIGTERM or SIGINT (blocked in every thread, taken by
// sigwait). listen_at: "ADDR:PORT" (IPv4) or "PORT" (on 127.0.0.1);
// textfile_dir: node textfiles merged into each scrape ("" for none).
// Returns 0 after the signal, 1 when it cannot listen, 2 when listen_at is
// not an IPv4 ADDR:PORT.
int serve(const std::string &conf, const std::string &listen_at, const std::string &textfile_dir);

} // namespace metrics
} // namespace onramp
