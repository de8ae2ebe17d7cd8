// The executor: one SimGrid actor per simulated host (pipeline rank x data-parallel replica)
// runs its rank's schedule (make_schedule) with the compute durations of stage_costs(plan);
// activations and gradients travel as real messages between the hosts of consecutive
// virtual stages; after the last backward the data-parallel gradient reduction runs as a ring
// of point-to-point messages over the replicas' hosts, then the tied-embedding all-reduce and
// the optimizer step. Activities are posted as the schedule reaches them; sends are waited
// (blocking p2p) or detached (overlapped p2p), so few are ever in flight.
//
// PipeDream async (no flush): the 1F1B op order of schedule_pipedream_async runs as one
// endless stream of warm + window + 1 iterations back to back (micro-batch ids continue
// across iterations). Iteration k ends on rank r with its backward of micro-batch k m - 1;
// the steady-state iteration time is the mean distance between the boundaries of the window
// iterations (after warm iterations covering >= 2p micro-batches, before the last one, whose
// cool-down is not steady). The gradient sync and optimizer step run once after the stream;
// their duration past the stream's end is added to the steady-state iteration.
#include "sim/simgrid/executor.h"
#include "sim/analytical/optimizer_cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>

#include "sim/analytical/block_cost_memo.h"
#include "sim/analytical/stage_costs.h"
#include "sim/simgrid/platform.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim::simgrid_detail {
namespace {

namespace sg4 = simgrid::s4u;

uint64_t message_size(double bytes) {  // SimGrid sizes are integers: round, never 0
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(bytes)));
}

// One collective as a ring: `steps` steps, each member sending `step_bytes` to its successor.
struct RingSpec {
  std::string tag;           // unique per concurrent ring
  std::vector<int> members;  // host indices, in ring order
  int position = 0;          // this host's place in `members`
  double step_bytes = 0;
  int steps = 0;
};

// Layer granularity: a virtual stage's op as pieces. Forward: `pre_f` (embedding), `layers`
// times `layer_f`, then `post_f` (head, exposed ZeRO gathers); backward in reverse: `pre_b`
// (head, exposed ZeRO traffic, their recomputation), `layers` times `layer_r` + `layer_b`
// (recomputation, then backward), then `post_b` (embedding). Pieces sum to the stage costs.
struct LayerPieces {
  int layers = 0, first_layer = 0;
  double layer_f = 0, layer_r = 0, layer_b = 0;  // layer_b without its recomputation
  double pre_f = 0, post_f = 0, pre_b = 0, post_b = 0;
};

class Simulation {
 public:
  Simulation(const Plan& plan, const SimgridOptions& options)
      : plan_(plan),
        options_(options),
        costs_(stage_costs(plan)),
        async_(plan.strategy.schedule == ScheduleKind::kPipeDreamAsync),
        m_(plan.micro_batches),
        warm_iterations_(async_ ? std::max(1, (2 * plan.pp + m_ - 1) / m_) : 0),
        window_iterations_(async_ ? std::max(1, (plan.pp + m_ - 1) / m_) : 0),
        stream_micro_batches_(async_ ? (warm_iterations_ + window_iterations_ + 1) * m_ : m_),
        schedule_(make_schedule(plan.strategy.schedule, plan.pp, stream_micro_batches_,
                                plan.chunks)),
        p_(plan.pp),
        dp_(plan.dp),
        vstages_(plan.pp * plan.chunks) {
    micro_batch_ids_.resize(stream_micro_batches_);
    for (int i = 0; i < stream_micro_batches_; ++i) micro_batch_ids_[i] = i;
    sync_phase_.assign(p_, !async_);
    if (options.granularity == SimGranularity::kLayer) layer_pieces();
    steady_begin_s_.assign(p_, 0);
    steady_end_s_.assign(p_, 0);
  }

  SimRun run();

 private:
  int host_index(int rank, int replica) const { return rank * dp_ + replica; }
  sg4::Mailbox* box(char dir, int replica, int vstage) const {
    return sg4::Mailbox::by_name(std::string(1, dir) + std::to_string(replica) + ":" +
                                 std::to_string(vstage));
  }
  void record(int rank, int replica, EventKind kind, int mb, int chunk, double start,
              std::string name, double end = -1) {
    if (replica != 0 || !options_.timeline) return;
    if (end < 0) end = sg4::Engine::get_clock();
    run_.events.push_back({rank, kind, mb, chunk, start, end, std::move(name)});
    event_in_sync_.push_back(sync_phase_[rank]);
  }
  // Async: events of the traced (last window) iteration move to start near 0 and those of
  // the gradient sync to follow the steady-state iteration; pipeline times become per
  // iteration (see the file comment).
  void fold_steady_state();
  void compute(double seconds) {
    if (seconds <= 0) return;
    sg4::this_actor::execute(seconds * speed_);
    ++run_.activities;
  }
  void worker(int rank, int replica);
  void run_op(int rank, int replica, const PipeOp& op, bool keep);
  void layer_pieces();
  // `serial`: called by the worker itself, so waiting for peers delays the host (async
  // subtracts that wait: see fold_steady_state).
  void reduce_gradients(int rank, int replica, double ready_s, double backward_s, int buckets,
                        bool serial);
  double ring(const RingSpec& ring, int rank, int replica, const char* what, bool serial);
  void sync_and_step(int rank, int replica, sg4::ActorPtr reducer);

  const Plan& plan_;
  const SimgridOptions& options_;
  const StageCosts costs_;
  const bool async_;
  const int m_;
  const int warm_iterations_, window_iterations_;  // async only
  const int stream_micro_batches_;                 // m, or the async stream's length
  const PipelineSchedule schedule_;
  const int p_, dp_, vstages_;
  std::vector<char> sync_phase_;     // per rank: past the pipeline ops (async: the sync phase)
  std::vector<char> event_in_sync_;  // per recorded event
  std::vector<double> steady_begin_s_, steady_end_s_;  // async: per rank, replica 0
  std::vector<LayerPieces> pieces_;                    // per virtual stage, layer granularity
  // Per host: time the worker waited for ring peers after its pipeline ops, in total and
  // until its data-parallel phase ended.
  std::vector<double> sync_wait_s_, dp_wait_s_;
  double speed_ = 1;
  std::vector<int> micro_batch_ids_;  // message payloads (SimGrid refuses null payloads)
  std::vector<sg4::Host*> hosts_;
  SimRun run_;
  std::map<std::string, std::vector<double>> ring_entry_;  // tag -> when each member entered
  int finished_ = 0;
};

void Simulation::run_op(int rank, int replica, const PipeOp& op, bool keep) {
  HostResult& me = run_.hosts[host_index(rank, replica)];
  const int vs = op.chunk * p_ + rank;
  const bool fwd = op.kind == PipeOpKind::kForward;
  const int shown_mb = op.micro_batch % m_;  // async: the micro-batch within its iteration
  const std::string id = std::to_string(shown_mb);
  auto record = [&](EventKind kind, double start, std::string name) {
    if (keep) Simulation::record(rank, replica, kind, shown_mb, op.chunk, start, std::move(name));
  };
  const double start = sg4::Engine::get_clock();
  if (!pieces_.empty()) {
    const LayerPieces& lp = pieces_[vs];
    auto piece = [&](EventKind kind, const char* prefix, double seconds, int layer) {
      if (seconds <= 0) return;
      const double t = sg4::Engine::get_clock();
      compute(seconds);
      record(kind, t, prefix + id + (layer < 0 ? "" : "/L" + std::to_string(layer)));
    };
    if (fwd) {
      piece(EventKind::kForward, "F", lp.pre_f, -1);
      for (int l = 0; l < lp.layers; ++l)
        piece(EventKind::kForward, "F", lp.layer_f, lp.first_layer + l);
      piece(EventKind::kForward, "F", lp.post_f, -1);
    } else {
      piece(EventKind::kBackward, "B", lp.pre_b, -1);
      for (int l = lp.layers - 1; l >= 0; --l) {
        piece(EventKind::kRecompute, "R", lp.layer_r, lp.first_layer + l);
        piece(EventKind::kBackward, "B", lp.layer_b, lp.first_layer + l);
      }
      piece(EventKind::kBackward, "B", lp.post_b, -1);
    }
  } else if (fwd) {
    compute(costs_.compute_only.forward_s[vs]);
    record(EventKind::kForward, start, "F" + id);
  } else {
    const double recompute = costs_.stages[vs].recompute_s;
    compute(recompute);
    if (recompute > 0) {
      record(EventKind::kRecompute, start, "R" + id);
    }
    const double backward_start = sg4::Engine::get_clock();
    compute(costs_.compute_only.backward_s[vs] - recompute);
    record(EventKind::kBackward, backward_start, "B" + id);
  }
  const int to = fwd ? vs + 1 : vs - 1;
  if (to >= 0 && to < vstages_) {
    sg4::Mailbox* out = box(fwd ? 'f' : 'b', replica, to);
    void* payload = &micro_batch_ids_[op.micro_batch];
    const double send_start = sg4::Engine::get_clock();
    if (plan_.strategy.overlap_p2p) {
      out->put_async(payload, message_size(plan_.p2p_bytes))->detach();
    } else {  // Megatron's blocking p2p: the sender waits until the message has arrived
      out->put(payload, message_size(plan_.p2p_bytes));
      me.p2p_s += sg4::Engine::get_clock() - send_start;
      record(EventKind::kComm, send_start, (fwd ? "send act " : "send grad ") + id);
    }
    ++run_.activities;
  }
  me.busy_s += sg4::Engine::get_clock() - start;
}

void Simulation::layer_pieces() {
  const BlockCost layer = memoized_block_cost(plan_.layer, plan_);
  const bool transformer = plan_.model.family != ModelFamily::kOpGraph;
  const BlockCost embedding =
      transformer ? memoized_block_cost(plan_.embedding, plan_) : BlockCost{};
  pieces_.resize(vstages_);
  for (int vs = 0; vs < vstages_; ++vs) {
    const VirtualStage& st = plan_.stages[vs];
    LayerPieces& lp = pieces_[vs];
    const double repeat = plan_.block_repeat;  // an op graph's block repeats inside a layer
    lp.layers = st.layers;
    lp.first_layer = st.first_layer;
    lp.layer_f = repeat * layer.forward_s;
    lp.layer_r = repeat * layer.recompute_s;
    lp.layer_b = repeat * (layer.backward_s - layer.recompute_s);
    const double layers_f = st.layers * lp.layer_f;
    const double layers_b = st.layers * (lp.layer_r + lp.layer_b);
    lp.pre_f = st.has_embedding ? embedding.forward_s : 0;
    lp.post_f = std::max(0.0, costs_.compute_only.forward_s[vs] - lp.pre_f - layers_f);
    lp.post_b = st.has_embedding ? embedding.backward_s : 0;
    lp.pre_b = std::max(0.0, costs_.compute_only.backward_s[vs] - lp.post_b - layers_b);
  }
}

void Simulation::worker(int rank, int replica) {
  HostResult& me = run_.hosts[host_index(rank, replica)];
  const std::vector<PipeOp>& ops = schedule_.per_rank[rank];
  const bool overlap_dp = plan_.strategy.overlap_dp && dp_ > 1 && plan_.strategy.zero_stage <= 1;
  sg4::ActorPtr reducer;
  double cursor = 0;
  int iterations_done = 0;  // async: iteration boundaries passed on this rank
  const int traced = warm_iterations_ + window_iterations_ - 1;  // async: the traced iteration
  for (size_t j = 0; j < ops.size(); ++j) {
    const PipeOp& op = ops[j];
    const int vs = op.chunk * p_ + rank;
    const bool fwd = op.kind == PipeOpKind::kForward;
    const int from = fwd ? vs - 1 : vs + 1;
    if (from >= 0 && from < vstages_) {
      int* got = nullptr;
      sg4::CommPtr c = box(fwd ? 'f' : 'b', replica, vs)->get_async<int>(&got);
      c->wait();
      if (*got != op.micro_batch) throw std::runtime_error("p2p messages arrived out of order");
      if (plan_.strategy.overlap_p2p) {  // detached sends are measured where they arrive
        run_.hosts[host_index(from % p_, replica)].p2p_s +=
            c->get_finish_time() - c->get_start_time();
      }
    }
    const double now = sg4::Engine::get_clock();
    const bool keep = !async_ || iterations_done == traced;
    if (now > cursor && keep) record(rank, replica, EventKind::kIdle, -1, 0, cursor, "idle");
    if (j + 1 == ops.size()) sync_phase_[rank] = 1;
    if (overlap_dp && j + 1 == ops.size() && !fwd) {
      const double grads = rank_params(plan_, rank) * plan_.grad_bytes_per_param;
      const int buckets =
          static_cast<int>(std::clamp(std::ceil(grads / std::max(1.0, plan_.dp_bucket_B)), 1.0,
                                      double(options_.max_dp_buckets)));
      const double backward = costs_.compute_only.backward_s[vs];
      reducer = sg4::Actor::create("reducer", hosts_[host_index(rank, replica)],
                                   [this, rank, replica, now, backward, buckets] {
                                     reduce_gradients(rank, replica, now, backward, buckets, false);
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

// Gradient reduction: all-reduce (ZeRO 0) or reduce-scatter (ZeRO 1) over the replicas, in
// `buckets` pieces that become ready as the last backward progresses (ready_s + backward_s
// when not overlapped: buckets == 1 and backward_s == 0).
void Simulation::reduce_gradients(int rank, int replica, double ready_s, double backward_s,
                                  int buckets, bool serial) {
  const int n = dp_;
  const double grads = rank_params(plan_, rank) * plan_.grad_bytes_per_param;
  const bool all_reduce = plan_.strategy.zero_stage == 0;
  for (int b = 0; b < buckets; ++b) {
    sg4::this_actor::sleep_until(ready_s + backward_s * (b + 1) / buckets);
    RingSpec r;
    r.tag = "dp-reduce-b" + std::to_string(b) + "-r" + std::to_string(rank);
    for (int d = 0; d < n; ++d) r.members.push_back(host_index(rank, d));
    r.position = replica;
    r.step_bytes = grads / buckets / n;
    r.steps = (all_reduce ? 2 : 1) * (n - 1);
    run_.hosts[host_index(rank, replica)].dp_s +=
        ring(r, rank, replica, all_reduce ? "dp all-reduce" : "dp reduce-scatter", serial);
  }
}

double Simulation::ring(const RingSpec& r, int rank, int replica, const char* what,
                        bool serial) {
  const int n = static_cast<int>(r.members.size());
  if (n <= 1 || r.steps <= 0 || r.step_bytes <= 0) return 0;
  std::vector<double>& entry = ring_entry_[r.tag];
  entry.resize(n, -1);
  entry[r.position] = sg4::Engine::get_clock();
  const int simulated = std::min(r.steps, std::max(1, options_.max_ring_steps));
  const int next = (r.position + 1) % n;
  std::vector<sg4::Link*> links;
  double latency = 0;
  hosts_[r.members[r.position]]->route_to(hosts_[r.members[next]], links, &latency);
  const double extra_latency = double(r.steps - simulated) * latency / simulated;
  const uint64_t size = message_size(r.step_bytes * r.steps / simulated);
  sg4::Mailbox* inbox = sg4::Mailbox::by_name(r.tag + "/" + std::to_string(r.position));
  sg4::Mailbox* outbox = sg4::Mailbox::by_name(r.tag + "/" + std::to_string(next));
  for (int s = 0; s < simulated; ++s) {
    int* got = nullptr;
    sg4::CommPtr in = inbox->get_async<int>(&got);
    outbox->put_async(&micro_batch_ids_[0], size)->wait();
    in->wait();
    if (extra_latency > 0) sg4::this_actor::sleep_for(extra_latency);
    run_.activities += 2;
  }
  // Every member has entered once our last step is done: the collective itself started when
  // the last one came; waiting for the others before is idle time, not communication.
  const double start = *std::max_element(entry.begin(), entry.end());
  if (serial) sync_wait_s_[r.members[r.position]] += std::max(0.0, start - entry[r.position]);
  if (start > entry[r.position]) {
    record(rank, replica, EventKind::kIdle, -1, 0, entry[r.position], "wait for peers", start);
  }
  record(rank, replica, EventKind::kComm, -1, 0, start, what);
  return sg4::Engine::get_clock() - start;
}

void Simulation::sync_and_step(int rank, int replica, sg4::ActorPtr reducer) {
  HostResult& me = run_.hosts[host_index(rank, replica)];
  const int zero = plan_.strategy.zero_stage;
  const double sync_start = sg4::Engine::get_clock();
  if (reducer) {
    reducer->join();
  } else if (dp_ > 1 && zero <= 1) {
    reduce_gradients(rank, replica, sync_start, 0, 1, true);
  }
  if (dp_ > 1 && (zero == 1 || zero == 2)) {  // parameters gathered after the sharded update
    RingSpec r;
    r.tag = "dp-gather-r" + std::to_string(rank);
    for (int d = 0; d < dp_; ++d) r.members.push_back(host_index(rank, d));
    r.position = replica;
    r.step_bytes = rank_params(plan_, rank) * plan_.weight_bytes_per_param / dp_;
    r.steps = dp_ - 1;
    me.dp_s += ring(r, rank, replica, "dp all-gather", true);
  }
  me.dp_end_s = sg4::Engine::get_clock();
  dp_wait_s_[host_index(rank, replica)] = sync_wait_s_[host_index(rank, replica)];
  const bool tied = plan_.model.family != ModelFamily::kOpGraph &&
                    plan_.model.transformer.tied_embeddings && p_ > 1;
  if (tied && (rank == 0 || rank == p_ - 1)) {
    const TransformerSpec& t = plan_.model.transformer;
    RingSpec r;
    r.tag = "embedding-d" + std::to_string(replica);
    r.members = {host_index(0, replica), host_index(p_ - 1, replica)};
    r.position = rank == 0 ? 0 : 1;
    r.step_bytes = double(t.vocab) * t.hidden / plan_.tp * plan_.grad_bytes_per_param / 2;
    r.steps = 2;
    me.embedding_s = ring(r, rank, replica, "embedding all-reduce", true);
  }
  me.optimizer_s = optimizer_step_s(plan_, rank);
  compute(me.optimizer_s);
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
  std::vector<int> devices;     // tensor-parallel rank 0 of each (pp rank, dp rank), Megatron order
  for (int r = 0; r < p_; ++r) {
    for (int dp = 0; dp < dp_; ++dp) devices.push_back((r * dp_ + dp) * plan_.tp);
  }
  const SimPlatform platform = build_platform(plan_.hardware, devices, plan_.tp, speed_);
  hosts_ = platform.hosts;
  run_.nodes = platform.nodes;
  run_.hosts.resize(hosts_.size());
  sync_wait_s_.assign(hosts_.size(), 0);
  dp_wait_s_.assign(hosts_.size(), 0);
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
      box('f', dp, vs)->set_receiver(actors[host_index(vs % p_, dp)]);
      box('b', dp, vs)->set_receiver(actors[host_index(vs % p_, dp)]);
    }
  }
  engine.run();
  if (finished_ != static_cast<int>(hosts_.size())) {
    throw std::runtime_error("simulation deadlocked: " + std::to_string(finished_) + " of " +
                             std::to_string(hosts_.size()) + " hosts finished");
  }
  run_.simulated_s = sg4::Engine::get_clock();
  if (async_) fold_steady_state();
  return std::move(run_);
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
  }
  double end = 0;
  for (const HostResult& h : run_.hosts) end = std::max(end, h.finish_s);
  run_.simulated_s = end;
}

}  // namespace


SimRun run_simulation(const Plan& plan, const SimgridOptions& options) {
  Simulation sim(plan, options);
  return sim.run();
}

}  // namespace stratasim::simgrid_detail
