// Hugging Face model configurations (config.json) as ModelSpec: "model": {"hf_config":
// "config.json", "seq_len": 8192} in a scenario. The families whose configs name every
// dimension the cost model needs: Llama, Mistral, Qwen2/Qwen3 (dense), Mixtral, Qwen2-MoE/
// Qwen3-MoE, DeepSeek-V2/V3 (multi-head latent attention) and GPT-2/GPT-NeoX. Keys the cost
// model does not use (rope_scaling, torch_dtype, ...) are ignored; a setting it cannot express
// (an activation other than the family's, MoE layers only every k-th layer) is an InputError.
#pragma once

#include <string>
#include <vector>

#include "sim/core/json_reader.h"
#include "strategies/model/model_spec.h"

namespace stratasim {

// `root` is the config's top-level object; its file names the config in errors. seq_len stays
// unset (1): max_position_embeddings is a capacity, not the training length, so the scenario
// states it.
ModelSpec read_hf_config(const JsonNode& root);
// The model_type values read_hf_config accepts.
std::vector<std::string> hf_model_types();

}  // namespace stratasim
