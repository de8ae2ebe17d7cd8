// Hardware descriptions: the built-in catalog, JSON round trips, presets and error messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "hardware_models/src/hardware_json.h"
#include "hardware_models/src/hardware_model.h"
#include "sim/core/units.h"

using namespace stratasim;

namespace {

// Readers over JSON text, as if the text sat at `path` inside `file`.
DeviceSpec device_from(const std::string& text, const std::string& file = "hw.json",
                       const std::string& path = "device") {
  Json j = Json::parse(text);
  return read_device(JsonNode(j, file, path));
}

LinkSpec link_from(const std::string& text, const std::string& file = "hw.json",
                   const std::string& path = "link") {
  Json j = Json::parse(text);
  return read_link(JsonNode(j, file, path));
}

HardwareModel cluster_from(const std::string& text, const std::string& file = "scenario.json",
                           const std::string& path = "hardware") {
  Json j = Json::parse(text);
  return read_cluster(JsonNode(j, file, path));
}

double peak(const DeviceSpec& d, DType t) { return d.peak_flops[static_cast<size_t>(t)]; }

// A scratch folder for tests that read files; removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("stratasim_hw_test_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.generic_string();
  }
};

constexpr const char* kLinkFields =
    R"("bandwidth": "300GBps", "latency": "2us", "efficiency": 0.8)";

}  // namespace

TEST_CASE("the catalog holds the documented entries") {
  auto has = [](CatalogKind kind, const char* name) {
    auto names = catalog_names(kind);
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const char* d : {"A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB",
                        "B200", "V100-SXM2-32GB", "V100-SXM3-32GB", "MI300X", "x86-cpu-socket"}) {
    CHECK_MESSAGE(has(CatalogKind::kDevice, d), d);
  }
  for (const char* l : {"nvlink2", "nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "ib_edr",
                        "ib_hdr", "ib_ndr", "roce_200g", "roce_400g", "ethernet_100g",
                        "ethernet_25g", "infinity_fabric_mi300x", "upi"}) {
    CHECK_MESSAGE(has(CatalogKind::kLink, l), l);
  }
  for (const char* c : {"dgx_a100", "dgx_a100_40gb", "dgx_h100", "dgx_h200", "dgx_b200",
                        "dgx2_v100", "dgx1_v100", "mi300x_node", "cpu_cluster"}) {
    CHECK_MESSAGE(has(CatalogKind::kCluster, c), c);
  }
}

TEST_CASE("every catalog entry loads, cites a source and has sane values") {
  for (const std::string& name : catalog_names(CatalogKind::kDevice)) {
    CAPTURE(name);
    DeviceSpec d = catalog_device(name);
    CHECK(d.name == name);
    CHECK_FALSE(d.source.empty());
    CHECK(d.vector_flops > 0);
    CHECK(d.memory_B > d.reserved_memory_B);
    CHECK(d.memory_bandwidth_Bps > 0);
    CHECK(d.matmul.max_fraction > 0);
    CHECK(d.matmul.max_fraction <= 1);
    CHECK(d.memory.max_fraction > 0);
    CHECK(d.memory.max_fraction <= 1);
    CHECK(d.matmul.half_size > 0);
    CHECK(d.memory.half_size > 0);
    CHECK(d.kernel_overhead_s > 0);
  }
  for (const std::string& name : catalog_names(CatalogKind::kLink)) {
    CAPTURE(name);
    LinkSpec l = catalog_link(name);
    CHECK(l.name == name);
    CHECK_FALSE(l.source.empty());
    CHECK(l.bandwidth_Bps > 0);
    CHECK(l.latency_s > 0);
    CHECK(l.efficiency > 0);
    CHECK(l.efficiency <= 1);
  }
  for (const std::string& name : catalog_names(CatalogKind::kCluster)) {
    CAPTURE(name);
    HardwareModel h = catalog_cluster(name);
    CHECK(h.name == name);
    CHECK(h.num_devices == h.node.devices);  // catalog clusters describe one node
    CHECK(h.node.nics > 0);
    CHECK(h.device == catalog_device(h.device.name));
    CHECK(h.node.device_link == catalog_link(h.node.device_link.name));
    CHECK(h.node.nic == catalog_link(h.node.nic.name));
    CHECK(h.network.oversubscription >= 1);
  }
}

TEST_CASE("A100-SXM4-80GB matches its datasheet in SI units") {
  DeviceSpec d = catalog_device("A100-SXM4-80GB");
  CHECK(peak(d, DType::kBf16) == 312 * kTera);
  CHECK(peak(d, DType::kFp16) == 312 * kTera);
  CHECK(peak(d, DType::kTf32) == 156 * kTera);
  CHECK(peak(d, DType::kFp32) == doctest::Approx(19.5 * kTera));
  CHECK(peak(d, DType::kFp8) == 0);  // not supported by Ampere
  CHECK(d.memory_bandwidth_Bps == 2039 * kGB);
  CHECK(d.memory_bandwidth_Bps == 2.039e12);
  CHECK(d.memory_B == 80 * kGiB);
  CHECK(d.memory_B == 85899345920.0);
  // Azure ND A100 v4: 256.5 of 312 TFLOPS sustained on 16384^3 fp16 (see the entry's source).
  CHECK(d.matmul.max_fraction == doctest::Approx(0.82));
  CHECK(d.compute_units == 108);

  LinkSpec nv = catalog_link("nvlink3");
  CHECK(nv.bandwidth_Bps == 300 * kGB);
  LinkSpec ib = catalog_link("ib_hdr");
  CHECK(ib.bandwidth_Bps == 200 * kGB / kBitsPerByte);  // 25 GB/s

  HardwareModel h = catalog_cluster("dgx_a100");
  CHECK(h.device == d);
  CHECK(h.node.devices == 8);
  CHECK(h.node.nics == 8);
  CHECK(h.node.device_link == nv);
  CHECK(h.node.nic == ib);
  CHECK(h.network.topology == NetworkTopology::kFatTree);
  CHECK(h.network.levels == 3);
  CHECK(h.network.oversubscription == 1.0);
  CHECK(h.num_nodes() == 1);
}

TEST_CASE("to_json round-trips every catalog entry exactly") {
  for (const std::string& name : catalog_names(CatalogKind::kDevice)) {
    CAPTURE(name);
    DeviceSpec d = catalog_device(name);
    Json j = to_json(d);
    CHECK(read_device(JsonNode(j, "roundtrip.json", "")) == d);
    Json reparsed = Json::parse(j.dump(2));  // through text as well
    CHECK(read_device(JsonNode(reparsed, "roundtrip.json", "")) == d);
  }
  for (const std::string& name : catalog_names(CatalogKind::kLink)) {
    CAPTURE(name);
    LinkSpec l = catalog_link(name);
    Json j = Json::parse(to_json(l).dump());
    CHECK(read_link(JsonNode(j, "roundtrip.json", "")) == l);
  }
  for (const std::string& name : catalog_names(CatalogKind::kCluster)) {
    CAPTURE(name);
    HardwareModel h = catalog_cluster(name);
    h.num_devices = 4 * h.node.devices;
    Json j = Json::parse(to_json(h).dump());
    CHECK(read_cluster(JsonNode(j, "roundtrip.json", "")) == h);
  }
}

TEST_CASE("to_json round-trips awkward values and writes readable units") {
  DeviceSpec d = catalog_device("H100-SXM5-80GB");
  d.name = "odd";
  d.peak_flops[static_cast<size_t>(DType::kBf16)] = 123456789.0123 * kGiga;
  d.memory_B = 81559 * kMiB + 3;
  d.kernel_overhead_s = 1.7 * kMicro;
  d.matmul = {0.123456789, 0.3 * kGiga};
  d.price_per_hour = 2.49;
  d.source.clear();
  Json j = to_json(d);
  CHECK(read_device(JsonNode(j, "x.json", "")) == d);
  CHECK_FALSE(j.contains("source"));

  Json a100 = to_json(catalog_device("A100-SXM4-80GB"));
  CHECK(a100["memory"] == "80GiB");
  CHECK(a100["memory_bandwidth"] == "2039GBps");
  CHECK(a100["peak"]["bf16"] == "312TFlops");
  CHECK(a100["kernel_overhead"] == "3us");
  CHECK_FALSE(a100["peak"].contains("fp8"));
}

TEST_CASE("a preset starts from the catalog entry and the other keys override") {
  const HardwareModel base = catalog_cluster("dgx_a100");

  HardwareModel big = cluster_from(R"({"preset": "dgx_a100", "devices": 1024})");
  CHECK(big.num_devices == 1024);
  CHECK(big.num_nodes() == 128);
  HardwareModel expected = base;
  expected.num_devices = 1024;
  CHECK(big == expected);

  HardwareModel oversub =
      cluster_from(R"({"preset": "dgx_a100", "devices": 64, "network": {"oversubscription": 4}})");
  CHECK(oversub.network.oversubscription == 4.0);
  CHECK(oversub.network.levels == base.network.levels);  // the other fields stay
  CHECK(oversub.network.topology == base.network.topology);
  CHECK(oversub.network.nodes_per_leaf == base.network.nodes_per_leaf);
  CHECK(oversub.network.switch_latency_s == base.network.switch_latency_s);
  CHECK(oversub.device == base.device);

  HardwareModel other_gpu = cluster_from(
      R"({"preset": "dgx_a100", "name": "dgx_a100_custom", "device": "A100-SXM4-40GB",
          "node": {"nic": "ib_ndr"}})");
  CHECK(other_gpu.name == "dgx_a100_custom");
  CHECK(other_gpu.device == catalog_device("A100-SXM4-40GB"));
  CHECK(other_gpu.node.nic == catalog_link("ib_ndr"));
  CHECK(other_gpu.node.devices == 8);
  CHECK(other_gpu.node.device_link == base.node.device_link);

  // Plain strings name catalog entries.
  Json name = "dgx_h100";
  CHECK(read_cluster(JsonNode(name, "s.json", "hardware")) == catalog_cluster("dgx_h100"));

  // Devices and links take presets too; nested records merge field by field.
  DeviceSpec d = device_from(
      R"({"preset": "A100-SXM4-80GB", "price_per_hour": 1.5,
          "efficiency": {"matmul": {"max_fraction": 0.8}}})");
  DeviceSpec a100 = catalog_device("A100-SXM4-80GB");
  CHECK(d.price_per_hour == 1.5);
  CHECK(d.matmul.max_fraction == 0.8);
  CHECK(d.matmul.half_size == a100.matmul.half_size);
  CHECK(d.memory == a100.memory);
  CHECK(d.peak_flops == a100.peak_flops);

  LinkSpec slow = link_from(R"({"preset": "ib_hdr", "latency": "10us"})");
  CHECK(slow.latency_s == 10 * kMicro);
  CHECK(slow.bandwidth_Bps == catalog_link("ib_hdr").bandwidth_Bps);
}

TEST_CASE("inline objects and files relative to the referring file") {
  TempDir dir;
  dir.write("hw/gpu.json", R"({
    "name": "my-gpu", "peak": {"bf16": "100TFlops"}, "vector_flops": "10TFlops",
    "memory": "24GiB", "memory_bandwidth": "1TBps",
    "efficiency": {"matmul": {"max_fraction": 0.7, "half_size": "1GFLOP"},
                   "memory": {"max_fraction": 0.8, "half_size": "1MB"}},
    "kernel_overhead": "5us", "reserved_memory": "1GiB"})");
  dir.write("hw/cluster.json", R"({
    "name": "lab", "device": "gpu.json",
    "node": {"devices": 4, "device_link": "pcie4", "nics": 1,
             "nic": {"name": "eth", "bandwidth": "10Gbps", "latency": "50us", "efficiency": 0.5}},
    "network": {"topology": "fat_tree", "oversubscription": 1, "levels": 1, "nodes_per_leaf": 8},
    "devices": 8})");
  std::string scenario = dir.write("scenario.json", "{}");

  HardwareModel lab = cluster_from(R"({"file": "hw/cluster.json", "devices": 16})", scenario);
  CHECK(lab.name == "lab");
  CHECK(lab.num_devices == 16);
  CHECK(lab.num_nodes() == 4);
  CHECK(lab.device.name == "my-gpu");
  CHECK(peak(lab.device, DType::kBf16) == 100 * kTera);
  CHECK(peak(lab.device, DType::kFp32) == 0);
  CHECK(lab.device.price_per_hour == 0);
  CHECK(lab.node.device_link == catalog_link("pcie4"));
  CHECK(lab.node.nic.bandwidth_Bps == 10 * kGB / kBitsPerByte);
  CHECK(lab.network.switch_latency_s == 0);

  Json path = "hw/cluster.json";
  HardwareModel same = read_cluster(JsonNode(path, scenario, "hardware"));
  CHECK(same.num_devices == 8);
  CHECK(same.device == lab.device);

  // A single-node cluster needs no network.
  HardwareModel box = cluster_from(R"({
    "name": "box", "device": "B200",
    "node": {"devices": 8, "device_link": "nvlink5", "nics": 0}})");
  CHECK(box.num_devices == 8);
  CHECK(box.node.nic == LinkSpec{});
  CHECK(read_cluster(JsonNode(to_json(box), "x.json", "")) == box);
}

TEST_CASE("error messages name the file, the JSON path, the value and the rule") {
  SUBCASE("unknown key, with a suggestion") {
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"preset": "dgx_a100", "devces": 16})"),
        "scenario.json: hardware.devces: \"devces\" is an unknown key (did you mean 'devices'?); "
        "allowed keys: name, device, node, network, devices, source, preset, file, groups",
        InputError);
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"preset": "dgx_a100", "network": {"oversubscribtion": 2}})"),
        "scenario.json: hardware.network.oversubscribtion: \"oversubscribtion\" is an unknown key "
        "(did you mean 'oversubscription'?); allowed keys: topology, oversubscription, levels, "
        "nodes_per_leaf, switch_latency",
        InputError);
  }
  SUBCASE("bad unit") {
    CHECK_THROWS_WITH_AS(
        link_from(R"({"name": "x", "bandwidth": "300GBs", "latency": "2us", "efficiency": 0.8})"),
        "hw.json: link.bandwidth: \"300GBs\" has unknown unit 'GBs' for a bandwidth (accepted: "
        "Bps, MBps, GBps, TBps, GB/s, bps, Mbps, Gbps, Tbps, Gb/s)",
        InputError);
    CHECK_THROWS_WITH_AS(device_from(R"({"preset": "B200", "memory": "180GBps"})"),
                         "hw.json: device.memory: \"180GBps\" has unknown unit 'GBps' for a size "
                         "in bytes (accepted: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
                         InputError);
  }
  SUBCASE("size efficiency curve") {
    const char* base = R"({"name": "x", "bandwidth": "300GBps", "latency": "2us", "efficiency": 0.8, )";
    const LinkSpec ok = link_from(std::string(base) + R"("size_efficiency": [["1MiB", 0.5], ["1GiB", 1]]})");
    REQUIRE(ok.size_efficiency.size() == 2);
    CHECK(ok.size_efficiency[0].first == 1048576.0);
    CHECK(link_from(to_json(ok).dump()) == ok);  // round-trips
    CHECK_THROWS_WITH_AS(
        link_from(std::string(base) + R"("size_efficiency": [["1GiB", 1], ["1MiB", 0.5]]})"),
        "hw.json: link.size_efficiency[1][0]: \"1MiB\" must be larger than the size before it "
        "(ascending sizes)",
        InputError);
    CHECK_THROWS_WITH_AS(
        link_from(std::string(base) + R"("size_efficiency": [["1MiB", 1.5]]})"),
        "hw.json: link.size_efficiency[0][1]: 1.5 must be a fraction in (0, 1]", InputError);
    CHECK_THROWS_WITH_AS(link_from(std::string(base) + R"("size_efficiency": [["1MiB"]]})"),
                         "hw.json: link.size_efficiency[0]: [\"1MiB\"] must be a [size, factor] pair",
                         InputError);
  }
  SUBCASE("missing required field") {
    CHECK_THROWS_WITH_AS(link_from(R"({"name": "x", "bandwidth": "300GBps", "efficiency": 0.8})"),
                         "hw.json: link.latency: (missing) is a required field", InputError);
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"name": "c", "device": "B200",
                         "node": {"devices": 8, "device_link": "nvlink5", "nics": 8}})"),
        "scenario.json: hardware.node.nic: (missing) is a required field when nics > 0",
        InputError);
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"name": "c", "device": "B200", "devices": 16,
                         "node": {"devices": 8, "device_link": "nvlink5", "nics": 0}})"),
        "scenario.json: hardware.network: (missing) is a required field for a cluster of more "
        "than one node (16 devices, 8 per node)",
        InputError);
  }
  SUBCASE("unknown preset or catalog name") {
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"preset": "dgx_a1000", "devices": 16})"),
        "scenario.json: hardware.preset: \"dgx_a1000\" is not a known cluster (did you mean "
        "'dgx_a100'?); known clusters: cpu_cluster, dgx1_v100, dgx2_v100, dgx_a100, "
        "dgx_a100_40gb, dgx_b200, dgx_h100, dgx_h200, mi300x_node, p40_pcie_server",
        InputError);
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"preset": "dgx_h100", "device": "h100-sxm5-80gb"})"),
        "scenario.json: hardware.device: \"h100-sxm5-80gb\" is not a known device (did you mean "
        "'H100-SXM5-80GB'?); known devices: A100-SXM4-40GB, A100-SXM4-80GB, B200, "
        "H100-SXM5-80GB, H200-SXM-141GB, MI300X, P40, V100-SXM2-32GB, V100-SXM3-32GB, x86-cpu-socket",
        InputError);
    CHECK_THROWS_WITH_AS(
        catalog_link("nvlnk4"),
        "catalog: links: \"nvlnk4\" is not a known link (did you mean 'nvlink4'?); known links: "
        "ethernet_100g, ethernet_25g, ib_edr, ib_hdr, ib_ndr, infinity_fabric_mi300x, nvlink2, "
        "nvlink3, nvlink4, nvlink5, pcie3, pcie4, pcie5, roce_200g, roce_400g, upi",
        InputError);
    // Equally near misses are listed when few, and left out when many.
    CHECK_THROWS_WITH_AS(
        catalog_link("roce_100g"),
        "catalog: links: \"roce_100g\" is not a known link (did you mean 'roce_200g' or "
        "'roce_400g'?); known links: ethernet_100g, ethernet_25g, ib_edr, ib_hdr, ib_ndr, "
        "infinity_fabric_mi300x, nvlink2, nvlink3, nvlink4, nvlink5, pcie3, pcie4, pcie5, roce_200g, "
        "roce_400g, upi",
        InputError);
    CHECK_THROWS_WITH_AS(
        catalog_link("nvlink6"),
        "catalog: links: \"nvlink6\" is not a known link; known links: ethernet_100g, "
        "ethernet_25g, ib_edr, ib_hdr, ib_ndr, infinity_fabric_mi300x, nvlink2, nvlink3, nvlink4, "
        "nvlink5, pcie3, pcie4, pcie5, roce_200g, roce_400g, upi",
        InputError);
  }
  SUBCASE("number without unit") {
    CHECK_THROWS_WITH_AS(device_from(R"({"preset": "A100-SXM4-80GB", "memory": 80})"),
                         "hw.json: device.memory: 80 must be a size in bytes with a unit, as a "
                         "string such as \"80GiB\"",
                         InputError);
    CHECK_THROWS_WITH_AS(link_from(R"({"preset": "ib_ndr", "latency": 3})"),
                         "hw.json: link.latency: 3 must be a time with a unit, as a string such "
                         "as \"1.5us\"",
                         InputError);
  }
  SUBCASE("value rules") {
    CHECK_THROWS_WITH_AS(cluster_from(R"({"preset": "dgx_a100", "node": {"devices": 0}})"),
                         "scenario.json: hardware.node.devices: 0 must be at least 1", InputError);
    CHECK_THROWS_WITH_AS(
        device_from(R"({"preset": "B200", "efficiency": {"memory": {"max_fraction": 1.2}}})"),
        "hw.json: device.efficiency.memory.max_fraction: 1.2 must be a fraction in (0, 1]",
        InputError);
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"preset": "dgx_h100", "network": {"oversubscription": 0.5}})"),
        "scenario.json: hardware.network.oversubscription: 0.5 must be at least 1 (1 = full "
        "bisection bandwidth)",
        InputError);
    CHECK_THROWS_WITH_AS(
        cluster_from(R"({"preset": "dgx_h100", "network": {"topology": "torus"}})"),
        "scenario.json: hardware.network.topology: \"torus\" is not one of: fat_tree, "
        "rail_optimized",
        InputError);
    CHECK_THROWS_WITH_AS(cluster_from(R"({"preset": "dgx_h100", "devices": 12})"),
                         "scenario.json: hardware.devices: 12 must fit in one node or be a "
                         "multiple of node.devices (8)",
                         InputError);
    CHECK_THROWS_WITH_AS(
        device_from(R"({"preset": "V100-SXM2-32GB", "peak": {"bf16": "0TFlops"}})"),
        "hw.json: device.peak.bf16: \"0TFlops\" must be greater than zero; leave out a dtype the "
        "device does not support",
        InputError);
    CHECK_THROWS_WITH_AS(device_from(R"({"preset": "V100-SXM2-32GB", "reserved_memory": "40GiB"})"),
                         "hw.json: device.reserved_memory: \"40GiB\" leaves no usable memory: "
                         "reserved_memory (40.00 GiB) must be less than memory (32.00 GiB)",
                         InputError);
    // The CUDA context is the part of reserved_memory outside the allocator: it cannot exceed it.
    CHECK_THROWS_WITH_AS(device_from(R"({"preset": "V100-SXM2-32GB", "reserved_memory": "100MiB"})"),
                         "hw.json: device.reserved_memory: \"100MiB\" cuda_context (273.75 MiB) is "
                         "the part of reserved_memory held outside the allocator, so it must be at "
                         "most reserved_memory (100.00 MiB)",
                         InputError);
    CHECK(device_from(R"({"preset": "V100-SXM2-32GB", "cuda_context": "1GiB"})").cuda_context_B ==
          doctest::Approx(1.0 * kGiB));
    CHECK_THROWS_WITH_AS(
        link_from(std::string(R"({"preset": "ib_hdr", "file": "x.json", )") + kLinkFields + "}"),
        "hw.json: link: {\"preset\":\"ib_hdr\",\"file\":\"x.json\",\"bandwidth\":\"300GBps\",... "
        "gives both \"preset\" and \"file\"; use one",
        InputError);
  }
  SUBCASE("structured fields, and catalog entries cannot reference files") {
    try {
      cluster_from(R"({"preset": "dgx_b200", "network": {"levels": 0}})");
      FAIL("expected an InputError");
    } catch (const InputError& e) {
      CHECK(e.file() == "scenario.json");
      CHECK(e.path() == "hardware.network.levels");
      CHECK(e.value() == "0");
      CHECK(e.rule() == "must be at least 1");
    }
    Json j = Json::parse(R"({"file": "other.json"})");
    CHECK_THROWS_WITH_AS(read_cluster(JsonNode(j, "catalog:clusters/x.json", "")),
                         "catalog:clusters/x.json: file: \"other.json\" is a file reference; a "
                         "built-in catalog entry may only name catalog entries",
                         InputError);
  }
  SUBCASE("files: missing, and reference cycles") {
    TempDir dir;
    std::string scenario = dir.write("scenario.json", "{}");
    std::string missing = (dir.path / "nope.json").generic_string();
    const std::string missing_message =
        scenario + ": hardware.file: \"nope.json\" names a file that does not exist: " + missing;
    CHECK_THROWS_WITH_AS(cluster_from(R"({"file": "nope.json"})", scenario),
                         missing_message.c_str(), InputError);
    std::string loop = dir.write("loop.json", R"({"file": "loop.json"})");
    const std::string loop_message =
        loop + ": (top level): {\"file\":\"loop.json\"} is reached through more than 16 nested "
               "preset/file references (is there a cycle?)";
    CHECK_THROWS_WITH_AS(cluster_from(R"({"file": "loop.json"})", scenario), loop_message.c_str(),
                         InputError);
  }
}

TEST_CASE("overrides edit nested descriptions field by field, multi-node clusters need NICs") {
  const Json j = parse_json_text(
      R"({"preset": "dgx_a100", "devices": 16, "device": {"memory": "40GiB"},
          "node": {"nic": {"bandwidth": "100Gbps"}}})",
      "o.json");
  const HardwareModel h = read_cluster(JsonNode(j, "o.json", "cluster"));
  CHECK(h.device.memory_B == 40 * kGiB);
  CHECK(h.device.name == "A100-SXM4-80GB");          // everything else inherited
  CHECK(h.device.memory_bandwidth_Bps == 2039 * kGB);
  CHECK(h.node.nic.bandwidth_Bps == 100 * kGB / kBitsPerByte);
  CHECK(h.node.nic.name == "ib_hdr");
  const Json bad = parse_json_text(R"({"preset": "dgx_a100", "devices": 16, "node": {"nics": 0}})",
                                   "o.json");
  CHECK_THROWS_WITH_AS(read_cluster(JsonNode(bad, "o.json", "cluster")),
                       "o.json: cluster.node: {\"nics\":0} gives a cluster of 2 nodes without a "
                       "network interface (node.nics must be at least 1)",
                       InputError);
}

TEST_CASE("hostile input: absurd but positive hardware figures are refused with the rule") {
  // 1e-300 FLOP/s would give infinite iteration times and inf throughput ranked best (issue 14).
  CHECK_THROWS_WITH_AS(device_from(R"({"preset": "A100-SXM4-80GB", "peak": {"bf16": "1e-300TFlops"}})"),
                       "hw.json: device.peak.bf16: \"1e-300TFlops\" must be between 1 MFLOP/s and "
                       "1 EFLOP/s per device",
                       InputError);
  CHECK_THROWS_WITH_AS(
      device_from(R"({"preset": "A100-SXM4-80GB", "memory_bandwidth": "1e-300TBps"})"),
      "hw.json: device.memory_bandwidth: \"1e-300TBps\" must be between 1 kB/s and 100 TB/s",
      InputError);
  CHECK_THROWS_WITH_AS(device_from(R"({"preset": "A100-SXM4-80GB", "memory": "1e30GB"})"),
                       "hw.json: device.memory: \"1e30GB\" must be between 1 MB and 100 TB",
                       InputError);
  CHECK_THROWS_WITH_AS(device_from(R"({"preset": "A100-SXM4-80GB", "ep_overlap_rate": 0})"),
                       "hw.json: device.ep_overlap_rate: 0 must be above 0 and at most 1 (an "
                       "exchange's rate beside compute over its rate alone)",
                       InputError);
}

TEST_CASE("the H100's and H200's expert-exchange rate beside compute is the EP-overlap profile's") {
  // Megatron-Bridge's MoE communication-overlap card (nsys A/B, Qwen3-30B-A3B, 16 H100):
  // communication kernels 8254 ms alone, 10832 ms with the overlap of which 3959 ms overlap
  // compute; so 10832 - 3959 = 6873 ms alone and (8254 - 6873) / 3959 = 0.349 done beside it.
  const double rate = (8254.0 - (10832.0 - 3959.0)) / 3959.0;
  CHECK(catalog_device("H100-SXM5-80GB").ep_overlap_rate == doctest::Approx(rate).epsilon(0.002));
  CHECK(catalog_device("H200-SXM-141GB").ep_overlap_rate == catalog_device("H100-SXM5-80GB").ep_overlap_rate);
  CHECK(catalog_device("A100-SXM4-80GB").ep_overlap_rate == 0);  // not measured: the old rule
  // The catalog round-trips it.
  const DeviceSpec h100 = catalog_device("H100-SXM5-80GB");
  CHECK(to_json(h100).at("ep_overlap_rate").get<double>() == doctest::Approx(0.349));
}
