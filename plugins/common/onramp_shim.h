/*****************************************************************************\
 *  onramp_shim.h - helpers shared by onramp's Slurm plugin shims (C).
\*****************************************************************************/
#ifndef ONRAMP_SHIM_H
#define ONRAMP_SHIM_H

#include "onramp.h"

/* Install the libonramp log sink that forwards to Slurm's log. */
extern void onramp_shim_log_init(void);

/*
 * Open onramp.conf (beside slurm.conf). Returns NULL and logs the error,
 * naming the file and line, when it cannot be loaded.
 */
extern onramp_ctx_t *onramp_shim_ctx_create(const char *plugin_type);

#endif
