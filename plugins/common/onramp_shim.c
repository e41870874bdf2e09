/*****************************************************************************\
 *  onramp_shim.c - helpers shared by onramp's Slurm plugin shims (C).
\*****************************************************************************/

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

extern onramp_ctx_t *onramp_shim_ctx_create(const char *plugin_type)
{
	char err[1024] = "";
	char *path = get_extra_conf_path("onramp.conf");
	onramp_ctx_t *ctx = onramp_ctx_create(path, plugin_type, err, sizeof(err));

	if (!ctx)
		error("%s: %s", plugin_type, err);
	xfree(path);
	return ctx;
}
