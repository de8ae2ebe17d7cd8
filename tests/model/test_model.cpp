#include <doctest/doctest.h>

#include "strategies/model/model_json.h"

using namespace stratasim;

TEST_CASE("model: GPT parameter count matches Narayanan et al. 12lh^2(1 + 13/12h + (V+s)/12lh)") {
  // GPT-3 175B: l=96, h=12288, V=51200, s=2048.
  const ModelSpec m = model_preset("gpt3-175b");
  const double l = 96, h = 12288, V = 51200, s = 2048;
  const double formula = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  // The formula leaves out the final LayerNorm (2h), which the tool counts.
  CHECK(total_params(m) == doctest::Approx(formula + 2 * h).epsilon(1e-12));
  CHECK(formula == doctest::Approx(174.6e9).epsilon(1e-3));
}

TEST_CASE("model: Llama-2 70B with GQA and SwiGLU has ~69B parameters") {
  // Per layer: q,o 2h^2, k,v 2*h*(8*128), MLP 3*h*ffn, two RMSNorms 2h; untied embeddings.
  const double h = 8192, kv = 8 * 128, f = 28672, V = 32000;
  const double layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h;
  const double expected = 80 * layer + 2 * V * h + h;
  CHECK(total_params(model_preset("llama2-70b")) == doctest::Approx(expected).epsilon(1e-12));
  CHECK(expected == doctest::Approx(68.98e9).epsilon(1e-3));
}

namespace {

// The forward FLOPs of an operator graph's convolutions and matrix multiplies, per sample.
double matrix_flops(const ModelSpec& m) {
  double flops = 0;
  for (const GraphOp& op : m.graph.ops) {
    if (op.kind == GraphOpKind::kConv || op.kind == GraphOpKind::kMatmul) flops += op.flops;
  }
  return flops;
}

}  // namespace

TEST_CASE("model: ResNet-50 graph has torchvision's 25,557,032 parameters and ~4.1 GMAC") {
  const ModelSpec m = model_preset("resnet50");
  CHECK(total_params(m) == 25557032);
  const double conv_flops = matrix_flops(m);
  // He et al. 2016, Table 1: 3.8e9 multiply-adds (their count skips the projection shortcuts
  // and fc); the common count with them is 4.09e9 MAC = 8.18e9 FLOP.
  CHECK(conv_flops == doctest::Approx(8.18e9).epsilon(0.01));
}

TEST_CASE("model: ResNet-101 graph has torchvision's 44,549,160 parameters and ~7.8 GMAC") {
  const ModelSpec m = model_preset("resnet101");
  CHECK(total_params(m) == 44549160);
  const double conv_flops = matrix_flops(m);
  // torchvision's model card: 7.80 GFLOPS counted as multiply-adds = 15.6e9 FLOP.
  CHECK(conv_flops == doctest::Approx(15.6e9).epsilon(0.01));
  // 4 stem ops, 33 bottlenecks of 10 ops (12 with a downsample: the first of each of the 4
  // stages), avgpool, fc, loss.
  CHECK(m.graph.ops.size() == 4 + 33 * 10 + 4 * 2 + 3);
}

TEST_CASE("model: AmoebaNet-D (18, 256) as torchgpipe builds it: 122,470,120 parameters, 30.3 GFLOP") {
  // The second implementation: torchgpipe's own benchmarks/models/amoebanet (v0.0.7) in
  // PyTorch 1.13, amoebanetd(num_classes=1000, num_layers=18, num_filters=256): its parameters
  // summed, and 2 x output elements x C_in x k_h x k_w of every Conv2d (2 x out x in of the
  // Linear) on one 224x224 image by forward hooks: 122,470,120 and 30,340,186,112.
  const ModelSpec m = model_preset("amoebanet-d-18-256");
  CHECK(total_params(m) == 122470120);
  CHECK(matrix_flops(m) == doctest::Approx(30340186112.0).epsilon(1e-9));
  // 24 layers of torchgpipe's nn.Sequential, each op named after its layer.
  int layers = 0;
  std::string last;
  for (const GraphOp& op : m.graph.ops) {
    const std::string layer = op.name.substr(0, op.name.find('.'));
    if (layer != last) ++layers, last = layer;
  }
  CHECK(layers == 24);
}

TEST_CASE("model: VGG-16 graph has torchvision's 138,357,544 parameters and 15.47 GMAC") {
  const ModelSpec m = model_preset("vgg16");
  // By hand: convolutions sum 9 C_in C_out + C_out over 3-64, 64-64, 64-128, 128-128,
  // 128-256, 256-256 x2, 256-512, 512-512 x5 = 14,714,688; the classifier 25088 x 4096 + 4096
  // + 4096 x 4096 + 4096 + 4096 x 1000 + 1000 = 123,642,856; together 138,357,544.
  CHECK(total_params(m) == 138357544);
  // torchvision's model card: 15.47 GFLOPS counted as multiply-adds.
  CHECK(matrix_flops(m) / 2 == doctest::Approx(15.47e9).epsilon(0.002));
}

TEST_CASE("model: LSTM language model parameters are 4H(in+H)+4H per layer") {
  const ModelSpec m = make_lstm_lm(2, 1500, 10000, 35);
  const double H = 1500, V = 10000;
  const double expected = V * H + 2 * (4 * H * (H + H) + 4 * H) + H * V + V;
  CHECK(total_params(m) == doctest::Approx(expected));
  CHECK(m.graph.repeat == 35);
}

TEST_CASE("model: GNMT's parameters, layer by layer") {
  // An LSTM cell on input width I: 4H (I + H) + 4H. GNMT-8 with H = 1024, V = 32,320:
  //   embeddings 2 V H; encoder layer 0 two cells on H, layer 1 on 2H, layers 2-3 on H;
  //   attention: source-state projection H^2, query H^2 + H, scores' v H;
  //   decoder layer 0 on H, layers 1-3 on 2H; classifier H V + V.
  const double H = 1024, V = 32320;
  auto cell = [&](double in) { return 4 * H * (in + H) + 4 * H; };
  const double gnmt8 = 2 * V * H + 2 * cell(H) + cell(2 * H) + 2 * cell(H) + (H * H + H * H + H + H) +
                       cell(H) + 3 * cell(2 * H) + H * V + V;
  const ModelSpec m = model_preset("gnmt-8");
  CHECK(total_params(m) == doctest::Approx(gnmt8));
  CHECK(gnmt8 == doctest::Approx(193.7e6).epsilon(1e-3));  // 193.7M: MLPerf's ~160M and a second embedding
  CHECK(m.graph.repeat == 50);
  // GNMT-16: four more cells on H in the encoder, four more on 2H in the decoder.
  CHECK(total_params(model_preset("gnmt-16")) == doctest::Approx(gnmt8 + 4 * cell(H) + 4 * cell(2 * H)));
  // Attention per step reads all 50 source states: scores and context 2 x 50 H FLOP each.
  double attention = 0;
  for (const GraphOp& op : m.graph.ops) {
    if (op.name == "attention.scores" || op.name == "attention.context") attention += op.flops;
  }
  CHECK(attention == doctest::Approx(2 * 2 * 50 * H));
}

TEST_CASE("model: JSON presets, overrides and errors") {
  const Json j = parse_json_text(R"({"preset": "llama3-8b", "seq_len": 4096})", "m.json");
  const ModelSpec m = read_model(JsonNode(j, "m.json", "model"));
  CHECK(m.transformer.seq_len == 4096);
  CHECK(m.transformer.kv_heads == 8);
  const Json bad = parse_json_text(R"({"preset": "gpt4"})", "m.json");
  CHECK_THROWS_WITH_AS(read_model(JsonNode(bad, "m.json", "model")),
                       doctest::Contains("m.json: model.preset: \"gpt4\" is not a known model preset"),
                       InputError);
  const Json odd = parse_json_text(
      R"({"family": "decoder", "layers": 2, "hidden": 10, "heads": 3, "seq_len": 8, "vocab": 10})",
      "m.json");
  CHECK_THROWS_WITH_AS(read_model(JsonNode(odd, "m.json", "model")),
                       doctest::Contains("has hidden=10 not divisible by heads=3"), InputError);
  // Round trip through JSON.
  const ModelSpec back = read_model(JsonNode(to_json(m), "rt", "model"));
  CHECK(back == m);
}

// The fuzzer's finding (CI, stop 29): an op of 1e308 FLOP or elements overflowed the prediction
// to inf, and 1e30 parameters overflowed the gradient bucket count (an int).
TEST_CASE("model: operator graph figures beyond any real layer are input errors") {
  auto read = [](const std::string& ops) {
    const Json j = parse_json_text(R"({"family": "op_graph", "repeat": 1000, "ops": [)" + ops + "]}", "g.json");
    return read_model(JsonNode(j, "g.json", "model"));
  };
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "matmul", "flops": 1e308, "output_elements": 1})"),
                       doctest::Contains("g.json: model.ops[0].flops: 1e+308 must be at most 1e+18 FLOP per sample"),
                       InputError);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "matmul", "flops": "2EFLOP", "output_elements": 1})"),
                       doctest::Contains("unknown unit"), InputError);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "matmul", "flops": 1, "output_elements": 1e16})"),
                       doctest::Contains("model.ops[0].output_elements: 1e+16 must be at most 1e+15 elements per sample"),
                       InputError);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "matmul", "flops": 1, "output_elements": 1, "input_elements": 1e300})"),
                       doctest::Contains("model.ops[0].input_elements"), InputError);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "matmul", "flops": 1, "output_elements": 1, "params": 1e30})"),
                       doctest::Contains("model.ops[0].params: 1e+30 must be at most 1e+15 parameters"),
                       InputError);
  // Each op within bounds, the graph repeated 1000 times beyond them: 2e12 x 1000 = 2e15.
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "matmul", "flops": 1, "output_elements": 1, "params": 1e12},
                             {"name": "b", "kind": "matmul", "flops": 1, "output_elements": 1, "params": 1e12, "inputs": ["a"]})"),
                       doctest::Contains("holds 2e+15 parameters in all (ops x repeat); at most 1e+15 are modelled"),
                       InputError);
  CHECK(read(R"({"name": "a", "kind": "matmul", "flops": 1e18, "output_elements": 1e15, "params": 1e12})").graph.ops.size() == 1);
}

TEST_CASE("model: a spatial op's rows and halo are read, round-trip, and a halo without rows is an error") {
  auto read = [](const std::string& ops) {
    const Json j = parse_json_text(R"({"family": "op_graph", "ops": [)" + ops + "]}", "g.json");
    return read_model(JsonNode(j, "g.json", "model"));
  };
  const ModelSpec m = read(R"({"name": "blur", "kind": "stencil", "flops": 17, "output_elements": 6, "height": 2,
                               "halo": 1, "input_height": 2, "input_elements": 6})");
  REQUIRE(m.graph.ops.size() == 1);
  CHECK(m.graph.ops[0].kind == GraphOpKind::kStencil);
  CHECK(m.graph.ops[0].height == 2);
  CHECK(m.graph.ops[0].halo == 1);
  CHECK(read_model(JsonNode(to_json(m), "rt", "model")) == m);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "conv", "flops": 1, "output_elements": 9, "halo": 1})"),
                       doctest::Contains("g.json: model.ops[0].halo: 1 needs the op's height (rows of its output): "
                                         "a halo is rows of a spatial op's input"),
                       InputError);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "conv", "flops": 1, "output_elements": 9, "input_height": 4})"),
                       doctest::Contains("model.ops[0].input_height: 4 needs the op's height"), InputError);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "conv", "flops": 1, "output_elements": 9, "height": 10})"),
                       doctest::Contains("model.ops[0].height: 10 is more rows than the op's 9 output elements"),
                       InputError);
  CHECK_THROWS_WITH_AS(read(R"({"name": "a", "kind": "conv", "flops": 1, "output_elements": 9, "height": -1})"),
                       doctest::Contains("model.ops[0].height"), InputError);
}

TEST_CASE("model: an operator graph that does no work is an input error, not a 0 s prediction") {
  const Json idle = parse_json_text(
      R"({"family": "op_graph", "ops": [{"name": "a", "kind": "elementwise", "flops": 0, "output_elements": 0},
          {"name": "b", "kind": "elementwise", "flops": 0, "output_elements": 0, "inputs": ["a"]}]})",
      "g.json");
  CHECK_THROWS_WITH_AS(read_model(JsonNode(idle, "g.json", "model")),
                       doctest::Contains("does no work: every op has 0 flops, 0 output and input "
                                         "elements and 0 params"),
                       InputError);
  try {
    read_model(JsonNode(idle, "g.json", "model"));
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind("g.json: model.ops: ", 0) == 0);  // file and JSON path
  }
  // One op that moves data is enough.
  const Json copy = parse_json_text(
      R"({"family": "op_graph", "ops": [{"name": "a", "kind": "elementwise", "flops": 0, "output_elements": 1024}]})",
      "g.json");
  CHECK(read_model(JsonNode(copy, "g.json", "model")).graph.ops.size() == 1);
  const Json empty = parse_json_text(R"({"family": "op_graph", "ops": []})", "g.json");
  CHECK_THROWS_WITH_AS(read_model(JsonNode(empty, "g.json", "model")),
                       doctest::Contains("g.json: model.ops: [] must list at least one op"), InputError);
}
