// Shared by the fuzz targets (testsuite/fuzz/run builds each with
// clang -fsanitize=fuzzer,address,undefined against libonramp's sources).
// A target feeds the input to one parser and lets the sanitizers judge:
// a parser may refuse any input, never crash, leak or read out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "log.hpp"

// The input as text (embedded NULs kept).
inline std::string fuzz_text(const uint8_t *data, size_t size)
{
	return std::string(reinterpret_cast<const char *>(data), size);
}

// Split the input at NUL bytes into at most n fields (the rest empty).
template <size_t N> void fuzz_fields(const std::string &in, std::string (&out)[N])
{
	size_t pos = 0;
	for (size_t i = 0; i < N; i++) {
		if (pos > in.size()) {
			out[i].clear();
			continue;
		}
		size_t nul = in.find('\0', pos);
		out[i] = in.substr(pos, nul == std::string::npos ? std::string::npos : nul - pos);
		pos = nul == std::string::npos ? in.size() + 1 : nul + 1;
	}
}
