// FakeSlurm: a SlurmClient over an in-memory cluster, for unit tests only
// (never in a shipped program). Jobs and nodes are plain structs the test
// sets up; update/hold/release/requeue/signal/drain change them the way
// slurmctld would; hooks let a test act as the job (write a checkpoint when
// signalled, resume when started). slurmctld "down" is simulated per call.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "slurm/client.hpp"

namespace onramp {
namespace slurm {

class FakeSlurm : public SlurmClient {
public:
	struct FakeJob {
		Job job;
		std::string exc_nodes;
		int num_nodes = 1;
	};
	std::map<uint32_t, FakeJob> jobs_;
	std::map<std::string, Node> nodes_;
	std::vector<Partition> partitions_;
	std::map<std::string, std::string> leaves_;
	std::map<std::string, Reservation> resvs_;
	// submit() fails with this message when set; else the job is PENDING
	// with the next id from next_job and name, "submit NAME" is an action,
	// submitted keeps b and on_submit is called (the test runs the job).
	std::string submit_error;
	// When set: a non-empty answer refuses that submission with it.
	std::function<std::string(const BatchJob &)> refuse_submit;
	uint32_t next_job = 100;
	std::vector<BatchJob> submitted;
	std::function<void(FakeJob &, const BatchJob &)> on_submit;
	std::vector<Trigger> triggers_;
	// Called each time a job is read (the test moves the job along).
	std::function<void(FakeJob &)> on_poll;
	uid_t slurm_user = 64030;
	CtlConf conf_;
	// The switch table switch_table() returns.
	std::vector<Switch> switches_;
	// Called for each node of reboot_nodes() after it set reboot_pending
	// (the test boots it: clears the flag, sets boot_time).
	std::function<void(Node &)> on_reboot;

	// The next down_calls calls find slurmctld down (each is retried through
	// retry_while_unreachable with a sleep that only adds to waited_s);
	// down_forever: every call, until cleared.
	int down_calls = 0;
	bool down_forever = false;
	double ctld_timeout_s = 600;
	double waited_s = 0;

	// Every call that changed something: "drain node1", "signal 7 12 batch"...
	std::vector<std::string> actions;

	// The job got a signal / was started (after a release) on nodes.
	std::function<void(FakeJob &, int sig)> on_signal;
	std::function<void(FakeJob &)> on_start;

	// A running batch job on nodes (a hostlist expression).
	FakeJob &add_job(uint32_t id, const std::string &nodes, const std::string &comment);
	void add_node(const std::string &name, const std::string &features,
	              const std::string &leaf = "");

	Result<std::optional<Job>> job(uint32_t id) override;
	Result<std::vector<Job>> jobs() override;
	Result<std::optional<Node>> node(const std::string &name) override;
	Result<std::vector<Node>> nodes() override;
	Result<std::vector<Partition>> partitions() override;
	Status update_job(uint32_t id, const JobUpdate &u) override;
	Status hold(uint32_t id) override;
	Status release(uint32_t id) override;
	Status requeue_hold(uint32_t id) override;
	Status signal_job(uint32_t id, int sig, SignalScope scope) override;
	Status cancel(uint32_t id) override;
	Status set_drain(const std::string &node, const std::string &reason) override;
	Status set_resume(const std::string &node) override;
	Status set_features_active(const std::string &node, const std::string &features) override;
	Result<std::map<std::string, std::string>> node_leaves() override;
	Result<uid_t> slurm_user_uid() override;
	Result<CtlConf> ctl_conf() override;
	Result<std::vector<Switch>> switch_table() override;
	using SlurmClient::create_reservation;
	Result<std::set<std::string>> reservations() override;
	Result<std::optional<Reservation>> reservation(const std::string &name) override;
	Status create_reservation(const Reservation &r, const std::string &users) override;
	Status set_reservation_nodes(const std::string &name, const std::string &nodes) override;
	Status delete_reservation(const std::string &name) override;
	Status reboot_nodes(const std::string &nodes, const std::string &reason) override;
	Result<uint32_t> submit(const BatchJob &b) override;
	Result<std::vector<Trigger>> triggers() override;

private:
	// false (with *st set) when slurmctld stays down for this call.
	bool answer(const char *what, Status *st);
	void start(FakeJob &j);
};

} // namespace slurm
} // namespace onramp
