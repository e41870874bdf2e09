// The per-job node checks: the prolog backstop (before each job) and the
// epilog scan (after it). Both are cheap and bounded: the backend calls run
// isolated with a timeout, like onramp-admit's checks.
#pragma once

#include <string>

#include "admit/admission.hpp"

namespace onramp {
namespace admit {

struct JobCheck {
	bool ok = true;
	std::string code, detail; // when !ok: e.g. PROLOG_NOT_ADMITTED
};

// Before a job: the node is admitted for this boot and baseline, has the
// baseline's GPU count, and no critical XID appeared since its admission.
JobCheck prolog_check(AdmitInputs &in, double timeout_s);

// After a job that started at since_epoch: no critical XID and no volatile
// uncorrected ECC error appeared since then.
JobCheck epilog_check(AdmitInputs &in, double since_epoch, double timeout_s);

} // namespace admit
} // namespace onramp

namespace onramp {
namespace admit {

enum class JobCheckMode { Prolog, Epilog };

// The whole prolog/epilog program: reads the Slurm environment
// (SLURMD_NODENAME, SLURM_JOB_ID, SLURM_JOB_RESERVATION), skips admission
// jobs, runs the check, and on failure drains the node with
// "onramp:<CODE>: <detail>" (the epilog also revokes the admission record).
// Returns the exit status: 0, or 1 when the prolog must stop the job. Our own
// bad input (onramp.conf, baseline, profile) is logged and never drains.
int jobcheck_main(JobCheckMode mode, int argc, char **argv);

} // namespace admit
} // namespace onramp
