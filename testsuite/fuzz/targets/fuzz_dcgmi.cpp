// `dcgmi diag -j` output: the "DCGM GPU Diagnostic" JSON report.
#include "admit/dcgm.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	auto r = admit::parse_dcgm_diag(fuzz_text(data, size));
	if (r.ok()) {
		if (r->results < 0 ||
		    r->failures.size() + r->warnings.size() > static_cast<size_t>(r->results))
			__builtin_trap();
		for (const auto &f : r->failures) {
			std::string code = admit::dcgm_code(f.test);
			if (code.rfind("DCGM_", 0) != 0 || code.size() > 5 + 49)
				__builtin_trap();
			for (int g : f.gpus)
				if (g < 0 || g > 9999)
					__builtin_trap();
		}
	}
	return 0;
}
