// onramp-prolog: slurm.conf Prolog= (with PrologFlags=Alloc). The backstop
// for unplanned reboots: before each job it checks, in well under a second,
// that the node is admitted for its current boot, has its GPUs and saw no
// new critical XID; otherwise it drains the node with onramp's reason and
// exits 1 so Slurm requeues the job (SchedulerParameters=nohold_on_prolog_fail).
#include "admit/jobcheck.hpp"

int main(int argc, char **argv)
{
	return onramp::admit::jobcheck_main(onramp::admit::JobCheckMode::Prolog, argc, argv);
}
