#include "log.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace onramp {
namespace {

std::atomic<onramp_log_sink_fn> g_sink{nullptr};
std::atomic<int> g_stderr_level{-1};
std::mutex g_prog_mu;
std::string g_prog = "onramp";

const char *level_name(LogLevel l)
{
	switch (l) {
	case LogLevel::Error:
		return "error";
	case LogLevel::Warn:
		return "warning";
	case LogLevel::Info:
		return "info";
	case LogLevel::Verbose:
		return "verbose";
	case LogLevel::Debug:
		return "debug";
	}
	return "?";
}

int stderr_level()
{
	int l = g_stderr_level.load();
	if (l < 0) {
		const char *e = getenv("ONRAMP_DEBUG");
		l = (e && *e && *e != '0') ? ONRAMP_LOG_DEBUG : ONRAMP_LOG_INFO;
	}
	return l;
}

std::string vformat(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(nullptr, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return fmt;
	std::vector<char> buf(static_cast<size_t>(n) + 1);
	vsnprintf(buf.data(), buf.size(), fmt, ap);
	return std::string(buf.data(), static_cast<size_t>(n));
}

} // namespace

void log_set_stderr_level(LogLevel level)
{
	g_stderr_level = static_cast<int>(level);
}

void log_set_program(const std::string &name)
{
	std::lock_guard<std::mutex> g(g_prog_mu);
	g_prog = name;
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (2-4), or 0.
size_t utf8_seq(const std::string &s, size_t i)
{
	unsigned char c = static_cast<unsigned char>(s[i]);
	size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
	if (!n || i + n > s.size())
		return 0;
	for (size_t k = 1; k < n; k++)
		if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80)
			return 0;
	return n;
}

// A message as one clean log line: control bytes and invalid UTF-8 (which
// a hostile file may put into an error message) become \xNN.
std::string clean_line(const std::string &msg)
{
	std::string out;
	out.reserve(msg.size());
	for (size_t i = 0; i < msg.size(); i++) {
		unsigned char c = static_cast<unsigned char>(msg[i]);
		if (c >= 0x20 && c < 0x7f) {
			out += msg[i];
			continue;
		}
		size_t n = c >= 0x80 ? utf8_seq(msg, i) : 0;
		if (n) {
			out.append(msg, i, n);
			i += n - 1;
		} else {
			out += strprintf("\\x%02x", c);
		}
	}
	return out;
}

} // namespace

void log_msg(LogLevel level, const std::string &raw)
{
	std::string msg = clean_line(raw);
	onramp_log_sink_fn sink = g_sink.load();
	if (sink) {
		sink(static_cast<int>(level), msg.c_str());
		return;
	}
	if (static_cast<int>(level) > stderr_level())
		return;
	std::lock_guard<std::mutex> g(g_prog_mu);
	if (level == LogLevel::Info)
		fprintf(stderr, "%s: %s\n", g_prog.c_str(), msg.c_str());
	else
		fprintf(stderr, "%s: %s: %s\n", g_prog.c_str(), level_name(level), msg.c_str());
}

#define ONRAMP_LOG_FN(name, level)                                                                 \
	void name(const char *fmt, ...)                                                            \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		std::string m = vformat(fmt, ap);                                                  \
		va_end(ap);                                                                        \
		log_msg(level, m);                                                                 \
	}
ONRAMP_LOG_FN(log_error, LogLevel::Error)
ONRAMP_LOG_FN(log_warn, LogLevel::Warn)
ONRAMP_LOG_FN(log_info, LogLevel::Info)
ONRAMP_LOG_FN(log_verbose, LogLevel::Verbose)
ONRAMP_LOG_FN(log_debug, LogLevel::Debug)
#undef ONRAMP_LOG_FN

std::string strprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::string s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

} // namespace onramp

extern "C" void onramp_log_set_sink(onramp_log_sink_fn fn)
{
	onramp::g_sink = fn;
}
