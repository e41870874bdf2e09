// Shared names of the migration flow (job_submit policy, onrampctl).
#pragma once

#include <string>
#include <vector>

#include "status.hpp"

namespace onramp {
namespace migrate {

// In a job's AdminComment while onrampctl migrates it.
extern const char *const kMigratingMarker; // "onramp:migrating"
// In a job's Comment: "onramp:ckpt=DIR", its checkpoint directory.
extern const char *const kCkptCommentKey;
// SPANK job environment set by spank/onramp's options.
extern const char *const kSpankCkptDir;    // SPANK_ONRAMP_CHECKPOINT_DIR
extern const char *const kSpankCkptSignal; // SPANK_ONRAMP_CHECKPOINT_SIGNAL

// "USR2", "SIGUSR1@90", "15@300" -> signal number and seconds (default 120).
Status parse_signal_spec(const std::string &spec, int *sig, int *seconds);

// The value of NAME in a list of "NAME=value" (empty when absent).
std::string spank_value(const std::vector<std::string> &env, const char *name);

} // namespace migrate
} // namespace onramp
