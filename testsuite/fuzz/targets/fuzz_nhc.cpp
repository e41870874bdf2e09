// LBNL NHC's output (parse_nhc_output) and a site program's first line
// (first_output_line): bytes a site's program wrote, judged by root.
#include "admit/site.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	std::string text = fuzz_text(data, size);
	admit::NhcReport r = admit::parse_nhc_output(text);
	if (r.found && (r.message.empty() || r.message.size() > 200))
		__builtin_trap();
	if (!r.found && !r.message.empty())
		__builtin_trap();
	std::string line = admit::first_output_line(text);
	if (line.size() > 200 || line.find('\n') != std::string::npos)
		__builtin_trap();
	// Judging never throws, whatever the exit status.
	admit::SpawnResult s;
	s.started = true;
	s.rc = size ? data[0] : 0;
	s.out = text;
	(void)admit::evaluate_nhc(s);
	(void)admit::evaluate_site("x", s);
	return 0;
}
