// The C API's context object, shared by the C API translation units.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "config.hpp"
#include "onramp.h"
#include "submit.hpp"

struct onramp_ctx {
	std::string path;
	std::string component;
	int scope = ONRAMP_SCOPE_POLICY; // what a (re)load reads
	mutable std::mutex mu;
	std::shared_ptr<const onramp::PolicyState> state; // the last good one
	std::atomic<uint64_t> generation{0};
	std::string last_error; // of the last reload ("" when it loaded); under mu
};

namespace onramp {

// The state in force (never null for a created context).
inline std::shared_ptr<const PolicyState> ctx_state(const onramp_ctx_t *ctx)
{
	std::lock_guard<std::mutex> g(ctx->mu);
	return ctx->state;
}

// The configuration in force (never null for a created context).
inline std::shared_ptr<const Config> ctx_config(const onramp_ctx_t *ctx)
{
	return ctx_state(ctx)->cfg;
}

// Does path name nothing at all (ENOENT)? A dangling symlink, a symlink
// loop or an unreadable directory on the way is not "missing".
bool path_missing(const std::string &path);

// Copy s into a C buffer of len bytes, always NUL-terminated.
void copy_out(const std::string &s, char *buf, size_t len);

} // namespace onramp
