// Admission records (Record::from_json) and the reason string built from
// their code and detail.
#include "admit/record.hpp"
#include "fuzz.hpp"
#include "json.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	std::string text = fuzz_text(data, size);
	(void)admit::parse_iso_time(text);
	std::string r = admit::reason_string("X", text, 99);
	if (r.size() > 99)
		__builtin_trap();
	auto j = json_parse(text, "record.json");
	if (!j.ok())
		return 0;
	auto rec = admit::Record::from_json(j->get(), "record.json");
	if (rec.ok())
		(void)rec->to_json().dump();
	return 0;
}
