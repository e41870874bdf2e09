// The C API the plugin shims call (onramp.h). No exception leaves here.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include <sys/stat.h>

#include "atomic_file.hpp"
#include "ctx.hpp"
#include "rewire/window.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "migrate/migrate.hpp"
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

bool path_missing(const std::string &path)
{
	struct stat sb;
	return lstat(path.c_str(), &sb) != 0 && errno == ENOENT;
}

// onramp.conf and, for ONRAMP_SCOPE_POLICY, every flow's state, or the
// first error. previous is the state in force (null at the first load).
// At the first load a rewire plan (or fabric) that cannot be used is
// logged and no window is in force, so that slurmctld starts; at a reload
// (and in slurmctld re-executed by a reconfigure, 23.11+) it rejects the
// whole reload, and so does a plan file that vanished while a window of the
// state in force is active.
Result<std::shared_ptr<const PolicyState>> load_state(const std::string &path, int scope,
                                                      const PolicyState *previous,
                                                      const std::string &component,
                                                      std::string *warning)
{
	auto cfg = Config::load(path);
	if (!cfg.ok())
		return cfg.status();
	auto st = std::make_shared<PolicyState>();
	st->cfg = std::make_shared<const Config>(std::move(cfg.value()));
	if (scope == ONRAMP_SCOPE_CONFIG)
		return std::shared_ptr<const PolicyState>(st);
	const bool reexec = getenv("SLURMCTLD_RECONF") != nullptr;
	Status s = rewire_load(*st->cfg, &st->rewire);
	// A window in force: the previous state's, or in a re-executed
	// slurmctld the derived topology.conf installed for it (24.05+).
	bool window_in_force = previous ? previous->rewire != nullptr
	                                : reexec && !path_missing(topology_saved_path(
	                                                topology_path_beside(st->cfg->origin())));
	if (s.ok() && window_in_force && !st->rewire && st->cfg->is_set("RewirePlan") &&
	    path_missing(st->cfg->str("RewirePlan")))
		s = Status::Error(st->cfg->str("RewirePlan") +
		                  ": missing while a rewire window is in force");
	else if (s.ok() && window_in_force && !st->rewire && !st->cfg->any_set())
		s = Status::Error(st->cfg->origin() +
		                  ": sets no key while a rewire window is in force");
	else if (s.ok() && window_in_force && !st->rewire)
		log_info("%s: rewire window ended: %s; the rewire policy no longer applies",
		         component.c_str(),
		         st->cfg->is_set("RewirePlan")
		             ? (st->cfg->where("RewirePlan") + " has no active window").c_str()
		             : (st->cfg->origin() + " sets no RewirePlan").c_str());
	// From Slurm 23.11 "scontrol reconfigure" re-executes slurmctld, marking
	// the new process with SLURMCTLD_RECONF, and keeps the running one when
	// the new one fails to start: a plan the new one cannot use fails it
	// there, so the policy in force stays, as at a reload.
	if (!s.ok()) {
		if (previous || reexec)
			return s;
		*warning = s.message();
		log_error("%s: %s; no rewire window in force until a good plan is loaded",
		          component.c_str(), s.message().c_str());
		st->rewire.reset();
	}
	s = migrate_load(*st->cfg, &st->migrate);
	if (!s.ok())
		return s;
	return std::shared_ptr<const PolicyState>(st);
}

} // namespace onramp

extern "C" onramp_ctx_t *onramp_ctx_create_scoped(const char *path, const char *component,
                                                  int scope, char *err, size_t errlen)
{
	try {
		if (!path) {
			copy_out("no configuration path", err, errlen);
			return nullptr;
		}
		std::string comp = component ? component : "onramp", warning;
		auto st = onramp::load_state(path, scope, nullptr, comp, &warning);
		if (!st.ok()) {
			copy_out(st.status().message(), err, errlen);
			return nullptr;
		}
		auto *ctx = new onramp_ctx;
		ctx->path = path;
		ctx->component = comp;
		ctx->scope = scope;
		ctx->state = st.value();
		ctx->last_error = warning;
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

extern "C" onramp_ctx_t *onramp_ctx_create(const char *path, const char *component, char *err,
                                           size_t errlen)
{
	return onramp_ctx_create_scoped(path, component, ONRAMP_SCOPE_POLICY, err, errlen);
}

extern "C" int onramp_ctx_reload(onramp_ctx_t *ctx)
{
	if (!ctx)
		return -1;
	try {
		std::string warning;
		auto st = onramp::load_state(ctx->path, ctx->scope, onramp::ctx_state(ctx).get(),
		                             ctx->component, &warning);
		if (!st.ok()) {
			onramp::log_error("%s: %s; keeping the last good configuration",
			                  ctx->component.c_str(), st.status().message().c_str());
			std::lock_guard<std::mutex> g(ctx->mu);
			ctx->last_error = st.status().message();
			return -1;
		}
		{
			std::lock_guard<std::mutex> g(ctx->mu);
			ctx->state = st.value();
			ctx->last_error.clear();
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

namespace {

// The files a context was loaded from: onramp.conf and, when it names a
// rewire plan or fabric file, those and topology.conf.
std::vector<std::string> ctx_files(const onramp_ctx_t *ctx)
{
	std::vector<std::string> out;
	auto one = [&](const std::string &path) {
		if (!path.empty())
			out.push_back(path);
	};
	one(ctx->path);
	auto cfg = onramp::ctx_config(ctx);
	if (cfg->is_set("RewirePlan") || cfg->is_set("FabricFile")) {
		one(cfg->str("RewirePlan"));
		one(cfg->str("FabricFile"));
		one(onramp::default_topology_path(*cfg));
	}
	return out;
}

} // namespace

extern "C" void onramp_ctx_stamp(const onramp_ctx_t *ctx, char *buf, size_t buflen)
{
	try {
		std::string out;
		for (const auto &path : ctx_files(ctx))
			out += onramp::file_stamp(path) + "\n";
		copy_out(out, buf, buflen);
	} catch (...) {
		copy_out("", buf, buflen);
	}
}

extern "C" int64_t onramp_ctx_change_stamp(const onramp_ctx_t *ctx, char *buf, size_t buflen)
{
	try {
		std::string out;
		int64_t newest = 0, ctime_ns;
		for (const auto &path : ctx_files(ctx)) {
			out += onramp::file_change_stamp(path, &ctime_ns) + "\n";
			newest = std::max(newest, ctime_ns);
		}
		copy_out(out, buf, buflen);
		return newest;
	} catch (...) {
		copy_out("", buf, buflen);
		return 0;
	}
}

extern "C" int onramp_ctx_ack(onramp_ctx_t *ctx, const char *path, const char *stamp)
{
	if (!ctx || !path || !*path)
		return -1;
	try {
		std::string err;
		{
			std::lock_guard<std::mutex> g(ctx->mu);
			err = ctx->last_error;
		}
		for (char &c : err)
			if (c == '\n')
				c = ' ';
		std::string text = (err.empty() ? "status loaded\n" : "status kept " + err + "\n") +
		                   (stamp ? stamp : "");
		onramp::Status s = onramp::write_file_atomic(path, text, 0644);
		if (!s.ok()) {
			onramp::log_error("%s: cannot acknowledge the configuration in force: %s",
			                  ctx->component.c_str(), s.message().c_str());
			return -1;
		}
		return 0;
	} catch (...) {
		return -1;
	}
}

extern "C" int onramp_conf_peek(const char *path, const char *key, char *buf, size_t buflen)
{
	try {
		if (!path || !key || !onramp::config_key(key))
			return -1;
		auto text = onramp::read_file(path, 1u << 20);
		if (!text.ok())
			return -1;
		std::istringstream in(text.value());
		std::string line;
		while (std::getline(in, line)) {
			std::vector<std::string> toks;
			(void)onramp::tokenize_conf_line(line,
			                                 toks); // lenient: the rest may be bad
			for (const auto &tok : toks) {
				size_t eq = tok.find('=');
				if (eq == std::string::npos ||
				    onramp::config_key(tok.substr(0, eq)) !=
				        onramp::config_key(key))
					continue;
				auto one = onramp::Config::parse(tok, path);
				if (!one.ok())
					return -1;
				copy_out(one->str(key), buf, buflen);
				return 0;
			}
		}
		copy_out(onramp::Config().str(key), buf, buflen);
		return 1;
	} catch (...) {
		return -1;
	}
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

extern "C" int onramp_checkpoint_signal_check(const char *spec, char *err, size_t errlen)
{
	try {
		if (!spec) {
			copy_out("no checkpoint signal given", err, errlen);
			return -1;
		}
		int sig = 0, secs = 0;
		bool has_target = false;
		onramp::migrate::SignalTarget target = onramp::migrate::SignalTarget::Full;
		onramp::Status st = onramp::migrate::parse_checkpoint_signal(spec, &sig, &secs,
		                                                             &target, &has_target);
		if (st.ok())
			return 0;
		copy_out(st.message(), err, errlen);
	} catch (...) {
		copy_out("out of memory", err, errlen);
	}
	return -1;
}

extern "C" int onramp_job_decide(onramp_ctx_t *ctx, const onramp_job_t *job, int is_modify,
                                 onramp_job_edits_t *edits, char *msg, size_t msglen)
{
	copy_out("", msg, msglen);
	if (edits) {
		memset(edits, 0, sizeof(*edits));
		edits->requeue = -1;
		edits->open_append = -1;
	}
	if (!ctx || !job)
		return 0;
	try {
		auto s = [](const char *p) { return std::string(p ? p : ""); };
		onramp::JobView v;
		v.job_id = job->job_id;
		v.submit_uid = job->submit_uid;
		v.user_id = job->user_id;
		v.submit_is_admin = job->submit_is_admin != 0;
		v.account = s(job->account);
		v.qos = s(job->qos);
		v.partition = s(job->partition);
		v.reservation = s(job->reservation);
		v.name = s(job->name);
		v.features = s(job->features);
		v.min_nodes = job->min_nodes;
		v.max_nodes = job->max_nodes;
		v.req_switch = job->req_switch;
		v.wait4switch = job->wait4switch;
		v.time_limit = job->time_limit;
		v.requeue = job->requeue;
		v.warn_signal = job->warn_signal;
		v.warn_time = job->warn_time;
		v.warn_batch = job->warn_batch != 0;
		v.batch = job->is_batch != 0;
		v.default_partition = s(job->default_partition);
		v.default_qos = s(job->default_qos);
		for (uint32_t i = 0; job->spank_env && i < job->spank_env_size; i++)
			if (job->spank_env[i])
				v.spank_env.emplace_back(job->spank_env[i]);
		v.user_hold = job->user_hold != 0;
		v.current_admin_comment = s(job->current_admin_comment);
		v.current_requeue = job->current_requeue;
		v.num_tasks = job->num_tasks;
		v.ntasks_per_node = job->ntasks_per_node;
		v.cpus_per_task = job->cpus_per_task;
		v.overcommit = job->overcommit != 0;
		v.req_nodes = s(job->req_nodes);
		v.req_nodes_set = job->req_nodes != nullptr;
		v.node_cpus_max = job->node_cpus_max;
		v.req_switch_set = job->req_switch_set != 0;
		v.release = job->release != 0;
		v.current_pending = job->current_pending != 0;
		v.current_held = job->current_held != 0;
		v.current_user_held = job->current_user_held != 0;
		v.current_min_nodes = job->current_min_nodes;
		v.current_max_nodes = job->current_max_nodes;
		v.current_num_tasks = job->current_num_tasks;
		v.current_ntasks_per_node = job->current_ntasks_per_node;
		v.current_cpus_per_task = job->current_cpus_per_task;
		v.current_req_switch = job->current_req_switch;
		v.current_wait4switch = job->current_wait4switch;
		v.current_overcommit = job->current_overcommit != 0;
		v.current_req_nodes = s(job->current_req_nodes);
		auto st = onramp::ctx_state(ctx);
		onramp::Decision d =
		    is_modify ? onramp::decide_modify(*st, v) : onramp::decide_submit(*st, v);
		copy_out(d.message, msg, msglen);
		if (d.reject)
			return -1;
		if (edits) {
			if (d.req_switch) {
				edits->has_req_switch = 1;
				edits->req_switch = *d.req_switch;
			}
			if (d.wait4switch) {
				edits->has_wait4switch = 1;
				edits->wait4switch = *d.wait4switch;
			}
			edits->hold = d.hold;
			if (d.requeue)
				edits->requeue = *d.requeue;
			if (d.open_append)
				edits->open_append = *d.open_append ? 1 : 0;
			if (d.warn_signal) {
				edits->has_warn = 1;
				edits->warn_signal = *d.warn_signal;
				edits->warn_time = d.warn_time.value_or(0);
				switch (
				    d.warn_target.value_or(onramp::migrate::SignalTarget::Steps)) {
				case onramp::migrate::SignalTarget::Batch:
					edits->warn_target = ONRAMP_WARN_BATCH;
					break;
				case onramp::migrate::SignalTarget::Full:
					edits->warn_target = ONRAMP_WARN_FULL;
					break;
				default:
					edits->warn_target = ONRAMP_WARN_STEPS;
				}
			}
			std::string c = d.comment_append;
			if (d.hold && !d.hold_reason.empty())
				c += (c.empty() ? "" : "; ") + d.hold_reason;
			copy_out(c, edits->comment_append, sizeof(edits->comment_append));
			copy_out(d.admin_comment_append, edits->admin_comment_append,
			         sizeof(edits->admin_comment_append));
			copy_out(d.ckpt_signal_env, edits->ckpt_signal_env,
			         sizeof(edits->ckpt_signal_env));
		}
		return 0;
	} catch (...) {
		// Never reject a user's job because of our own internal error.
		copy_out("onramp: internal error in the submit policy; job accepted unchanged", msg,
		         msglen);
		return 0;
	}
}
