/*****************************************************************************\
 *  job_submit_onramp.c - onramp's job_submit plugin (C shim over libonramp).
 *
 *  Reads onramp.conf (beside slurm.conf) at load. A bad file at startup is
 *  refused with the line that is wrong; at "scontrol reconfigure" a bad file
 *  is logged and the last good configuration stays in force. job_submit runs
 *  under slurmctld's locks: nothing here does I/O or calls back into the
 *  controller on that path. The reload happens in a watcher thread.
\*****************************************************************************/

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/assoc_mgr.h"
#include "src/common/env.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "onramp_shim.h"

const char plugin_name[] = "onramp job_submit plugin";
const char plugin_type[] = "job_submit/onramp";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static onramp_ctx_t *ctx = NULL;

/*
 * The configuration watcher's own state. Everything the thread touches is
 * here, so that a watcher fini() had to leave behind (see _watch_stop) never
 * sees the state of a later init().
 */
typedef struct {
	onramp_ctx_t *ctx;
	/* <StateSaveLocation>/onramp_job_submit.loaded (slurmctld can write
	 * there; onrampctl reads it); "" when unknown. */
	char ack[4096];
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int64_t loaded_ns; /* wall-clock time before init() loaded ctx */
	bool stop, done;   /* under mu */
} watcher_t;

static watcher_t *watcher = NULL;

/* How long fini() waits for the watcher before leaving it behind. */
#define WATCH_STOP_WAIT_S 5

/*
 * slurm_conf's last update, read without slurmctld's locks: the watcher must
 * never wait on a lock that a reconfigure holding the config write lock
 * would need it to give up (fini() runs under that lock). A word-sized
 * relaxed load: a stale value only delays a reload by a second.
 */
/*
 * slurmctld's (controller.c, 22.05 to 26.05): when this daemon took control,
 * 0 while it is a backup standing by. Weak: a slurmctld without it leaves
 * its address NULL, and every load is acknowledged as before.
 */
extern time_t control_time __attribute__((weak));

/*
 * Is this slurmctld the one in control? With a backup controller both load
 * this plugin and share StateSaveLocation, where the acknowledgement lives:
 * only the controller in control may say what is in force (a standby that
 * loaded a new plan first would tell onrampctl it is, while the controller
 * scheduling jobs still runs the old one).
 */
static bool _in_control(void)
{
	return !&control_time || __atomic_load_n(&control_time, __ATOMIC_RELAXED) != 0;
}

static time_t _conf_update_time(void)
{
	return __atomic_load_n(&slurm_conf.last_update, __ATOMIC_RELAXED);
}

#define NSEC_PER_SEC 1000000000LL

static int64_t _wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/*
 * Whether a look that began at wall-clock time t_ns can miss a change after
 * it, the last one it saw having been at change_ns: slurm_conf.last_update
 * counts whole seconds, so a reconfigure later in the second it names
 * leaves it as it is, and a file changed again within its filesystem's
 * timestamp granularity keeps its stamp. Either is possible only within a
 * second of that change (a time further off, ahead on a file server's
 * clock say, is not taken as recent); then the next poll reloads whatever
 * it sees.
 */
static bool _unsettled(int64_t change_ns, int64_t t_ns)
{
	return (change_ns > t_ns - NSEC_PER_SEC) && (change_ns < t_ns + NSEC_PER_SEC);
}

/*
 * Re-read onramp.conf whenever slurmctld re-read its own configuration.
 * slurm_conf.last_update has one-second resolution, so the files themselves
 * are watched too: a change of onramp.conf, the rewire plan, the fabric file
 * or topology.conf is read within a second, reconfigure or not (a bad file
 * is logged and the last good state kept, as at reconfigure). Changes are
 * told by the files' change stamps (ctime included: a file put back with
 * cp -p has its old mtime, size and inode), always taken before the files
 * are read, and a look within a second of the last change is followed by
 * one more reload (_unsettled). Each (re)load is acknowledged in a file with
 * the stamps of the files it read, so that onrampctl knows when a plan it
 * wrote is in force: by the controller in control only (_in_control), and
 * by a backup once it takes over. Takes no Slurm lock: it only swaps libonramp's state,
 * under libonramp's own mutex.
 */
static void *_watch(void *arg)
{
	watcher_t *w = arg;
	char stamp[4096], seen_files[8192], now_files[8192];
	int64_t t_ns = _wall_ns(), newest;
	time_t seen = _conf_update_time();
	bool recheck, in_control, was_in_control;

	/* What init() loaded may be older than what this first look sees:
	 * a change during or just before the load gets one more reload. */
	newest = onramp_ctx_change_stamp(w->ctx, seen_files, sizeof(seen_files));
	recheck =
	    _unsettled((int64_t)seen * NSEC_PER_SEC, t_ns) || _unsettled(newest, w->loaded_ns);
	onramp_ctx_stamp(w->ctx, stamp, sizeof(stamp));
	in_control = _in_control();
	if (w->ack[0] && in_control)
		(void)onramp_ctx_ack(w->ctx, w->ack, stamp);
	slurm_mutex_lock(&w->mu);
	while (!w->stop) {
		struct timespec ts;
		time_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&w->cond, &w->mu, &ts);
		if (w->stop)
			break;
		slurm_mutex_unlock(&w->mu);
		/* The time before the look: a change after it is later. */
		t_ns = _wall_ns();
		now = _conf_update_time();
		newest = onramp_ctx_change_stamp(w->ctx, now_files, sizeof(now_files));
		was_in_control = in_control;
		in_control = _in_control();
		if (recheck || (now != seen) || strcmp(now_files, seen_files)) {
			seen = now;
			strlcpy(seen_files, now_files, sizeof(seen_files));
			onramp_ctx_stamp(w->ctx, stamp, sizeof(stamp));
			(void)onramp_ctx_reload(w->ctx);
			if (w->ack[0] && in_control)
				(void)onramp_ctx_ack(w->ctx, w->ack, stamp);
		} else if (w->ack[0] && in_control && !was_in_control) {
			/* A backup taking over (or a primary at its start)
			 * acknowledges what it has loaded. */
			(void)onramp_ctx_ack(w->ctx, w->ack, stamp);
		}
		recheck = _unsettled((int64_t)now * NSEC_PER_SEC, t_ns) || _unsettled(newest, t_ns);
		slurm_mutex_lock(&w->mu);
	}
	w->done = true;
	slurm_cond_broadcast(&w->cond);
	slurm_mutex_unlock(&w->mu);
	return NULL;
}

static void _watch_start(int64_t loaded_ns)
{
	watcher_t *w = xmalloc(sizeof(*w));

	w->ctx = ctx;
	w->loaded_ns = loaded_ns;
	/* init() runs at startup or under the reconfigure's config write
	 * lock: slurm_conf is stable here. */
	if (slurm_conf.state_save_location && (slurm_conf.state_save_location[0] == '/'))
		snprintf(w->ack, sizeof(w->ack), "%s/onramp_job_submit.loaded",
		         slurm_conf.state_save_location);
	slurm_mutex_init(&w->mu);
	slurm_cond_init(&w->cond, NULL);
	if (pthread_create(&w->tid, NULL, _watch, w) == 0) {
		watcher = w;
		return;
	}
	error("%s: cannot start the configuration watcher; onramp.conf is read at startup only",
	      plugin_type);
	slurm_mutex_destroy(&w->mu);
	slurm_cond_destroy(&w->cond);
	xfree(w);
}

/*
 * Stop the watcher, waiting at most WATCH_STOP_WAIT_S: fini() may run under
 * the reconfigure's config write lock, so it never waits without bound. A
 * watcher that does not stop in time (stuck in file I/O) is left behind
 * with its state and context, and this library is pinned in memory so that
 * the code it runs is never unmapped under it. Returns whether it stopped.
 */
static bool _watch_stop(watcher_t *w)
{
	struct timespec ts;
	bool done;

	slurm_mutex_lock(&w->mu);
	w->stop = true;
	slurm_cond_broadcast(&w->cond);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WATCH_STOP_WAIT_S;
	while (!w->done)
		if (pthread_cond_timedwait(&w->cond, &w->mu, &ts) == ETIMEDOUT)
			break;
	done = w->done;
	slurm_mutex_unlock(&w->mu);
	if (!done) {
		error("%s: the configuration watcher did not stop within %ds; leaving it behind",
		      plugin_type, WATCH_STOP_WAIT_S);
		(void)pthread_detach(w->tid);
		onramp_shim_pin_library((void *)_watch);
		return false;
	}
	pthread_join(w->tid, NULL);
	slurm_mutex_destroy(&w->mu);
	slurm_cond_destroy(&w->cond);
	xfree(w);
	return true;
}

extern int init(void)
{
	int64_t loaded_ns = _wall_ns();

	onramp_shim_log_init();
	ctx = onramp_shim_ctx_create(plugin_type, ONRAMP_SCOPE_POLICY);
	if (!ctx)
		return SLURM_ERROR;
	_watch_start(loaded_ns);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	bool stopped = true;

	if (watcher)
		stopped = _watch_stop(watcher);
	watcher = NULL;
	if (stopped)
		onramp_ctx_destroy(ctx);
	ctx = NULL;
	onramp_log_set_sink(NULL);
	return SLURM_SUCCESS;
}

/* NO_VAL and 0 both mean "not given" to libonramp. */
static uint32_t _count(uint32_t v)
{
	return (v == NO_VAL) ? 0 : v;
}

static uint32_t _count16(uint16_t v)
{
	return (v == NO_VAL16) ? 0 : v;
}

/*
 * CPUs of the cluster's largest node: how many tasks one node can take.
 * job_submit and job_modify run with slurmctld's node read (or write) lock
 * held, so the node table can be read here; no I/O.
 */
static uint32_t _node_cpus_max(void)
{
	node_record_t *node_ptr;
	uint32_t max = 0;

	for (int i = 0; (node_ptr = next_node(&i)); i++)
		if (node_ptr->cpus > max)
			max = node_ptr->cpus;
	return max;
}

/*
 * The partition a job that names none lands in. job_submit runs with
 * slurmctld's partition read lock held (job_submit_plugin_submit), so the
 * default partition record can be read here.
 */
static const char *_default_partition(void)
{
	if (default_part_loc && default_part_loc->name)
		return default_part_loc->name;
	return default_part_name;
}

/*
 * The QOS a job that names none gets: its association's default, as
 * slurmctld resolves it at job creation (the way job_submit/lua's
 * default_qos does). In-memory assoc_mgr lookups under its read locks,
 * taken after slurmctld's own as slurmctld does; no I/O. "" when there is
 * no such QOS record (e.g. no accounting).
 */
static void _default_qos(const job_desc_msg_t *d, uint32_t user_id, const char *part, char *buf,
                         size_t len)
{
	assoc_mgr_lock_t locks = {.assoc = READ_LOCK, .qos = READ_LOCK, .user = READ_LOCK};
	slurmdb_assoc_rec_t assoc, *assoc_ptr = NULL;
	slurmdb_qos_rec_t qos, *qos_ptr = NULL;

	buf[0] = '\0';
	memset(&assoc, 0, sizeof(assoc));
	memset(&qos, 0, sizeof(qos));
	assoc.uid = user_id;
	assoc.acct = d->account;
	assoc.partition = (part && !strchr(part, ',')) ? (char *)part : NULL;
	assoc_mgr_lock(&locks);
	if ((assoc_mgr_fill_in_assoc(acct_db_conn, &assoc, accounting_enforce, &assoc_ptr, true) ==
	     SLURM_SUCCESS) &&
	    assoc_ptr) {
		assoc_mgr_get_default_qos_info(assoc_ptr, &qos);
		if ((assoc_mgr_fill_in_qos(acct_db_conn, &qos, accounting_enforce, &qos_ptr,
		                           true) == SLURM_SUCCESS) &&
		    qos_ptr && qos_ptr->name)
			strlcpy(buf, qos_ptr->name, len);
	}
	assoc_mgr_unlock(&locks);
}

static void _fill(onramp_job_t *j, job_desc_msg_t *d, job_record_t *job_ptr, uint32_t submit_uid,
                  char *qos_buf, size_t qos_len)
{
	memset(j, 0, sizeof(*j));
	j->job_id = job_ptr ? job_ptr->job_id : 0;
	j->submit_uid = submit_uid;
	j->user_id = (d->user_id == NO_VAL) ? submit_uid : d->user_id;
	j->submit_is_admin = validate_super_user(submit_uid);
	j->account = d->account;
	j->qos = d->qos;
	j->partition = d->partition;
	j->reservation = d->reservation;
	j->name = d->name;
	j->features = d->features;
	j->min_nodes = _count(d->min_nodes);
	j->max_nodes = _count(d->max_nodes);
	j->req_switch = _count(d->req_switch);
	j->wait4switch = _count(d->wait4switch);
	j->time_limit = _count(d->time_limit);
	j->requeue = (d->requeue == NO_VAL16) ? -1 : d->requeue;
	j->warn_signal = (d->warn_signal == NO_VAL16) ? 0 : d->warn_signal;
	j->warn_time = (d->warn_time == NO_VAL16) ? 0 : d->warn_time;
	j->warn_batch = (d->warn_flags != NO_VAL16) && (d->warn_flags & KILL_JOB_BATCH);
	j->is_batch = d->script != NULL;
	if (!job_ptr) {
		/* A submission that names no partition / QOS gets the defaults. */
		j->default_partition = d->partition ? NULL : _default_partition();
		if (!d->qos) {
			_default_qos(d, j->user_id,
			             d->partition ? d->partition : j->default_partition, qos_buf,
			             qos_len);
			j->default_qos = qos_buf;
		}
	}
	j->spank_env = d->spank_job_env;
	j->spank_env_size = d->spank_job_env_size;
	/* A submission's priority is 0 only for --hold (slurmctld resets any
	 * other priority a non-operator asks for before job_submit runs). */
	j->user_hold = !job_ptr && d->priority == 0;
	j->current_admin_comment = job_ptr ? job_ptr->admin_comment : NULL;
	j->current_requeue = (job_ptr && job_ptr->details) ? job_ptr->details->requeue : -1;
	/* The rest of the shape: how many nodes the job needs. */
	j->num_tasks = _count(d->num_tasks);
	j->ntasks_per_node = _count16(d->ntasks_per_node);
	j->cpus_per_task = _count16(d->cpus_per_task);
	j->overcommit = (d->overcommit != NO_VAL8) && d->overcommit;
	j->req_nodes = d->req_nodes;
	if (!job_ptr)
		return;
	/* job_modify: a change gives Switches=0 to remove --switches. */
	j->req_switch_set = d->req_switch != NO_VAL;
	j->release = d->priority == INFINITE;
	j->current_pending = IS_JOB_PENDING(job_ptr);
	j->current_held = job_ptr->priority == 0;
	j->current_user_held = j->current_held && (job_ptr->state_reason == WAIT_HELD_USER);
	j->current_req_switch = _count(job_ptr->req_switch);
	j->current_wait4switch = _count(job_ptr->wait4switch);
	if (job_ptr->details) {
		/* struct job_details up to 23.11, job_details_t from 24.05 */
		__typeof__(job_ptr->details) dt = job_ptr->details;

		j->current_min_nodes = _count(dt->min_nodes);
		j->current_max_nodes = _count(dt->max_nodes);
		j->current_num_tasks = _count(dt->num_tasks);
		j->current_ntasks_per_node = _count16(dt->ntasks_per_node);
		j->current_cpus_per_task = _count16(dt->cpus_per_task);
		j->current_overcommit = (dt->overcommit != NO_VAL8) && dt->overcommit;
		j->current_req_nodes = dt->req_nodes;
	}
}

/*
 * Apply the policy's edits. A modify's job_desc replaces what it names, and
 * slurmctld refuses an AdminComment in a non-admin's update even when this
 * plugin wrote it (22.05 to 26.05 check the uid again after job_modify): in
 * a modify, comments are appended to the job's own and AdminComment is
 * written to the job record (slurmctld's job write lock is held).
 */
static void _apply(job_desc_msg_t *d, job_record_t *job_ptr, const onramp_job_edits_t *e)
{
	if (e->has_req_switch)
		d->req_switch = e->req_switch;
	if (e->has_wait4switch)
		d->wait4switch = e->wait4switch;
	if (e->hold)
		d->priority = 0;
	if (e->requeue >= 0)
		d->requeue = e->requeue;
	if (e->open_append >= 0)
		d->open_mode = e->open_append ? OPEN_MODE_APPEND : OPEN_MODE_TRUNCATE;
	if (e->has_warn) {
		uint16_t flags = (d->warn_flags == NO_VAL16) ? 0 : d->warn_flags;

		d->warn_signal = e->warn_signal;
		d->warn_time = e->warn_time;
		/*
		 * Whom slurmctld's warning reaches: no flag: the job steps
		 * (slurmctld adds KILL_STEPS_ONLY); KILL_JOB_BATCH: the batch
		 * shell only (--signal=B:); KILL_FULL_JOB: slurmd signals the
		 * batch step's whole process group (killpg), as scancel --full.
		 */
		flags &= ~(KILL_JOB_BATCH | KILL_FULL_JOB | KILL_STEPS_ONLY);
		if (e->warn_target == ONRAMP_WARN_BATCH)
			flags |= KILL_JOB_BATCH;
		else if (e->warn_target == ONRAMP_WARN_FULL)
			flags |= KILL_FULL_JOB;
		d->warn_flags = flags;
	}
	if (e->comment_append[0] && job_ptr && !d->comment && job_ptr->comment)
		d->comment = xstrdup(job_ptr->comment);
	if (e->comment_append[0])
		xstrfmtcat(d->comment, "%s%s", d->comment ? "; " : "", e->comment_append);
	/*
	 * slurmctld refuses an AdminComment from a non-admin's request before
	 * job_submit runs (validate_job_create_req, 22.05 to 26.05), so what a
	 * user submits never carries onramp's marks there; what is appended
	 * here does.
	 */
	if (e->admin_comment_append[0] && job_ptr) {
		xstrfmtcat(job_ptr->admin_comment, "%s%s", job_ptr->admin_comment ? "; " : "",
		           e->admin_comment_append);
		last_job_update = time(NULL);
	} else if (e->admin_comment_append[0]) {
		xstrfmtcat(d->admin_comment, "%s%s", d->admin_comment ? "; " : "",
		           e->admin_comment_append);
	}
	/* A batch job's tasks learn their checkpoint signal from the environment
	 * (spank/onramp passes it on; jobs without it read it directly). */
	if (e->ckpt_signal_env[0] && d->environment && d->env_size) {
		env_array_overwrite(&d->environment, "ONRAMP_CKPT_SIGNAL", e->ckpt_signal_env);
		d->env_size = envcount(d->environment);
	}
}

static int _decide(job_desc_msg_t *d, job_record_t *job_ptr, uint32_t submit_uid, char **err_msg)
{
	onramp_job_t j;
	onramp_job_edits_t e;
	char msg[512] = "", qos[256] = "";
	int is_modify = job_ptr != NULL;
	uint32_t job_id = job_ptr ? job_ptr->job_id : 0;

	_fill(&j, d, job_ptr, submit_uid, qos, sizeof(qos));
	/* Only a job that gives a task count needs the node size. */
	if ((j.num_tasks > 1) || (j.current_num_tasks > 1))
		j.node_cpus_max = _node_cpus_max();
	if (onramp_job_decide(ctx, &j, is_modify, &e, msg, sizeof(msg)) < 0) {
		if (is_modify)
			info("%s: update of job %u by uid %u rejected: %s", plugin_type, job_id,
			     submit_uid, msg);
		else
			info("%s: submission by uid %u (job name %s) rejected: %s", plugin_type,
			     submit_uid, d->name ? d->name : "-", msg);
		if (err_msg)
			*err_msg = xstrdup(msg);
		return ESLURM_ACCESS_DENIED;
	}
	_apply(d, job_ptr, &e);
	/* A submission has no job id yet (22.05 assigns it later): name its
	 * submitter and job name instead. */
	if (msg[0] && is_modify)
		info("%s: update of job %u: %s", plugin_type, job_id, msg);
	else if (msg[0])
		info("%s: submission by uid %u (job name %s): %s", plugin_type, submit_uid,
		     d->name ? d->name : "-", msg);
	return SLURM_SUCCESS;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	/* No job id exists yet. */
	return _decide(job_desc, NULL, submit_uid, err_msg);
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
/* From 23.02 a rejected update's reason reaches the user (err_msg). */
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid,
                      char **err_msg)
{
	return _decide(job_desc, job_ptr, submit_uid, err_msg);
}
#else
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid)
{
	return _decide(job_desc, job_ptr, submit_uid, NULL);
}
#endif
