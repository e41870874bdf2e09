#include "submit.hpp"

#include <sstream>
#include <vector>

#include "log.hpp"

namespace onramp {
namespace {

std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	std::stringstream ss(s);
	std::string item;
	while (std::getline(ss, item, sep))
		if (!item.empty())
			out.push_back(item);
	return out;
}

// Slurm account names are case-insensitive: slurmctld lowercases the
// account after job_submit has run (sbatch -A ONRAMP is account onramp), so
// the comparison must not depend on case (ASCII, as Slurm's xstrtolower).
bool same_account(const std::string &a, const std::string &b)
{
	if (a.size() != b.size())
		return false;
	for (size_t i = 0; i < a.size(); i++) {
		unsigned char x = a[i], y = b[i];
		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return false;
	}
	return true;
}

// A job may name several reservations ("a,b"); any admission one counts.
std::string admission_reservation_in(const Config &cfg, const std::string &resv)
{
	for (const auto &r : split(resv, ','))
		if (is_admission_reservation(cfg, r))
			return r;
	return "";
}

Decision guard(const Config &cfg, const JobView &job, bool modify)
{
	Decision d;
	const std::string acct = cfg.str("AdmissionAccount");
	std::string resv = admission_reservation_in(cfg, job.reservation);
	bool adm_acct = !job.account.empty() && same_account(job.account, acct);

	if (!job.submit_is_admin && (!resv.empty() || adm_acct)) {
		d.reject = true;
		d.message = strprintf(
		    "onramp: %s is onramp's admission path, for Slurm admins only (uid %u)",
		    !resv.empty() ? ("reservation " + resv).c_str() : ("account " + acct).c_str(),
		    job.submit_uid);
		return d;
	}
	// At submission an admission-account job must name its reservation; a
	// modification that only changes the account is checked the same way
	// when it also names a reservation.
	if (adm_acct && resv.empty() && (!modify || !job.reservation.empty())) {
		d.reject = true;
		d.message = strprintf("onramp: jobs under account %s run only inside an onramp "
		                      "admission reservation (%s or %s_<node>)",
		                      acct.c_str(), cfg.str("AdmissionReservation").c_str(),
		                      cfg.str("AdmissionReservation").c_str());
		return d;
	}
	if (!resv.empty() || adm_acct)
		d.message = strprintf("admission job by uid %u accepted (reservation %s)",
		                      job.submit_uid, resv.empty() ? "-" : resv.c_str());
	return d;
}

} // namespace

bool is_admission_reservation(const Config &cfg, const std::string &name)
{
	const std::string base = cfg.str("AdmissionReservation");
	if (name == base)
		return true;
	return name.size() > base.size() + 1 && name.compare(0, base.size(), base) == 0 &&
	       name[base.size()] == '_';
}

static Decision decide(const PolicyState &st, const JobView &job, bool modify)
{
	Decision d = guard(*st.cfg, job, modify);
	if (d.reject)
		return d;
	rewire_decide(st, job, modify, &d);
	if (d.reject)
		return d;
	migrate_decide(st, job, modify, &d);
	return d;
}

Decision decide_submit(const PolicyState &st, const JobView &job)
{
	return decide(st, job, false);
}

Decision decide_modify(const PolicyState &st, const JobView &change)
{
	return decide(st, change, true);
}

} // namespace onramp
