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
#define DEFAULT_UNADMITTED "onramp_unadmitted"

/* How often slurmd's watcher judges its node again (seconds). */
#define WATCH_INTERVAL 5
/* Signal slurmd again when it has not asked node_state() this long after. */
#define WATCH_RESIGNAL 60

/* ctx, the two features and fence_on: written by init/reconfig, read by
 * node_state, node_xlate and the watcher; ctx_lock serialises them (never
 * held around a Slurm call). unadmitted: the feature slurmd reports active
 * while the node was never proven for its boot; fence_on: FenceUnadmitted. */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static onramp_ctx_t *ctx = NULL;
static char feature[128] = DEFAULT_FEATURE;
static char unadmitted[128] = DEFAULT_UNADMITTED;
static bool fence_on = true;

/* The watcher (slurmd only). reported: what node_state() last told slurmd
 * (_judge's answer; -2 never asked); signalled: when the watcher last
 * sent SIGHUP for a change node_state() has not reported yet (0: none). */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond = PTHREAD_COND_INITIALIZER;
static pthread_t watcher, slurmd_main;
static bool watcher_started = false, watch_stop = false;
static int reported = -2;
static time_t signalled = 0;

/*
 * Load onramp.conf only (admission needs nothing else: a bad rewire plan or
 * fabric file never touches admission). A bad file at reconfigure keeps the
 * last good configuration, AdmittedFeature included. When onramp.conf was
 * never loaded, the feature's name is still looked up in it, so that
 * slurmctld strips the right feature (fail closed: slurmd reports it
 * inactive); only when even that fails is the default assumed.
 */
static void _peek(const char *path, const char *key, char *buf, size_t len, const char *def)
{
	if (onramp_conf_peek(path, key, buf, len) < 0) {
		strlcpy(buf, def, len);
		error("%s: %s: cannot tell %s; assuming %s", plugin_type, path, key, buf);
	}
}

static void _load(void)
{
	char *path, fence[8] = "yes";

	if (ctx)
		(void)onramp_ctx_reload(ctx);
	else
		ctx = onramp_shim_ctx_create(plugin_type, ONRAMP_SCOPE_CONFIG);
	if (ctx) {
		(void)onramp_ctx_get(ctx, "AdmittedFeature", feature, sizeof(feature));
		(void)onramp_ctx_get(ctx, "UnadmittedFeature", unadmitted, sizeof(unadmitted));
		(void)onramp_ctx_get(ctx, "FenceUnadmitted", fence, sizeof(fence));
		fence_on =
		    !strcasecmp(fence, "yes") || !strcasecmp(fence, "true") || !strcmp(fence, "1");
		return;
	}
	/* Fail closed: the names slurmctld strips, and the fence on. */
	path = get_extra_conf_path("onramp.conf");
	_peek(path, "AdmittedFeature", feature, sizeof(feature), DEFAULT_FEATURE);
	_peek(path, "UnadmittedFeature", unadmitted, sizeof(unadmitted), DEFAULT_UNADMITTED);
	fence_on = true;
	error("%s: onramp.conf not loaded: every node reports %s inactive, unjudged", plugin_type,
	      feature);
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
	return !xstrcmp(tok, feature) || !xstrcmp(tok, unadmitted);
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

/* Is node admitted now? onramp_admission_check's answer: 1 admitted, 0 never
 * proven for this boot, 2 admitted under an edited baseline, -1 could not
 * judge (onramp.conf not loaded too). Under ctx_lock; no Slurm call. */
static int _judge(const char *node, char *why, size_t whylen)
{
	int rc;

	slurm_mutex_lock(&ctx_lock);
	if (!ctx) {
		snprintf(why, whylen, "onramp.conf not loaded");
		rc = -1;
	} else {
		rc = onramp_admission_check(ctx, node, why, whylen);
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
	int now;

	slurm_mutex_lock(&watch_lock);
	while (!watch_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += WATCH_INTERVAL;
		(void)pthread_cond_timedwait(&watch_cond, &watch_lock, &ts);
		if (watch_stop || !node || (reported == -2))
			continue;
		slurm_mutex_unlock(&watch_lock);
		now = _judge(node, why, sizeof(why));
		slurm_mutex_lock(&watch_lock);
		if (watch_stop || (reported == -2) || (now == reported) ||
		    (signalled && (time(NULL) - signalled < WATCH_RESIGNAL)))
			continue;
		info("%s: node %s: %s since slurmd last asked (%s); asking slurmd to report "
		     "it again",
		     plugin_type, node,
		     (now == 1)        ? "admitted"
		     : (reported == 1) ? "no longer admitted"
		                       : "judged anew",
		     why);
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
	char why[512] = "", name[128], unproven[128];
	int admitted;

	if (!avail_modes || !current_mode)
		return;
	slurm_mutex_lock(&ctx_lock);
	strlcpy(name, feature, sizeof(name));
	strlcpy(unproven, unadmitted, sizeof(unproven));
	slurm_mutex_unlock(&ctx_lock);
	_add(avail_modes, name);
	_add(avail_modes, unproven);
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
	if (admitted == 1) {
		_add(current_mode, name);
		info("%s: node %s: admitted (%s); %s active", plugin_type, node, why, name);
	} else if (admitted == 0) {
		/* Judged and never proven for this boot: slurmctld fences it. */
		_add(current_mode, unproven);
		info("%s: node %s: not admitted: %s; %s inactive, %s active", plugin_type, node,
		     why, name, unproven);
	} else {
		/* onramp's own input, or an edited baseline: the prolog judges
		 * each job; no fence drains a fleet for it. */
		info("%s: node %s: not admitted: %s; %s inactive", plugin_type, node, why, name);
	}
}

/*
 * slurmctld only, at a node's registration (or an update of its active
 * features) under the node write lock: a node in production (not drained,
 * down, in a MAINT reservation or rebooting through Slurm) is drained with
 * an onramp reason before the scheduler can give it a job when
 * - it reports UnadmittedFeature active: slurmd judged it never proven for
 *   its current boot (a new node, a fresh cluster, a record gone, of another
 *   boot, failed or revoked): NOT_ADMITTED, unless FenceUnadmitted=no;
 * - or it was admitted and comes back from a boot onramp did not arrange
 *   (Slurm's own "just rebooted" test: a boot after its last response)
 *   without the admitted feature: REBOOT_NOT_ADMITTED.
 * A node whose slurmd cannot judge (onramp.conf missing or unreadable there,
 * a record it cannot read) or that was admitted under a baseline since
 * edited reports neither feature and is not fenced: one bad file or one
 * baseline edit must not drain a fleet at once; the prolog judges each job.
 * The "drained" trigger (onrampctl trigger) admits fenced nodes inside their
 * reservation and resumes them. Controller-only symbols are looked up at
 * run time (this library is loaded by slurmd too).
 */
static void _fence_unadmitted(int node_inx, const char *new_features, const char *orig_features)
{
	static int (*drain)(char *, char *, uint32_t);
	static bool (*in_maint)(int);
	node_record_t *node;
	char *reason = NULL;
	bool rebooted, unproven;

	if (!running_in_slurmctld() || (node_inx < 0) || (node_inx >= node_record_count))
		return;
	node = node_record_table_ptr[node_inx];
	if (!node || _has(new_features, feature))
		return; /* admitted */
	rebooted = _has(orig_features, feature) && node->last_response &&
	           (node->boot_time > node->last_response) && !IS_NODE_UNKNOWN(node);
	unproven = fence_on && _has(new_features, unadmitted);
	if (!rebooted && !unproven)
		return; /* unjudged, or an edited baseline: the prolog judges */
	if (IS_NODE_DRAIN(node) || IS_NODE_DOWN(node) || IS_NODE_MAINT(node) ||
	    IS_NODE_REBOOT_REQUESTED(node) || IS_NODE_REBOOT_ISSUED(node))
		return; /* onramp's own reboot, or already out of production */
	if (!drain)
		drain = dlsym(RTLD_DEFAULT, "drain_nodes");
	if (!in_maint)
		in_maint = dlsym(RTLD_DEFAULT, "is_node_in_maint_reservation");
	if (in_maint && in_maint(node_inx))
		return; /* under admission */
	if (!drain) {
		error("%s: node %s: not admitted, but drain_nodes is not available here; the "
		      "prolog backstop must catch it",
		      plugin_type, node->name);
		return;
	}
	if (rebooted)
		xstrfmtcat(reason,
		           "onramp:REBOOT_NOT_ADMITTED: rebooted outside onramp; %s inactive "
		           "until admitted",
		           feature);
	else
		xstrfmtcat(reason,
		           "onramp:NOT_ADMITTED: never admitted for this boot; %s "
		           "inactive until admitted",
		           feature);
	info("%s: node %s: %s; draining it before any job starts there", plugin_type, node->name,
	     rebooted ? "rebooted outside onramp and not admitted" : "not admitted");
	(void)drain(node->name, reason, slurm_conf.slurm_user_id);
	xfree(reason);
}

extern char *node_features_p_node_xlate(char *new_features, char *orig_features,
                                        char *avail_features, int node_inx)
{
	/* merged = new_features U (orig_features - {our two features}) */
	char *merged = NULL;

	_fence_unadmitted(node_inx, new_features, orig_features);

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
	kp->name = xstrdup("UnadmittedFeature");
	kp->value = xstrdup(unadmitted);
	list_append(p->key_pairs, kp);
	kp = xmalloc(sizeof(*kp));
	kp->name = xstrdup("FenceUnadmitted");
	kp->value = xstrdup(fence_on ? "yes" : "no");
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
