#include "strategies/lowering/iteration_graph.h"

#include <charconv>
#include <string_view>
#include <vector>

#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

// Appends JSON text without a DOM: the 1T/3072 graph has hundreds of thousands of nodes.
class Out {
 public:
  explicit Out(std::string& s) : s_(s) {}
  Out& raw(std::string_view t) {
    s_.append(t);
    return *this;
  }
  Out& num(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    s_.append(buf, r.ptr);
    return *this;
  }
  Out& num(long long v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    s_.append(buf, r.ptr);
    return *this;
  }
  Out& str(std::string_view t) {  // names built here: no characters that need escaping
    s_.push_back('"');
    s_.append(t);
    s_.push_back('"');
    return *this;
  }

 private:
  std::string& s_;
};

std::string_view chakra_comm_type(CommKind k) {
  switch (k) {
    case CommKind::kAllReduce: return "ALL_REDUCE";
    case CommKind::kAllGather: return "ALL_GATHER";
    case CommKind::kReduceScatter: return "REDUCE_SCATTER";
    case CommKind::kAllToAll: return "ALL_TO_ALL";
    case CommKind::kBroadcast: return "BROADCAST";
    case CommKind::kHaloExchange: return "HALO_EXCHANGE";  // no Chakra collective: neighbour send/recv
  }
  return "?";
}

std::string_view node_type(const IterOp& op) {
  // Optimizer offload: copies to and from host memory, and the CPU's step.
  if (op.kind == IterOpKind::kOffloadGradients) return "MEM_STORE_NODE";
  if (op.kind == IterOpKind::kUploadParameters) return "MEM_LOAD_NODE";
  if (op.stream == Stream::kCompute || op.stream == Stream::kHost) return "COMP_NODE";
  return is_send(op) ? "COMM_SEND_NODE" : "COMM_COLL_NODE";
}

// Whether any op of the stages' programs spans group g.
bool uses_group(const Plan& plan, GroupKind g) {
  for (const StageProgram& st : plan.iteration.stages) {
    for (const StepProgram* step : {&st.forward, &st.backward, &st.weight}) {
      for (const IterOp& op : step->ops) {
        if (op.stream == Stream::kComm && !is_send(op) && op.group == g) return true;
      }
    }
  }
  return false;
}

// The tag both ends of a pipeline message carry: direction, sending virtual stage, micro-batch.
std::string message_tag(bool activation, int from_vstage, int micro_batch) {
  return std::string(activation ? "act/" : "grad/") + std::to_string(from_vstage) + "/" +
         std::to_string(micro_batch);
}

// Op templates: every op of the iteration program once (per virtual stage its forward and
// backward ops and the receives before them, per rank its tail), with its attributes; nodes
// name their template, so a micro-batch's node carries only its id, micro-batch and edges.
struct Templates {
  std::vector<int> forward, backward, weight;  // per virtual stage: index of its first op
  std::vector<int> recv_activation, recv_gradient;  // per virtual stage (-1: none)
  std::vector<int> tail;                            // per rank: index of its first tail op
  int count = 0;
};

class GraphWriter {
 public:
  GraphWriter(const Plan& plan, std::string& text)
      : plan_(plan), map_(plan.stage_map()), out_(text) {}

  Templates templates() {
    Templates t;
    const int vstages = static_cast<int>(plan_.stages.size());
    bool first = true;
    auto sep = [&] {
      out_.raw(first ? "\n" : ",\n");
      first = false;
    };
    for (int vs = 0; vs < vstages; ++vs) {
      const bool has_prev = map_.sends_backward(vs), has_next = map_.sends_forward(vs);
      t.recv_activation.push_back(has_prev ? t.count : -1);
      if (has_prev) sep(), recv_template(t.count++, true, vs);
      t.forward.push_back(t.count);
      for (const IterOp& op : plan_.iteration.stages[vs].forward.ops) {
        sep(), op_template(t.count++, op, "forward");
      }
      t.recv_gradient.push_back(has_next ? t.count : -1);
      if (has_next) sep(), recv_template(t.count++, false, vs);
      t.backward.push_back(t.count);
      for (const IterOp& op : plan_.iteration.stages[vs].backward.ops) {
        sep(), op_template(t.count++, op, "backward");
      }
      t.weight.push_back(t.count);
      for (const IterOp& op : plan_.iteration.stages[vs].weight.ops) {
        sep(), op_template(t.count++, op, "weight");
      }
    }
    for (int r = 0; r < plan_.pp; ++r) {
      t.tail.push_back(t.count);
      for (const IterOp& op : plan_.iteration.tail[r]) sep(), op_template(t.count++, op, "tail");
    }
    return t;
  }

  void rank(int r, const PipelineSchedule& schedule, const Templates& t) {
    first_node_ = true;
    long long step_end_compute = -1, last_backward = -1;
    for (const PipeOp& pop : schedule.per_rank[r]) {
      const int vs = schedule.virtual_stage(r, pop.chunk);
      const bool fwd = pop.kind == PipeOpKind::kForward;
      const bool weight = pop.kind == PipeOpKind::kWeight;
      const StageProgram& program = plan_.iteration.stages[vs];
      const StepProgram& step = fwd ? program.forward : weight ? program.weight : program.backward;
      long long recv = -1;
      const int recv_template =
          weight ? -1 : fwd ? t.recv_activation[vs] : t.recv_gradient[vs];
      if (recv_template >= 0) {
        recv = next_id_;
        begin_node(recv_template, pop.micro_batch);
        deps({}, {});
        out_.raw(",\"comm_tag\":")
            .str(message_tag(fwd, fwd ? map_.prev_stage(vs) : map_.next_stage(vs), pop.micro_batch))
            .raw("}");
      }
      const int base = fwd ? t.forward[vs] : weight ? t.weight[vs] : t.backward[vs];
      std::vector<long long> ids(step.ops.size(), -1);
      bool first_compute = true;
      long long step_last_compute = step_end_compute;
      for (size_t i = 0; i < step.ops.size(); ++i) {
        const IterOp& op = step.ops[i];
        std::vector<long long> data, ctrl;
        for (int8_t d : op.deps) {
          if (d >= 0) data.push_back(ids[d]);
        }
        if (op.stream == Stream::kCompute && first_compute && recv >= 0) data.push_back(recv);
        // Steps run one after another on the rank: an op with nothing before it in its step
        // waits for the previous step's compute; ops of one stream run in program order.
        const bool starts_step =
            op.stream == Stream::kCompute ? first_compute : !stream_used(step, i);
        if (starts_step && step_end_compute >= 0) ctrl.push_back(step_end_compute);
        if (op.stream == Stream::kComm) {
          const long long prev = previous_on_stream(step, ids, i);
          if (prev >= 0) ctrl.push_back(prev);
        }
        if (op.stream == Stream::kCompute) {
          if (!first_compute) ctrl.push_back(step_last_compute);
          first_compute = false;
        }
        ids[i] = next_id_;
        begin_node(base + static_cast<int>(i), pop.micro_batch);
        deps(data, ctrl);
        if (is_send(op)) {
          out_.raw(",\"comm_tag\":")
              .str(message_tag(op.kind == IterOpKind::kSendActivation, vs, pop.micro_batch));
        }
        out_.raw("}");
        if (op.stream == Stream::kCompute) step_last_compute = ids[i];
        if (op.kind == IterOpKind::kBackward) last_backward = ids[i];
      }
      step_end_compute = step_last_compute;
    }
    tail(r, t.tail[r], step_end_compute, last_backward);
  }

 private:
  static bool stream_used(const StepProgram& step, size_t i) {
    for (size_t j = 0; j < i; ++j) {
      if (step.ops[j].stream == step.ops[i].stream) return true;
    }
    return false;
  }
  static long long previous_on_stream(const StepProgram& step, const std::vector<long long>& ids,
                                      size_t i) {
    for (size_t j = i; j-- > 0;) {
      if (step.ops[j].stream == step.ops[i].stream) return ids[j];
    }
    return -1;
  }

  void recv_template(int index, bool activation, int vs) {
    const int from = activation ? map_.prev_stage(vs) : map_.next_stage(vs);
    out_.raw("{\"op\":").num(static_cast<long long>(index))
        .raw(",\"type\":\"COMM_RECV_NODE\",\"kind\":")
        .str(activation ? "recv_activation" : "recv_gradient")
        .raw(",\"step\":").str(activation ? "forward" : "backward")
        .raw(",\"vstage\":").num(static_cast<long long>(vs))
        .raw(",\"stream\":\"comm\",\"comm_size\":").num(plan_.p2p_bytes)
        .raw(",\"comm_src\":").num(static_cast<long long>(plan_.stages[from].rank)).raw("}");
  }

  void op_template(int index, const IterOp& op, std::string_view step) {
    out_.raw("{\"op\":").num(static_cast<long long>(index)).raw(",\"type\":").str(node_type(op))
        .raw(",\"kind\":").str(iter_op_kind_name(op.kind)).raw(",\"step\":").str(step);
    if (op.vstage >= 0) out_.raw(",\"vstage\":").num(static_cast<long long>(op.vstage));
    out_.raw(",\"stream\":").str(stream_name(op.stream));
    if (op.stream == Stream::kCompute || op.stream == Stream::kHost) {
      out_.raw(",\"num_ops\":").num(op.flops).raw(",\"tensor_size\":").num(op.bytes);
    } else if (is_send(op)) {
      const int to = op.kind == IterOpKind::kSendActivation ? map_.next_stage(op.vstage)
                                                            : map_.prev_stage(op.vstage);
      out_.raw(",\"comm_size\":").num(op.bytes).raw(",\"comm_dst\":")
          .num(static_cast<long long>(plan_.stages[to].rank))
          .raw(",\"blocking\":").raw(op.blocking ? "true" : "false");
    } else {
      collective_attrs(op);
    }
    out_.raw("}");
  }

  void begin_node(int op_template, int micro_batch) {
    out_.raw(first_node_ ? "\n{" : ",\n{");
    first_node_ = false;
    out_.raw("\"id\":").num(next_id_++).raw(",\"op\":").num(static_cast<long long>(op_template));
    if (micro_batch >= 0) out_.raw(",\"micro_batch\":").num(static_cast<long long>(micro_batch));
  }

  void id_list(std::string_view key, const std::vector<long long>& ids) {
    out_.raw(",\"").raw(key).raw("\":[");
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out_.raw(",");
      out_.num(ids[i]);
    }
    out_.raw("]");
  }
  void deps(const std::vector<long long>& data, const std::vector<long long>& ctrl) {
    id_list("data_deps", data);
    id_list("ctrl_deps", ctrl);
  }

  void collective_attrs(const IterOp& op) {
    const CommGroup g = plan_.iteration.group(op.group);
    out_.raw(",\"comm_type\":").str(chakra_comm_type(op.comm)).raw(",\"comm_size\":").num(op.bytes)
        .raw(",\"repeats\":").num(static_cast<long long>(op.repeats))
        .raw(",\"group\":").str(group_name(op.group))
        .raw(",\"group_size\":").num(static_cast<long long>(g.size))
        .raw(",\"group_ranks_per_node\":").num(static_cast<long long>(g.ranks_per_node))
        .raw(",\"algorithm\":").str(collective_algorithm_name(op.algorithm));
    if (op.kind == IterOpKind::kGradientReduce) {
      out_.raw(",\"overlaps_last_backward\":").raw(op.overlaps_last_backward ? "true" : "false");
    }
  }

  void tail(int r, int base, long long last_compute, long long last_backward) {
    long long prev = last_compute;
    const std::vector<IterOp>& ops = plan_.iteration.tail[r];
    for (size_t i = 0; i < ops.size(); ++i) {
      const IterOp& op = ops[i];
      std::vector<long long> data, ctrl;
      // Overlapped buckets start with the last backward (bucket k after (k+1)/B of it).
      if (op.kind == IterOpKind::kGradientReduce && op.overlaps_last_backward) {
        if (last_backward >= 0) ctrl.push_back(last_backward);
      } else if (prev >= 0) {
        data.push_back(prev);
      }
      prev = next_id_;
      begin_node(base + static_cast<int>(i), -1);
      deps(data, ctrl);
      out_.raw("}");
    }
  }

  const Plan& plan_;
  const StageMap map_;  // which rank runs each virtual stage, and its neighbours
  Out out_;
  long long next_id_ = 0;
  bool first_node_ = true;
};

void header(Out& o, const Plan& plan) {
  const Strategy& s = plan.strategy;
  o.raw("{\"schema\":\"stratasim.iteration_graph\",\"version\":")
      .num(static_cast<long long>(kIterationGraphVersion))
      .raw(",\"model\":").str(plan.model.name)
      .raw(",\"strategy\":{\"tp\":").num(static_cast<long long>(plan.tp))
      .raw(",\"pp\":").num(static_cast<long long>(plan.pp))
      .raw(",\"dp\":").num(static_cast<long long>(plan.dp))
      .raw(",\"interleave\":").num(static_cast<long long>(plan.chunks))
      .raw(",\"micro_batches\":").num(static_cast<long long>(plan.micro_batches))
      .raw(",\"schedule\":").str(schedule_name(s.schedule))
      .raw(",\"zero_stage\":").num(static_cast<long long>(s.zero_stage))
      .raw("},\"devices\":").num(static_cast<long long>(plan.hardware.num_devices))
      .raw(",\"symmetry\":\"one entry per pipeline rank; it stands for its tp x dp devices, which "
           "run the same ops on equal shards")
      .raw(plan.mp > 1 ? " (x the placement's devices of a replica, whose compute ops hold the "
                         "replica's placed graph with its sends, timed as one)" : "")
      .raw("\",\"groups\":{");
  for (GroupKind g : {GroupKind::kTensor, GroupKind::kData, GroupKind::kPipelineEmbedding,
                      GroupKind::kContext, GroupKind::kExpert, GroupKind::kExpertData,
                      GroupKind::kShard, GroupKind::kReplica, GroupKind::kPipelineMirror,
                      GroupKind::kPlacement, GroupKind::kStage}) {
    const CommGroup c = plan.iteration.group(g);
    if (g == GroupKind::kStage && !uses_group(plan, g)) continue;
    if ((g == GroupKind::kExpert || g == GroupKind::kExpertData) && plan.ep == 1) continue;
    if (g == GroupKind::kPipelineMirror && !plan.stage_map().bidirectional) continue;
    if (g == GroupKind::kPlacement && plan.mp == 1) continue;
    if ((g == GroupKind::kShard || g == GroupKind::kReplica) && plan.shard == plan.dp) continue;
    if (g != GroupKind::kTensor) o.raw(",");
    o.str(group_name(g)).raw(":{\"size\":").num(static_cast<long long>(c.size))
        .raw(",\"ranks_per_node\":").num(static_cast<long long>(c.ranks_per_node)).raw("}");
  }
  o.raw("},\"ops\":[");
}

}  // namespace

std::string iteration_graph_json(const Plan& plan, const StageDurations* durations) {
  std::string text;
  text.reserve(1 << 20);
  Out o(text);
  header(o, plan);
  // PipeDream's asynchronous schedule: one iteration's order (its steady state overlaps
  // iterations; the graph shows the ops of one).
  const PipelineSchedule schedule = make_schedule(plan.strategy.schedule, plan.pp,
                                                  plan.micro_batches, plan.chunks, durations);
  GraphWriter w(plan, text);
  const Templates t = w.templates();
  o.raw("\n],\"ranks\":[");
  for (int r = 0; r < plan.pp; ++r) {
    o.raw(r ? ",\n" : "\n").raw("{\"pipeline_rank\":").num(static_cast<long long>(r))
        .raw(",\"devices\":").num(static_cast<long long>(plan.tp) * plan.mp * plan.dp).raw(",\"nodes\":[");
    w.rank(r, schedule, t);
    o.raw("]}");
  }
  o.raw("\n]}\n");
  return text;
}

}  // namespace stratasim
