#include "hostlist.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <slurm/slurm.h>

namespace onramp {
namespace {

const uint64_t kMaxHosts = 1u << 20;
const uint64_t kMaxRange = 64 * 1024; // libslurm's MAX_RANGE

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
	// Every name non-empty with at most one [...], every range N or N-M with
	// N <= M (at most 18 digits, kMaxRange hosts), at most kMaxHosts hosts in
	// all: libslurm takes "node[1-4,]", "node[5-4]", "a[1]b[2]", "n[1-99999]"
	// or "a,,b" and leaks.
	auto digits = [](const std::string &d) {
		return !d.empty() && d.size() <= 18 &&
		       d.find_first_not_of("0123456789") == std::string::npos;
	};
	auto bad = [&](const std::string &what, size_t at) {
		return Status::Error("hostlist '" + expr + "': " + what + " at offset " +
		                     std::to_string(at));
	};
	size_t name_start = 0, groups = 0;
	uint64_t hosts = 0;
	for (size_t i = 0; i <= expr.size(); i++) {
		if (i == expr.size() || expr[i] == ',') { // a top-level name ends
			if (i == name_start)
				return bad("empty name", i);
			name_start = i + 1;
			groups = 0;
			hosts++;
			continue;
		}
		if (expr[i] != '[')
			continue;
		if (++groups > 1)
			return bad("more than one [...] in a name", i);
		size_t close = expr.find(']', i);
		for (size_t k = i + 1; k <= close;) {
			size_t e = std::min(expr.find(',', k), close);
			std::string item = expr.substr(k, e - k);
			size_t dash = item.find('-');
			std::string lo = item.substr(0, dash);
			std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
			if (!digits(lo) || !digits(hi) ||
			    strtoull(lo.c_str(), nullptr, 10) > strtoull(hi.c_str(), nullptr, 10))
				return bad("range '" + item + "' (not N or N-M with N <= M)", k);
			uint64_t span =
			    strtoull(hi.c_str(), nullptr, 10) - strtoull(lo.c_str(), nullptr, 10);
			if (span >= kMaxRange)
				return bad("range '" + item + "' (more than " +
				               std::to_string(kMaxRange) + " hosts)",
				           k);
			hosts += span;
			if (hosts > kMaxHosts)
				return bad("more than " + std::to_string(kMaxHosts) + " hosts", k);
			k = e + 1;
		}
		i = close;
	}
	return Status::Ok();
}

} // namespace

Result<std::vector<std::string>> hostlist_expand(const std::string &expr, const std::string &what)
{
	auto r = hostlist_expand(expr);
	if (!r.ok())
		return Status::Error(what + ": " + r.status().message());
	return r;
}

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

Result<size_t> hostlist_count(const std::string &expr)
{
	Status st = validate(expr);
	if (!st.ok())
		return st;
	auto hl = slurm_hostlist_create(expr.c_str());
	if (!hl)
		return Status::Error("hostlist '" + expr + "': not a valid Slurm hostlist");
	slurm_hostlist_uniq(hl);
	int n = slurm_hostlist_count(hl);
	slurm_hostlist_destroy(hl);
	if (n <= 0)
		return Status::Error("hostlist '" + expr + "': names no host");
	return static_cast<size_t>(n);
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
