#include "hardware_models/src/hardware_model.h"

#include <algorithm>
#include <cmath>

namespace stratasim {

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
    case DType::kFp8: return "fp8";
  }
  return "?";
}

double dtype_bytes(DType d) {
  switch (d) {
    case DType::kFp32:
    case DType::kTf32: return 4;
    case DType::kBf16:
    case DType::kFp16: return 2;
    case DType::kFp8: return 1;
  }
  return 4;
}

double EfficiencyCurve::at(double size) const {
  if (half_size <= 0) return max_fraction;
  return max_fraction * size / (size + half_size);
}

double AttentionPass::plateau(bool causal, double head_dim) const {
  double scale = 1.0;
  if (!head_dim_scale.empty() && head_dim > 0) {
    // Points (log2 head dim, factor), with 128 at factor 1 unless the table says otherwise.
    std::vector<std::pair<double, double>> pts;
    bool has_128 = false;
    for (const auto& [dim, f] : head_dim_scale) {
      pts.emplace_back(std::log2(dim), f);
      has_128 = has_128 || dim == 128;
    }
    if (!has_128) pts.emplace_back(7.0, 1.0);
    std::sort(pts.begin(), pts.end());
    const double x = std::log2(head_dim);
    if (x <= pts.front().first) {
      scale = pts.front().second;
    } else if (x >= pts.back().first) {
      scale = pts.back().second;
    } else {
      for (size_t i = 1; i < pts.size(); ++i) {
        if (x > pts[i].first) continue;
        const double t = (x - pts[i - 1].first) / (pts[i].first - pts[i - 1].first);
        scale = pts[i - 1].second + t * (pts[i].second - pts[i - 1].second);
        break;
      }
    }
  }
  const double base = causal && causal_fraction > 0 ? causal_fraction : max_fraction;
  return base * scale;
}

double AttentionPass::at(double keys, bool causal, double head_dim) const {
  const double top = plateau(causal, head_dim);
  const double half = causal && causal_half_keys > 0 ? causal_half_keys : half_keys;
  if (keys <= 0 || half <= 0) return top;
  return top * keys / (keys + half);
}

namespace {

// y at x on the polyline `pts` (ascending x), held at its ends.
double polyline_at(const std::vector<std::pair<double, double>>& pts, double x) {
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  for (size_t i = 1; i < pts.size(); ++i) {
    if (x > pts[i].first) continue;
    const double t = (x - pts[i - 1].first) / (pts[i].first - pts[i - 1].first);
    return pts[i - 1].second + t * (pts[i].second - pts[i - 1].second);
  }
  return pts.back().second;
}

}  // namespace

double AttentionRatioSeries::ratio_at(double keys) const {
  std::vector<std::pair<double, double>> pts;
  for (const auto& [seq, fa1, fa2] : points) pts.emplace_back(std::log2(seq), fa1 / fa2);
  if (pts.empty()) return 1.0;
  return keys > 0 ? polyline_at(pts, std::log2(keys)) : pts.back().second;
}

double AttentionRatio::at(double keys, bool causal, double head_dim) const {
  bool has_mask = false;
  for (const AttentionRatioSeries& s : series) has_mask = has_mask || s.causal == causal;
  std::vector<std::pair<double, double>> by_dim;
  for (const AttentionRatioSeries& s : series) {
    if (s.causal == (has_mask ? causal : !causal) && !s.points.empty()) {
      by_dim.emplace_back(std::log2(s.head_dim), s.ratio_at(keys));
    }
  }
  if (by_dim.empty()) return 1.0;
  std::sort(by_dim.begin(), by_dim.end());
  return head_dim > 0 ? polyline_at(by_dim, std::log2(head_dim)) : by_dim.back().second;
}

double size_efficiency_at(const LinkSpec& l, double bytes) {
  const auto& c = l.size_efficiency;
  if (c.empty()) return 1.0;
  if (bytes <= c.front().first) return c.front().second;
  if (bytes >= c.back().first) return c.back().second;
  auto hi = std::upper_bound(c.begin(), c.end(), bytes,
                             [](double b, const std::pair<double, double>& p) { return b < p.first; });
  auto lo = hi - 1;
  const double t = std::log(bytes / lo->first) / std::log(hi->first / lo->first);
  return lo->second + t * (hi->second - lo->second);
}

double memory_pass_s(const DeviceSpec& d, double bytes) {
  if (bytes <= 0) return 0;
  return bytes / (d.memory_bandwidth_Bps * d.memory.at(bytes)) + d.kernel_overhead_s;
}

std::string_view topology_name(NetworkTopology t) {
  switch (t) {
    case NetworkTopology::kFatTree: return "fat_tree";
    case NetworkTopology::kRailOptimized: return "rail_optimized";
  }
  return "?";
}

int HardwareModel::group_of_device(long long device) const {
  long long end = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    end += groups[g].num_devices;
    if (device < end) return static_cast<int>(g);
  }
  return groups.empty() ? 0 : static_cast<int>(groups.size()) - 1;
}

HardwareModel HardwareModel::group_view(int g) const {
  HardwareModel view = *this;
  if (g < 0 || g >= static_cast<int>(groups.size())) return view;
  view.device = groups[g].device;
  view.node = groups[g].node;
  return view;
}

const NodeSpec& HardwareModel::node_spec(int node_index) const {
  if (groups.empty()) return node;
  return groups[group_of_device(static_cast<long long>(node_index) * node.devices)].node;
}

HardwareModel HardwareModel::between_groups(int a, int b) const {
  auto node_Bps = [&](int g) {
    const NodeSpec& n = groups[g].node;
    return n.nics * n.nic.bandwidth_Bps * n.nic.efficiency;
  };
  if (groups.empty()) return *this;
  return group_view(node_Bps(a) <= node_Bps(b) ? a : b);
}

double sustained_matmul_flops(const DeviceSpec& d, DType dtype) {
  return d.peak_flops[static_cast<int>(dtype)] * d.matmul.max_fraction;
}

}  // namespace stratasim
