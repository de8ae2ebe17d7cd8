#include "sim/simgrid/sim_run.h"

#include "sim/core/json_reader.h"

namespace stratasim::simgrid_detail {

// Compact arrays, not objects: a 1024-GPU timeline has tens of thousands of events.
std::string to_wire(const SimRun& run) {
  Json hosts = Json::array();
  for (const HostResult& h : run.hosts) {
    hosts.push_back({h.rank, h.replica, h.busy_s, h.pipeline_end_s, h.p2p_s, h.dp_s, h.dp_end_s,
                     h.embedding_s, h.optimizer_s, h.finish_s, h.tp_s, h.tp_exposed_s, h.zero_s,
                     h.zero_exposed_s, h.ep_s, h.amax_s});
  }
  Json events = Json::array();
  for (const TimelineEvent& e : run.events) {
    events.push_back(
        {e.device, static_cast<int>(e.kind), e.micro_batch, e.chunk, e.start_s, e.end_s, e.name, e.bytes});
  }
  return json_text(Json{{"hosts", hosts},
                        {"events", events},
                        {"activities", run.activities},
                        {"nodes", run.nodes},
                        {"simulated_s", run.simulated_s}});
}

SimRun from_wire(const std::string& text) {
  const Json j = Json::parse(text);
  SimRun run;
  for (const Json& h : j.at("hosts")) {
    run.hosts.push_back({h[0].get<int>(), h[1].get<int>(), h[2].get<double>(), h[3].get<double>(),
                         h[4].get<double>(), h[5].get<double>(), h[6].get<double>(),
                         h[7].get<double>(), h[8].get<double>(), h[9].get<double>(),
                         h[10].get<double>(), h[11].get<double>(), h[12].get<double>(),
                         h[13].get<double>(), h[14].get<double>(), h[15].get<double>()});
  }
  for (const Json& e : j.at("events")) {
    run.events.push_back({e[0].get<int>(), static_cast<EventKind>(e[1].get<int>()), e[2].get<int>(),
                          e[3].get<int>(), e[4].get<double>(), e[5].get<double>(),
                          e[6].get<std::string>(), e[7].get<double>()});
  }
  run.activities = j.at("activities").get<long long>();
  run.nodes = j.at("nodes").get<int>();
  run.simulated_s = j.at("simulated_s").get<double>();
  return run;
}

}  // namespace stratasim::simgrid_detail
