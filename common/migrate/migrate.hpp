// Shared names of the migration flow (job_submit policy, onrampctl).
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "status.hpp"

namespace onramp {
namespace migrate {

// In a job's AdminComment while onrampctl migrates it.
extern const char *const kMigratingMarker; // "onramp:migrating"
// In a job's Comment: "onramp:ckpt=DIR", its checkpoint directory.
extern const char *const kCkptCommentKey;
// In a job's Comment: "onramp:signal=T:SIG@SECONDS", the signal that asks
// the job to checkpoint and whom it reaches (written by job_submit/onramp,
// read by onrampctl migrate).
extern const char *const kSignalCommentKey;
// SPANK job environment set by spank/onramp's options.
extern const char *const kSpankCkptDir;    // SPANK_ONRAMP_CHECKPOINT_DIR
extern const char *const kSpankCkptSignal; // SPANK_ONRAMP_CHECKPOINT_SIGNAL

// "USR2", "SIGUSR1@90", "15@300" -> signal number and seconds (default 120).
Status parse_signal_spec(const std::string &spec, int *sig, int *seconds);

// Whom a checkpoint signal reaches (Slurm 22.05's --signal and scancel):
//  Steps  every job step (srun), not the batch shell: --signal=SIG@T,
//         "scancel --signal=SIG"
//  Batch  the batch shell only: --signal=B:SIG@T, "scancel --batch"
//  Full   the batch shell and every process of its process group (srun
//         forwards it to its steps): "scancel --full"
enum class SignalTarget { Steps, Batch, Full };

// "steps" | "batch" | "full" (MigrateSignalTarget).
Status parse_signal_target(const std::string &name, SignalTarget *target);
const char *signal_target_name(SignalTarget target);
// The scancel option that signals a job this way ("" for Steps).
const char *scancel_target_option(SignalTarget target);

// "[B:|S:|F:]SIG[@SECONDS]" (--checkpoint-signal; the prefix, any case, is
// the target: B batch as sbatch's --signal=B:, S steps, F full). *has_target
// says whether a prefix was given; *target is set only then.
Status parse_checkpoint_signal(const std::string &spec, int *sig, int *seconds,
                               SignalTarget *target, bool *has_target);
// The canonical text of a checkpoint signal: "F:USR2@120".
std::string format_checkpoint_signal(int sig, int seconds, SignalTarget target);

// The value of "KEY..." in a job's comment, up to the next ';' or blank.
std::string comment_value(const std::string &comment, const char *key);

// How onrampctl migrate signals a job with this comment: its
// "onramp:signal=T:SIG@S" (job_submit/onramp wrote it), else MigrateSignal
// to MigrateSignalTarget of cfg (a job submitted before onramp recorded it).
void checkpoint_signal_of(const std::string &comment, const Config &cfg, int *sig,
                          SignalTarget *target);
// "scancel --signal=SIG [--batch|--full] JOB".
std::vector<std::string> scancel_signal_args(int sig, SignalTarget target, const std::string &job);

// Is this the name of one of onramp's own jobs: an admission job
// ("onramp-admit:NODE"), a pair test ("onramp-pair:NODE:PEER") or an
// expansion's smoke job ("onramp-smoke:CAMPAIGN:RACK")? Such jobs are never
// migrated: job_submit/onramp does not opt them in through MigratePartitions
// or MigrateQos when an admin submitted them, and onrampctl migrate --from
// passes over them.
bool is_onramp_job_name(const std::string &name);

// The value of NAME in a list of "NAME=value" (empty when absent).
std::string spank_value(const std::vector<std::string> &env, const char *name);

} // namespace migrate
} // namespace onramp
