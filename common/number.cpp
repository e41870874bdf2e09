#include "number.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "log.hpp"

namespace onramp {

Result<int64_t> parse_int(const std::string &text, int64_t min, int64_t max)
{
	const size_t digits = text.size() > 0 && text[0] == '-' ? 1 : 0;
	if (text.size() == digits ||
	    text.find_first_not_of("0123456789", digits) != std::string::npos)
		return Status::Error("'" + text + "' is not an integer");
	errno = 0;
	char *end = nullptr;
	long long v = strtoll(text.c_str(), &end, 10);
	if (errno == ERANGE || v < min || v > max)
		return Status::Error(strprintf("'%s' is out of range [%lld, %lld]", text.c_str(),
		                               static_cast<long long>(min),
		                               static_cast<long long>(max)));
	return static_cast<int64_t>(v);
}

Result<double> parse_number(const std::string &text)
{
	const size_t sign = text.size() > 0 && text[0] == '-' ? 1 : 0;
	if (text.size() == sign ||
	    text.find_first_not_of("0123456789.eE+-", sign) != std::string::npos ||
	    !(isdigit(static_cast<unsigned char>(text[sign])) || text[sign] == '.'))
		return Status::Error("'" + text + "' is not a number");
	errno = 0;
	char *end = nullptr;
	double v = strtod(text.c_str(), &end);
	if (end == text.c_str() || *end || errno == ERANGE || !std::isfinite(v))
		return Status::Error("'" + text + "' is not a number");
	return v;
}

} // namespace onramp
