#include "admit/sim_fabric.hpp"

#include <cerrno>
#include <map>
#include <unistd.h>

#include "fleet/localise.hpp"
#include "json.hpp"
#include "rewire/window.hpp"

namespace onramp {
namespace admit {

namespace {

std::string resolve(const std::string &dir, const std::string &path)
{
	return path.empty() || path[0] == '/' ? path : dir + "/" + path;
}

} // namespace

Result<double> sim_fabric_factor(const std::string &dir, const std::string &a, const std::string &b)
{
	std::string path = dir + "/fabric-faults.json";
	if (access(path.c_str(), F_OK) != 0 && errno == ENOENT)
		return 1.0;
	auto j = json_load_file(path);
	if (!j.ok())
		return j.status();
	JsonReader r(path);
	if (!r.expect_object(j->get(), ""))
		return r.status();
	r.only_keys(j->get(), "", {"topology", "fabric", "uplinks", "links", "spines"});
	std::string topo_path = resolve(dir, r.str(j->get(), "", "topology"));
	std::string fabric_path = resolve(dir, r.str_or(j->get(), "", "fabric", ""));
	std::map<std::string, std::map<std::string, double>> factors;
	for (const char *k : {"uplinks", "links", "spines"}) {
		const json_t *o = r.obj(j->get(), "", k, false);
		const char *name;
		const json_t *v;
		json_object_foreach(const_cast<json_t *>(o), name, v)
		{
			double f = json_is_number(v) ? json_number_value(v) : -1;
			if (!(f > 0 && f <= 1))
				r.error(JsonReader::join(k, name),
				        "a factor must be a number in (0, 1]");
			factors[k][name] = f;
		}
	}
	if (r.failed())
		return r.status();
	auto topo = topology_load(topo_path);
	if (!topo.ok())
		return Status::Error(path + ": " + topo.status().message());
	std::unique_ptr<Fabric> fabric;
	if (!fabric_path.empty()) {
		auto f = fabric_load(fabric_path, topo.value());
		if (!f.ok())
			return Status::Error(path + ": " + f.status().message());
		fabric.reset(new Fabric(std::move(f.value())));
	}
	auto view = fleet::FabricView::from(topo.value(), fabric.get());
	if (!view.ok())
		return Status::Error(path + ": " + view.status().message());
	std::string spine = view->route(a, b);
	if (spine.empty())
		return 1.0;
	auto factor = [&](const char *kind, const std::string &name) {
		auto it = factors[kind].find(name);
		return it == factors[kind].end() ? 1.0 : it->second;
	};
	double f = factor("spines", spine);
	for (const std::string *l : {&view->leaf_of(a), &view->leaf_of(b)})
		f *= factor("uplinks", *l) * factor("links", *l + "/" + spine);
	return f;
}

} // namespace admit
} // namespace onramp
