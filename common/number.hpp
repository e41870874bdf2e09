// Strict numbers for every option and configuration value onramp reads: the
// whole text is the number (no leading blanks, no trailing garbage, no '+',
// no hex, no exponent for integers), the range is checked before anything
// is cast, and the error names the text. Loose atoi/strtod turn "1.9",
// "12abc" or "99999999999" into a different number without a word.
#pragma once

#include <cstdint>
#include <string>

#include "status.hpp"

namespace onramp {

// A decimal integer in [min, max]: optional '-', then digits only.
Result<int64_t> parse_int(const std::string &text, int64_t min = INT64_MIN,
                          int64_t max = INT64_MAX);

// A finite decimal number (strtod's grammar without leading blanks, hex,
// inf or nan).
Result<double> parse_number(const std::string &text);

} // namespace onramp
