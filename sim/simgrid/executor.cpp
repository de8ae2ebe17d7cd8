// The executor: one SimGrid actor per simulated host (pipeline rank x data-parallel replica)
// runs its rank's schedule (make_schedule) with the compute durations of stage_costs(plan),
// each op as the pieces of op_segments.h: compute, and tensor-parallel collectives as
// messages between the host and its mirror (platform.h), the part hidden behind a GEMM
// computed beside them. ZeRO-2/3 collectives run as collectives over the replicas' hosts
// (gathers before the forward, gathers and reduce-scatters after the backward, the prefetched
// part computed beside them). Activations and gradients travel as messages between the hosts
// of consecutive virtual stages; after the last backward the data-parallel gradient reduction
// (buckets overlapped with that backward when asked), the ZeRO-1/2 parameter gather, the
// tied-embedding all-reduce and the optimizer step. Collectives over replicas are real
// algorithms over point-to-point messages, as the strategy names them (auto: the one
// collective_cost.h picks): ring, hierarchical (intra-node rings, inter-node ring, intra-node
// rings) or double binary tree, so concurrent collectives share links. Activities are posted
// as the schedule reaches them; sends are waited (blocking p2p) or detached (overlapped p2p),
// overlapped ones queue on the host's lane and leave one at a time (pipeline_detail's port);
// tree chunks keep four sends in flight per member, so few activities are ever in flight.
//
// PipeDream async (no flush): the 1F1B op order of schedule_pipedream_async runs as one
// endless stream of warm + window + 1 iterations back to back (micro-batch ids continue
// across iterations). Iteration k ends on rank r with its backward of micro-batch k m - 1;
// the steady-state iteration time is the mean distance between the boundaries of the window
// iterations (after warm iterations covering >= 2p micro-batches, before the last one, whose
// cool-down is not steady). The gradient sync and optimizer step run once after the stream;
// their duration past the stream's end is added to the steady-state iteration.
//
// Post-validated schedules (ZB-H2: the optimizer step validated after the update, no flush of
// all ranks between iterations): one iteration simulated, each host's times then measured from
// the start of its first op, the rank's own iteration; as for async, waiting for a ring peer
// that ended later (the tied-embedding all-reduce of the first and the last stage) is left out.
#include "sim/simgrid/executor.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>

#include "hardware_models/src/hardware_model.h"
#include "sim/cost/block_cost_memo.h"
#include "sim/cost/optimizer_cost.h"
#include "sim/cost/step_timing.h"
#include "sim/simgrid/platform.h"
#include "sim/simgrid/simulation.h"

namespace stratasim::simgrid_detail {

namespace sg4 = simgrid::s4u;

// The backward of the iteration's last micro-batch under Strategy::recompute_last_micro_batch =
// false (torchgpipe's checkpoint='except_last'): it kept its activations, recomputes nothing.
bool Simulation::keeps_activations_of(const PipeOp& op) const {
  return op.kind == PipeOpKind::kBackward && !plan_.strategy.recompute_last_micro_batch &&
         op.micro_batch % m_ == m_ - 1;
}

void Simulation::run_op(int rank, int replica, const PipeOp& op, bool keep) {
  HostResult& me = run_.hosts[host_index(rank, replica)];
  const int vs = map_.virtual_stage(rank, op.chunk);
  const bool fwd = op.kind == PipeOpKind::kForward;
  const int shown_mb = op.micro_batch % m_;  // async: the micro-batch within its iteration
  const std::string id = std::to_string(shown_mb);
  auto record = [&](EventKind kind, double start, std::string name, double bytes = 0) {
    if (keep) {
      Simulation::record(rank, replica, kind, shown_mb, op.chunk, start, std::move(name), -1, bytes);
    }
  };
  const bool weight = op.kind == PipeOpKind::kWeight;  // W of a split backward
  const double start = sg4::Engine::get_clock();
  const StageProgram& program = plan_.iteration.stages[vs];
  const StepProgram& step = fwd ? program.forward : weight ? program.weight : program.backward;
  StepState state(step.ops.size());
  sg4::ActorPtr comm;  // the step's comm stream, when it has collectives
  const bool collectives = std::any_of(step.ops.begin(), step.ops.end(), [](const IterOp& o) {
    return o.stream == Stream::kComm && !is_send(o);
  });
  if (collectives) {
    const std::string tag = std::string(fwd ? "zf" : weight ? "zw" : "zb") + std::to_string(vs) +
                            "-" + std::to_string(op.micro_batch);
    comm = sg4::Actor::create("comm-stream", hosts_[host_index(rank, replica)],
                              [this, rank, replica, &step, &state, tag] {
                                comm_stream(rank, replica, step, state, tag);
                              });
  }
  // The compute ops (recomputation, backward) run back to back as the stage's pieces, after
  // the first compute op's dependencies (a ZeRO-3 gather).
  const auto first_compute = std::find_if(step.ops.begin(), step.ops.end(), [](const IterOp& o) {
    return o.stream == Stream::kCompute;
  });
  if (first_compute != step.ops.end()) state.wait(*first_compute);
  const double compute_start = sg4::Engine::get_clock();
  BucketSignal* signal = fwd ? nullptr : bucket_signal_[host_index(rank, replica)].get();
  const OpPieces& pieces = pieces_[vs];
  const bool keeps_activations = keeps_activations_of(op);
  for (const Piece& piece : fwd ? pieces.forward : weight ? pieces.weight : pieces.backward) {
    if (keeps_activations && piece.kind == EventKind::kRecompute) continue;
    const double t = sg4::Engine::get_clock();
    for (const Segment& seg : piece.segments) {
      compute_tracked(seg.compute_s, signal);
      exchange(host_index(rank, replica), seg.comm);
    }
    const char* prefix = piece.kind == EventKind::kForward      ? "F"
                         : piece.kind == EventKind::kRecompute  ? "R"
                         : piece.kind == EventKind::kWeightGrad ? "W"
                                                                : "B";
    record(piece.kind, t,
           prefix + id + (piece.layer < 0 ? "" : "/L" + std::to_string(piece.layer)));
  }
  const double compute_end = sg4::Engine::get_clock();
  if (signal) {
    // Whatever the rounding left: every bucket is ready when the backward ends. The reducer
    // may still be waiting on the semaphore; the signal lives until it has joined.
    while (signal->released < signal->buckets) signal->ready->release(), ++signal->released;
  }
  for (size_t i = 0; i < step.ops.size(); ++i) {
    if (step.ops[i].stream == Stream::kCompute) state.finish(i);
  }
  if (comm) {
    const double amax_before = me.amax_s;
    comm->join();
    me.zero_exposed_s += std::max(0.0, sg4::Engine::get_clock() - start -
                                           (compute_end - compute_start) - (me.amax_s - amax_before));
  }
  const int to = fwd ? map_.next_stage(vs) : map_.prev_stage(vs);
  if (!weight && to >= 0 && map_.rank_of(to) != rank) {  // the V's turn stays on its rank
    sg4::Mailbox* out = box(fwd ? 'f' : 'b', replica, to);
    void* payload = &micro_batch_ids_[op.micro_batch];
    const double bytes = plan_.boundary_B(fwd ? vs : vs - 1);
    const double send_start = sg4::Engine::get_clock();
    if (plan_.strategy.overlap_p2p) {
      send_overlapped(host_index(rank, replica), out, payload, message_size(bytes));
    } else {  // Megatron's blocking p2p: the sender waits until the message has arrived
      out->put(payload, message_size(bytes));
      me.p2p_s += sg4::Engine::get_clock() - send_start;
      record(EventKind::kComm, send_start, (fwd ? "send act " : "send grad ") + id, bytes);
    }
    ++run_.activities;
  }
  me.busy_s += sg4::Engine::get_clock() - start;
  if (!fwd) {  // the last one stays: where offload's overlapped gradient copy starts
    last_op_start_s_[host_index(rank, replica)] = start;
    last_op_end_s_[host_index(rank, replica)] = sg4::Engine::get_clock();
  }
}

void Simulation::send_overlapped(int host, sg4::Mailbox* box, void* payload, uint64_t size) {
  std::unique_ptr<SendLane>& lane = send_lanes_[host];
  if (!lane) {
    lane = std::make_unique<SendLane>();
    SendLane* raw = lane.get();
    sg4::Actor::create("send-lane", hosts_[host], [this, raw] {
      sg4::Actor::self()->daemonize();  // ends with the workers, whose receives it served
      for (;;) {
        raw->queued->acquire();
        const SendLane::Message msg = raw->queue.front();
        raw->queue.pop_front();
        msg.box->put(msg.payload, msg.size);
      }
    });
  }
  lane->queue.push_back({box, payload, size});
  lane->queued->release();
}

// An expert-parallel all-to-all (op_segments.h ep_as_messages): this host's share to every
// other host of its ep group (ep / tp consecutive replicas of its rank) and to its own tp peers
// (its mirror, when TP runs as messages), all at once; done when all of them have arrived.
void Simulation::all_to_all(int host, const TpExchange& x) {
  HostResult& me = run_.hosts[host];
  const double t0 = sg4::Engine::get_clock();
  const int rank = host / dp_, replica = host % dp_;
  const int width = plan_.ep / plan_.tp, first = replica / width * width;
  std::vector<sg4::CommPtr> sends;
  for (int d = first; d < first + width && d < dp_; ++d) {
    const int peer = host_index(rank, d);
    if (peer == host) continue;
    const bool same_node = host_node_[peer] == host_node_[host];
    const double bytes = x.wire_B * (same_node ? x.intra_share / x.intra_factor : x.inter_share / x.inter_factor);
    sends.push_back(sg4::Comm::sendto_async(hosts_[host], hosts_[peer], message_size(bytes)));
  }
  if (!mirrors_.empty() && x.local_B > 0) {
    sends.push_back(sg4::Comm::sendto_async(hosts_[host], mirrors_[host],
                                            message_size(x.local_B * x.intra_share / x.intra_factor)));
  }
  for (sg4::CommPtr& c : sends) c->wait();
  run_.activities += sends.size();
  if (x.extra_latency_s > 0) {
    sg4::this_actor::sleep_for(x.extra_latency_s);
    ++run_.activities;
  }
  me.ep_s += sg4::Engine::get_clock() - t0;
}

void Simulation::exchange(int host, const TpExchange& x) {
  if (x.empty()) return;
  if (x.all_to_all) return all_to_all(host, x);
  HostResult& me = run_.hosts[host];
  const double t0 = sg4::Engine::get_clock();
  sg4::ExecPtr hidden;  // the GEMM the collective overlaps with (overlap_tp)
  if (x.hidden_s > 0) {
    hidden = sg4::this_actor::exec_async(x.hidden_s * speed_);
    ++run_.activities;
  }
  const uint64_t size = message_size(x.wire_B);
  // The GEMM beside the collective is slowed while the collective runs (overlap_slowdown).
  std::optional<Interference> slows_gemm;
  if (hidden) slows_gemm.emplace(speed_, plan_.hardware.device.overlap_slowdown);
  sg4::CommPtr out = sg4::Comm::sendto_async(hosts_[host], mirrors_[host], size);
  sg4::CommPtr in = sg4::Comm::sendto_async(mirrors_[host], hosts_[host], size);
  out->wait();
  in->wait();
  slows_gemm.reset();
  run_.activities += 2;
  if (x.extra_latency_s > 0) {
    sg4::this_actor::sleep_for(x.extra_latency_s);
    ++run_.activities;
  }
  me.tp_s += sg4::Engine::get_clock() - t0;
  if (hidden) hidden->wait();
  me.tp_exposed_s += std::max(0.0, sg4::Engine::get_clock() - t0 - x.hidden_s);
}

void Simulation::worker(int rank, int replica) {
  HostResult& me = run_.hosts[host_index(rank, replica)];
  const std::vector<PipeOp>& ops = schedule_.per_rank[rank];
  sg4::ActorPtr reducer;
  double cursor = 0;
  int iterations_done = 0;  // async: iteration boundaries passed on this rank
  const int traced = warm_iterations_ + window_iterations_ - 1;  // async: the traced iteration
  for (size_t j = 0; j < ops.size(); ++j) {
    const PipeOp& op = ops[j];
    const int vs = map_.virtual_stage(rank, op.chunk);
    const bool fwd = op.kind == PipeOpKind::kForward;
    const int from = fwd ? map_.prev_stage(vs) : map_.next_stage(vs);
    if (op.kind != PipeOpKind::kWeight && from >= 0 && map_.rank_of(from) != rank) {
      int* got = nullptr;
      sg4::CommPtr c = box(fwd ? 'f' : 'b', replica, vs)->get_async<int>(&got);
      c->wait();
      if (*got != op.micro_batch) throw std::runtime_error("p2p messages arrived out of order");
      if (plan_.strategy.overlap_p2p) {  // detached sends are measured where they arrive
        run_.hosts[host_index(map_.rank_of(from), replica)].p2p_s +=
            c->get_finish_time() - c->get_start_time();
      }
    }
    const double now = sg4::Engine::get_clock();
    if (j == 0) first_op_s_[host_index(rank, replica)] = now;
    const bool keep = !async_ || iterations_done == traced;
    const bool before_first = j == 0 && schedule_.post_validation;  // not part of its iteration
    if (now > cursor && keep && !before_first) {
      record(rank, replica, EventKind::kIdle, -1, 0, cursor, "idle");
    }
    if (j + 1 == ops.size()) sync_phase_[rank] = 1;
    const IterOp* reduce = gradient_reduce(rank);
    if (reduce && reduce->overlaps_last_backward && j + 1 == ops.size() && !fwd) {
      auto signal = std::make_unique<BucketSignal>();
      signal->buckets = std::clamp(reduce->repeats, 1, options_.max_dp_buckets);
      const OpPieces& pieces = pieces_[vs];
      for (const Piece& piece :
           op.kind == PipeOpKind::kWeight ? pieces.weight : pieces.backward) {
        if (keeps_activations_of(op) && piece.kind == EventKind::kRecompute) continue;
        for (const Segment& seg : piece.segments) signal->total_s += seg.compute_s;
      }
      BucketSignal* raw = signal.get();
      bucket_signal_[host_index(rank, replica)] = std::move(signal);
      reducer = sg4::Actor::create("reducer", hosts_[host_index(rank, replica)],
                                   [this, rank, replica, reduce, raw] {
                                     reduce_gradients(rank, replica, *reduce, raw);
                                   });
    }
    run_op(rank, replica, op, keep);
    cursor = sg4::Engine::get_clock();
    if (async_ && !fwd && (op.micro_batch + 1) % m_ == 0) {
      ++iterations_done;
      if (replica == 0 && iterations_done == warm_iterations_) steady_begin_s_[rank] = cursor;
      if (replica == 0 && iterations_done == warm_iterations_ + window_iterations_) {
        steady_end_s_[rank] = cursor;
      }
    }
  }
  me.pipeline_end_s = cursor;
  sync_and_step(rank, replica, reducer);
}

// The gradient-reduce op (iteration.h): op.repeats buckets (at most max_dp_buckets simulated,
// each carrying its share), each after its share of the last backward when overlapped.
void Simulation::reduce_gradients(int rank, int replica, const IterOp& op, BucketSignal* signal) {
  const int buckets = std::clamp(op.repeats, 1, options_.max_dp_buckets);
  const int plan_buckets = std::max(1, op.repeats);
  const bool all_reduce = op.comm == CommKind::kAllReduce;
  const bool serial = signal == nullptr;
  for (int b = 0; b < buckets; ++b) {
    if (signal) signal->ready->acquire();
    std::vector<int> members = members_of(op.group, rank, replica);
    const std::string group_tag = "-g" + std::to_string(members.front());
    const int position = position_in(members, rank, replica);
    // A simulated bucket stands for `count` of the plan's buckets, run back to back: their
    // bytes, each at its own size's bandwidth and with its own latencies.
    const int count = (b + 1) * plan_buckets / buckets - b * plan_buckets / buckets;
    CollectiveSpec c{op.comm,
                     op.bytes * count / plan_buckets,
                     count,
                     std::move(members),
                     position,
                     "dp-reduce-b" + std::to_string(b) + "-r" + std::to_string(rank) + group_tag,
                     all_reduce ? "dp all-reduce" : "dp reduce-scatter",
                     serial,
                     op.bytes / std::max(1, op.repeats)};  // the algorithm for the plan's bucket
    c.group = op.group;
    // Overlapped with the last backward: the buckets slow it while they run.
    const Interference slows_compute(speed_, serial ? 1.0 : on(rank).hardware.device.overlap_slowdown);
    run_.hosts[host_index(rank, replica)].dp_s += collective(c, rank, replica);
  }
}

void Simulation::compute_tracked(double seconds, BucketSignal* s) {
  if (s == nullptr) return compute(seconds);
  while (seconds > 0) {
    const double boundary = s->total_s * (s->released + 1) / s->buckets;
    const double step = std::min(seconds, std::max(0.0, boundary - s->done_s));
    compute(step);
    s->done_s += step;
    seconds -= step;
    if (s->done_s >= boundary * (1 - 1e-12) && s->released < s->buckets) {
      s->ready->release();
      ++s->released;
    }
    if (s->released >= s->buckets) return compute(seconds);
  }
}

double Simulation::tail_collective(const IterOp& op, int rank, int replica, const std::string& tag,
                                   const char* what) {
  std::vector<int> members = members_of(op.group, rank, replica);
  if (members.empty()) {
    const double t = comm_op_s(op, on(rank));
    const double start = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(t);
    record(rank, replica, EventKind::kComm, -1, 0, start, what, -1, op.bytes);
    return t;
  }
  const int me = host_index(rank, replica);
  const int position = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
  const std::string ring_tag = tag + "-g" + std::to_string(members.front());  // one per group
  CollectiveSpec c{op.comm, op.bytes, std::max(1, op.repeats), std::move(members), position,
                   ring_tag, what, true, op.bytes / std::max(1, op.repeats)};
  c.group = op.group;
  return collective(c, rank, replica);
}

// The rank's ops after its last backward, in the plan's order.
void Simulation::sync_and_step(int rank, int replica, sg4::ActorPtr reducer) {
  HostResult& me = run_.hosts[host_index(rank, replica)];
  bool dp_done = false;
  auto end_dp_phase = [&] {
    if (dp_done) return;
    dp_done = true;
    me.dp_end_s = sg4::Engine::get_clock();
    dp_wait_s_[host_index(rank, replica)] = sync_wait_s_[host_index(rank, replica)];
  };
  for (const IterOp& op : plan_.iteration.tail[rank]) {
    switch (op.kind) {
      case IterOpKind::kGradientReduce:
        if (op.group == GroupKind::kPipelineMirror) {
          me.dp_s += tail_collective(op, rank, replica, "mirror-reduce",
                                     "dualpipe stage-copy gradient all-reduce");
        } else if (&op != gradient_reduce(rank)) {
          me.dp_s += tail_collective(op, rank, replica, "expert-reduce-r" + std::to_string(rank),
                                     "expert gradient reduce");
        } else if (reducer) {
          reducer->join();
          bucket_signal_[host_index(rank, replica)].reset();
        } else {
          reduce_gradients(rank, replica, op, nullptr);
        }
        break;
      case IterOpKind::kParameterGather:
        me.dp_s += tail_collective(op, rank, replica,
                                   (op.group == GroupKind::kData ? "dp-gather-r" : "expert-gather-r") +
                                       std::to_string(rank),
                                   "dp all-gather");
        break;
      case IterOpKind::kEmbeddingSync: {
        end_dp_phase();
        RingSpec r;  // the plan's ring over the first and the last stage
        r.tag = "embedding-d" + std::to_string(replica);
        r.members = {host_index(0, replica), host_index(p_ - 1, replica)};
        r.position = rank == 0 ? 0 : 1;
        // Below NCCL's plateau the message moves at a fraction of its link's bandwidth
        // (LinkSpec::size_efficiency), as collective_cost.h's ring divides it: the steps carry
        // bytes / factor.
        const bool same_node = host_node_[r.members[0]] == host_node_[r.members[1]];
        const LinkSpec& link = same_node ? on(rank).hardware.node.device_link : on(rank).hardware.node.nic;
        r.step_bytes = op.bytes / size_efficiency_at(link, op.bytes) / 2;
        r.steps = 2;
        me.embedding_s = ring(r, rank, replica, "embedding all-reduce", true);
        break;
      }
      case IterOpKind::kOffloadGradients: {
        // Overlapped with the last backward as far as the reduction allows (optimizer_cost.h).
        end_dp_phase();
        const int h = host_index(rank, replica);
        const double t = offload_copy_exposed_s(op, on(rank), last_op_end_s_[h] - last_op_start_s_[h],
                                                sg4::Engine::get_clock() - last_op_end_s_[h]);
        me.optimizer_s += t;
        compute(t);
        break;
      }
      case IterOpKind::kOptimizerStep:
      case IterOpKind::kHostOptimizerStep:
      case IterOpKind::kUploadParameters:
      case IterOpKind::kFp8WeightCast: {
        // The device's step, or offload's PCIe copies and CPU step: durations (the host
        // side is not part of the simulated platform).
        end_dp_phase();
        const double t = optimizer_op_s(op, on(rank));
        me.optimizer_s += t;
        compute(t);
        break;
      }
      default: break;
    }
  }
  end_dp_phase();
  me.finish_s = sg4::Engine::get_clock();
  ++finished_;
}

SimRun Simulation::run() {
  std::vector<std::string> args = {"stratasim-simgrid", "--cfg=network/model:CM02",
                                   "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0",
                                   "--log=xbt_cfg.thres:warning"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg4::Engine engine(&argc, argv.data());

  const DeviceSpec& d = plan_.hardware.device;
  speed_ = d.peak_flops[static_cast<int>(plan_.strategy.dtype)] * d.matmul.max_fraction;
  if (speed_ <= 0) speed_ = 1;  // only scales execute(); durations come from stage_costs
  // Tensor-parallel rank 0 of each (pp rank, dp rank), Megatron order; a placed operator
  // graph's replica is mp consecutive devices, whose gradient syncs run side by side like tp
  // peers' (each host's flows stand for tp x mp devices').
  const int width = plan_.tp * plan_.mp;
  std::vector<int> devices;
  for (int r = 0; r < p_; ++r) {
    for (int dp = 0; dp < dp_; ++dp) devices.push_back((r * dp_ + dp) * width);
  }
  const SimPlatform platform =
      build_platform(plan_.hardware, devices, width, speed_, tp_as_messages(plan_, options_));
  hosts_ = platform.hosts;
  for (int d : devices) host_node_.push_back(d / plan_.hardware.node.devices);
  mirrors_ = platform.mirrors;
  run_.nodes = platform.nodes;
  run_.hosts.resize(hosts_.size());
  sync_wait_s_.assign(hosts_.size(), 0);
  dp_wait_s_.assign(hosts_.size(), 0);
  last_op_start_s_.assign(hosts_.size(), 0);
  last_op_end_s_.assign(hosts_.size(), 0);
  first_op_s_.assign(hosts_.size(), 0);
  bucket_signal_.resize(hosts_.size());
  send_lanes_.resize(hosts_.size());
  std::vector<sg4::ActorPtr> actors(hosts_.size());
  for (int r = 0; r < p_; ++r) {
    for (int dp = 0; dp < dp_; ++dp) {
      const int h = host_index(r, dp);
      run_.hosts[h].rank = r;
      run_.hosts[h].replica = dp;
      actors[h] = sg4::Actor::create("rank" + std::to_string(r) + "-dp" + std::to_string(dp),
                                     hosts_[h], [this, r, dp] { worker(r, dp); });
    }
  }
  // Permanent receivers: messages flow as soon as they are sent (eager, like NCCL's p2p),
  // and a blocking send returns when its message has arrived.
  for (int dp = 0; dp < dp_; ++dp) {
    for (int vs = 0; vs < vstages_; ++vs) {
      box('f', dp, vs)->set_receiver(actors[host_index(map_.rank_of(vs), dp)]);
      box('b', dp, vs)->set_receiver(actors[host_index(map_.rank_of(vs), dp)]);
    }
  }
  engine.run();
  if (finished_ != static_cast<int>(hosts_.size())) {
    throw std::runtime_error("simulation deadlocked: " + std::to_string(finished_) + " of " +
                             std::to_string(hosts_.size()) + " hosts finished");
  }
  run_.simulated_s = sg4::Engine::get_clock();
  if (async_) fold_steady_state();
  if (schedule_.post_validation) fold_post_validation();
  return std::move(run_);
}

void Simulation::fold_post_validation() {
  for (TimelineEvent& e : run_.events) {
    const double shift = first_op_s_[host_index(e.device, 0)];
    e.start_s -= shift;
    e.end_s -= shift;
  }
  double end = 0;
  for (size_t i = 0; i < run_.hosts.size(); ++i) {
    HostResult& h = run_.hosts[i];
    const double shift = first_op_s_[i];
    h.pipeline_end_s -= shift;
    h.dp_end_s -= shift + dp_wait_s_[i];
    h.finish_s -= shift + sync_wait_s_[i];
    end = std::max(end, h.finish_s);
  }
  run_.simulated_s = end;
}

void Simulation::fold_steady_state() {
  std::vector<double> period(p_), stream_end(p_);
  double t0 = steady_end_s_[0];
  for (int r = 0; r < p_; ++r) {
    period[r] = (steady_end_s_[r] - steady_begin_s_[r]) / window_iterations_;
    stream_end[r] = run_.hosts[host_index(r, 0)].pipeline_end_s;
    t0 = std::min(t0, steady_end_s_[r] - period[r]);  // start of the traced iteration
  }
  for (size_t i = 0; i < run_.events.size(); ++i) {
    TimelineEvent& e = run_.events[i];
    // Sync events follow the traced iteration's end on their rank.
    const double shift =
        event_in_sync_[i] ? stream_end[e.device] - (steady_end_s_[e.device] - t0) : t0;
    e.start_s -= shift;
    e.end_s -= shift;
  }
  // Every replica of rank r runs the same stream: replica 0's period stands for all.
  const double scale = double(m_) / stream_micro_batches_;
  // In the steady state every rank ends its iteration's pipeline work at the same time (the
  // analytical engine's picture); after the stream they end at different times, so waiting
  // for a ring peer that ended later (e.g. the tied-embedding all-reduce of the first and
  // last stage) is an artefact of the stream's cool-down and is left out.
  for (size_t i = 0; i < run_.hosts.size(); ++i) {
    HostResult& h = run_.hosts[i];
    const double shift = h.pipeline_end_s - period[h.rank];
    h.pipeline_end_s -= shift;
    h.dp_end_s -= shift + dp_wait_s_[i];
    h.finish_s -= shift + sync_wait_s_[i];
    h.busy_s *= scale;  // every iteration of the stream computes the same ops
    h.p2p_s *= scale;
    h.tp_s *= scale;
    h.tp_exposed_s *= scale;
    h.zero_s *= scale;
    h.zero_exposed_s *= scale;
    h.amax_s *= scale;
  }
  double end = 0;
  for (const HostResult& h : run_.hosts) end = std::max(end, h.finish_s);
  run_.simulated_s = end;
}

SimRun run_simulation(const Plan& plan, const SimgridOptions& options) {
  Simulation sim(plan, options);
  return sim.run();
}

}  // namespace stratasim::simgrid_detail
