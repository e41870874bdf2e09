// Who may run onramp's admin commands: the one admin check.
#pragma once

#include <sys/types.h>

namespace onramp {

// uid is root or Slurm's SlurmUser. Pure: each caller supplies SlurmUser's
// uid from where it is (a tool: slurm_load_ctl_conf; a plugin: the daemon's
// own config). Slurm's AdminLevel=Admin users are not onramp admins here.
bool is_slurm_admin(uid_t uid, uid_t slurm_user_uid);

} // namespace onramp
