/*****************************************************************************\
 *  onramp_shim.c - helpers shared by onramp's Slurm plugin shims (C).
\*****************************************************************************/

#define _GNU_SOURCE
#include <dlfcn.h>

#include <slurm/slurm.h>

#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"

#include "onramp_shim.h"

static void _log_sink(int level, const char *msg)
{
	switch (level) {
	case ONRAMP_LOG_ERROR:
		error("%s", msg);
		break;
	case ONRAMP_LOG_WARN:
	case ONRAMP_LOG_INFO:
		info("%s", msg);
		break;
	case ONRAMP_LOG_VERBOSE:
		verbose("%s", msg);
		break;
	default:
		debug("%s", msg);
		break;
	}
}

extern void onramp_shim_log_init(void)
{
	onramp_log_set_sink(_log_sink);
}

extern onramp_ctx_t *onramp_shim_ctx_create(const char *plugin_type, int scope)
{
	char err[1024] = "";
	char *path = get_extra_conf_path("onramp.conf");
	onramp_ctx_t *ctx = onramp_ctx_create_scoped(path, plugin_type, scope, err, sizeof(err));

	if (!ctx)
		error("%s: %s", plugin_type, err);
	xfree(path);
	return ctx;
}

extern void onramp_shim_pin_library(void *addr)
{
	Dl_info info;
	void *h;

	if (!dladdr(addr, &info) || !info.dli_fname) {
		error("onramp: cannot find the library of %p to pin it", addr);
		return;
	}
	/* A reference never released, and RTLD_NODELETE: dlclose() by the
	 * plugin loader never unmaps the code a left-behind thread runs. */
	h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
	if (!h)
		error("onramp: cannot pin %s in memory: %s", info.dli_fname, dlerror());
}
