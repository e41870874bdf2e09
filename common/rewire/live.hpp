// A rewiring window against the live cluster, for `onrampctl rewire
// start|finish` (through onramp-rewire): which running jobs a window would
// strand, whether slurmctld's switch table shows the cut, whether
// job_submit/onramp took up the plan, and releasing the jobs onramp held.
// Every Slurm read goes through SlurmClient (libslurm's structures): a
// job's user-written fields (comment, name, paths) are never read here, so
// no user text can select a job, and held jobs are found by the mark in
// their AdminComment, which users cannot write.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "rewire/topology.hpp"
#include "slurm/client.hpp"
#include "status.hpp"

namespace onramp {

// A running job on nodes of more than one leaf switch.
struct CrossingJob {
	uint32_t id = 0;
	std::string nodes; // hostlist expression, as slurmctld holds it
};

// Running jobs whose nodes lie under more than one leaf switch of topo (the
// topology.conf topology/onramp reads) with at least one node under a leaf
// of cut: the jobs a window cutting those leaves would leave spanning the
// spine. A node under no leaf counts for none. Error when the jobs cannot
// be read or a job's node list does not expand (naming the job).
Result<std::vector<CrossingJob>> rewire_jobs_across(slurm::SlurmClient &c, const TopologyConf &topo,
                                                    const std::set<std::string> &cut);

// How long to wait for slurmctld: at most tries looks, sleep(every_s)
// between them (default: really sleep).
struct RewireWait {
	int tries = 30;
	double every_s = 1;
	std::function<void(double)> sleep;
};

// Wait until slurmctld's switch table shows every leaf of leaves cut off
// from the spine (cut) or under it again (!cut). Error naming window_id
// when it does not within w, or when the table cannot be read.
Status rewire_confirm_table(slurm::SlurmClient &c, const std::string &window_id,
                            const std::set<std::string> &leaves, bool cut, const RewireWait &w);

// Wait until job_submit/onramp has plan_path, as it is on disk now, in
// force: its acknowledgement, <StateSaveLocation>/onramp_job_submit.loaded,
// lists the file's stamp (file_stamp). Ok at once when JobSubmitPlugins does
// not list onramp; Ok after one sleep(2) when the acknowledgement cannot be
// read (not on the controller; *note says so). Error when the plugin kept
// its previous policy (its reason) or did not take the plan up within w.
Status rewire_settle_submit(slurm::SlurmClient &c, const std::string &plan_path,
                            const RewireWait &w, std::string *note);

// Release the jobs job_submit/onramp held for window_id: pending, held and
// marked in AdminComment (rewire_held_by; job_submit/onramp does not mark a
// job its user submitted held, which stays held). Returns the released ids in job order; each job
// that slurmctld refused to release is named in *failed.
Result<std::vector<uint32_t>> rewire_release_held(slurm::SlurmClient &c,
                                                  const std::string &window_id,
                                                  std::vector<std::string> *failed);

} // namespace onramp
