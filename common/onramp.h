/*
 * onramp.h - the plain C API of libonramp, the only onramp header the Slurm
 * plugin shims include. It never exposes C++ types, never throws, and never
 * calls back into Slurm: every function is safe to call under slurmctld's
 * locks unless its comment says it does file I/O.
 */
#ifndef ONRAMP_H
#define ONRAMP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What begins every drain/down reason onramp writes ("onramp:<CODE>:
 * <detail>"): a reason without it is an admin's and onramp never touches
 * it. The shell tools read the same value from onramp-lib.sh (a unit test
 * checks that they agree).
 */
#define ONRAMP_REASON_PREFIX "onramp:"

/* ---------------------------------------------------------------- log */
#define ONRAMP_LOG_ERROR 0
#define ONRAMP_LOG_WARN 1
#define ONRAMP_LOG_INFO 2
#define ONRAMP_LOG_VERBOSE 3
#define ONRAMP_LOG_DEBUG 4

typedef void (*onramp_log_sink_fn)(int level, const char *msg);
/* Route every libonramp message to fn (NULL: back to stderr). A plugin
 * installs a sink that calls Slurm's error()/info()/verbose()/debug(). */
void onramp_log_set_sink(onramp_log_sink_fn fn);

/* ------------------------------------------------------------- config */
typedef struct onramp_ctx onramp_ctx_t;

/*
 * Load onramp.conf from path (file I/O). On error returns NULL and writes a
 * message naming the file, line and key into err (errlen bytes). component
 * prefixes log lines, e.g. "job_submit/onramp".
 */
onramp_ctx_t *onramp_ctx_create(const char *path, const char *component, char *err, size_t errlen);
/* What a context loads, and reloads: */
#define ONRAMP_SCOPE_POLICY 0 /* onramp.conf and every flow's state (job_submit) */
#define ONRAMP_SCOPE_CONFIG 1 /* onramp.conf only: what admission needs */
/*
 * onramp_ctx_create with a scope. With ONRAMP_SCOPE_POLICY a rewire plan or
 * fabric file that cannot be used at this first load is logged and no
 * rewire window is in force (never fatal); at a reload it keeps the last
 * good state, as does a plan file that vanished while a window is active.
 * onramp_ctx_create is the POLICY scope.
 */
onramp_ctx_t *onramp_ctx_create_scoped(const char *path, const char *component, int scope,
                                       char *err, size_t errlen);
/*
 * Re-read the file the context was created from (file I/O). A bad file is
 * logged with its line number and the last good configuration stays in
 * force. Returns 0 when the new file was loaded, -1 when it was rejected.
 * Thread-safe against concurrent readers.
 */
int onramp_ctx_reload(onramp_ctx_t *ctx);
void onramp_ctx_destroy(onramp_ctx_t *ctx);
/* Path of the configuration file in force. */
const char *onramp_ctx_conf_path(const onramp_ctx_t *ctx);
/* How many times a configuration was loaded successfully (1 after create). */
uint64_t onramp_ctx_generation(const onramp_ctx_t *ctx);
/*
 * A stamp of every file the context was loaded from (onramp.conf and the
 * files it names: rewire plan, fabric, topology.conf): inode, mtime and
 * size of each, into buf. Changes when any of them is replaced or edited.
 * File I/O (stat); never call it under slurmctld's locks.
 */
void onramp_ctx_stamp(const onramp_ctx_t *ctx, char *buf, size_t buflen);
/*
 * What a watcher compares to tell whether those files changed: the same
 * files, one "PATH INODE MTIME.NSEC SIZE CTIME.NSEC" (or "PATH missing")
 * line each, into buf. Unlike onramp_ctx_stamp it also changes when a file
 * is put back with the inode, mtime and size it had before (cp -p, touch
 * -r, rsync -t: the ctime cannot be set back). Returns the newest of those
 * ctimes in nanoseconds since the epoch (0 when none), so that a watcher
 * knows when a further change could still keep the stamp (within the
 * filesystem's timestamp granularity). File I/O (stat); never call it
 * under slurmctld's locks.
 */
int64_t onramp_ctx_change_stamp(const onramp_ctx_t *ctx, char *buf, size_t buflen);
/*
 * Acknowledge what is in force: writes path (crash-safe) with a first line
 * "status loaded" or "status kept <why the last reload failed>", then the
 * stamp (one "PATH INODE MTIME.NSEC SIZE" or "PATH missing" line per file),
 * so that onrampctl can wait until a plan it wrote is in force. File I/O;
 * never under slurmctld's locks. Returns 0, or -1 (logged) when it cannot
 * write.
 */
int onramp_ctx_ack(onramp_ctx_t *ctx, const char *path, const char *stamp);

/* Copy the effective value of key (default applied) into buf; returns 0,
 * or -1 for an unknown key. */
int onramp_ctx_get(const onramp_ctx_t *ctx, const char *key, char *buf, size_t buflen);

/*
 * Find one key in an onramp.conf that may be invalid elsewhere (file I/O):
 * for a plugin that must know, say, its feature name to fail closed when
 * the file as a whole is refused. Returns 0 with the value in buf, 1 with
 * the default when the key is not set, -1 when the file cannot be read or
 * the key's own value is invalid.
 */
int onramp_conf_peek(const char *path, const char *key, char *buf, size_t buflen);

/* ------------------------------------------------------------ hostlist */
/* Expand a Slurm hostlist expression; returns a malloc'd NUL-separated,
 * double-NUL terminated list, or NULL with err set. Free with free(). */
char *onramp_hostlist_expand(const char *expr, char *err, size_t errlen);

/* ----------------------------------------------------------- migration */
/*
 * Is spec a checkpoint signal ([B:|S:|F:]SIG[@SECONDS], SIG a name such as
 * USR1 or QUIT or a number; not KILL or STOP)? The one validator:
 * spank/onramp checks --checkpoint-signal with it, job_submit/onramp parses
 * the same grammar. Returns 0, or -1 with the reason (naming spec) in err.
 * No I/O.
 */
int onramp_checkpoint_signal_check(const char *spec, char *err, size_t errlen);

/* ---------------------------------------------------------- job_submit */
/* The job fields onramp's submit policy reads; strings may be NULL. */
typedef struct onramp_job {
	uint32_t job_id; /* 0 at submission */
	uint32_t submit_uid;
	uint32_t user_id;
	int submit_is_admin; /* root, SlurmUser or AdminLevel=Admin */
	const char *account;
	const char *qos;
	const char *partition;
	const char *reservation;
	const char *name;
	const char *features;
	uint32_t min_nodes;   /* 0: not given */
	uint32_t max_nodes;   /* 0: not given */
	uint32_t req_switch;  /* 0: not given */
	uint32_t wait4switch; /* seconds, 0: not given */
	uint32_t time_limit;  /* minutes, 0: not given */
	int requeue;          /* -1: not given */
	uint16_t warn_signal; /* 0: none */
	uint16_t warn_time;
	int warn_batch; /* --signal=B: */
	int is_batch;   /* has a batch script */
	/* Where a job that names no partition / QOS lands (NULL: unknown). */
	const char *default_partition;
	const char *default_qos;
	char **spank_env; /* "NAME=value" */
	uint32_t spank_env_size;
	int user_hold; /* submitted held by its submitter (--hold: priority 0) */
	/* job_modify only: the job as it is now */
	const char *current_admin_comment;
	int current_requeue; /* -1: unknown */
	/* The rest of the job's shape (0 / NULL: not given) */
	uint32_t num_tasks;       /* -n */
	uint32_t ntasks_per_node; /* --ntasks-per-node */
	uint32_t cpus_per_task;   /* -c */
	int overcommit;           /* -O */
	const char *req_nodes;    /* -w: a hostlist; "" (modify): cleared */
	uint32_t node_cpus_max;   /* CPUs of the largest node, 0: unknown */
	/* job_modify only */
	int req_switch_set; /* req_switch given, even as 0 (Switches=0) */
	int release;        /* the change releases a held job */
	int current_pending;
	int current_held;      /* priority 0 */
	int current_user_held; /* held by its user */
	uint32_t current_min_nodes, current_max_nodes, current_num_tasks;
	uint32_t current_ntasks_per_node, current_cpus_per_task;
	uint32_t current_req_switch, current_wait4switch;
	int current_overcommit;
	const char *current_req_nodes;
} onramp_job_t;

/* Whom the warning signal reaches (Slurm 22.05 warn_flags): */
#define ONRAMP_WARN_STEPS 0 /* job steps only (no flag) */
#define ONRAMP_WARN_BATCH 1 /* batch shell only (KILL_JOB_BATCH, --signal=B:) */
#define ONRAMP_WARN_FULL 2  /* batch shell's process group (KILL_FULL_JOB) */

/* Edits the policy asks for; has_* / -1 mean "leave as is". */
typedef struct onramp_job_edits {
	int has_req_switch;
	uint32_t req_switch;
	int has_wait4switch;
	uint32_t wait4switch;
	int hold;        /* submit held */
	int requeue;     /* -1, 0, 1 */
	int open_append; /* -1, 0 (truncate), 1 (append) */
	int has_warn;
	uint16_t warn_signal;
	uint16_t warn_time;
	int warn_target;           /* with has_warn: ONRAMP_WARN_* */
	char comment_append[4352]; /* "" when none */
	/* appended to AdminComment (users cannot write it); "" when none */
	char admin_comment_append[256];
	char ckpt_signal_env[64]; /* "SIG@SECS" for ONRAMP_CKPT_SIGNAL; "" when none */
} onramp_job_edits_t;

/*
 * Decide a submission (is_modify=0) or a modification (is_modify=1, job
 * holds only the changed fields). No I/O, no blocking: safe under
 * slurmctld's locks. Returns 0 to accept (with edits to apply), -1 to
 * reject with a message for the user in msg; an accepted job may still get
 * a message for the log in msg.
 */
int onramp_job_decide(onramp_ctx_t *ctx, const onramp_job_t *job, int is_modify,
                      onramp_job_edits_t *edits, char *msg, size_t msglen);

/* ----------------------------------------------------------- admission */
/*
 * Is node admitted for its current boot and baseline? Reads the node's
 * admission record (NodeStateDir), its boot identity (BootIdFile) and the
 * SKU baseline digest (file I/O, no network, no Slurm calls).
 * Returns 1 admitted, 0 not admitted (never proven for this boot: "no
 * admission record", "boot changed since admission", "admission FAIL
 * NCCL_BW_LOW: ..."), 2 not admitted because the baseline was edited since
 * the node's admission, -1 could not judge; why says which and why.
 */
int onramp_admission_check(onramp_ctx_t *ctx, const char *node, char *why, size_t whylen);

/* ------------------------------------------------------------ topology */
/* The switch table topology/onramp hands to Slurm, computed by libonramp
 * from topology.conf (topology/tree's grammar) and the active rewire window
 * (FabricFile, RewirePlan in onramp.conf). */
typedef struct onramp_topo onramp_topo_t;

typedef struct onramp_topo_switch {
	const char *name;
	int level;
	uint32_t link_speed;
	const char *nodes;    /* leaves: Nodes= as written; others "" */
	const char *switches; /* Switches= (remaining children when cut) */
	int parent;
	int num_children;
	const uint16_t *children; /* switch_index */
	int num_desc;
	const uint16_t *desc; /* switch_desc_index */
	const uint32_t *dist; /* switches_dist, switch_count entries */
	int num_nodes;
	const int *node_index; /* indexes into the node_names given */
} onramp_topo_switch_t;

/*
 * Build the table (file I/O: onramp.conf at conf_path, topology.conf at
 * topo_path, the fabric and plan files). node_names[i] is the name of
 * Slurm's node index i (NULL for a hole). previous says what is in force
 * now: ONRAMP_TOPO_PREVIOUS when a table is, with ONRAMP_TOPO_PREVIOUS_WINDOW
 * when that table has an active rewire window. Returns NULL when the caller
 * must keep what it has (a bad topology.conf; a bad fabric/plan or an
 * unreadable onramp.conf while a previous table is in force; onramp.conf
 * or the plan file missing while a window is in force), with the reason in
 * msg. With no previous table a bad fabric/plan yields the plain
 * topology.conf tree and the reason in msg. A non-NULL result may carry a
 * note in msg (the active window). Never fatal.
 */
#define ONRAMP_TOPO_PREVIOUS 1
#define ONRAMP_TOPO_PREVIOUS_WINDOW 2
onramp_topo_t *onramp_topo_build(const char *conf_path, const char *topo_path,
                                 const char *const *node_names, int node_cnt, int previous,
                                 char *msg, size_t msglen);
int onramp_topo_switch_count(const onramp_topo_t *t);
int onramp_topo_levels(const onramp_topo_t *t);
/* Whether the table was built with an active rewire window. */
int onramp_topo_window_active(const onramp_topo_t *t);
/* Whether some switch reaches every node (tree logs when none does). */
int onramp_topo_have_root(const onramp_topo_t *t);
/* Fill out for switch i (pointers live as long as t); 0, or -1 when out of range. */
int onramp_topo_get_switch(const onramp_topo_t *t, int i, onramp_topo_switch_t *out);
void onramp_topo_free(onramp_topo_t *t);

#ifdef __cplusplus
}
#endif

#endif /* ONRAMP_H */
