/*
 * onramp_ckpt.h - the checkpoint protocol (onramp-checkpoint(7)) for C and
 * C++ jobs; link with -lonramp_ckpt. Shell and Python jobs use the
 * onramp-ckpt tool, which does the same.
 *
 * Every function returns 0 on success and -1 on error with a message in err
 * (errlen bytes; may be NULL). Nothing here throws or calls exit().
 */
#ifndef ONRAMP_CKPT_H
#define ONRAMP_CKPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONRAMP_CKPT_API __attribute__((visibility("default")))

/* The next generation number under dir (1 when none); its directory
 * <dir>/<generation> is created, ready for the shards. */
ONRAMP_CKPT_API int onramp_ckpt_begin(const char *dir, uint64_t *generation, char *err,
                                      size_t errlen);

/* Commit <dir>/<generation>: hash the nshards shards (paths relative to the
 * generation directory) and write manifest.json crash-safely. */
ONRAMP_CKPT_API int onramp_ckpt_commit(const char *dir, uint64_t generation, int64_t step,
                                       const char *const *shards, size_t nshards, char *err,
                                       size_t errlen);

/* Check every shard of <dir>/<generation>; *step (may be NULL) gets the
 * manifest's step. err names the bad shard. */
ONRAMP_CKPT_API int onramp_ckpt_verify(const char *dir, uint64_t generation, int64_t *step,
                                       char *err, size_t errlen);

/* The newest generation of dir that verifies, and its step. */
ONRAMP_CKPT_API int onramp_ckpt_latest(const char *dir, uint64_t *generation, int64_t *step,
                                       char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
