/*****************************************************************************\
 *  onramp_shim.h - helpers shared by onramp's Slurm plugin shims (C).
\*****************************************************************************/
#ifndef ONRAMP_SHIM_H
#define ONRAMP_SHIM_H

#include "onramp.h"

/* Install the libonramp log sink that forwards to Slurm's log. */
extern void onramp_shim_log_init(void);

/*
 * Open onramp.conf (beside slurm.conf) with the state scope needs
 * (ONRAMP_SCOPE_*). Returns NULL and logs the error, naming the file and
 * line, when it cannot be loaded.
 */
extern onramp_ctx_t *onramp_shim_ctx_create(const char *plugin_type, int scope);

/*
 * Keep the shared object that holds addr mapped for good (a thread left
 * running in it must never see its code unmapped by dlclose). Logs when it
 * cannot.
 */
extern void onramp_shim_pin_library(void *addr);

#endif
