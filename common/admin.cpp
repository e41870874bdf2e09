#include "admin.hpp"

namespace onramp {

bool is_slurm_admin(uid_t uid, uid_t slurm_user_uid)
{
	return uid == 0 || uid == slurm_user_uid;
}

} // namespace onramp
