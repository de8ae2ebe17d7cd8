// ModelSpec: *what* is computed. A transformer from hyperparameters, or a generic operator
// graph (CNNs, RNNs). Independent of hardware and strategy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stratasim {

enum class ModelFamily { kDecoder, kEncoder, kOpGraph };
enum class Activation { kGeLU, kReLU, kSwiGLU };
enum class NormKind { kLayerNorm, kRMSNorm };

// Mixture of experts (Shazeer et al. 2017; GShard, Lepikhin et al. 2020): each layer's MLP is
// `experts` expert MLPs of width `expert_ffn_hidden` of which a router picks `top_k` per token,
// plus `shared_experts` always-active MLPs of width `shared_ffn_hidden` (DeepSeekMoE, Dai et al.
// 2024). experts == 0: a dense model.
// Which experts a token's top-k are, as far as the traffic is concerned. kRandom: k distinct
// experts drawn uniformly (Megatron-Core's --moe-router-force-load-balancing draws random
// logits; a trained router with a balancing loss, to first order). kContiguous: token t of a
// rank goes to experts t k .. t k + k - 1 (mod experts), NeMo AutoModel's FakeBalancedGate
// (components/moe/layers.py: arange(n_tokens x k).view(-1, k) % experts): as balanced, but
// its k experts sit side by side, on one or two ranks, so a dispatch that sends a token once
// per rank or node (DeepEP) sends it far fewer times.
enum class MoeRouting { kRandom, kContiguous };

struct MoeSpec {
  int experts = 0;
  int top_k = 1;
  int expert_ffn_hidden = 0;  // 0 = the dense ffn_hidden
  int shared_experts = 0;
  int shared_ffn_hidden = 0;  // 0 = expert_ffn_hidden (per shared expert)
  // > 0: GShard/Switch fixed capacity: every expert processes capacity_factor x its mean token
  // count (overflow dropped, the rest padded). 0: dropless (Megatron-Core's default, MegaBlocks).
  double capacity_factor = 0;
  // Dropless: tokens of the most loaded expert-parallel rank over the mean. It sets the pace of
  // every rank (the all-to-all waits for it). 1 = balanced: Megatron-Bridge's benchmark
  // protocol forces balanced routing (--moe-router-force-load-balancing), so published
  // throughput tables measure 1; a learned router with an auxiliary loss runs above it.
  double load_imbalance = 1;
  // The first layers keep a dense MLP of ffn_hidden (DeepSeek-V3: 3 of 61).
  int first_dense_layers = 0;
  MoeRouting routing = MoeRouting::kRandom;
  // Group-limited routing (DeepSeek-V3's node-limited routing, Sec. 2.1.2: the experts in
  // `groups` groups, a token's top_k chosen inside its group_top_k best groups; Megatron-Core's
  // moe_router_num_groups / moe_router_group_topk, Hugging Face n_group / topk_group). A group
  // scores its top top_k / group_top_k experts, so each chosen group gives the token about
  // that many. 0: no limit.
  int groups = 1;
  int group_top_k = 0;
  bool group_limited() const { return groups > 1 && group_top_k > 0 && group_top_k < groups; }
  bool enabled() const { return experts > 0; }
  bool operator==(const MoeSpec&) const = default;
};

// Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, Sec. 2.1; DeepSeek-V3): queries and
// keys/values are projected down to low ranks and up again per head; each head's query and key
// are a no-RoPE part and a RoPE part (the key's RoPE part shared by all heads), values are
// v_head_dim wide. kv_lora_rank == 0: standard attention.
struct MlaSpec {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 128;
  int qk_rope_head_dim = 64;
  int v_head_dim = 128;
  bool enabled() const { return kv_lora_rank > 0; }
  bool operator==(const MlaSpec&) const = default;
};

struct TransformerSpec {
  int layers = 1;
  int hidden = 1;
  int heads = 1;
  int kv_heads = 0;    // 0 = same as heads (multi-head attention); < heads = GQA
  int ffn_hidden = 0;  // 0 = 4 * hidden
  Activation activation = Activation::kGeLU;
  NormKind norm = NormKind::kLayerNorm;
  int seq_len = 1;
  int vocab = 1;
  bool tied_embeddings = true;
  bool learned_positions = true;  // learned position embedding table (GPT-2/3, BERT)
  bool rotary = false;            // rotary position embedding on q and k (RoPE: Llama, NeoX)
  // RMSNorm over each head's query and key before RoPE (Qwen3, OLMo 2; Megatron-Core's
  // qk_layernorm, Hugging Face's q_norm / k_norm).
  bool qk_norm = false;
  bool linear_bias = true;        // biases in linear layers (GPT-3 yes, Llama no)
  bool dropout = true;            // attention and residual dropout (GPT/BERT yes, Llama no)
  // Width of one attention head; 0 = hidden / heads. Qwen3 sets it apart from hidden (kv_channels
  // 128 with hidden 4096 and 64 heads), so q and the attention output are heads x head_dim wide.
  int head_dim_override = 0;
  // Sliding-window attention (Mistral 7B, Gemma 2/3, GPT-OSS; Megatron-Core's window_size
  // (w, 0)): each query attends itself and the `sliding_window` keys before it (0: the whole
  // causal prefix), on `windowed_layers` of the layers (-1: all; GPT-OSS alternates windowed
  // and full layers, Megatron-Core's window_attn_skip_freq 2). One block stands for every
  // layer, so a layer's attention is costed as the windowed share's mean.
  int sliding_window = 0;
  int windowed_layers = -1;
  // A gated activation's inputs clamped before it (GPT-OSS: the gate to at most `glu_limit`,
  // the linear half to [-glu_limit, glu_limit]; Hugging Face's swiglu_limit 7.0, Megatron-Core's
  // activation_func_clamp_value). 0: none. Costed where the stack runs the clamp as separate
  // kernels (transformer_layer.cpp, expert_glu_clamp).
  double glu_limit = 0;
  // YaRN's attention factor (Peng et al. 2023, arXiv 2309.00071 Sec. 3.4; transformers'
  // _compute_yarn_parameters: rope_scaling's attention_factor, or 0.1 ln(factor) + 1): cos and
  // sin scaled by it. 1: plain RoPE. GPT-OSS: factor 32, 1.3466; DeepSeek-V3's mscale equal to
  // its mscale_all_dim gives 1. A fused rotary kernel without the scale cannot run it
  // (FusionPlan::fused_rope_unscaled).
  double rope_attention_factor = 1;
  // Multi-token prediction depths (DeepSeek-V3 Sec. 2.2; Megatron-Core's mtp_num_layers,
  // Hugging Face's num_nextn_predict_layers): each one more transformer layer of the model's
  // last kind on the last pipeline stage, fed by the next token's embedding and the previous
  // depth's hidden state (both normalized, concatenated and projected 2h -> h), ending in the
  // shared output head and a loss of its own. Trained with the model, not part of its
  // parameter count (DeepSeek-V3: 671B without its 14B MTP module).
  int mtp_layers = 0;
  static constexpr int kMaxMtpLayers = 16;
  MoeSpec moe;
  MlaSpec mla;

  int kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int ffn_or_default() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  int head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  // Per head: query/key width scored, value width (MLA: nope + rope, v_head_dim).
  int qk_head_dim() const { return mla.enabled() ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim(); }
  int v_head_dim() const { return mla.enabled() ? mla.v_head_dim : head_dim(); }
  int attention_width() const { return heads * v_head_dim(); }  // attention output
  int expert_ffn() const { return moe.expert_ffn_hidden > 0 ? moe.expert_ffn_hidden : ffn_or_default(); }
  // The share of layers whose attention is windowed (0 without a window).
  double windowed_share() const {
    if (sliding_window <= 0 || layers <= 0) return 0.0;
    return windowed_layers < 0 ? 1.0 : static_cast<double>(windowed_layers) / layers;
  }
  int shared_ffn() const {
    return moe.shared_ffn_hidden > 0 ? moe.shared_ffn_hidden : expert_ffn();
  }
  bool operator==(const TransformerSpec&) const = default;
};

// Generic operator graph: per-sample costs of each op, for models that are not transformers.
// kStencil: a fixed-weight neighbourhood op on an image or field (blur, Sobel, a finite
// difference): a few FLOP per element read, so memory-bound like an elementwise op, but it reads
// `halo` rows beyond its own on each side.
// kTask: a single-threaded task on a CPU (the DAG executor's and the pipeline runtime's serial
// busy loops): `flops` at one core's task rate, one core of the device busy (DeviceSpec::task_*).
enum class GraphOpKind { kMatmul, kConv, kNorm, kElementwise, kPool, kSoftmax, kLoss, kStencil, kTask };
std::string_view graph_op_kind_name(GraphOpKind k);

struct GraphOp {
  std::string name;
  GraphOpKind kind = GraphOpKind::kElementwise;
  double flops = 0;           // per sample, forward
  double output_elements = 0; // per sample
  double params = 0;          // trainable parameters (elements)
  // Indices of producer ops; empty = reads the model input. In a pipeline stage's part of a
  // graph (op_graph_stages.h), -1 - k reads the stage's k-th external input.
  std::vector<int> inputs;
  double input_elements = 0;  // per sample, only for ops reading the model input
  // Spatial geometry (convolutions, pools, stencils on images): rows of the output per sample
  // (0 = not spatial: its tensors have no rows to split) and rows of its input it reads beyond
  // each output row range on each side (a 3x3 stride-1 convolution: 1; a 7x7 stem: 3). A
  // spatial split (Strategy::cp on an operator graph) gives each device ceil(height / cp) rows
  // and exchanges `halo` input rows with each neighbour. input_height: rows of the model input,
  // for an op reading it (0 = the op's own height).
  int height = 0;
  int halo = 0;
  int input_height = 0;
  // The kernel family a calibration times this op's kernels as (kKernelFamilyNames index, -1 =
  // none): on a calibrated device its kernels run that family's fused or unfused factor times
  // the roofline (the image pipeline's stencils: image_pipeline; an LSTM cell's gates: lstm_cell).
  int family = -1;
  int model_input_rows() const { return input_height > 0 ? input_height : height; }
  bool operator==(const GraphOp&) const = default;
};

struct OpGraphSpec {
  std::vector<GraphOp> ops;
  int repeat = 1;  // the op list is one block repeated `repeat` times (e.g. LSTM time steps)
  // A pipeline stage's part of a graph: the elements per sample of each tensor it receives
  // from earlier stages, and the index of its first op in the whole graph.
  std::vector<double> external_inputs;
  std::vector<int> external_heights;  // rows of each external input (0 = not spatial)
  int source_offset = 0;
  bool operator==(const OpGraphSpec&) const = default;
};

struct ModelSpec {
  std::string name;
  ModelFamily family = ModelFamily::kDecoder;
  TransformerSpec transformer;  // for kDecoder / kEncoder
  OpGraphSpec graph;            // for kOpGraph
  bool operator==(const ModelSpec&) const = default;
};

std::string_view family_name(ModelFamily f);
std::string_view activation_name(Activation a);

// Parameter counts (elements), independent of any strategy.
// Megatron GPT: 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) (Narayanan et al. SC21, Eq. 2
// context); generalised here to GQA, SwiGLU, RMSNorm and untied embeddings.
double layer_params(const TransformerSpec& t);  // an MoE layer when the model has experts
// A layer with the dense MLP (ffn_hidden): every layer of a dense model, the first
// moe.first_dense_layers of an MoE model.
double dense_layer_params(const TransformerSpec& t);
// Parameters every tensor-parallel rank holds whole (MLA's down projections).
double replicated_layer_params(const TransformerSpec& t);
// The same transformer with a dense MLP (the first_dense_layers of an MoE model).
TransformerSpec dense_variant(const TransformerSpec& t);
// The routed experts' share of layer_params (0 for a dense model): they are split over the
// expert-parallel ranks, the rest over tensor parallelism.
double expert_layer_params(const TransformerSpec& t);
// Parameters one token passes through in a layer (a dense model: layer_params).
double active_layer_params(const TransformerSpec& t);
double embedding_params(const TransformerSpec& t);  // token (+ position) embeddings
double head_params(const TransformerSpec& t);       // final norm + untied output projection
double total_params(const ModelSpec& m);

// Rows of each op's output in an operator graph: GraphOp::height, or, for an elementwise op or
// norm without one that reads only spatial tensors of one height (a ReLU after a convolution),
// that height; 0 = not spatial. A part of a graph (a pipeline stage) reads its external inputs'
// rows from OpGraphSpec::external_heights.
std::vector<int> spatial_heights(const OpGraphSpec& g);
// Rows of the tensor an op's input `in` names, given spatial_heights: an op of the graph (in >= 0)
// or the part's external input -1 - in.
int input_rows(const OpGraphSpec& g, const std::vector<int>& heights, int in);

// Channel (filter) parallelism over tp devices (Dryden et al., "Channel and Filter Parallelism
// for Large-Scale CNN Training", SC'19, Sec. III): which ops' outputs are split by channel. A
// convolution or matmul with parameters splits its filters (output channels); ops without
// weights of their own (elementwise, pooling, norms, stencils, tasks) keep the split of what
// they read; a loss mixes every class and runs whole. The model input is whole.
std::vector<char> channel_split(const OpGraphSpec& g);
// Whether op i's own parameters are split over the tp devices: the filters of a split
// convolution or matmul, a norm's per-channel scale and shift on a split input.
bool params_split(const OpGraphSpec& g, const std::vector<char>& split, int i);
bool holds_filters(const GraphOp& op);  // a convolution or matmul with parameters

}  // namespace stratasim
