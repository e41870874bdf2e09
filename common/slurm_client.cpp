#include "slurm_client.hpp"

#include <cstring>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "log.hpp"

namespace onramp {

Result<std::string> node_reason(const std::string &node)
{
	node_info_msg_t *msg = nullptr;
	if (slurm_load_node_single(&msg, const_cast<char *>(node.c_str()), SHOW_ALL) !=
	    SLURM_SUCCESS)
		return Status::Error("cannot read node " + node + ": " +
		                     slurm_strerror(slurm_get_errno()));
	std::string reason;
	bool found = false;
	for (uint32_t i = 0; msg && i < msg->record_count; i++) {
		node_info_t *n = &msg->node_array[i];
		if (n->name && node == n->name) {
			found = true;
			reason = n->reason ? n->reason : "";
		}
	}
	slurm_free_node_info_msg(msg);
	if (!found)
		return Status::Error("unknown node " + node);
	return reason;
}

Status drain_node(const std::string &node, const std::string &reason, bool *kept)
{
	if (kept)
		*kept = false;
	auto cur = node_reason(node);
	if (cur.ok() && !cur.value().empty() && cur.value().rfind("onramp:", 0) != 0) {
		log_info("node %s: keeping the admin's reason '%s' (not writing '%s')",
		         node.c_str(), cur.value().c_str(), reason.c_str());
		if (kept)
			*kept = true;
		return Status::Ok();
	}
	if (!cur.ok())
		log_warn("%s; draining anyway", cur.status().message().c_str());
	update_node_msg_t msg;
	slurm_init_update_node_msg(&msg);
	std::string names = node, why = reason;
	msg.node_names = &names[0];
	msg.node_state = NODE_STATE_DRAIN;
	msg.reason = &why[0];
	if (slurm_update_node(&msg) != SLURM_SUCCESS)
		return Status::Error("cannot drain node " + node + ": " +
		                     slurm_strerror(slurm_get_errno()));
	return Status::Ok();
}

} // namespace onramp
