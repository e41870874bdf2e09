#include "slurm/to_json.hpp"

namespace onramp {
namespace slurm {

Json to_json(const Job &j)
{
	Json o = Json::object();
	o.set("job", static_cast<int64_t>(j.id)).set("uid", static_cast<int64_t>(j.uid));
	o.set("state", j.state).set_bool("finished", j.finished()).set_bool("held", j.held);
	o.set("nodes", j.nodes).set("restarts", static_cast<int64_t>(j.restarts));
	o.set("switches", static_cast<int64_t>(j.req_switch));
	o.set("switch_wait_s", static_cast<int64_t>(j.wait4switch));
	return o.set("comment", j.comment).set("admin_comment", j.admin_comment);
}

Json to_json(const CtlConf &c)
{
	Json user = Json::object();
	user.set("name", c.slurm_user_name).set("uid", static_cast<int64_t>(c.slurm_user_uid));
	Json o = Json::object();
	o.set("cluster_name", c.cluster_name).set("slurm_user", user);
	o.set("job_submit_plugins", c.job_submit_plugins);
	o.set("controllers", static_cast<int64_t>(c.controllers));
	return o.set("state_save_location", c.state_save_location);
}

} // namespace slurm
} // namespace onramp
