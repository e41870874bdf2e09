// The one logger. Inside a Slurm daemon the C shim installs a sink that
// forwards to Slurm's log (error/info/verbose/debug); in tools messages go
// to stderr prefixed with the program name.
#pragma once

#include <string>

#include "onramp.h"

namespace onramp {

enum class LogLevel {
	Error = ONRAMP_LOG_ERROR,
	Warn = ONRAMP_LOG_WARN,
	Info = ONRAMP_LOG_INFO,
	Verbose = ONRAMP_LOG_VERBOSE,
	Debug = ONRAMP_LOG_DEBUG
};

// Messages more detailed than this are dropped by the stderr sink
// (default Info; ONRAMP_DEBUG=1 in the environment raises it to Debug).
void log_set_stderr_level(LogLevel level);
// The program name used by the stderr sink.
void log_set_program(const std::string &name);

void log_msg(LogLevel level, const std::string &msg);
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// printf into a std::string.
std::string strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace onramp
