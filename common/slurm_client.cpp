#include "slurm_client.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <signal.h>
#include <vector>

#include "atomic_file.hpp"
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "log.hpp"

namespace onramp {

Result<std::string> node_reason(const std::string &node)
{
	node_info_msg_t *msg = nullptr;
	slurm_client_init();
	if (slurm_load_node_single(&msg, const_cast<char *>(node.c_str()), SHOW_ALL) !=
	    SLURM_SUCCESS)
		return Status::Error("cannot read node " + node + ": " + slurm_strerror(errno));
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
	slurm_client_init();
	if (slurm_update_node(&msg) != SLURM_SUCCESS)
		return Status::Error("cannot drain node " + node + ": " + slurm_strerror(errno));
	return Status::Ok();
}

Status set_active_feature(const std::string &node, const std::string &feature, bool active)
{
	node_info_msg_t *msg = nullptr;
	slurm_client_init();
	if (slurm_load_node_single(&msg, const_cast<char *>(node.c_str()), SHOW_ALL) !=
	    SLURM_SUCCESS)
		return Status::Error("cannot read node " + node + ": " + slurm_strerror(errno));
	std::string cur;
	for (uint32_t i = 0; msg && i < msg->record_count; i++)
		if (msg->node_array[i].name && node == msg->node_array[i].name)
			cur =
			    msg->node_array[i].features_act ? msg->node_array[i].features_act : "";
	slurm_free_node_info_msg(msg);
	std::string out;
	bool present = false;
	size_t p = 0;
	while (p <= cur.size() && !cur.empty()) {
		size_t c = cur.find(',', p);
		std::string f = cur.substr(p, c == std::string::npos ? std::string::npos : c - p);
		p = (c == std::string::npos) ? cur.size() + 1 : c + 1;
		if (f.empty())
			continue;
		if (f == feature) {
			present = true;
			if (!active)
				continue;
		}
		out += (out.empty() ? "" : ",") + f;
	}
	if (present == active)
		return Status::Ok();
	if (active)
		out += (out.empty() ? "" : ",") + feature;
	update_node_msg_t upd;
	slurm_init_update_node_msg(&upd);
	std::string names = node;
	upd.node_names = &names[0];
	upd.features_act = &out[0];
	slurm_client_init();
	if (slurm_update_node(&upd) != SLURM_SUCCESS)
		return Status::Error("cannot update the active features of node " + node + ": " +
		                     slurm_strerror(errno));
	return Status::Ok();
}

Status reregister_slurmd(const std::string &node)
{
	DIR *d = opendir("/proc");
	if (!d)
		return Status::Error("cannot read /proc");
	std::vector<pid_t> any, named;
	while (struct dirent *e = readdir(d)) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		auto cmd = read_file(std::string("/proc/") + e->d_name + "/cmdline", 1 << 16);
		if (!cmd.ok() || cmd->empty())
			continue;
		std::vector<std::string> argv;
		for (size_t p = 0; p < cmd->size();) {
			size_t z = cmd->find('\0', p);
			argv.push_back(
			    cmd->substr(p, z == std::string::npos ? std::string::npos : z - p));
			p = (z == std::string::npos) ? cmd->size() : z + 1;
		}
		std::string exe = argv[0].substr(argv[0].rfind('/') + 1);
		if (exe != "slurmd")
			continue;
		any.push_back(pid);
		for (size_t i = 0; i + 1 < argv.size(); i++)
			if (argv[i] == "-N" && argv[i + 1] == node)
				named.push_back(pid);
	}
	closedir(d);
	pid_t target = !named.empty() ? named[0] : (any.size() == 1 ? any[0] : 0);
	if (!target)
		return Status::Error("no slurmd for node " + node + " on this host");
	if (kill(target, SIGHUP) != 0)
		return Status::Error(
		    strprintf("cannot signal slurmd %d: %s", (int)target, strerror(errno)));
	return Status::Ok();
}

} // namespace onramp
