// job_submit/onramp's policy (decide_submit, decide_modify) with the job's
// strings as a user sets them: name, comment-like SPANK environment,
// features, account, QOS, partition, reservation, and its numbers; then
// its shape (tasks, CPUs, node list, the job as it is) against a rewire
// window. Fields are separated by NUL bytes in the input.
#include <cstring>
#include <memory>
#include <unistd.h>

#include "fuzz.hpp"
#include "fuzz_topo.hpp"
#include "submit.hpp"

using namespace onramp;

namespace {

const PolicyState &policy()
{
	static const PolicyState st = [] {
		auto c =
		    Config::parse("AdmissionReservation=onramp_admission AdmissionAccount=onramp\n"
		                  "MigratePartitions=batch,train MigrateQos=ckpt\n",
		                  "onramp.conf");
		if (!c.ok())
			abort();
		PolicyState s;
		s.cfg = std::make_shared<const Config>(c.value());
		if (!migrate_load(*s.cfg, &s.migrate).ok())
			abort();
		return s;
	}();
	return st;
}

// The same policy during a rewire window cutting leaf2 of the example
// topology (6 of its 8 nodes connected): the job's shape decides.
const PolicyState &window_policy()
{
	static const PolicyState st = [] {
		char dir[] = "/tmp/onramp-fuzz-submit.XXXXXX";
		if (!mkdtemp(dir))
			abort();
		const std::string d = dir;
		auto topo = read_file(std::string(ONRAMP_FUZZ_ETC) + "/topology.conf.example");
		if (!topo.ok() || !write_file_atomic(d + "/topology.conf", topo.value()).ok() ||
		    !write_file_atomic(d + "/plan.json",
		                       R"({"windows": [{"id": "w1", "start": "2026-01-01T00:00:00Z",
 "end": "2036-01-01T00:00:00Z", "leaves": ["leaf2"], "state": "active"}]})")
		         .ok())
			abort();
		auto c = Config::parse("RewirePlan=" + d + "/plan.json\n", d + "/onramp.conf");
		if (!c.ok())
			abort();
		PolicyState s;
		s.cfg = std::make_shared<const Config>(c.value());
		if (!rewire_load(*s.cfg, &s.rewire).ok() || !s.rewire)
			abort();
		return s;
	}();
	return st;
}

uint32_t u32(const std::string &s)
{
	uint32_t v = 0;
	memcpy(&v, s.data(), std::min(s.size(), sizeof v));
	return v;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	std::string f[18];
	fuzz_fields(fuzz_text(data, size), f);
	JobView j;
	j.name = f[0];
	j.features = f[1];
	j.account = f[2];
	j.qos = f[3];
	j.partition = f[4];
	j.reservation = f[5];
	j.spank_env = {f[6], f[7], "ONRAMP_CHECKPOINT_DIR=" + f[8],
	               "ONRAMP_CHECKPOINT_SIGNAL=" + f[9]};
	j.current_admin_comment = f[10];
	uint32_t n = u32(f[11]), m = u32(f[12]), k = u32(f[13]);
	j.submit_uid = n & 0xffff;
	j.user_id = j.submit_uid;
	j.submit_is_admin = n & 0x10000;
	j.batch = n & 0x20000;
	j.warn_batch = n & 0x40000;
	j.requeue = static_cast<int>((n >> 20) % 3) - 1;
	j.current_requeue = static_cast<int>((n >> 22) % 3) - 1;
	j.min_nodes = m & 0xffff;
	j.max_nodes = m >> 16;
	j.time_limit = k;
	j.warn_signal = static_cast<uint16_t>(k & 0xff);
	j.warn_time = static_cast<uint16_t>(k >> 16);
	j.req_switch = k >> 28;
	j.default_partition = "batch";
	j.default_qos = "normal";
	Decision d = decide_submit(policy(), j);
	if (d.reject && d.message.empty())
		__builtin_trap(); // a rejection always says why
	(void)decide_modify(policy(), j);
	// The shape fields, and the job as it is for a modify.
	uint32_t t = u32(f[14]), c = u32(f[15]), w = u32(f[16]);
	j.num_tasks = t;
	j.ntasks_per_node = c & 0xffff;
	j.cpus_per_task = c >> 16;
	j.node_cpus_max = w & 0xffff;
	j.overcommit = w & 0x10000;
	j.req_switch_set = w & 0x20000;
	j.release = w & 0x40000;
	j.current_pending = w & 0x80000;
	j.current_held = w & 0x100000;
	j.current_user_held = w & 0x200000;
	j.req_nodes_set = w & 0x400000;
	j.req_nodes = f[17];
	j.current_req_nodes = f[17].substr(f[17].size() / 2);
	j.current_min_nodes = t >> 16;
	j.current_max_nodes = c & 0xff;
	j.current_num_tasks = w >> 24;
	j.current_req_switch = c >> 28;
	if (f[17].size() <= 256) { // a range like a[0-99999999] is libslurm's time
		d = decide_submit(window_policy(), j);
		if (d.reject && d.message.empty())
			__builtin_trap();
		d = decide_modify(window_policy(), j);
		if (d.reject && d.message.empty())
			__builtin_trap();
	}
	return 0;
}
