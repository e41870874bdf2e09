/*****************************************************************************\
 *  topology_onramp.c - topology/onramp: Slurm's switch table from libonramp
 *  (C shim).
 *
 *  libonramp reads topology.conf (topology/tree's grammar) and the active
 *  rewire window (FabricFile, RewirePlan in onramp.conf) and computes the
 *  switch list, with the leaves under change cut off from the spine. This
 *  file only copies that list into switch_record_table. With no active
 *  window the table is the one topology/tree builds.
 *
 *  Never fatal: when libonramp refuses a new table (bad topology.conf, a
 *  bad or unreadable plan or onramp.conf while a table is in force, or the
 *  plan gone while a window is active) the previous table stays and the
 *  reason is logged.
\*****************************************************************************/

#include <string.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/run_in_daemon.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "onramp_shim.h"

const char plugin_name[] = "onramp topology plugin";
const char plugin_type[] = "topology/onramp";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static bool have_table = false;
static bool have_window = false; /* the table in force has an active window */

extern int init(void)
{
	onramp_shim_log_init();
	verbose("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

static void _free_table(switch_record_t *tbl, int cnt)
{
	for (int i = 0; tbl && (i < cnt); i++) {
		xfree(tbl[i].name);
		xfree(tbl[i].nodes);
		xfree(tbl[i].switches);
		xfree(tbl[i].switches_dist);
		xfree(tbl[i].switch_desc_index);
		xfree(tbl[i].switch_index);
		FREE_NULL_BITMAP(tbl[i].node_bitmap);
	}
	xfree(tbl);
}

extern int fini(void)
{
	_free_table(switch_record_table, switch_record_cnt);
	switch_record_table = NULL;
	switch_record_cnt = 0;
	switch_levels = 0;
	have_table = false;
	have_window = false;
	onramp_log_set_sink(NULL);
	return SLURM_SUCCESS;
}

/* Copy libonramp's table into a new switch_record_t array. */
static switch_record_t *_fill(const onramp_topo_t *t, int cnt)
{
	switch_record_t *tbl = xcalloc(cnt, sizeof(switch_record_t));

	for (int i = 0; i < cnt; i++) {
		onramp_topo_switch_t s;
		switch_record_t *r = &tbl[i];

		(void)onramp_topo_get_switch(t, i, &s);
		r->name = xstrdup(s.name);
		r->level = s.level;
		r->link_speed = s.link_speed;
		r->parent = s.parent;
		if (s.level == 0)
			r->nodes = xstrdup(s.nodes);
		else
			r->switches = xstrdup(s.switches);
		r->node_bitmap = bit_alloc(node_record_count);
		for (int k = 0; k < s.num_nodes; k++)
			bit_set(r->node_bitmap, s.node_index[k]);
		if (s.level != 0) {
			r->num_switches = s.num_children;
			r->switch_index =
			    xcalloc(s.num_children ? s.num_children : 1, sizeof(uint16_t));
			memcpy(r->switch_index, s.children, s.num_children * sizeof(uint16_t));
		}
		r->switches_dist = xcalloc(cnt, sizeof(uint32_t));
		memcpy(r->switches_dist, s.dist, cnt * sizeof(uint32_t));
		r->switch_desc_index = xcalloc(cnt, sizeof(uint16_t));
		r->num_desc_switches = s.num_desc;
		memcpy(r->switch_desc_index, s.desc, s.num_desc * sizeof(uint16_t));
		/* As tree: a switch above the leaves shows the nodes it reaches. */
		if (!r->nodes)
			r->nodes = bitmap2node_name(r->node_bitmap);
		debug("Switch level:%d name:%s nodes:%s switches:%s", r->level, r->name, r->nodes,
		      r->switches);
	}
	return tbl;
}

extern int topo_build_config(void)
{
	const char **names;
	char msg[1024] = "";
	char *conf, *topo;
	onramp_topo_t *t;
	int cnt;

	if (!node_record_count)
		return SLURM_SUCCESS;
	names = xcalloc(node_record_count, sizeof(char *));
	for (int i = 0; i < node_record_count; i++)
		names[i] = node_record_table_ptr[i] ? node_record_table_ptr[i]->name : NULL;
	conf = get_extra_conf_path("onramp.conf");
	topo = get_extra_conf_path("topology.conf");
	t = onramp_topo_build(conf, topo, names, node_record_count,
	                      (have_table ? ONRAMP_TOPO_PREVIOUS : 0) |
	                          (have_window ? ONRAMP_TOPO_PREVIOUS_WINDOW : 0),
	                      msg, sizeof(msg));
	xfree(names);
	xfree(conf);
	xfree(topo);
	if (!t) {
		error("%s: %s", plugin_type, msg);
		return SLURM_SUCCESS;
	}
	if (msg[0])
		info("%s: %s", plugin_type, msg);
	cnt = onramp_topo_switch_count(t);
	_free_table(switch_record_table, switch_record_cnt);
	switch_record_table = _fill(t, cnt);
	switch_record_cnt = cnt;
	switch_levels = onramp_topo_levels(t);
	have_table = true;
	have_window = onramp_topo_window_active(t);
	if (!onramp_topo_have_root(t) && running_in_daemon())
		info("TOPOLOGY: warning -- no switch can reach all nodes through its descendants. "
		     "If this is not intentional, fix the topology.conf file.");
	onramp_topo_free(t);
	return SLURM_SUCCESS;
}

/* As topology/tree: no node_rank fields. */
extern bool topo_generate_node_ranking(void)
{
	return false;
}

/*
 * As topology/tree: "s0.s4.s8.tux1" / "switch.switch.switch.node", one
 * component per level from the top, ranged when a node sits under several
 * switches of a level.
 */
extern int topo_get_node_addr(char *node_name, char **paddr, char **ppattern)
{
	node_record_t *node_ptr;
	int s_max_level = 0;

	if (switch_record_cnt == 0) {
		*paddr = xstrdup(node_name);
		*ppattern = xstrdup("node");
		return SLURM_SUCCESS;
	}
	node_ptr = find_node_record(node_name);
	if (!node_ptr)
		return SLURM_ERROR;
	for (int i = 0; i < switch_record_cnt; i++)
		if (switch_record_table[i].level > s_max_level)
			s_max_level = switch_record_table[i].level;
	*paddr = xstrdup("");
	*ppattern = xstrdup("");
	for (int j = s_max_level; j >= 0; j--) {
		hostlist_t sl = NULL;

		for (int i = 0; i < switch_record_cnt; i++) {
			if (switch_record_table[i].level != j)
				continue;
			if (!bit_test(switch_record_table[i].node_bitmap, node_ptr->index))
				continue;
			if (!sl)
				sl = hostlist_create(switch_record_table[i].name);
			else
				hostlist_push_host(sl, switch_record_table[i].name);
		}
		if (sl) {
			char *buf = hostlist_ranged_string_xmalloc(sl);
			xstrcat(*paddr, buf);
			xfree(buf);
			hostlist_destroy(sl);
		}
		xstrcat(*paddr, ".");
		xstrcat(*ppattern, "switch.");
	}
	xstrcat(*paddr, node_name);
	xstrcat(*ppattern, "node");
	return SLURM_SUCCESS;
}
