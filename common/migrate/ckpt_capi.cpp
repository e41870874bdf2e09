// The C API of the checkpoint protocol (onramp_ckpt.h).
#include "migrate/onramp_ckpt.h"

#include <vector>

#include "atomic_file.hpp"
#include "ctx.hpp"
#include "migrate/manifest.hpp"

using namespace onramp;

namespace {
int fail(const Status &st, char *err, size_t errlen)
{
	copy_out(st.message(), err, errlen);
	return -1;
}
} // namespace

extern "C" int onramp_ckpt_begin(const char *dir, uint64_t *generation, char *err, size_t errlen)
{
	try {
		if (!dir || !generation)
			return fail(Status::Error("NULL argument"), err, errlen);
		uint64_t g = ckpt::next_generation(dir);
		Status st = make_dirs(ckpt::generation_dir(dir, g));
		if (!st.ok())
			return fail(st, err, errlen);
		*generation = g;
		return 0;
	} catch (...) {
		return fail(Status::Error("internal error"), err, errlen);
	}
}

extern "C" int onramp_ckpt_commit(const char *dir, uint64_t generation, int64_t step,
                                  const char *const *shards, size_t nshards, char *err,
                                  size_t errlen)
{
	try {
		if (!dir || (!shards && nshards))
			return fail(Status::Error("NULL argument"), err, errlen);
		std::vector<std::string> v;
		for (size_t i = 0; i < nshards; i++)
			v.push_back(shards[i] ? shards[i] : "");
		auto m = ckpt::commit(dir, generation, step, v);
		return m.ok() ? 0 : fail(m.status(), err, errlen);
	} catch (...) {
		return fail(Status::Error("internal error"), err, errlen);
	}
}

extern "C" int onramp_ckpt_verify(const char *dir, uint64_t generation, int64_t *step, char *err,
                                  size_t errlen)
{
	try {
		if (!dir)
			return fail(Status::Error("NULL argument"), err, errlen);
		auto m = ckpt::verify(dir, generation);
		if (!m.ok())
			return fail(m.status(), err, errlen);
		if (step)
			*step = m->step;
		return 0;
	} catch (...) {
		return fail(Status::Error("internal error"), err, errlen);
	}
}

extern "C" int onramp_ckpt_latest(const char *dir, uint64_t *generation, int64_t *step, char *err,
                                  size_t errlen)
{
	try {
		if (!dir)
			return fail(Status::Error("NULL argument"), err, errlen);
		auto m = ckpt::latest(dir);
		if (!m.ok())
			return fail(m.status(), err, errlen);
		if (generation)
			*generation = m->generation;
		if (step)
			*step = m->step;
		return 0;
	} catch (...) {
		return fail(Status::Error("internal error"), err, errlen);
	}
}
