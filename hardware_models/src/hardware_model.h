// HardwareModel: *where* a model runs. Devices, links and the cluster topology, in SI units.
// Independent of the model and the strategy (no strategy knob lives here).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/kernel_families.h"

namespace stratasim {

enum class DType { kFp32, kTf32, kBf16, kFp16, kFp8 };
inline constexpr int kNumDTypes = 5;
std::string_view dtype_name(DType d);
double dtype_bytes(DType d);  // storage size of one element: fp32/tf32 4, bf16/fp16 2, fp8 1
// The dtype tensors are stored in when `compute` is the training precision. FP8 training keeps
// activations, weights and gradients in bf16 and casts to fp8 only for the linear layers'
// GEMMs (Transformer Engine, torchao float8: NVIDIA TE "performance considerations";
// pytorch/ao float8_linear.py saves the bf16 input and weight).
inline DType storage_dtype(DType compute) { return compute == DType::kFp8 ? DType::kBf16 : compute; }

// Achievable fraction of a peak as a function of the size of the work:
//   fraction(size) = max_fraction * size / (size + half_size)
// Small kernels cannot fill the device; large ones approach max_fraction.
struct EfficiencyCurve {
  double max_fraction = 1.0;
  double half_size = 0.0;  // FLOP for compute curves, bytes for memory curves
  double at(double size) const;
  bool operator==(const EfficiencyCurve&) const = default;
};

// One pass (forward or backward) of a fused attention kernel (FlashAttention-2/3, cuDNN): its
// achievable fraction of the dense 16-bit peak, FLOP counted as the FlashAttention benchmarks
// count them (4 b s_q s_k h forward, halved when causal; backward 2.5x). Each thread block
// walks one query block along the keys, so a fixed per-block cost is amortized over the keys
// a query row attends:
//   fraction(keys) = plateau * keys / (keys + half_keys)
// with a plateau and half_keys of their own for causal masking (half the keys per row on
// average, plus the diagonal blocks), measured at head dim 128; other head dims scale the
// plateau (head_dim_scale, interpolated in log2 of the head dim, held at the ends).
struct AttentionPass {
  double max_fraction = 0;      // non-causal plateau; 0 = absent
  double half_keys = 0;         // keys per query row at half the plateau (non-causal)
  double causal_fraction = 0;   // causal plateau (0: max_fraction)
  double causal_half_keys = 0;  // (0: half_keys)
  std::vector<std::pair<double, double>> head_dim_scale;  // (head dim, plateau factor)
  // Fraction of peak for rows attending `keys` keys (<= 0: the plateau) of `head_dim`.
  double at(double keys, bool causal, double head_dim) const;
  double plateau(bool causal, double head_dim) const;
  bool operator==(const AttentionPass&) const = default;
};

// An older attention kernel (the first FlashAttention, flash-attn 0.x/1.x; FlashAttention's
// Triton version) against FlashAttention-2 on this device, as a benchmark timed both side by
// side: forward + backward TFLOP/s per sequence length, for a head dim and a mask. Its speed
// relative to FA2's curve for a row attending `keys` keys is the ratio of the two, interpolated
// in log2 of the keys (held at the measured ends) and then in log2 of the head dim (held at the
// ends). Empty: no measurement on this device.
struct AttentionRatioSeries {
  double head_dim = 0;
  bool causal = false;
  std::vector<std::array<double, 3>> points;  // (sequence length, kernel, FA2 TFLOP/s), ascending
  double ratio_at(double keys) const;
  bool operator==(const AttentionRatioSeries&) const = default;
};

struct AttentionRatio {
  std::vector<AttentionRatioSeries> series;
  bool present() const { return !series.empty(); }
  // The kernel's speed over FA2's for rows attending `keys` keys (<= 0: the longest measured)
  // with this mask (the other mask's series where this one has none) and head dim.
  double at(double keys, bool causal, double head_dim) const;
  bool operator==(const AttentionRatio&) const = default;
};

struct AttentionCurves {
  AttentionPass forward;
  AttentionPass backward;
  bool present() const { return forward.max_fraction > 0 && backward.max_fraction > 0; }
  bool operator==(const AttentionCurves&) const = default;
};

struct DeviceSpec {
  std::string name;
  std::array<double, kNumDTypes> peak_flops{};  // dense FLOP/s per dtype; 0 = unsupported
  double vector_flops = 0;                      // non-matrix (CUDA core / SIMD) FLOP/s, fp32
  double memory_B = 0;
  double memory_bandwidth_Bps = 0;
  EfficiencyCurve matmul;  // achievable fraction of peak_flops vs FLOP of one kernel
  EfficiencyCurve memory;  // achievable fraction of memory bandwidth vs bytes of one kernel
  EfficiencyCurve matmul_fp8{0, 0};  // fp8 GEMMs, when they differ from `matmul` (0 = same)
  // fp8 GEMMs with one scale per row (torchao's rowwise recipe); 0 = as matmul_fp8
  EfficiencyCurve matmul_fp8_rowwise{0, 0};
  AttentionCurves flash2;  // FlashAttention-2 (any CUDA GPU since Ampere); absent = matmul
  AttentionCurves flash3;  // FlashAttention-3 (Hopper); absent = flash2
  AttentionCurves cudnn;   // cuDNN's fused flash attention; absent = flash3, else flash2
  AttentionRatio flash1;        // FlashAttention-1 over FlashAttention-2, measured side by side
  AttentionRatio flash_triton;  // FlashAttention's Triton version over FlashAttention-2
  double kernel_overhead_s = 0;  // fixed cost per kernel (launch, ramp-up, tail)
  int compute_units = 0;  // SMs (NVIDIA) / CUs (AMD) for GEMM wave quantization; 0 = none
  double reserved_memory_B = 0;  // not for the model's tensors: CUDA context, workspaces, allocator slack
  // The part of reserved_memory_B that the process holds outside the framework's caching
  // allocator (the CUDA context: its kernels' code and state): nvidia-smi counts it,
  // torch.cuda.memory_reserved() does not. 0 = all of reserved_memory_B is the allocator's.
  double cuda_context_B = 0;
  // Compute that runs while a collective runs on the same device takes this many times longer
  // (the communication kernels occupy SMs and memory bandwidth); 1 = no interference.
  double overlap_slowdown = 1.0;
  // The rate at which an expert-parallel token exchange (DeepEP's or HybridEP's SM-driven
  // dispatch and combine kernels) progresses while the other stream's compute runs, over its
  // rate alone: Megatron-Core's EP overlap (the combined 1F1B schedule) hides rate x the
  // partner compute of each exchange, the compute itself unslowed. 0 = not measured: the
  // overlap_slowdown rule applies to it as to the other collectives.
  double ep_overlap_rate = 0;
  // The tensor-core throughput the device holds under sustained load over what short benchmark
  // loops see: under a continuous training load the power limit lowers the clock. It scales the
  // fused-attention curves (flash2/flash3/cudnn), which are short-loop measurements; the matmul
  // curves are sustained figures already. 1 = no difference (or curves measured sustained).
  double sustained_clock = 1.0;
  // Standard deviation of the sustained compute speed across devices of this SKU, as a fraction
  // of the typical device's (sim/cost/device_variability.h); 0 = identical devices.
  double speed_variability = 0;
  double price_per_hour = 0;     // optional, for cost objectives (0 = unknown)
  // Per kernel family, its fused and unfused forms' measured time over the roofline (beyond the
  // launches), as `calibrate` fits them on this device; 1 = the roofline (catalog devices).
  std::array<std::array<double, 2>, kNumKernelFamilies> family_factors = filled_factors();
  // Single-threaded tasks (an operator graph's `task` ops: the CPU runtime's serial busy loops,
  // kernels/dag_executor.h): FLOP/s of one task on one core while every core is busy, its fixed
  // cost per task, and the cores that run tasks side by side. 0 = the device runs no tasks
  // (catalog GPUs); `stratasim calibrate --device cpu` measures them.
  double task_flops = 0;
  double task_overhead_s = 0;
  int cores = 0;
  std::string source;            // where the numbers come from
  bool operator==(const DeviceSpec&) const = default;
  static constexpr std::array<std::array<double, 2>, kNumKernelFamilies> filled_factors() {
    std::array<std::array<double, 2>, kNumKernelFamilies> f{};
    for (auto& x : f) x = {1.0, 1.0};
    return f;
  }
};

// One memory-bound kernel that moves `bytes` (reads + writes): at the device's achievable
// bandwidth for that size, plus its fixed kernel overhead (e.g. the optimizer step).
double memory_pass_s(const DeviceSpec& d, double bytes);

struct LinkSpec {
  std::string name;
  double bandwidth_Bps = 0;  // per direction, per port
  double latency_s = 0;      // per message (alpha)
  double efficiency = 1.0;   // achievable fraction of bandwidth for collectives (NCCL bus bw)
  // NCCL's bandwidth below its plateau, by collective buffer size (bytes, factor on
  // bandwidth * efficiency), beyond the per-step latency: it uses fewer channels and shorter
  // pipelines for mid-size messages (nccl-tests busbw rises from ~1 MiB to ~1 GiB). Ascending
  // sizes; log-linear in between; the first factor below, the last above. Empty: 1 everywhere.
  std::vector<std::pair<double, double>> size_efficiency;
  std::string source;
  bool operator==(const LinkSpec&) const = default;
};

// The factor of l.size_efficiency at a collective buffer of `bytes`.
double size_efficiency_at(const LinkSpec& l, double bytes);

struct NodeSpec {
  int devices = 1;      // devices in one NVLink/NVSwitch (or PCIe) domain
  LinkSpec device_link;  // one device's port into the node fabric
  int nics = 0;          // network interfaces per node
  LinkSpec nic;          // one NIC's port into the inter-node network
  // The host (CPU sockets and their memory) that optimizer offload uses (Strategy::offload):
  // one device's PCIe path to host memory, the node's host memory and its bandwidth (all
  // sockets, sustained). Absent (zero): the cluster cannot offload.
  LinkSpec host_link;
  double host_memory_B = 0;
  double host_memory_bandwidth_Bps = 0;
  bool operator==(const NodeSpec&) const = default;
};

enum class NetworkTopology { kFatTree, kRailOptimized };
std::string_view topology_name(NetworkTopology t);

struct NetworkSpec {
  NetworkTopology topology = NetworkTopology::kFatTree;
  double oversubscription = 1.0;  // leaf uplink:downlink ratio, 1 = full bisection
  int levels = 2;                 // switch levels of the fat tree
  int nodes_per_leaf = 4;         // nodes under one leaf switch (for oversubscription)
  double switch_latency_s = 0;    // per switch hop
  bool operator==(const NetworkSpec&) const = default;
};

// One kind of node of a mixed cluster (HardwareModel::groups): num_devices devices (whole nodes)
// of one device type behind one node design.
struct DeviceGroup {
  std::string name;
  DeviceSpec device;
  NodeSpec node;
  int num_devices = 0;
  bool operator==(const DeviceGroup&) const = default;
};

struct HardwareModel {
  std::string name;
  DeviceSpec device;
  NodeSpec node;
  NetworkSpec network;
  int num_devices = 1;  // total devices; nodes = ceil(num_devices / node.devices)
  // A mixed cluster: its node groups in device order (devices 0 .. n0-1 are groups[0]'s, the
  // next n1 groups[1]'s, ...); `device` and `node` are then groups[0]'s. Empty: one kind of node.
  // Every group has node.devices devices per node.
  std::vector<DeviceGroup> groups;

  int num_nodes() const { return (num_devices + node.devices - 1) / node.devices; }
  bool mixed() const { return !groups.empty(); }
  int group_of_device(long long device) const;  // 0 for a cluster of one kind of node
  // The cluster as the devices of group g see it: its device and node, everything else kept.
  HardwareModel group_view(int g) const;
  const NodeSpec& node_spec(int node_index) const;  // the node design of the node_index-th node
  // What a transfer between nodes of groups a and b sees: the network through both nodes'
  // NICs, i.e. the group whose NICs are slower (node.nics x NIC bandwidth).
  HardwareModel between_groups(int a, int b) const;
  bool operator==(const HardwareModel&) const = default;
};

// A device's sustained dense matrix rate in `dtype` (peak x plateau fraction of its GEMM
// curve): what a mixed cluster's stages are balanced by.
double sustained_matmul_flops(const DeviceSpec& d, DType dtype);

}  // namespace stratasim
