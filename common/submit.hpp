// job_submit/onramp's policy, independent of Slurm's structures. The C shim
// copies the fields it needs into a JobView and applies the Decision.
//
// Admission-path guard: the admission reservations (AdmissionReservation,
// optionally suffixed "_<node>") and the AdmissionAccount are for Slurm
// admins and SlurmUser only; a job under the admission account may run only
// inside an admission reservation. User jobs are otherwise left alone.
#pragma once

#include <cstdint>
#include <string>

#include "config.hpp"

namespace onramp {

struct JobView {
	uint32_t submit_uid = 0;
	bool submit_is_admin = false; // root, SlurmUser or AdminLevel=Admin
	std::string account, qos, partition, reservation, name, features;
	uint32_t min_nodes = 0, max_nodes = 0; // 0: not given
};

struct Decision {
	bool reject = false;
	std::string message; // to the user when rejected, to the log otherwise
};

// Does name denote one of onramp's admission reservations?
bool is_admission_reservation(const Config &cfg, const std::string &name);

// REQUIRES: nothing; does no I/O (runs under slurmctld's locks).
Decision decide_submit(const Config &cfg, const JobView &job);
// For job_modify: job carries only the fields being changed.
Decision decide_modify(const Config &cfg, const JobView &change);

} // namespace onramp
