/*****************************************************************************\
 *  node_features_onramp.c - the admission gate as Slurm sees it (C shim).
 *
 *  In slurmd, node_state() reports the admitted feature (AdmittedFeature in
 *  onramp.conf, default "onramp_ok") as available always and as active only
 *  while the node's own admission record is PASS for its current boot and
 *  baseline (libonramp decides; a reboot revokes admission by itself).
 *  The feature is deliberately NOT changeable: slurmctld would otherwise
 *  reboot nodes to obtain it. In slurmctld, node_xlate() merges what slurmd
 *  reports so a node that lost admission also loses the active feature.
 *
 *  slurmd asks node_state() only at its start and at reconfigure, and
 *  re-registers with that cached answer (after a slurmctld restart too).
 *  A watcher thread in slurmd judges the node again every few seconds and,
 *  when the judgement differs from what slurmd cached, sends its own slurmd
 *  SIGHUP: slurmd asks node_state() again and re-registers. So a node
 *  admitted while its slurmd runs stays admitted across a slurmctld
 *  restart, whoever ran the admission (root, SlurmUser), and a revoked
 *  record reaches slurmctld without any signal from outside.
 *
 *  Never fatal: a bad onramp.conf is logged and the node reports itself not
 *  admitted (fail closed); nothing here blocks registration.
 *
 *  Slurm versions: the plugin API is 22.05's below NF_API_2411; from 24.11
 *  job_valid/job_xlate take the job's feature list and node_set reports
 *  whether a reboot is needed (never, here), reconfig and reboot_weight are
 *  gone (a reconfigure re-executes the daemon: init() loads onramp.conf
 *  again); from 25.11 get_node, node_power, node_update(_valid) and
 *  step_config are gone and 26.05 requires job_features_need_reboot.
\*****************************************************************************/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmd/slurmd/slurmd.h"

#include "onramp_shim.h"

#define NF_API_2411 (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0))
#define NF_API_2511 (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0))
#define NF_API_2605 (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0))

const char plugin_name[] = "onramp admission gate node_features plugin";
const char plugin_type[] = "node_features/onramp";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define DEFAULT_FEATURE "onramp_ok"

/* How often slurmd's watcher judges its node again (seconds). */
#define WATCH_INTERVAL 5
/* Signal slurmd again when it has not asked node_state() this long after. */
#define WATCH_RESIGNAL 60

/* ctx and feature: written by init/reconfig, read by node_state and the
 * watcher; ctx_lock serialises them (never held around a Slurm call). */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static onramp_ctx_t *ctx = NULL;
static char feature[128] = DEFAULT_FEATURE;

/* The watcher (slurmd only). reported: what node_state() last told slurmd
 * (1 admitted, 0 not, -1 never asked); signalled: when the watcher last
 * sent SIGHUP for a change node_state() has not reported yet (0: none). */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond = PTHREAD_COND_INITIALIZER;
static pthread_t watcher, slurmd_main;
static bool watcher_started = false, watch_stop = false;
static int reported = -1;
static time_t signalled = 0;

/*
 * Load onramp.conf only (admission needs nothing else: a bad rewire plan or
 * fabric file never touches admission). A bad file at reconfigure keeps the
 * last good configuration, AdmittedFeature included. When onramp.conf was
 * never loaded, the feature's name is still looked up in it, so that
 * slurmctld strips the right feature (fail closed: slurmd reports it
 * inactive); only when even that fails is the default assumed.
 */
static void _load(void)
{
	char *path;

	if (ctx)
		(void)onramp_ctx_reload(ctx);
	else
		ctx = onramp_shim_ctx_create(plugin_type, ONRAMP_SCOPE_CONFIG);
	if (ctx) {
		(void)onramp_ctx_get(ctx, "AdmittedFeature", feature, sizeof(feature));
		return;
	}
	path = get_extra_conf_path("onramp.conf");
	if (onramp_conf_peek(path, "AdmittedFeature", feature, sizeof(feature)) < 0) {
		strlcpy(feature, DEFAULT_FEATURE, sizeof(feature));
		error("%s: %s: cannot tell AdmittedFeature; assuming %s", plugin_type, path,
		      feature);
	}
	error("%s: onramp.conf not loaded: every node reports %s inactive", plugin_type, feature);
	xfree(path);
}

/* This slurmd's node name (multiple-slurmd: the -N name). */
static const char *_slurmd_node_name(void)
{
	slurmd_conf_t **cp;

	if (!running_in_slurmd())
		return NULL;
	cp = dlsym(RTLD_DEFAULT, "conf");
	if (!cp || !*cp)
		return NULL;
	return (*cp)->node_name;
}

static bool _is_ours(const char *tok)
{
	return !xstrcmp(tok, feature);
}

/* Is tok one of the comma-separated items of list (list may be NULL)? */
static bool _has(const char *list, const char *tok)
{
	char *copy, *t, *save = NULL;
	bool found = false;

	if (!list || !list[0])
		return false;
	copy = xstrdup(list);
	for (t = strtok_r(copy, ",", &save); t && !found; t = strtok_r(NULL, ",", &save))
		found = !xstrcmp(t, tok);
	xfree(copy);
	return found;
}

/* Append tok to a comma list unless present. */
static void _add(char **list, const char *tok)
{
	if (!tok || !tok[0] || _has(*list, tok))
		return;
	xstrfmtcat(*list, "%s%s", (*list && (*list)[0]) ? "," : "", tok);
}

/* Append every item of src (may be NULL) to *list, except ours if skip_ours. */
static void _merge(char **list, const char *src, bool skip_ours)
{
	char *copy, *t, *save = NULL;

	if (!src || !src[0])
		return;
	copy = xstrdup(src);
	for (t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!skip_ours || !_is_ours(t))
			_add(list, t);
	xfree(copy);
}

/* Is node admitted now (1), not (0)? Under ctx_lock; no Slurm call. */
static int _judge(const char *node, char *why, size_t whylen)
{
	int rc;

	slurm_mutex_lock(&ctx_lock);
	if (!ctx) {
		snprintf(why, whylen, "onramp.conf not loaded");
		rc = 0;
	} else {
		rc = (onramp_admission_check(ctx, node, why, whylen) == 1);
	}
	slurm_mutex_unlock(&ctx_lock);
	return rc;
}

/*
 * SIGHUP this slurmd. Up to 23.11 its main thread waits in accept() and
 * looks at the flag the handler sets only when accept() returns: the signal
 * must interrupt that thread (init() runs in it), not whichever thread the
 * kernel would pick for a signal to the process (then the reconfigure waits
 * for the next RPC). From 24.11 a signal to the process is read by conmgr.
 */
static void _hup_slurmd(const char *node)
{
#if NF_API_2411
	int rc = (kill(getpid(), SIGHUP) < 0) ? errno : 0;
#else
	int rc = pthread_kill(slurmd_main, SIGHUP);
#endif
	if (rc)
		error("%s: node %s: cannot signal slurmd: %s", plugin_type, node, strerror(rc));
}

/*
 * slurmd only: every WATCH_INTERVAL seconds, judge the node; when that
 * differs from what node_state() last reported, SIGHUP this slurmd (its
 * reconfigure asks node_state() again and re-registers). It waits on its
 * own condition variable only, never on a Slurm lock.
 */
static void *_watch(void *arg)
{
	const char *node = _slurmd_node_name();
	char why[512];
	struct timespec ts;
	int now_admitted;

	slurm_mutex_lock(&watch_lock);
	while (!watch_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += WATCH_INTERVAL;
		(void)pthread_cond_timedwait(&watch_cond, &watch_lock, &ts);
		if (watch_stop || !node || (reported < 0))
			continue;
		slurm_mutex_unlock(&watch_lock);
		now_admitted = _judge(node, why, sizeof(why));
		slurm_mutex_lock(&watch_lock);
		if (watch_stop || (reported < 0) || (now_admitted == reported) ||
		    (signalled && (time(NULL) - signalled < WATCH_RESIGNAL)))
			continue;
		info("%s: node %s: %s since slurmd last asked (%s); asking slurmd to report "
		     "it again",
		     plugin_type, node, now_admitted ? "admitted" : "no longer admitted", why);
		signalled = time(NULL);
		_hup_slurmd(node);
	}
	slurm_mutex_unlock(&watch_lock);
	return NULL;
}

static void _watch_start(void)
{
	int rc;

	if (!running_in_slurmd() || watcher_started)
		return;
	slurmd_main = pthread_self();
	watch_stop = false;
	rc = pthread_create(&watcher, NULL, _watch, NULL);
	if (rc) {
		error("%s: cannot start the admission watcher: %s; slurmd reports a change "
		      "of admission only at its next reconfigure",
		      plugin_type, strerror(rc));
		return;
	}
	watcher_started = true;
}

static void _watch_stop(void)
{
	if (!watcher_started)
		return;
	slurm_mutex_lock(&watch_lock);
	watch_stop = true;
	pthread_cond_broadcast(&watch_cond);
	slurm_mutex_unlock(&watch_lock);
	pthread_join(watcher, NULL);
	watcher_started = false;
}

extern int init(void)
{
	onramp_shim_log_init();
	slurm_mutex_lock(&ctx_lock);
	_load();
	slurm_mutex_unlock(&ctx_lock);
	_watch_start();
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	_watch_stop();
	slurm_mutex_lock(&ctx_lock);
	onramp_ctx_destroy(ctx);
	ctx = NULL;
	slurm_mutex_unlock(&ctx_lock);
	onramp_log_set_sink(NULL);
	return SLURM_SUCCESS;
}

#if !NF_API_2411
extern int node_features_p_reconfig(void)
{
	slurm_mutex_lock(&ctx_lock);
	_load();
	slurm_mutex_unlock(&ctx_lock);
	return SLURM_SUCCESS;
}
#endif

extern bool node_features_p_changeable_feature(char *input)
{
	return false;
}

#if NF_API_2411
extern int node_features_p_job_valid(char *job_features, list_t *feature_list)
{
	return SLURM_SUCCESS;
}

extern char *node_features_p_job_xlate(char *job_features, list_t *feature_list,
                                       bitstr_t *job_node_bitmap)
{
	/* No job feature is ever obtained by rebooting. */
	return NULL;
}

extern int node_features_p_node_set(char *active_features, bool *need_reboot)
{
	if (need_reboot)
		*need_reboot = false;
	return SLURM_SUCCESS;
}
#else
extern int node_features_p_job_valid(char *job_features)
{
	return SLURM_SUCCESS;
}

extern char *node_features_p_job_xlate(char *job_features)
{
	/* No job feature is ever obtained by rebooting. */
	return NULL;
}

extern int node_features_p_node_set(char *active_features)
{
	return SLURM_SUCCESS;
}
#endif

#if NF_API_2605
/* Slurm never reboots a node to obtain an onramp feature. */
extern bool node_features_p_job_features_need_reboot(char *features)
{
	return false;
}
#endif

extern void node_features_p_node_state(char **avail_modes, char **current_mode)
{
	const char *node = _slurmd_node_name();
	char why[512] = "";
	int admitted;

	if (!avail_modes || !current_mode)
		return;
	_add(avail_modes, feature);
	/* Non-NULL even when empty, so slurmctld drops a stale active copy. */
	if (!*current_mode)
		*current_mode = xstrdup("");
	if (!node) {
		error("%s: cannot tell this slurmd's node name; reporting %s inactive", plugin_type,
		      feature);
		return;
	}
	admitted = _judge(node, why, sizeof(why));
	slurm_mutex_lock(&watch_lock);
	reported = admitted;
	signalled = 0;
	slurm_mutex_unlock(&watch_lock);
	if (admitted) {
		_add(current_mode, feature);
		info("%s: node %s: admitted (%s); %s active", plugin_type, node, why, feature);
	} else {
		info("%s: node %s: not admitted: %s; %s inactive", plugin_type, node, why, feature);
	}
}

/*
 * slurmctld only, at a node's registration under the node write lock: a
 * node that was admitted and comes back from a reboot that onramp did not
 * arrange (no admission reservation, no "scontrol reboot") reporting the
 * feature inactive is drained with an onramp reason before the scheduler
 * can give it a job. The "drained" trigger (onrampctl trigger) then admits
 * it inside its reservation and resumes it. Slurm's own "just rebooted"
 * test: a boot after the last response. Controller-only symbols are looked
 * up at run time (this library is loaded by slurmd too).
 */
static void _fence_unplanned_reboot(int node_inx, const char *new_features,
                                    const char *orig_features)
{
	static int (*drain)(char *, char *, uint32_t);
	static bool (*in_maint)(int);
	node_record_t *node;
	char *reason = NULL;

	if (!running_in_slurmctld() || (node_inx < 0) || (node_inx >= node_record_count))
		return;
	node = node_record_table_ptr[node_inx];
	if (!node || !_has(orig_features, feature) || _has(new_features, feature))
		return;
	if (!node->last_response || (node->boot_time <= node->last_response) ||
	    IS_NODE_UNKNOWN(node))
		return; /* not a registration after a reboot */
	if (IS_NODE_DRAIN(node) || IS_NODE_DOWN(node) || IS_NODE_MAINT(node) ||
	    IS_NODE_REBOOT_REQUESTED(node) || IS_NODE_REBOOT_ISSUED(node))
		return; /* onramp's own reboot, or already out of production */
	if (!drain)
		drain = dlsym(RTLD_DEFAULT, "drain_nodes");
	if (!in_maint)
		in_maint = dlsym(RTLD_DEFAULT, "is_node_in_maint_reservation");
	if (in_maint && in_maint(node_inx))
		return;
	if (!drain) {
		error("%s: node %s: rebooted outside onramp and not admitted, but drain_nodes "
		      "is not available here; the prolog backstop must catch it",
		      plugin_type, node->name);
		return;
	}
	xstrfmtcat(reason,
	           "onramp:REBOOT_NOT_ADMITTED: rebooted outside onramp; %s inactive "
	           "until admitted",
	           feature);
	info("%s: node %s: rebooted outside onramp and not admitted; draining it before any "
	     "job starts there",
	     plugin_type, node->name);
	(void)drain(node->name, reason, slurm_conf.slurm_user_id);
	xfree(reason);
}

extern char *node_features_p_node_xlate(char *new_features, char *orig_features,
                                        char *avail_features, int node_inx)
{
	/* merged = new_features U (orig_features - {our feature}) */
	char *merged = NULL;

	_fence_unplanned_reboot(node_inx, new_features, orig_features);

	_merge(&merged, new_features, false);
	_merge(&merged, orig_features, true);
	return merged;
}

extern char *node_features_p_node_xlate2(char *new_features)
{
	return xstrdup(new_features);
}

#if !NF_API_2511
extern bool node_features_p_node_power(void)
{
	return false;
}
#endif

extern void node_features_p_get_config(config_plugin_params_t *p)
{
	config_key_pair_t *kp;

	xstrcat(p->name, plugin_type);
	kp = xmalloc(sizeof(*kp));
	kp->name = xstrdup("AdmittedFeature");
	kp->value = xstrdup(feature);
	list_append(p->key_pairs, kp);
	kp = xmalloc(sizeof(*kp));
	kp->name = xstrdup("ConfigFile");
	kp->value = xstrdup(ctx ? onramp_ctx_conf_path(ctx) : "(not loaded)");
	list_append(p->key_pairs, kp);
}

extern bitstr_t *node_features_p_get_node_bitmap(void)
{
	/* No node is ever rebooted to obtain an onramp feature. */
	return bit_alloc(node_record_count);
}

extern uint32_t node_features_p_boot_time(void)
{
	return 300;
}

#if !NF_API_2411
extern uint32_t node_features_p_reboot_weight(void)
{
	return INFINITE - 1;
}
#endif

extern bool node_features_p_user_update(uid_t uid)
{
	return false;
}

#if !NF_API_2511
extern void node_features_p_step_config(bool mem_sort, bitstr_t *numa_bitmap) {}
#endif

extern int node_features_p_overlap(bitstr_t *active_bitmap)
{
	return bit_set_count(active_bitmap);
}

#if !NF_API_2511
extern int node_features_p_get_node(char *node_list)
{
	return SLURM_SUCCESS;
}

extern int node_features_p_node_update(char *active_features, bitstr_t *node_bitmap)
{
	return SLURM_SUCCESS;
}

extern bool node_features_p_node_update_valid(void *node_ptr, update_node_msg_t *update_node_msg)
{
	return true;
}
#endif
