#include "hostlist.hpp"

#include <cctype>
#include <cstdlib>
#include <vector>
#include <slurm/slurm.h>

namespace onramp {
namespace {

Status validate(const std::string &expr)
{
	if (expr.empty())
		return Status::Error("empty hostlist");
	int depth = 0;
	for (size_t i = 0; i < expr.size(); i++) {
		char c = expr[i];
		if (c == '[') {
			if (++depth > 1)
				return Status::Error("hostlist '" + expr +
				                     "': nested '[' at offset " +
				                     std::to_string(i));
		} else if (c == ']') {
			if (--depth < 0)
				return Status::Error("hostlist '" + expr +
				                     "': unmatched ']' at offset " +
				                     std::to_string(i));
		} else if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' &&
		           c != '.' && c != ',') {
			return Status::Error("hostlist '" + expr + "': invalid character '" +
			                     std::string(1, c) + "' at offset " +
			                     std::to_string(i));
		}
	}
	if (depth != 0)
		return Status::Error("hostlist '" + expr + "': unmatched '['");
	return Status::Ok();
}

} // namespace

Result<std::vector<std::string>> hostlist_expand(const std::string &expr)
{
	Status st = validate(expr);
	if (!st.ok())
		return st;
	// hostlist_t is a pointer type up to 23.02 and a struct from 23.11 on:
	// auto is the handle either way.
	auto hl = slurm_hostlist_create(expr.c_str());
	if (!hl)
		return Status::Error("hostlist '" + expr + "': not a valid Slurm hostlist");
	std::vector<std::string> out;
	char *h;
	while ((h = slurm_hostlist_shift(hl))) {
		out.emplace_back(h);
		free(h);
	}
	slurm_hostlist_destroy(hl);
	if (out.empty())
		return Status::Error("hostlist '" + expr + "': names no host");
	return out;
}

std::string hostlist_compress(const std::vector<std::string> &hosts)
{
	if (hosts.empty())
		return "";
	auto hl = slurm_hostlist_create(nullptr);
	if (!hl)
		return "";
	for (const auto &h : hosts)
		slurm_hostlist_push_host(hl, h.c_str());
	slurm_hostlist_uniq(hl);
	// slurm_hostlist_ranged_string() is in every version's libslurm (the
	// _malloc variant left in 23.11): grow the buffer until it fits.
	std::string r;
	for (size_t len = 1024;; len *= 2) {
		std::vector<char> buf(len);
		ssize_t n = slurm_hostlist_ranged_string(hl, buf.size(), buf.data());
		if (n >= 0) {
			r.assign(buf.data(), static_cast<size_t>(n));
			break;
		}
		if (len > (size_t{1} << 30))
			break;
	}
	slurm_hostlist_destroy(hl);
	return r;
}

} // namespace onramp
