// JSON for ModelSpec: a preset name ("gpt3-175b"), a preset with overrides
// ({"preset": "llama2-70b", "seq_len": 8192}), or a full description.
#pragma once

#include <string>
#include <vector>

#include "sim/core/json_reader.h"
#include "strategies/model/model_spec.h"

namespace stratasim {

ModelSpec read_model(const JsonNode& node);
Json to_json(const ModelSpec& m);

std::vector<std::string> model_preset_names();
// Throws InputError (file "presets") for an unknown name.
ModelSpec model_preset(const std::string& name);

// Builders for the op-graph presets (model_resnet.cpp, model_lstm.cpp).
ModelSpec make_resnet50();
ModelSpec make_resnet101();
// AmoebaNet-D (L, D) as torchgpipe builds it, 224x224 input (model_amoebanet.cpp).
ModelSpec make_amoebanet_d(int num_layers, int num_filters, int classes);
ModelSpec make_vgg16(int classes);  // model_vgg.cpp
ModelSpec make_lstm_lm(int layers, int hidden, int vocab, int steps);
ModelSpec make_gnmt(int encoder_layers, int decoder_layers, int hidden, int vocab, int steps);  // model_lstm.cpp
// Blur -> Sobel -> sharpen on a height x width fp32 frame, three 3x3 stencils (model_image.cpp).
ModelSpec make_image_pipeline(int height, int width);

}  // namespace stratasim
