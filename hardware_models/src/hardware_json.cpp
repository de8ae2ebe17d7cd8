// JSON readers and writers for DeviceSpec, LinkSpec and HardwareModel, and the catalog lookups.
//
// Every description may be given as
//   - a catalog name:            "A100-SXM4-80GB"
//   - a path ending in ".json":  "hw/my_gpu.json" (relative to the file that names it)
//   - an object with all fields: {"name": ..., "peak": ..., ...}
//   - an object that starts from a catalog entry or a file and overrides some fields:
//       {"preset": "dgx_a100", "devices": 1024, "network": {"oversubscription": 4}}
//       {"file": "hw/my_cluster.json", "devices": 64}
// In an override, nested records (efficiency.matmul, node, network, ...) are merged field by
// field; "peak" is replaced as a whole (it lists the supported dtypes). "device", "device_link"
// and "nic" are descriptions as above; inside an override, one that names no base (no name,
// preset or file: {"device": {"memory": "40GiB"}}) changes only those fields of the inherited one.
#include "hardware_models/src/hardware_json.h"

#include <cstdlib>
#include <cstdio>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "hardware_models/src/catalog_data.h"

namespace stratasim {
namespace {

// A chain of preset/file references longer than this is almost certainly a cycle.
constexpr int kMaxReferenceDepth = 16;

constexpr std::array<EnumName<NetworkTopology>, 2> kTopologyNames = {{
    {"fat_tree", NetworkTopology::kFatTree},
    {"rail_optimized", NetworkTopology::kRailOptimized},
}};

constexpr std::array<DType, kNumDTypes> kAllDTypes = {DType::kFp32, DType::kTf32, DType::kBf16,
                                                      DType::kFp16, DType::kFp8};

std::string join_path(const std::string& base, std::string_view key) {
  return base.empty() ? std::string(key) : base + "." + std::string(key);
}

[[noreturn]] void fail_missing(const JsonNode& object, std::string_view key,
                               const std::string& rule) {
  throw InputError(object.file(), join_path(object.path(), key), "(missing)", rule);
}

// ---- scalar rules ------------------------------------------------------------------------

std::string name_string(const JsonNode& n) {
  std::string s = n.as_string();
  if (s.empty()) n.fail("must not be empty");
  return s;
}

double positive_quantity(const JsonNode& n, Dimension dim) {
  double v = n.as_quantity(dim);
  if (!(v > 0)) n.fail("must be greater than zero");
  return v;
}

// A device or link figure within physical bounds, so that no prediction divides by an absurdly
// small number (1e-300 FLOP/s would give infinite times): one table, the rule in the message.
double plausible_quantity(const JsonNode& n, Dimension dim) {
  const double v = positive_quantity(n, dim);
  struct Bound {
    Dimension dim;
    double lo, hi;
    const char* rule;
  };
  static constexpr Bound kBounds[] = {
      {Dimension::kFlopRate, 1e6, 1e18, "must be between 1 MFLOP/s and 1 EFLOP/s per device"},
      {Dimension::kBandwidth, 1e3, 1e14, "must be between 1 kB/s and 100 TB/s"},
      {Dimension::kBytes, 1e6, 1e14, "must be between 1 MB and 100 TB"},
  };
  for (const Bound& b : kBounds) {
    if (b.dim == dim && (v < b.lo || v > b.hi)) n.fail(b.rule);
  }
  return v;
}

double fraction(const JsonNode& n) {
  double v = n.as_number();
  if (!(v > 0 && v <= 1)) n.fail("must be a fraction in (0, 1]");
  return v;
}

int count_at_least(const JsonNode& n, int min) {
  int64_t v = n.as_integer(INT32_MIN, INT32_MAX);
  if (v < min) n.fail("must be at least " + std::to_string(min));
  return static_cast<int>(v);
}

// Reads `key` of `object`. A full description requires it (missing -> "is a required field");
// an override (partial) keeps the base value when the key is absent.
template <class F>
void field(const JsonNode& object, std::string_view key, bool partial, F&& read) {
  if (partial && !object.has(key)) return;
  read(object.at(key));
}

// An optional key: absent keeps the current value (the struct default, or the base value).
template <class F>
void optional_field(const JsonNode& object, std::string_view key, F&& read) {
  if (auto child = object.find(key)) read(*child);
}

// The node to blame for a rule that involves several fields: the first of `keys` present in
// `object`, else the object itself.
JsonNode blame(const JsonNode& object, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys) {
    if (object.has(k)) return object.at(k);
  }
  return object;
}

// ---- quantities as text ------------------------------------------------------------------

// Units to_json may write, per dimension. The shortest text that parses back to exactly the same
// double wins; the plain SI unit (first) always round-trips, so there is always a candidate.
std::span<const std::string_view> output_units(Dimension dim) {
  static constexpr std::string_view kTime[] = {"s", "ms", "us", "ns"};
  static constexpr std::string_view kBytes[] = {"B",  "KB",  "MB",  "GB",  "TB",
                                                "KiB", "MiB", "GiB", "TiB"};
  static constexpr std::string_view kBandwidth[] = {"Bps",  "KBps", "MBps", "GBps",
                                                    "TBps", "Gbps", "Tbps"};
  static constexpr std::string_view kFlopRate[] = {"Flops", "GFlops", "TFlops", "PFlops"};
  static constexpr std::string_view kFlops[] = {"FLOP", "GFLOP", "TFLOP", "PFLOP"};
  static constexpr std::string_view kCount[] = {""};
  switch (dim) {
    case Dimension::kTime: return kTime;
    case Dimension::kBytes: return kBytes;
    case Dimension::kBandwidth: return kBandwidth;
    case Dimension::kFlopRate: return kFlopRate;
    case Dimension::kFlops: return kFlops;
    case Dimension::kCount: return kCount;
  }
  return kCount;
}

std::string shortest_number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return "nan";
  return std::string(buf, end);
}

std::string quantity_text(double value, Dimension dim) {
  std::string best;
  for (std::string_view unit : output_units(dim)) {
    std::string one = "1";  // the unit's factor is what "1<unit>" parses to
    one += unit;
    std::optional<double> factor = parse_quantity(one, dim, nullptr);
    if (!factor || *factor <= 0) continue;
    std::string text = shortest_number(value / *factor) + std::string(unit);
    std::optional<double> back = parse_quantity(text, dim, nullptr);
    if (!back || *back != value) continue;  // not exact in this unit
    if (best.empty() || text.size() < best.size()) best = std::move(text);
  }
  if (best.empty()) best = shortest_number(value) + std::string(output_units(dim).front());
  return best;
}

// ---- references: catalog names and files -------------------------------------------------

template <class T>
struct Kind;
template <>
struct Kind<DeviceSpec> {
  static constexpr CatalogKind value = CatalogKind::kDevice;
};
template <>
struct Kind<LinkSpec> {
  static constexpr CatalogKind value = CatalogKind::kLink;
};
template <>
struct Kind<HardwareModel> {
  static constexpr CatalogKind value = CatalogKind::kCluster;
};

template <class T>
T read_any(const JsonNode& n, int depth);

// A nested description inside an override that names no base edits the inherited value.
template <class T>
T read_nested(const JsonNode& c, const T& inherited, bool partial, int depth);

template <class T>
T read_catalog_entry(const CatalogText& entry, int depth) {
  std::string file = hw_detail::catalog_file_name(entry);
  Json doc = parse_json_text(entry.text, file);
  JsonNode root(doc, file, "");
  T value = read_any<T>(root, depth);
  if (value.name != entry.name) {
    blame(root, {"name"}).fail("must equal the catalog entry's file name '" +
                               std::string(entry.name) + "'");
  }
  return value;
}

// `name_node` is a string naming a catalog entry of T's kind.
template <class T>
T from_catalog(const JsonNode& name_node, int depth) {
  std::string name = name_node.as_string();
  const CatalogText* entry = hw_detail::find_entry(Kind<T>::value, name);
  if (!entry) name_node.fail(hw_detail::unknown_name_rule(Kind<T>::value, name));
  return read_catalog_entry<T>(*entry, depth + 1);
}

// `path_node` is a string naming a JSON file, relative to the file that contains it.
template <class T>
T from_file(const JsonNode& path_node, int depth) {
  if (path_node.file().starts_with(hw_detail::kCatalogFilePrefix)) {
    path_node.fail("is a file reference; a built-in catalog entry may only name catalog entries");
  }
  std::filesystem::path path(path_node.as_string());
  if (path.is_relative()) path = std::filesystem::path(path_node.file()).parent_path() / path;
  std::string resolved = path.lexically_normal().generic_string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(resolved, ec)) {
    path_node.fail("names a file that does not exist: " + resolved);
  }
  Json doc = load_json_file(resolved);
  JsonNode root(doc, resolved, "");
  return read_any<T>(root, depth + 1);
}

// ---- field readers (apply = overwrite the fields present) --------------------------------

std::array<double, kNumDTypes> read_peak(const JsonNode& n) {
  n.allow_keys({"fp32", "tf32", "bf16", "fp16", "fp8"});
  std::array<double, kNumDTypes> peak{};
  bool any = false;
  for (DType t : kAllDTypes) {
    if (auto c = n.find(dtype_name(t))) {
      double v = c->as_quantity(Dimension::kFlopRate);
      if (!(v > 0)) {
        c->fail("must be greater than zero; leave out a dtype the device does not support");
      }
      v = plausible_quantity(*c, Dimension::kFlopRate);
      peak[static_cast<size_t>(t)] = v;
      any = true;
    }
  }
  if (!any) n.fail("must give the dense peak of at least one dtype (fp32, tf32, bf16, fp16, fp8)");
  return peak;
}

void apply_curve(const JsonNode& n, EfficiencyCurve& curve, bool partial, Dimension size_dim) {
  n.allow_keys({"max_fraction", "half_size"});
  field(n, "max_fraction", partial, [&](const JsonNode& c) { curve.max_fraction = fraction(c); });
  field(n, "half_size", partial,
        [&](const JsonNode& c) { curve.half_size = c.as_quantity(size_dim); });
}

// A head dimension written as an object key ("64"), of `value`'s object.
double head_dim_key(const std::string& key, const JsonNode& value) {
  char* end = nullptr;
  const double dim = std::strtod(key.c_str(), &end);
  if (end == key.c_str() || *end != '\0' || !(dim >= 8 && dim <= 1024)) {
    value.fail("keys must be head dimensions between 8 and 1024 (e.g. \"64\")");
  }
  return dim;
}

// One pass of a fused attention kernel (hardware_model.h AttentionPass).
void apply_attention_pass(const JsonNode& n, AttentionPass& a, bool partial) {
  n.allow_keys({"max_fraction", "half_keys", "causal_fraction", "causal_half_keys",
                "head_dim_scale"});
  auto keys = [](const JsonNode& c) {
    const double v = c.as_number();
    if (!(v >= 0 && v <= 1e7)) c.fail("must be a number of keys between 0 and 1e7");
    return v;
  };
  field(n, "max_fraction", partial, [&](const JsonNode& c) { a.max_fraction = fraction(c); });
  field(n, "half_keys", partial, [&](const JsonNode& c) { a.half_keys = keys(c); });
  optional_field(n, "causal_fraction", [&](const JsonNode& c) { a.causal_fraction = fraction(c); });
  optional_field(n, "causal_half_keys", [&](const JsonNode& c) { a.causal_half_keys = keys(c); });
  optional_field(n, "head_dim_scale", [&](const JsonNode& c) {
    c.require_object();
    a.head_dim_scale.clear();
    for (const auto& item : c.raw().items()) {
      const JsonNode v = c.at(item.key());
      const double dim = head_dim_key(item.key(), v);
      const double f = v.as_number();
      if (!(f > 0 && f <= 4)) v.fail("must be a plateau factor in (0, 4]");
      a.head_dim_scale.emplace_back(dim, f);
    }
  });
}

// An older attention kernel against FlashAttention-2 (hardware_model.h AttentionRatio): per
// head dim, per mask, [sequence length, kernel TFLOP/s, FA2 TFLOP/s] rows in ascending length.
AttentionRatio read_attention_ratio(const JsonNode& n) {
  n.require_object();
  AttentionRatio r;
  for (const auto& item : n.raw().items()) {
    const JsonNode dim_node = n.at(item.key());
    const double dim = head_dim_key(item.key(), dim_node);
    dim_node.require_object();
    dim_node.allow_keys({"noncausal", "causal"});
    for (const bool causal : {false, true}) {
      const auto rows = dim_node.find(causal ? "causal" : "noncausal");
      if (!rows) continue;
      if (!rows->is_array() || rows->size() == 0) rows->fail("must be a non-empty array of [length, kernel, FA2] rows");
      AttentionRatioSeries s{dim, causal, {}};
      for (size_t i = 0; i < rows->size(); ++i) {
        const JsonNode row = rows->element(i);
        if (!row.is_array() || row.size() != 3) row.fail("must be [sequence length, kernel TFLOP/s, FA2 TFLOP/s]");
        const double seq = row.element(0).as_number();
        const double fa1 = row.element(1).as_number(), fa2 = row.element(2).as_number();
        if (!(seq >= 1 && seq <= 1e7)) row.element(0).fail("must be a sequence length between 1 and 1e7");
        if (!s.points.empty() && !(seq > s.points.back()[0])) row.element(0).fail("must exceed the previous row's length");
        if (!(fa1 > 0 && fa1 < 1e5)) row.element(1).fail("must be a positive TFLOP/s figure below 1e5");
        if (!(fa2 > 0 && fa2 < 1e5)) row.element(2).fail("must be a positive TFLOP/s figure below 1e5");
        s.points.push_back({seq, fa1, fa2});
      }
      r.series.push_back(std::move(s));
    }
  }
  return r;
}

void allow_device_keys(const JsonNode& n) {
  n.allow_keys({"name", "peak", "vector_flops", "memory", "memory_bandwidth", "efficiency",
                "kernel_overhead", "reserved_memory", "cuda_context", "compute_units", "price_per_hour",
                "overlap_slowdown", "ep_overlap_rate", "sustained_clock", "speed_variability", "kernel_factors", "task", "source",
                "preset", "file"});
}

void apply(const JsonNode& n, DeviceSpec& d, bool partial, int /*depth*/) {
  field(n, "name", partial, [&](const JsonNode& c) { d.name = name_string(c); });
  field(n, "peak", partial, [&](const JsonNode& c) { d.peak_flops = read_peak(c); });
  field(n, "vector_flops", partial,
        [&](const JsonNode& c) { d.vector_flops = plausible_quantity(c, Dimension::kFlopRate); });
  field(n, "memory", partial,
        [&](const JsonNode& c) { d.memory_B = plausible_quantity(c, Dimension::kBytes); });
  field(n, "memory_bandwidth", partial, [&](const JsonNode& c) {
    d.memory_bandwidth_Bps = plausible_quantity(c, Dimension::kBandwidth);
  });
  field(n, "efficiency", partial, [&](const JsonNode& e) {
    e.allow_keys({"matmul", "memory", "matmul_fp8", "matmul_fp8_rowwise", "flash2", "flash3",
                   "cudnn", "flash1", "flash_triton"});
    optional_field(e, "flash1", [&](const JsonNode& c) { d.flash1 = read_attention_ratio(c); });
    optional_field(e, "flash_triton", [&](const JsonNode& c) { d.flash_triton = read_attention_ratio(c); });
    field(e, "matmul", partial,
          [&](const JsonNode& c) { apply_curve(c, d.matmul, partial, Dimension::kFlops); });
    field(e, "memory", partial,
          [&](const JsonNode& c) { apply_curve(c, d.memory, partial, Dimension::kBytes); });
    optional_field(e, "matmul_fp8", [&](const JsonNode& c) {
      apply_curve(c, d.matmul_fp8, partial, Dimension::kFlops);
    });
    optional_field(e, "matmul_fp8_rowwise", [&](const JsonNode& c) {
      apply_curve(c, d.matmul_fp8_rowwise, partial, Dimension::kFlops);
    });
    for (auto [key, curves] : {std::pair{"flash2", &d.flash2}, std::pair{"flash3", &d.flash3},
                              std::pair{"cudnn", &d.cudnn}}) {
      optional_field(e, key, [&, curves = curves](const JsonNode& a) {
        a.allow_keys({"forward", "backward"});
        field(a, "forward", partial,
              [&](const JsonNode& c) { apply_attention_pass(c, curves->forward, partial); });
        field(a, "backward", partial,
              [&](const JsonNode& c) { apply_attention_pass(c, curves->backward, partial); });
      });
    }
  });
  field(n, "kernel_overhead", partial,
        [&](const JsonNode& c) { d.kernel_overhead_s = c.as_quantity(Dimension::kTime); });
  field(n, "reserved_memory", partial,
        [&](const JsonNode& c) { d.reserved_memory_B = c.as_quantity(Dimension::kBytes); });
  optional_field(n, "cuda_context",
                 [&](const JsonNode& c) { d.cuda_context_B = c.as_quantity(Dimension::kBytes); });
  optional_field(n, "compute_units", [&](const JsonNode& c) {
    d.compute_units = static_cast<int>(c.as_integer(0, 100000));
  });
  optional_field(n, "overlap_slowdown", [&](const JsonNode& c) {
    const double v = c.as_number();
    if (v < 1 || v > 4) c.fail("must be between 1 and 4 (compute time factor while overlapped)");
    d.overlap_slowdown = v;
  });
  optional_field(n, "ep_overlap_rate", [&](const JsonNode& c) {
    const double v = c.as_number();
    if (!(v > 0 && v <= 1)) {
      c.fail("must be above 0 and at most 1 (an exchange's rate beside compute over its rate alone)");
    }
    d.ep_overlap_rate = v;
  });
  optional_field(n, "sustained_clock", [&](const JsonNode& c) {
    const double v = c.as_number();
    if (!(v >= 0.5 && v <= 1)) {
      c.fail("must be between 0.5 and 1 (sustained over short-loop tensor-core throughput)");
    }
    d.sustained_clock = v;
  });
  optional_field(n, "speed_variability", [&](const JsonNode& c) {
    const double v = c.as_number();
    if (!(v >= 0 && v <= 0.2)) {
      c.fail("must be between 0 and 0.2 (standard deviation of device speed, a fraction)");
    }
    d.speed_variability = v;
  });
  optional_field(n, "price_per_hour", [&](const JsonNode& c) {
    double v = c.as_number();
    if (v < 0) c.fail("must not be negative (US dollars per device-hour)");
    d.price_per_hour = v;
  });
  // {"image_pipeline": {"fused": 1.1, "unfused": 0.95}, ...}: calibrate's per-family factors.
  optional_field(n, "kernel_factors", [&](const JsonNode& c) {
    c.require_object();
    for (const auto& item : c.raw().items()) {
      const JsonNode f = c.at(item.key());
      const int index = kernel_family_index(item.key());
      if (index < 0) f.fail("names no kernel family (one of: " + kernel_family_list() + ")");
      f.allow_keys({"fused", "unfused"});
      int form = 0;
      for (const char* key : {"fused", "unfused"}) {
        optional_field(f, key, [&](const JsonNode& v) {
          const double x = v.as_number();
          if (!(x >= 0.05 && x <= 20)) v.fail("must be between 0.05 and 20 (measured time over the roofline)");
          d.family_factors[index][form] = x;
        });
        ++form;
      }
    }
  });
  // {"flops": "2.9GFlops", "overhead": "18us", "cores": 2}: single-threaded tasks.
  optional_field(n, "task", [&](const JsonNode& c) {
    c.allow_keys({"flops", "overhead", "cores"});
    d.task_flops = plausible_quantity(c.at("flops"), Dimension::kFlopRate);
    d.task_overhead_s = c.at("overhead").as_quantity(Dimension::kTime);
    if (d.task_overhead_s > 1) c.at("overhead").fail("must be at most 1 s (the fixed cost of one task)");
    d.cores = static_cast<int>(c.at("cores").as_integer(1, 1 << 16));
  });
  optional_field(n, "source", [&](const JsonNode& c) { d.source = c.as_string(); });

  if (d.reserved_memory_B >= d.memory_B) {
    JsonNode at = blame(n, {"reserved_memory", "memory"});
    at.fail("leaves no usable memory: reserved_memory (" + format_bytes(d.reserved_memory_B) +
            ") must be less than memory (" + format_bytes(d.memory_B) + ")");
  }
  if (d.cuda_context_B > d.reserved_memory_B) {
    JsonNode at = blame(n, {"cuda_context", "reserved_memory"});
    at.fail("cuda_context (" + format_bytes(d.cuda_context_B) +
            ") is the part of reserved_memory held outside the allocator, so it must be at most "
            "reserved_memory (" + format_bytes(d.reserved_memory_B) + ")");
  }
}

void allow_link_keys(const JsonNode& n) {
  n.allow_keys({"name", "bandwidth", "latency", "efficiency", "size_efficiency", "source",
                "preset", "file"});
}

void apply(const JsonNode& n, LinkSpec& l, bool partial, int /*depth*/) {
  field(n, "name", partial, [&](const JsonNode& c) { l.name = name_string(c); });
  field(n, "bandwidth", partial,
        [&](const JsonNode& c) { l.bandwidth_Bps = plausible_quantity(c, Dimension::kBandwidth); });
  field(n, "latency", partial,
        [&](const JsonNode& c) { l.latency_s = c.as_quantity(Dimension::kTime); });
  field(n, "efficiency", partial, [&](const JsonNode& c) { l.efficiency = fraction(c); });
  optional_field(n, "size_efficiency", [&](const JsonNode& c) {
    // [["1MiB", 0.34], ["2MiB", 0.39], ...]: ascending sizes, factors in (0, 1]
    if (!c.is_array() || c.size() == 0) c.fail("must be a list of [size, factor] pairs");
    l.size_efficiency.clear();
    for (size_t i = 0; i < c.size(); ++i) {
      const JsonNode e = c.element(i);
      if (!e.is_array() || e.size() != 2) e.fail("must be a [size, factor] pair");
      const double bytes = positive_quantity(e.element(0), Dimension::kBytes);
      if (!l.size_efficiency.empty() && bytes <= l.size_efficiency.back().first) {
        e.element(0).fail("must be larger than the size before it (ascending sizes)");
      }
      l.size_efficiency.emplace_back(bytes, fraction(e.element(1)));
    }
  });
  optional_field(n, "source", [&](const JsonNode& c) { l.source = c.as_string(); });
}

void apply_node(const JsonNode& n, NodeSpec& node, bool partial, int depth) {
  n.allow_keys({"devices", "device_link", "nics", "nic", "host_link", "host_memory",
                "host_memory_bandwidth"});
  field(n, "devices", partial, [&](const JsonNode& c) { node.devices = count_at_least(c, 1); });
  field(n, "device_link", partial, [&](const JsonNode& c) {
    node.device_link = read_nested<LinkSpec>(c, node.device_link, partial, depth + 1);
  });
  field(n, "nics", partial, [&](const JsonNode& c) { node.nics = count_at_least(c, 0); });
  optional_field(n, "nic", [&](const JsonNode& c) {
    node.nic = read_nested<LinkSpec>(c, node.nic, partial, depth + 1);
  });
  if (node.nics > 0 && node.nic == LinkSpec{}) {
    fail_missing(n, "nic", "is a required field when nics > 0");
  }
  optional_field(n, "host_link", [&](const JsonNode& c) {
    node.host_link = read_nested<LinkSpec>(c, node.host_link, partial, depth + 1);
  });
  optional_field(n, "host_memory", [&](const JsonNode& c) {
    node.host_memory_B = plausible_quantity(c, Dimension::kBytes);
  });
  optional_field(n, "host_memory_bandwidth", [&](const JsonNode& c) {
    node.host_memory_bandwidth_Bps = plausible_quantity(c, Dimension::kBandwidth);
  });
}

void apply_network(const JsonNode& n, NetworkSpec& net, bool partial) {
  n.allow_keys({"topology", "oversubscription", "levels", "nodes_per_leaf", "switch_latency"});
  field(n, "topology", partial, [&](const JsonNode& c) {
    net.topology = c.as_enum(std::span<const EnumName<NetworkTopology>>(kTopologyNames));
  });
  field(n, "oversubscription", partial, [&](const JsonNode& c) {
    double v = c.as_number();
    if (!(v >= 1)) c.fail("must be at least 1 (1 = full bisection bandwidth)");
    net.oversubscription = v;
  });
  field(n, "levels", partial, [&](const JsonNode& c) { net.levels = count_at_least(c, 1); });
  field(n, "nodes_per_leaf", partial,
        [&](const JsonNode& c) { net.nodes_per_leaf = count_at_least(c, 1); });
  optional_field(n, "switch_latency", [&](const JsonNode& c) {
    net.switch_latency_s = c.as_quantity(Dimension::kTime);
  });
}

void allow_cluster_keys(const JsonNode& n) {
  n.allow_keys({"name", "device", "node", "network", "devices", "source", "preset", "file", "groups"});
}

// A mixed cluster: "groups" lists clusters (catalog names or objects with their "devices") in
// device order; all have nodes of one size. The network is the explicit one, else the first
// group's; nodes of different groups talk through their NICs over it.
void apply_groups(const JsonNode& n, HardwareModel& h, int depth) {
  for (std::string_view key : {"device", "node", "devices", "preset", "file"}) {
    if (n.has(key)) n.at(key).fail("cannot be given beside \"groups\": each group names its own");
  }
  const JsonNode list = n.at("groups");
  if (!list.is_array() || list.size() < 1) list.fail("must be a non-empty array of clusters");
  constexpr size_t kMaxGroups = 64;
  if (list.size() > kMaxGroups) list.fail("lists " + std::to_string(list.size()) + " groups; a mixed cluster has at most 64");
  long long total = 0;
  h.groups.clear();
  h.num_devices = 0;
  std::string names;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonNode e = list.element(i);
    const HardwareModel g = read_any<HardwareModel>(e, depth + 1);
    if (g.mixed()) e.fail("is itself a mixed cluster; list its groups here instead");
    if (!h.groups.empty() && g.node.devices != h.groups[0].node.devices) {
      e.fail("has " + std::to_string(g.node.devices) + " devices per node where the first group has " +
             std::to_string(h.groups[0].node.devices) + "; the groups of a mixed cluster have nodes of one size");
    }
    if (g.num_devices % g.node.devices != 0) {
      e.fail("holds " + std::to_string(g.num_devices) + " devices: a group of a mixed cluster holds whole nodes of " +
             std::to_string(g.node.devices));
    }
    if (g.node.nics < 1) e.fail("has nodes without a network interface (node.nics must be at least 1 in a mixed cluster)");
    if (h.groups.empty()) h.network = g.network;
    total += g.num_devices;
    if (total > INT32_MAX) e.fail("brings the mixed cluster to more than " + std::to_string(INT32_MAX) + " devices");
    h.groups.push_back(DeviceGroup{g.name, g.device, g.node, g.num_devices});
    h.num_devices = static_cast<int>(total);
    names += (names.empty() ? "" : "+") + g.name;
  }
  h.device = h.groups[0].device;
  h.node = h.groups[0].node;
  h.name = names;
  field(n, "name", true, [&](const JsonNode& c) { h.name = name_string(c); });
  optional_field(n, "network", [&](const JsonNode& c) { apply_network(c, h.network, true); });
  // A rail-optimized fabric cables NIC i of every node to rail switch i: one NIC count.
  for (size_t i = 1; i < h.groups.size(); ++i) {
    if (h.network.topology == NetworkTopology::kRailOptimized && h.groups[i].node.nics != h.groups[0].node.nics) {
      list.element(i).fail("has " + std::to_string(h.groups[i].node.nics) + " NICs per node where the first group has " +
                           std::to_string(h.groups[0].node.nics) +
                           "; a rail-optimized network needs one NIC count (or give a fat_tree \"network\")");
    }
  }
  optional_field(n, "source", [&](const JsonNode& c) { (void)c.as_string(); });
}

void apply(const JsonNode& n, HardwareModel& h, bool partial, int depth) {
  if (n.has("groups")) return apply_groups(n, h, depth);
  field(n, "name", partial, [&](const JsonNode& c) { h.name = name_string(c); });
  field(n, "device", partial, [&](const JsonNode& c) {
    h.device = read_nested<DeviceSpec>(c, h.device, partial, depth + 1);
  });
  field(n, "node", partial, [&](const JsonNode& c) { apply_node(c, h.node, partial, depth); });
  bool network_given = partial || n.has("network");
  optional_field(n, "network", [&](const JsonNode& c) { apply_network(c, h.network, partial); });
  if (!partial) h.num_devices = h.node.devices;  // default: one node
  optional_field(n, "devices", [&](const JsonNode& c) { h.num_devices = count_at_least(c, 1); });
  optional_field(n, "source", [&](const JsonNode& c) { (void)c.as_string(); });  // documentation

  if (h.num_devices > h.node.devices && h.num_devices % h.node.devices != 0) {
    if (n.has("devices")) {
      n.at("devices").fail("must fit in one node or be a multiple of node.devices (" +
                           std::to_string(h.node.devices) + ")");
    }
    blame(n, {"node"}).fail("leaves devices=" + std::to_string(h.num_devices) +
                            " neither within one node nor a multiple of node.devices (" +
                            std::to_string(h.node.devices) + ")");
  }
  if (!network_given && h.num_nodes() > 1) {
    fail_missing(n, "network", "is a required field for a cluster of more than one node (" +
                                   std::to_string(h.num_devices) + " devices, " +
                                   std::to_string(h.node.devices) + " per node)");
  }
  if (h.num_nodes() > 1 && h.node.nics < 1) {
    blame(n, {"node", "devices"}).fail("gives a cluster of " + std::to_string(h.num_nodes()) +
                                       " nodes without a network interface (node.nics must be "
                                       "at least 1)");
  }
}

void allow_keys_for(const JsonNode& n, const DeviceSpec*) { allow_device_keys(n); }
void allow_keys_for(const JsonNode& n, const LinkSpec*) { allow_link_keys(n); }
void allow_keys_for(const JsonNode& n, const HardwareModel*) { allow_cluster_keys(n); }

template <class T>
T read_any(const JsonNode& n, int depth) {
  if (depth > kMaxReferenceDepth) {
    n.fail("is reached through more than " + std::to_string(kMaxReferenceDepth) +
           " nested preset/file references (is there a cycle?)");
  }
  const std::string noun(hw_detail::kind_noun(Kind<T>::value));
  if (n.is_string()) {
    if (n.as_string().ends_with(".json")) return from_file<T>(n, depth);
    return from_catalog<T>(n, depth);
  }
  if (!n.is_object()) {
    n.fail("must be a " + noun + " object, a catalog name or a path ending in .json");
  }
  allow_keys_for(n, static_cast<const T*>(nullptr));
  T value{};
  bool partial = false;
  if (n.has("preset") && n.has("file")) n.fail("gives both \"preset\" and \"file\"; use one");
  if (n.has("preset")) {
    value = from_catalog<T>(n.at("preset"), depth);
    partial = true;
  } else if (n.has("file")) {
    value = from_file<T>(n.at("file"), depth);
    partial = true;
  }
  apply(n, value, partial, depth);
  return value;
}

template <class T>
T read_nested(const JsonNode& c, const T& inherited, bool partial, int depth) {
  if (!partial || !c.is_object() || c.has("name") || c.has("preset") || c.has("file")) {
    return read_any<T>(c, depth);
  }
  allow_keys_for(c, static_cast<const T*>(nullptr));
  T value = inherited;
  apply(c, value, true, depth);
  return value;
}

// ---- writers -----------------------------------------------------------------------------

Json attention_pass_json(const AttentionPass& a) {
  Json j = Json::object();
  j["max_fraction"] = a.max_fraction;
  j["half_keys"] = a.half_keys;
  if (a.causal_fraction > 0) j["causal_fraction"] = a.causal_fraction;
  if (a.causal_half_keys > 0) j["causal_half_keys"] = a.causal_half_keys;
  if (!a.head_dim_scale.empty()) {
    Json scale = Json::object();
    for (const auto& [dim, f] : a.head_dim_scale) {
      char key[32];
      std::snprintf(key, sizeof key, "%g", dim);
      scale[key] = f;
    }
    j["head_dim_scale"] = std::move(scale);
  }
  return j;
}

Json attention_ratio_json(const AttentionRatio& r) {
  Json j = Json::object();
  for (const AttentionRatioSeries& series : r.series) {
    char key[32];
    std::snprintf(key, sizeof key, "%g", series.head_dim);
    Json rows = Json::array();
    for (const auto& p : series.points) rows.push_back(Json::array({p[0], p[1], p[2]}));
    j[key][series.causal ? "causal" : "noncausal"] = std::move(rows);
  }
  return j;
}

Json curve_json(const EfficiencyCurve& c, Dimension size_dim) {
  Json j = Json::object();
  j["max_fraction"] = c.max_fraction;
  j["half_size"] = quantity_text(c.half_size, size_dim);
  return j;
}

}  // namespace

DeviceSpec read_device(const JsonNode& node) { return read_any<DeviceSpec>(node, 0); }
LinkSpec read_link(const JsonNode& node) { return read_any<LinkSpec>(node, 0); }
HardwareModel read_cluster(const JsonNode& node) { return read_any<HardwareModel>(node, 0); }

Json to_json(const DeviceSpec& d) {
  Json j = Json::object();
  j["name"] = d.name;
  Json peak = Json::object();
  for (DType t : kAllDTypes) {
    double v = d.peak_flops[static_cast<size_t>(t)];
    if (v > 0) peak[std::string(dtype_name(t))] = quantity_text(v, Dimension::kFlopRate);
  }
  j["peak"] = std::move(peak);
  j["vector_flops"] = quantity_text(d.vector_flops, Dimension::kFlopRate);
  j["memory"] = quantity_text(d.memory_B, Dimension::kBytes);
  j["memory_bandwidth"] = quantity_text(d.memory_bandwidth_Bps, Dimension::kBandwidth);
  j["efficiency"] = {{"matmul", curve_json(d.matmul, Dimension::kFlops)},
                     {"memory", curve_json(d.memory, Dimension::kBytes)}};
  if (d.matmul_fp8.max_fraction > 0) {
    j["efficiency"]["matmul_fp8"] = curve_json(d.matmul_fp8, Dimension::kFlops);
  }
  if (d.matmul_fp8_rowwise.max_fraction > 0) {
    j["efficiency"]["matmul_fp8_rowwise"] = curve_json(d.matmul_fp8_rowwise, Dimension::kFlops);
  }
  for (auto [key, curves] : {std::pair{"flash2", &d.flash2}, std::pair{"flash3", &d.flash3},
                              std::pair{"cudnn", &d.cudnn}}) {
    if (!curves->present()) continue;
    j["efficiency"][key] = {{"forward", attention_pass_json(curves->forward)},
                            {"backward", attention_pass_json(curves->backward)}};
  }
  for (auto [key, ratio] : {std::pair{"flash1", &d.flash1}, std::pair{"flash_triton", &d.flash_triton}}) {
    if (ratio->present()) j["efficiency"][key] = attention_ratio_json(*ratio);
  }
  j["kernel_overhead"] = quantity_text(d.kernel_overhead_s, Dimension::kTime);
  j["reserved_memory"] = quantity_text(d.reserved_memory_B, Dimension::kBytes);
  if (d.cuda_context_B != 0) j["cuda_context"] = quantity_text(d.cuda_context_B, Dimension::kBytes);
  if (d.compute_units != 0) j["compute_units"] = d.compute_units;
  if (d.price_per_hour != 0) j["price_per_hour"] = d.price_per_hour;
  if (d.overlap_slowdown != 1) j["overlap_slowdown"] = d.overlap_slowdown;
  if (d.ep_overlap_rate != 0) j["ep_overlap_rate"] = d.ep_overlap_rate;
  if (d.sustained_clock != 1) j["sustained_clock"] = d.sustained_clock;
  if (d.speed_variability != 0) j["speed_variability"] = d.speed_variability;
  if (d.task_flops > 0) {
    j["task"] = {{"flops", quantity_text(d.task_flops, Dimension::kFlopRate)},
                 {"overhead", quantity_text(d.task_overhead_s, Dimension::kTime)},
                 {"cores", d.cores}};
  }
  for (int f = 0; f < kNumKernelFamilies; ++f) {
    const auto& x = d.family_factors[f];
    if (x[0] == 1 && x[1] == 1) continue;
    j["kernel_factors"][std::string(kKernelFamilyNames[f])] = {{"fused", x[0]}, {"unfused", x[1]}};
  }
  if (!d.source.empty()) j["source"] = d.source;
  return j;
}

Json to_json(const LinkSpec& l) {
  Json j = Json::object();
  j["name"] = l.name;
  j["bandwidth"] = quantity_text(l.bandwidth_Bps, Dimension::kBandwidth);
  j["latency"] = quantity_text(l.latency_s, Dimension::kTime);
  j["efficiency"] = l.efficiency;
  if (!l.size_efficiency.empty()) {
    Json curve = Json::array();
    for (const auto& [bytes, factor] : l.size_efficiency) {
      curve.push_back(Json::array({quantity_text(bytes, Dimension::kBytes), factor}));
    }
    j["size_efficiency"] = curve;
  }
  if (!l.source.empty()) j["source"] = l.source;
  return j;
}

Json to_json(const HardwareModel& h) {
  Json node = Json::object();
  node["devices"] = h.node.devices;
  node["device_link"] = to_json(h.node.device_link);
  node["nics"] = h.node.nics;
  if (h.node.nics > 0 || h.node.nic != LinkSpec{}) node["nic"] = to_json(h.node.nic);
  if (h.node.host_link != LinkSpec{}) node["host_link"] = to_json(h.node.host_link);
  if (h.node.host_memory_B > 0) node["host_memory"] = quantity_text(h.node.host_memory_B, Dimension::kBytes);
  if (h.node.host_memory_bandwidth_Bps > 0) {
    node["host_memory_bandwidth"] = quantity_text(h.node.host_memory_bandwidth_Bps, Dimension::kBandwidth);
  }

  Json network = Json::object();
  network["topology"] = std::string(topology_name(h.network.topology));
  network["oversubscription"] = h.network.oversubscription;
  network["levels"] = h.network.levels;
  network["nodes_per_leaf"] = h.network.nodes_per_leaf;
  network["switch_latency"] = quantity_text(h.network.switch_latency_s, Dimension::kTime);

  Json j = Json::object();
  j["name"] = h.name;
  j["device"] = to_json(h.device);
  j["node"] = std::move(node);
  j["network"] = std::move(network);
  j["devices"] = h.num_devices;
  if (h.mixed()) {
    // A mixed cluster is written as its groups (what read_cluster reads back).
    Json groups = Json::array();
    for (const DeviceGroup& g : h.groups) {
      HardwareModel one = h;
      one.groups.clear();
      one.name = g.name, one.device = g.device, one.node = g.node, one.num_devices = g.num_devices;
      Json gj = to_json(one);
      gj.erase("network");
      if (one.num_nodes() > 1) gj["network"] = j["network"];
      groups.push_back(std::move(gj));
    }
    Json m = Json::object();
    m["name"] = h.name;
    m["groups"] = std::move(groups);
    m["network"] = std::move(j["network"]);
    return m;
  }
  return j;
}

namespace {

template <class T>
T catalog_entry(const std::string& name) {
  const CatalogText* entry = hw_detail::find_entry(Kind<T>::value, name);
  if (!entry) {
    throw InputError("catalog", std::string(hw_detail::kind_folder(Kind<T>::value)),
                     "\"" + name + "\"", hw_detail::unknown_name_rule(Kind<T>::value, name));
  }
  return read_catalog_entry<T>(*entry, 0);
}

}  // namespace

DeviceSpec catalog_device(const std::string& name) { return catalog_entry<DeviceSpec>(name); }
LinkSpec catalog_link(const std::string& name) { return catalog_entry<LinkSpec>(name); }
HardwareModel catalog_cluster(const std::string& name) {
  return catalog_entry<HardwareModel>(name);
}

}  // namespace stratasim
