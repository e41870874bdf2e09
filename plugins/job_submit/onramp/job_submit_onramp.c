/*****************************************************************************\
 *  job_submit_onramp.c - onramp's job_submit plugin (C shim over libonramp).
 *
 *  Reads onramp.conf (beside slurm.conf) at load. A bad file at startup is
 *  refused with the line that is wrong; at "scontrol reconfigure" a bad file
 *  is logged and the last good configuration stays in force. job_submit runs
 *  under slurmctld's locks: nothing here does I/O or calls back into the
 *  controller on that path. The reload happens in a watcher thread.
\*****************************************************************************/

#include <pthread.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "onramp_shim.h"

const char plugin_name[] = "onramp job_submit plugin";
const char plugin_type[] = "job_submit/onramp";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static onramp_ctx_t *ctx = NULL;
static pthread_t watch_tid;
static bool watch_running = false;
static bool watch_stop = false;
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond = PTHREAD_COND_INITIALIZER;

static time_t _conf_update_time(void)
{
	slurmctld_lock_t lock = {.conf = READ_LOCK};
	time_t t;

	lock_slurmctld(lock);
	t = slurm_conf.last_update;
	unlock_slurmctld(lock);
	return t;
}

/* Re-read onramp.conf whenever slurmctld re-read its own configuration. */
static void *_watch(void *arg)
{
	time_t seen = _conf_update_time();

	slurm_mutex_lock(&watch_mu);
	while (!watch_stop) {
		struct timespec ts;
		time_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&watch_cond, &watch_mu, &ts);
		if (watch_stop)
			break;
		slurm_mutex_unlock(&watch_mu);
		now = _conf_update_time();
		if (now != seen) {
			seen = now;
			(void)onramp_ctx_reload(ctx);
		}
		slurm_mutex_lock(&watch_mu);
	}
	slurm_mutex_unlock(&watch_mu);
	return NULL;
}

extern int init(void)
{
	onramp_shim_log_init();
	ctx = onramp_shim_ctx_create(plugin_type);
	if (!ctx)
		return SLURM_ERROR;
	watch_stop = false;
	if (pthread_create(&watch_tid, NULL, _watch, NULL) == 0)
		watch_running = true;
	else
		error("%s: cannot start the configuration watcher; onramp.conf is read at startup "
		      "only",
		      plugin_type);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	if (watch_running) {
		slurm_mutex_lock(&watch_mu);
		watch_stop = true;
		slurm_cond_signal(&watch_cond);
		slurm_mutex_unlock(&watch_mu);
		pthread_join(watch_tid, NULL);
		watch_running = false;
	}
	onramp_ctx_destroy(ctx);
	ctx = NULL;
	onramp_log_set_sink(NULL);
	return SLURM_SUCCESS;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	debug2("%s: submission from uid %u (configuration generation %" PRIu64 ")", plugin_type,
	       submit_uid, onramp_ctx_generation(ctx));
	return SLURM_SUCCESS;
}

extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid)
{
	return SLURM_SUCCESS;
}
