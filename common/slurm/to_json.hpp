// The JSON form of the client's records that onramp's tools print for
// shell code (read with jq, never Slurm's text): onramp-migrate job and
// onramp-config --slurm. Keys are part of those tools' documented output
// (onrampctl-migrate(8), onramp-config(8)).
#pragma once

#include "json.hpp"
#include "slurm/client.hpp"

namespace onramp {
namespace slurm {

// {"job", "uid", "state", "finished", "held", "nodes", "restarts",
// "switches", "switch_wait_s", "comment", "admin_comment"}: state as Slurm
// names it, finished per Job::finished(), nodes "" when none, switches and
// switch_wait_s the --switches request (0 and 0 without one), the comments
// as strings (the user's text is never parsed here).
Json to_json(const Job &j);

// {"cluster_name", "slurm_user": {"name", "uid"}, "job_submit_plugins",
// "state_save_location"}.
Json to_json(const CtlConf &c);

} // namespace slurm
} // namespace onramp
