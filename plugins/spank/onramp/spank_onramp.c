/*
 *  spank_onramp.c - spank/onramp: users opt a job in to migration.
 *
 *  Options (sbatch, salloc, srun):
 *    --checkpoint-dir=DIR            the job's checkpoint directory
 *                                    (onramp-checkpoint(7)); opts in
 *    --checkpoint-signal=[B:|S:|F:]SIG[@SECS]
 *                                    checkpoint signal (default: MigrateSignal
 *                                    to MigrateSignalTarget); B: the batch
 *                                    shell only, S: the job steps, F: both
 *
 *  In the allocator the options go into the job's SPANK job control
 *  environment (ONRAMP_CHECKPOINT_DIR, ONRAMP_CHECKPOINT_SIGNAL), where
 *  job_submit/onramp finds them. In slurmstepd (remote context) the job's
 *  tasks get ONRAMP_CKPT_DIR, ONRAMP_CKPT_SIGNAL, ONRAMP_RESTART_COUNT and,
 *  on a restart, ONRAMP_RESUME_MANIFEST: the newest generation that verifies.
 *  That verification hashes the whole checkpoint, so it runs once per
 *  restart: in the batch script's task (a requeued job is a batch job); the
 *  job's other steps, on every node, inherit ONRAMP_RESUME_MANIFEST from the
 *  batch script's environment through srun.
 *
 *  Uses only Slurm's public spank.h; onramp_ckpt.h for the protocol and
 *  onramp.h for the signal grammar (shared with job_submit/onramp).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "migrate/onramp_ckpt.h"
#include "onramp.h"

SPANK_PLUGIN(onramp, 1);

#ifndef SLURM_BATCH_SCRIPT
#define SLURM_BATCH_SCRIPT 0xfffffffb
#endif

static char *opt_dir = NULL;
static char *opt_signal = NULL;

/* "B:USR2@120" -> "USR2@120": what the job's tasks need to know. */
static const char *_strip_target(const char *s)
{
	return (s[0] && s[1] == ':' && strchr("BbSsFf", s[0])) ? s + 2 : s;
}

static int _opt_dir(int val, const char *optarg, int remote)
{
	(void)val;
	if (!optarg || optarg[0] != '/') {
		slurm_error("spank/onramp: --checkpoint-dir needs an absolute path, not '%s'",
		            optarg ? optarg : "");
		return -1;
	}
	free(opt_dir);
	opt_dir = strdup(optarg);
	(void)remote;
	return 0;
}

static int _opt_signal(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	char err[256];
	/* The one validator: job_submit/onramp reads the same grammar. */
	if (onramp_checkpoint_signal_check(optarg, err, sizeof(err)) != 0) {
		slurm_error("spank/onramp: --checkpoint-signal: %s ([B:|S:|F:]SIG[@SECONDS]; "
		            "B: batch shell, S: steps, F: both)",
		            err);
		return -1;
	}
	free(opt_signal);
	opt_signal = strdup(optarg);
	return 0;
}

/* Registered from slurm_spank_init: a static spank_options table is not
 * read in allocator context (sbatch, salloc). */
static struct spank_option onramp_options[] = {
    {"checkpoint-dir", "DIR",
     "checkpoint directory (onramp-checkpoint(7)); makes the job migratable", 1, 0, _opt_dir},
    {"checkpoint-signal", "[B:|S:|F:]SIG[@SECONDS]",
     "signal asking the job to checkpoint (default from onramp.conf MigrateSignal); B: batch "
     "shell only, S: job steps only, F: batch shell and its processes",
     1, 0, _opt_signal},
    SPANK_OPTIONS_TABLE_END};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	for (struct spank_option *o = onramp_options; o->name; o++)
		if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
			slurm_error("spank/onramp: cannot register --%s", o->name);
			return -1;
		}
	return 0;
}

/* Allocator: hand the options to the controller (job_submit/onramp). */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_LOCAL && spank_context() != S_CTX_ALLOCATOR)
		return 0;
	if (opt_signal && !opt_dir) {
		slurm_error("spank/onramp: --checkpoint-signal needs --checkpoint-dir");
		return -1;
	}
	if (opt_dir &&
	    spank_job_control_setenv(sp, "ONRAMP_CHECKPOINT_DIR", opt_dir, 1) != ESPANK_SUCCESS)
		return -1;
	if (opt_signal && spank_job_control_setenv(sp, "ONRAMP_CHECKPOINT_SIGNAL", opt_signal, 1) !=
	                      ESPANK_SUCCESS)
		return -1;
	return 0;
}

static const char *_getenv(spank_t sp, const char *name, char *buf, int len)
{
	if (spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS && buf[0])
		return buf;
	return NULL;
}

static int _is_batch_step(spank_t sp)
{
	uint32_t step = 0;
	return spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
	       step == SLURM_BATCH_SCRIPT;
}

/* slurmstepd: tell the job's tasks where and how to checkpoint. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	char dir[4096], sig[64], envsig[64], rc[32];
	const char *d, *s, *r;
	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1)
		return 0;
	d = _getenv(sp, "SPANK_ONRAMP_CHECKPOINT_DIR", dir, sizeof(dir));
	if (!d)
		d = opt_dir;
	if (!d)
		return 0;
	s = _getenv(sp, "SPANK_ONRAMP_CHECKPOINT_SIGNAL", sig, sizeof(sig));
	if (!s)
		s = opt_signal;
	/* job_submit/onramp exports the signal it gave the job (MigrateSignal
	 * or the job's own --signal). */
	if (!s)
		s = _getenv(sp, "ONRAMP_CKPT_SIGNAL", envsig, sizeof(envsig));
	if (!s)
		s = "USR2";
	r = _getenv(sp, "SLURM_RESTART_COUNT", rc, sizeof(rc));
	spank_setenv(sp, "ONRAMP_CKPT_DIR", d, 1);
	spank_setenv(sp, "ONRAMP_CKPT_SIGNAL", _strip_target(s), 1);
	/* The batch step's environment has no SLURM_RESTART_COUNT yet here
	 * (slurmstepd adds it per task, and 22.05's S_SLURM_RESTART_COUNT is 0
	 * for it): slurm_spank_task_init() handles the batch step. */
	if (!_is_batch_step(sp))
		spank_setenv(sp, "ONRAMP_RESTART_COUNT", r ? r : "0", 1);
	return 0;
}

/* slurmstepd, the batch script's task, its environment complete: on a
 * restart, find the newest generation that verifies, once per restart. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char dir[4096], rc[32], err[512], path[4200];
	const char *d, *r;
	uint64_t gen = 0;
	int64_t step = 0;
	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1 || !_is_batch_step(sp))
		return 0;
	d = _getenv(sp, "ONRAMP_CKPT_DIR", dir, sizeof(dir));
	if (!d)
		return 0;
	r = _getenv(sp, "SLURM_RESTART_COUNT", rc, sizeof(rc));
	spank_setenv(sp, "ONRAMP_RESTART_COUNT", r ? r : "0", 1);
	if (!r || atoi(r) <= 0)
		return 0;
	if (onramp_ckpt_latest(d, &gen, &step, err, sizeof(err)) == 0) {
		snprintf(path, sizeof(path), "%s/%llu/manifest.json", d, (unsigned long long)gen);
		spank_setenv(sp, "ONRAMP_RESUME_MANIFEST", path, 1);
		slurm_info("spank/onramp: restart %s resumes from %s (step %lld)", r, path,
		           (long long)step);
	} else {
		slurm_info("spank/onramp: restart %s: %s", r, err);
	}
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	free(opt_dir);
	free(opt_signal);
	opt_dir = opt_signal = NULL;
	return 0;
}
