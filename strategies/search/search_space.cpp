#include "strategies/search/search_space.h"

#include "hardware_models/src/hardware_json.h"
#include "strategies/strategy/strategy_json.h"

#include <algorithm>

#include <array>

namespace stratasim {
namespace {

constexpr std::array<std::string_view, 26> kAxisNames = {
    "tp", "pp", "dp", "micro_batch", "schedule", "interleave", "recompute", "zero_stage",
    "sequence_parallel", "fusion", "overlap_dp", "overlap_tp", "dtype", "devices", "cluster",
    "cp", "ep", "overlap_ep", "shard_group", "streams", "offload", "stage_layers",
    "recompute_modules", "ep_dispatch", "cp_comm", "recompute_layers"};

constexpr std::array<EnumName<int>, 2> kBools = {{{"false", 0}, {"true", 1}}};
constexpr std::array<std::string_view, 5> kFusions = {"none", "epilogues", "megatron", "all", "chains"};

bool is_enum_axis(Axis a) {
  return a == Axis::kSchedule || a == Axis::kRecompute || a == Axis::kDtype ||
         a == Axis::kFusion || a == Axis::kSequenceParallel || a == Axis::kOverlapDp ||
         a == Axis::kOverlapTp || a == Axis::kOverlapEp || a == Axis::kOffload ||
         a == Axis::kStageLayers || a == Axis::kEpDispatch || a == Axis::kCpComm;
}

int enum_value(Axis a, const JsonNode& v) {
  switch (a) {
    case Axis::kSchedule: return static_cast<int>(v.as_enum(kScheduleNames));
    case Axis::kRecompute: return static_cast<int>(v.as_enum(kRecomputeNames));
    case Axis::kDtype: return static_cast<int>(v.as_enum(kDTypeNames));
    case Axis::kOffload: return static_cast<int>(v.as_enum(kOffloadNames));
    case Axis::kStageLayers: return static_cast<int>(v.as_enum(kStageSplitNames));
    case Axis::kEpDispatch: return static_cast<int>(v.as_enum(kEpDispatchNames));
    case Axis::kCpComm: return static_cast<int>(v.as_enum(kCpCommNames));
    case Axis::kFusion: {
      for (size_t i = 0; i < kFusions.size(); ++i) {
        if (v.is_string() && v.as_string() == kFusions[i]) return static_cast<int>(i);
      }
      v.fail("is not one of: none, epilogues, megatron, all, chains");
    }
    default:  // booleans
      if (v.raw().is_boolean()) return v.as_bool() ? 1 : 0;
      return v.as_enum(kBools);
  }
}

std::vector<int> range_values(const JsonNode& n, Axis a) {
  n.allow_keys({"from", "to", "step"});
  const int from = static_cast<int>(n.integer("from", 0, 1 << 24));
  const int to = static_cast<int>(n.integer("to", from, 1 << 24));
  std::vector<int> out;
  const JsonNode step = n.at("step");
  if (step.is_string()) {
    if (step.as_string() != "x2") step.fail("must be a positive integer or \"x2\" (doubling)");
    if (from < 1) n.at("from").fail("must be at least 1 for a doubling range");
    for (long long v = from; v <= to; v *= 2) out.push_back(static_cast<int>(v));
  } else {
    const int s = static_cast<int>(step.as_integer(1, 1 << 24));
    for (int v = from; v <= to; v += s) out.push_back(v);
  }
  (void)a;
  return out;
}

// A hardware sweep: catalog cluster presets (device type, node and network together).
AxisValues read_cluster_axis(const JsonNode& n) {
  AxisValues axis{Axis::kCluster, {}, {}};
  const std::vector<std::string> known = catalog_names(CatalogKind::kCluster);
  for (size_t i = 0; i < n.size(); ++i) {
    const JsonNode v = n.element(i);
    const std::string name = v.as_string();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      v.fail("is not a cluster preset (known: " + list + ")");
    }
    axis.values.push_back(static_cast<int>(axis.names.size()));
    axis.names.push_back(name);
  }
  return axis;
}

AxisValues read_axis(Axis a, const JsonNode& n) {
  if (a == Axis::kCluster) {
    AxisValues axis = read_cluster_axis(n);
    if (axis.values.empty()) n.fail("gives no values");
    return axis;
  }
  AxisValues axis{a, {}, {}};
  if (a == Axis::kRecomputeModules) {  // each value a list of module names
    if (!n.is_array()) n.fail("must be a list of module lists, e.g. [[\"core_attn\"], [\"mlp\", \"moe_act\"]]");
    for (size_t i = 0; i < n.size(); ++i) axis.values.push_back(read_recompute_module_list(n.element(i)));
    if (axis.values.empty()) n.fail("gives no values");
    return axis;
  }
  if (n.is_object()) {
    if (is_enum_axis(a)) n.fail("must be a list of values for this axis");
    axis.values = range_values(n, a);
  } else {
    for (size_t i = 0; i < n.size(); ++i) {
      const JsonNode v = n.element(i);
      const bool zero_ok = a == Axis::kZeroStage || a == Axis::kRecomputeLayers;
      axis.values.push_back(is_enum_axis(a) ? enum_value(a, v)
                                            : static_cast<int>(v.as_integer(zero_ok ? 0 : 1,
                                                                            a == Axis::kZeroStage ? 3 : 1 << 24)));
    }
  }
  if (axis.values.empty()) n.fail("gives no values");
  return axis;
}

}  // namespace

std::string_view axis_name(Axis a) { return kAxisNames[static_cast<size_t>(a)]; }

std::string AxisValues::value_text(int index) const {
  const int v = values[index];
  switch (axis) {
    case Axis::kSchedule: return std::string(enum_to_name(kScheduleNames, static_cast<ScheduleKind>(v)));
    case Axis::kRecompute: return std::string(enum_to_name(kRecomputeNames, static_cast<Recompute>(v)));
    case Axis::kDtype: return std::string(enum_to_name(kDTypeNames, static_cast<DType>(v)));
    case Axis::kOffload: return std::string(enum_to_name(kOffloadNames, static_cast<Offload>(v)));
    case Axis::kStageLayers: return std::string(enum_to_name(kStageSplitNames, static_cast<StageSplit>(v)));
    case Axis::kFusion: return std::string(kFusions[v]);
    case Axis::kCluster: return names[v];
    case Axis::kRecomputeModules: return recompute_modules_text(static_cast<uint8_t>(v));
    case Axis::kEpDispatch: return std::string(enum_to_name(kEpDispatchNames, static_cast<EpDispatch>(v)));
    case Axis::kCpComm: return std::string(enum_to_name(kCpCommNames, static_cast<CpComm>(v)));
    case Axis::kSequenceParallel:
    case Axis::kOverlapDp:
    case Axis::kOverlapTp: return v ? "true" : "false";
    default: return std::to_string(v);
  }
}

uint64_t SearchSpace::size() const {
  uint64_t n = 1;
  for (const AxisValues& a : axes) n *= a.values.size();
  return n;
}

void normalize_knobs(Strategy& s) {
  if (s.tp == 1) s.sequence_parallel = false;
  if (s.tp == 1) s.overlap_tp = false;
  if (s.pp == 1 && s.schedule == ScheduleKind::kInterleaved1F1B) s.schedule = ScheduleKind::k1F1B;
  if (s.schedule != ScheduleKind::kInterleaved1F1B) s.interleave = 1;
  if (s.ep == 1) s.overlap_ep = false;
  if (s.ep == 1) s.ep_dispatch = EpDispatch::kAllToAll;
  if (s.cp == 1) s.cp_comm = CpComm::kRing;
  if (s.pp == 1 && s.stage_split != StageSplit::kExplicit) s.stage_split = StageSplit::kAuto;
  if (s.workload == Workload::kInference) s.schedule = ScheduleKind::kGPipe;  // what lower() runs
  if (s.recompute != Recompute::kSelective) s.recompute_modules = kModuleCoreAttn;
  if (s.recompute != Recompute::kFull) s.recompute_layers = 0;
}

namespace {

void apply_axis(Axis axis, int v, SearchPoint& point) {
  Strategy& s = point.strategy;
  switch (axis) {
    case Axis::kTp: s.tp = v; break;
    case Axis::kPp: s.pp = v; break;
    case Axis::kDp: s.dp = v; break;
    case Axis::kMicroBatch: s.micro_batch = v; break;
    case Axis::kSchedule: s.schedule = static_cast<ScheduleKind>(v); break;
    case Axis::kInterleave: s.interleave = v; break;
    case Axis::kRecompute: s.recompute = static_cast<Recompute>(v); break;
    case Axis::kZeroStage: s.zero_stage = v; break;
    case Axis::kSequenceParallel: s.sequence_parallel = v != 0; break;
    case Axis::kFusion: fusion_preset(kFusions[v], &s.fusion); break;
    case Axis::kOverlapDp: s.overlap_dp = v != 0; break;
    case Axis::kOverlapTp: s.overlap_tp = v != 0; break;
    case Axis::kOverlapEp: s.overlap_ep = v != 0; break;
    case Axis::kDtype: s.dtype = static_cast<DType>(v); break;
    case Axis::kDevices: point.devices = v; break;
    case Axis::kCluster: point.cluster = v; break;
    case Axis::kCp: s.cp = v; break;
    case Axis::kEp: s.ep = v; break;
    case Axis::kShardGroup: s.shard_group = v; break;
    case Axis::kStreams: s.streams = v; break;
    case Axis::kOffload: s.offload = static_cast<Offload>(v); break;
    case Axis::kStageLayers: s.stage_split = static_cast<StageSplit>(v), s.stage_layers.clear(); break;
    case Axis::kRecomputeModules: s.recompute_modules = static_cast<uint8_t>(v); break;
    case Axis::kEpDispatch: s.ep_dispatch = static_cast<EpDispatch>(v); break;
    case Axis::kCpComm: s.cp_comm = static_cast<CpComm>(v); break;
    case Axis::kRecomputeLayers: s.recompute_layers = v; break;
  }
}

// The value of the strategy field an axis sets (the normalizable ones; others: the raw value).
int field_of(Axis axis, const Strategy& s, int raw) {
  switch (axis) {
    case Axis::kSequenceParallel: return s.sequence_parallel ? 1 : 0;
    case Axis::kOverlapTp: return s.overlap_tp ? 1 : 0;
    case Axis::kOverlapEp: return s.overlap_ep ? 1 : 0;
    case Axis::kSchedule: return static_cast<int>(s.schedule);
    case Axis::kInterleave: return s.interleave;
    case Axis::kStageLayers: return static_cast<int>(s.stage_split);
    case Axis::kRecomputeModules: return s.recompute_modules;
    case Axis::kEpDispatch: return static_cast<int>(s.ep_dispatch);
    case Axis::kCpComm: return static_cast<int>(s.cp_comm);
    case Axis::kRecomputeLayers: return s.recompute_layers;
    default: return raw;
  }
}

// Whether normalization made this point equal to one with a smaller value index on some axis:
// the canonical index of a normalized axis is that of the normalized value, or else the first
// value that normalizes to it.
bool is_duplicate(const SearchSpace& space, const std::vector<int>& chosen, const SearchPoint& p) {
  for (size_t k = 0; k < space.axes.size(); ++k) {
    const AxisValues& a = space.axes[k];
    const int raw = a.values[chosen[k]];
    const int norm = field_of(a.axis, p.strategy, raw);
    if (norm == raw) continue;
    for (int j = 0; j < chosen[k]; ++j) {
      SearchPoint q = p;
      apply_axis(a.axis, a.values[j], q);
      normalize_knobs(q.strategy);
      if (field_of(a.axis, q.strategy, a.values[j]) == norm) return true;
    }
    const auto it = std::find(a.values.begin(), a.values.end(), norm);
    if (it != a.values.end() && it - a.values.begin() != chosen[k]) return true;
  }
  return false;
}

// Whether the space varies tp, pp, cp, placement devices or the cluster but not dp.
bool fills_dp(const SearchSpace& space) {
  bool degrees = false;
  for (const AxisValues& a : space.axes) {
    if (a.axis == Axis::kDp) return false;
    degrees |= a.axis == Axis::kTp || a.axis == Axis::kPp || a.axis == Axis::kCp ||
               a.axis == Axis::kCluster || a.axis == Axis::kDevices;
  }
  return degrees;
}

}  // namespace

void point_at(const SearchSpace& space, uint64_t index, const Strategy& base, int base_devices,
              SearchPoint& point) {
  point.strategy = base;
  point.devices = base_devices;
  point.cluster = -1;
  point.duplicate = false;
  // A space that varies the other degrees but not dp leaves dp to fill the devices (dp 0):
  // the scenario's own dp fits only its own tp x pp x cp.
  if (fills_dp(space)) point.strategy.dp = 0;
  thread_local std::vector<int> chosen;
  chosen.assign(space.axes.size(), 0);
  for (size_t k = space.axes.size(); k-- > 0;) {
    const AxisValues& a = space.axes[k];
    chosen[k] = static_cast<int>(index % a.values.size());
    index /= a.values.size();
    apply_axis(a.axis, a.values[chosen[k]], point);
  }
  const Strategy raw = point.strategy;
  normalize_knobs(point.strategy);
  if (!(raw == point.strategy)) point.duplicate = is_duplicate(space, chosen, point);
}

SearchSpace read_search_space(const JsonNode& n) {
  n.require_object();
  SearchSpace space;
  for (auto it = n.raw().begin(); it != n.raw().end(); ++it) {
    size_t k = 0;
    while (k < kAxisNames.size() && kAxisNames[k] != it.key()) ++k;
    if (k == kAxisNames.size()) {
      std::string known;
      for (auto name : kAxisNames) known += (known.empty() ? "" : ", ") + std::string(name);
      throw InputError(n.file(), n.path() + "." + it.key(), "\"" + it.key() + "\"",
                       "is not a search axis (axes: " + known + ")");
    }
    space.axes.push_back(read_axis(static_cast<Axis>(k), n.at(it.key())));
  }
  // Points are indexed by a 64-bit integer: a product that overflows would report 0 points.
  uint64_t points = 1;
  for (const AxisValues& a : space.axes) {
    if (__builtin_mul_overflow(points, a.values.size(), &points) || points > (uint64_t{1} << 62)) {
      n.fail("spans more than 2^62 strategies; give fewer values per axis");
    }
  }
  return space;
}

Json to_json(const SearchSpace& space) {
  Json j = Json::object();
  for (const AxisValues& a : space.axes) {
    Json values = Json::array();
    for (size_t i = 0; i < a.values.size(); ++i) values.push_back(a.value_text(static_cast<int>(i)));
    j[std::string(axis_name(a.axis))] = values;
  }
  return j;
}

}  // namespace stratasim
