// The C API the plugin shims call (onramp.h). No exception leaves here.
#include <cstdlib>
#include <cstring>
#include <new>

#include "ctx.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "submit.hpp"

using onramp::copy_out;

namespace onramp {

void copy_out(const std::string &s, char *buf, size_t len)
{
	if (!buf || len == 0)
		return;
	size_t n = s.size() < len - 1 ? s.size() : len - 1;
	memcpy(buf, s.data(), n);
	buf[n] = '\0';
}

} // namespace onramp

extern "C" onramp_ctx_t *onramp_ctx_create(const char *path, const char *component, char *err,
                                           size_t errlen)
{
	try {
		if (!path) {
			copy_out("no configuration path", err, errlen);
			return nullptr;
		}
		auto cfg = onramp::Config::load(path);
		if (!cfg.ok()) {
			copy_out(cfg.status().message(), err, errlen);
			return nullptr;
		}
		auto *ctx = new onramp_ctx;
		ctx->path = path;
		ctx->component = component ? component : "onramp";
		ctx->conf = std::make_shared<const onramp::Config>(std::move(cfg.value()));
		ctx->generation = 1;
		onramp::log_info("%s: loaded %s", ctx->component.c_str(), path);
		return ctx;
	} catch (const std::exception &e) {
		copy_out(std::string("internal error: ") + e.what(), err, errlen);
	} catch (...) {
		copy_out("internal error", err, errlen);
	}
	return nullptr;
}

extern "C" int onramp_ctx_reload(onramp_ctx_t *ctx)
{
	if (!ctx)
		return -1;
	try {
		auto cfg = onramp::Config::load(ctx->path);
		if (!cfg.ok()) {
			onramp::log_error("%s: %s; keeping the last good configuration",
			                  ctx->component.c_str(), cfg.status().message().c_str());
			return -1;
		}
		{
			std::lock_guard<std::mutex> g(ctx->mu);
			ctx->conf = std::make_shared<const onramp::Config>(std::move(cfg.value()));
		}
		ctx->generation++;
		onramp::log_info("%s: loaded %s", ctx->component.c_str(), ctx->path.c_str());
		return 0;
	} catch (...) {
		onramp::log_error("%s: internal error while reloading %s; keeping the last good "
		                  "configuration",
		                  ctx->component.c_str(), ctx->path.c_str());
		return -1;
	}
}

extern "C" void onramp_ctx_destroy(onramp_ctx_t *ctx)
{
	delete ctx;
}

extern "C" const char *onramp_ctx_conf_path(const onramp_ctx_t *ctx)
{
	return ctx ? ctx->path.c_str() : "";
}

extern "C" uint64_t onramp_ctx_generation(const onramp_ctx_t *ctx)
{
	return ctx ? ctx->generation.load() : 0;
}

extern "C" int onramp_ctx_get(const onramp_ctx_t *ctx, const char *key, char *buf, size_t buflen)
{
	if (!ctx || !key || !onramp::config_key(key))
		return -1;
	try {
		copy_out(onramp::ctx_config(ctx)->str(key), buf, buflen);
		return 0;
	} catch (...) {
		return -1;
	}
}

extern "C" char *onramp_hostlist_expand(const char *expr, char *err, size_t errlen)
{
	try {
		auto r = onramp::hostlist_expand(expr ? expr : "");
		if (!r.ok()) {
			copy_out(r.status().message(), err, errlen);
			return nullptr;
		}
		size_t total = 1;
		for (const auto &h : r.value())
			total += h.size() + 1;
		char *out = static_cast<char *>(malloc(total));
		if (!out) {
			copy_out("out of memory", err, errlen);
			return nullptr;
		}
		char *p = out;
		for (const auto &h : r.value()) {
			memcpy(p, h.c_str(), h.size() + 1);
			p += h.size() + 1;
		}
		*p = '\0';
		return out;
	} catch (...) {
		copy_out("internal error", err, errlen);
		return nullptr;
	}
}

extern "C" int onramp_job_decide(onramp_ctx_t *ctx, const onramp_job_t *job, int is_modify,
                                 char *msg, size_t msglen)
{
	copy_out("", msg, msglen);
	if (!ctx || !job)
		return 0;
	try {
		auto s = [](const char *p) { return std::string(p ? p : ""); };
		onramp::JobView v;
		v.submit_uid = job->submit_uid;
		v.submit_is_admin = job->submit_is_admin != 0;
		v.account = s(job->account);
		v.qos = s(job->qos);
		v.partition = s(job->partition);
		v.reservation = s(job->reservation);
		v.name = s(job->name);
		v.features = s(job->features);
		v.min_nodes = job->min_nodes;
		v.max_nodes = job->max_nodes;
		auto cfg = onramp::ctx_config(ctx);
		onramp::Decision d =
		    is_modify ? onramp::decide_modify(*cfg, v) : onramp::decide_submit(*cfg, v);
		copy_out(d.message, msg, msglen);
		return d.reject ? -1 : 0;
	} catch (...) {
		// Never reject a user's job because of our own internal error.
		copy_out("onramp: internal error in the submit policy; job accepted unchanged", msg,
		         msglen);
		return 0;
	}
}
