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
  bool linear_bias = true;        // biases in linear layers (GPT-3 yes, Llama no)
  bool dropout = true;            // attention and residual dropout (GPT/BERT yes, Llama no)

  int kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int ffn_or_default() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  int head_dim() const { return hidden / heads; }
  bool operator==(const TransformerSpec&) const = default;
};

// Generic operator graph: per-sample costs of each op, for models that are not transformers.
enum class GraphOpKind { kMatmul, kConv, kNorm, kElementwise, kPool, kSoftmax, kLoss };
std::string_view graph_op_kind_name(GraphOpKind k);

struct GraphOp {
  std::string name;
  GraphOpKind kind = GraphOpKind::kElementwise;
  double flops = 0;           // per sample, forward
  double output_elements = 0; // per sample
  double params = 0;          // trainable parameters (elements)
  std::vector<int> inputs;    // indices of producer ops; empty = reads the model input
  double input_elements = 0;  // per sample, only for ops reading the model input
  bool operator==(const GraphOp&) const = default;
};

struct OpGraphSpec {
  std::vector<GraphOp> ops;
  int repeat = 1;  // the op list is one block repeated `repeat` times (e.g. LSTM time steps)
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
double layer_params(const TransformerSpec& t);
double embedding_params(const TransformerSpec& t);  // token (+ position) embeddings
double head_params(const TransformerSpec& t);       // final norm + untied output projection
double total_params(const ModelSpec& m);

}  // namespace stratasim
