// onramp-epilog: slurm.conf Epilog=. After each job it looks for critical
// XIDs and volatile uncorrected ECC errors that appeared during the job; one
// revokes the node's admission and drains it with onramp's reason.
#include "admit/jobcheck.hpp"

int main(int argc, char **argv)
{
	return onramp::admit::jobcheck_main(onramp::admit::JobCheckMode::Epilog, argc, argv);
}
