// job_submit/onramp's policy (decide_submit, decide_modify) with the job's
// strings as a user sets them: name, comment-like SPANK environment,
// features, account, QOS, partition, reservation, and its numbers. Fields
// are separated by NUL bytes in the input.
#include <cstring>
#include <memory>

#include "fuzz.hpp"
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
	std::string f[14];
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
	return 0;
}
