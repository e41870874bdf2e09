// Checkpoint manifests (Manifest::from_json) and the shard path check; a
// manifest that parses must survive its own to_json.
#include "fuzz.hpp"
#include "json.hpp"
#include "migrate/manifest.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	std::string text = fuzz_text(data, size);
	(void)ckpt::check_relative_path(text);
	uint64_t gen = 0;
	std::string dir;
	(void)ckpt::split_manifest_path(text, &dir, &gen);
	auto j = json_parse(text, "manifest.json");
	if (!j.ok())
		return 0;
	auto m = ckpt::Manifest::from_json(j->get(), "manifest.json");
	if (!m.ok())
		return 0;
	if (!ckpt::Manifest::from_json(m->to_json().get(), "again").ok())
		__builtin_trap();
	return 0;
}
