// onramp_admission_check(): the C entry point the node_features plugin and
// the prolog call. Small-file reads only; the baseline digest is cached.
#include <string>

#include "admit/record.hpp"
#include "ctx.hpp"
#include "log.hpp"

extern "C" int onramp_admission_check(onramp_ctx_t *ctx, const char *node, char *why, size_t whylen)
{
	try {
		if (!ctx || !node || !*node) {
			onramp::copy_out("no context or node name", why, whylen);
			return -1;
		}
		auto cfg = onramp::ctx_config(ctx);
		std::string reason;
		auto j = onramp::admit::judge(*cfg, node, &reason);
		onramp::copy_out(reason, why, whylen);
		switch (j) {
		case onramp::admit::Judgement::Admitted:
			return 1;
		case onramp::admit::Judgement::NotAdmitted:
			return 0;
		case onramp::admit::Judgement::BaselineChanged:
			return 2;
		case onramp::admit::Judgement::Unknown:
			return -1;
		}
		return -1;
	} catch (const std::exception &e) {
		onramp::copy_out(std::string("internal error: ") + e.what(), why, whylen);
	} catch (...) {
		onramp::copy_out("internal error", why, whylen);
	}
	return -1;
}
