// onramp's metrics collectors. Each reads one source and adds its families
// to an Exposition: the node side (the node's admission record and kept
// verdicts, its IB/RoCE ports in sysfs) and the controller side (slurmctld
// through a SlurmClient, topology.conf with the fabric file and rewire plan,
// the campaign and migration journals through their own modules, the
// nodes' textfiles). What cannot be read becomes a read error of the
// exposition (onramp_metrics_read_errors{source}, its message kept for the
// caller to log); a collector never throws, exits or stops the others.
// Families are declared in the order written here, so the text a scrape
// returns keeps its layout.
#pragma once

#include <string>

#include "config.hpp"
#include "metrics/exposition.hpp"

namespace onramp {
namespace slurm {
class SlurmClient;
}
namespace metrics {

// ---- node side (onramp-metrics node)

// Every port under <sysfs_root>/sys/class/infiniband: up, rate, bytes
// sent/received (port_*_data counts 4-byte words), link_downed, and the
// hw_counters whose name holds "pause".
void collect_ports(Exposition &e, const std::string &node, const std::string &sysfs_root);
// The node's admission state (record, judgement, checks, NCCL numbers, the
// verdicts kept in <NodeStateDir>/verdicts) and then its ports. Read errors
// carry the label node.
void collect_node(Exposition &e, const Config &cfg, const std::string &node,
                  const std::string &sysfs_root);

// ---- controller side (onramp-metrics controller / serve)

// onramp_nodes{state}: every node slurmctld knows in exactly one of
// under_admission (in its <AdmissionReservation>_<node> reservation),
// drained_by_onramp, drained_other, admitted (AdmittedFeature active),
// not_admitted. A client that cannot read the nodes: a read error
// "slurmctld" and no samples.
void collect_nodes(Exposition &e, const Config &cfg, slurm::SlurmClient &c);
// Node to leaf (topology.conf), leaf uplink capacity (FabricFile) and the
// rewire windows by state (RewirePlan).
void collect_topology(Exposition &e, const Config &cfg);
// Campaigns from <StateDir>/onramp.db (campaign::Journal): state, nodes by
// wave and state, and the seconds (now - reboot) of each node still in
// flight. No journal file: the families without samples.
void collect_campaigns(Exposition &e, const Config &cfg, double now);
// Migrations from <StateDir>/migrate.db (migrate::Journal): counts by state
// and each migration's journaled duration.
void collect_migrations(Exposition &e, const Config &cfg);
// Merge every *.prom file of dir (node_exporter textfiles), sorted by name.
void merge_textfiles(Exposition &e, const std::string &dir);

// Everything the controller exports, in order: nodes, topology, campaigns,
// migrations, then the textfiles of textfile_dir ("" for none). Read
// errors are logged as warnings.
std::string controller_text(const Config &cfg, slurm::SlurmClient &c,
                            const std::string &textfile_dir, double now);

} // namespace metrics
} // namespace onramp
