-- job_submit/onramp's policy written for job_submit/lua, for the submit
-- benchmark's comparison column (bench/submit-cost). Keep it in step with
-- common/submit.cpp: the admission-path guard.
local ADMISSION_RESERVATION = "onramp_admission"
local ADMISSION_ACCOUNT = "onramp"

local function is_admission_resv(name)
	if name == nil then return false end
	for r in string.gmatch(name, "[^,]+") do
		if r == ADMISSION_RESERVATION then return true end
		if string.sub(r, 1, #ADMISSION_RESERVATION + 1) == ADMISSION_RESERVATION .. "_"
			and #r > #ADMISSION_RESERVATION + 1 then
			return true
		end
	end
	return false
end

local function guard(job_desc, uid, modify)
	local resv = is_admission_resv(job_desc.reservation)
	local acct = job_desc.account ~= nil and job_desc.account == ADMISSION_ACCOUNT
	local admin = (uid == 0)
	if not admin and (resv or acct) then
		slurm.log_user("onramp: the admission path is for Slurm admins only")
		return slurm.ESLURM_ACCESS_DENIED
	end
	if acct and not resv and (not modify or job_desc.reservation ~= nil) then
		slurm.log_user("onramp: admission jobs run only inside an admission reservation")
		return slurm.ESLURM_ACCESS_DENIED
	end
	return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	return guard(job_desc, submit_uid, false)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return guard(job_desc, modify_uid, true)
end
