// Migration in job_submit/onramp (see common/submit.hpp).
#include "submit.hpp"

namespace onramp {

void migrate_decide(const PolicyState &st, const JobView &job, bool modify, Decision *d)
{
	(void)st;
	(void)job;
	(void)modify;
	(void)d;
}

Status migrate_load(const Config &cfg, std::shared_ptr<const void> *out)
{
	(void)cfg;
	out->reset();
	return Status::Ok();
}

} // namespace onramp
