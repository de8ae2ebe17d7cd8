// The simulation of one iteration (internal to sim/simgrid; includes SimGrid): the state the
// executor's actors share. executor.cpp runs the schedule (workers, ops, gradient sync,
// steady state), collectives.cpp the collectives over replicas (ring, hierarchical, double
// binary tree, ZeRO traffic).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/cost/group_views.h"
#include "sim/cost/stage_costs.h"
#include "sim/simgrid/op_segments.h"
#include "sim/simgrid/sim_run.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim::simgrid_detail {

namespace sg4 = simgrid::s4u;

inline uint64_t message_size(double bytes) {  // SimGrid sizes are integers: round, never 0
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(bytes)));
}

// While a collective runs, compute on the same host runs at 1/s of its speed
// (DeviceSpec::overlap_slowdown: communication kernels take SMs and memory bandwidth): a dummy
// execution bounded to (1 - 1/s) of the host's speed runs for the collective's duration, and
// max-min sharing leaves the compute the rest. With nothing to compute it changes nothing.
class Interference {
 public:
  Interference(double host_speed, double slowdown) {
    if (slowdown <= 1) return;
    const double bound = host_speed * (1 - 1 / slowdown);
    // Work for a million simulated seconds: never finishes, cancelled when the collective ends.
    exec_ = sg4::this_actor::exec_init(bound * 1e6)->set_bound(bound);
    exec_->start();
  }
  ~Interference() {
    if (exec_) exec_->cancel();
  }
  Interference(const Interference&) = delete;
  Interference& operator=(const Interference&) = delete;

 private:
  sg4::ExecPtr exec_;
};

// Gradient buckets of the last backward (overlap_dp): bucket b is ready once (b + 1) / B of
// that backward's compute is done, however much the buckets before it slowed it down.
struct BucketSignal {
  sg4::SemaphorePtr ready = sg4::Semaphore::create(0);
  int buckets = 1;
  double total_s = 0;  // the backward's compute at full speed
  double done_s = 0;
  int released = 0;
};

// Overlapped pipeline sends of one host (activations to the next stage, gradients to the
// previous one): a daemon actor sends them one at a time, in the order the worker queued them,
// as the analytical schedule engine queues a rank's sends on its port (schedule_engine.h).
struct SendLane {
  struct Message {
    sg4::Mailbox* box;
    void* payload;
    uint64_t size;
  };
  std::deque<Message> queue;
  sg4::SemaphorePtr queued = sg4::Semaphore::create(0);
};

// Which ops of one step (iteration.h) are over: shared by the worker (the compute stream) and
// the actor of the step's comm stream, so that each op waits for its dependencies.
struct StepState {
  explicit StepState(size_t ops)
      : done(ops, 0), mutex(sg4::Mutex::create()), cv(sg4::ConditionVariable::create()) {}
  void wait(const IterOp& op) {
    std::unique_lock lock(*mutex);
    for (int8_t d : op.deps) {
      while (d >= 0 && !done[d]) cv->wait(lock);
    }
  }
  void finish(size_t i) {
    std::unique_lock lock(*mutex);
    done[i] = 1;
    cv->notify_all();
  }
  std::vector<char> done;
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr cv;
};

// One collective as a ring: `steps` steps, each member sending `step_bytes` to its successor.
struct RingSpec {
  std::string tag;           // unique per concurrent ring
  std::vector<int> members;  // host indices, in ring order
  int position = 0;          // this host's place in `members`
  double step_bytes = 0;
  int steps = 0;
};

// Inference runs only the schedule's forwards (GPipe's order: the micro-batches streamed).
inline PipelineSchedule forward_only_if(bool inference, PipelineSchedule s) {
  if (!inference) return s;
  for (auto& ops : s.per_rank) {
    std::erase_if(ops, [](const PipeOp& op) { return op.kind != PipeOpKind::kForward; });
  }
  return s;
}

class Simulation {
 public:
  Simulation(const Plan& plan, const SimgridOptions& options)
      : plan_(plan),
        views_(plan),
        options_(options),
        costs_(stage_costs(plan)),
        async_(plan.strategy.schedule == ScheduleKind::kPipeDreamAsync),
        m_(plan.micro_batches),
        warm_iterations_(async_ ? std::max(1, (2 * plan.pp + m_ - 1) / m_) : 0),
        window_iterations_(async_ ? std::max(1, (plan.pp + m_ - 1) / m_) : 0),
        stream_micro_batches_(async_ ? (warm_iterations_ + window_iterations_ + 1) * m_ : m_),
        schedule_(
            forward_only_if(plan.inference(),
                            make_schedule(plan.strategy.schedule, plan.pp, stream_micro_batches_,
                                          plan.chunks, &costs_.durations))),
        p_(plan.pp),
        dp_(plan.dp),
        vstages_(plan.pp * plan.chunks),
        map_(plan.stage_map()) {
    micro_batch_ids_.resize(stream_micro_batches_);
    for (int i = 0; i < stream_micro_batches_; ++i) micro_batch_ids_[i] = i;
    sync_phase_.assign(p_, !async_);
    // The compute ops run as pieces; ZeRO collectives and sends are ops of their own.
    std::vector<double> forward, backward, recompute, weight;
    for (const StageCost& c : costs_.stages) {
      forward.push_back(c.compute_forward_s);
      backward.push_back(c.compute_backward_s);
      recompute.push_back(c.recompute_s);
      weight.push_back(c.compute_weight_s);
    }
    pieces_ = op_pieces(plan, forward, backward, recompute, weight, options);
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
              std::string name, double end = -1, double bytes = 0) {
    if (replica != 0 || !options_.timeline) return;
    if (end < 0) end = sg4::Engine::get_clock();
    run_.events.push_back({rank, kind, mb, chunk, start, end, std::move(name), bytes});
    event_in_sync_.push_back(sync_phase_[rank]);
  }
  // Async: events of the traced (last window) iteration move to start near 0 and those of
  // the gradient sync to follow the steady-state iteration; pipeline times become per
  // iteration (see the file comment).
  void fold_steady_state();
  // Post-validated schedules (ZB-H2): every host's times measured from its first op, the wait
  // for ring peers after the pipeline left out as for async (see the file comment).
  void fold_post_validation();
  void compute(double seconds) {
    if (seconds <= 0) return;
    sg4::this_actor::execute(seconds * speed_);
    ++run_.activities;
  }
  void worker(int rank, int replica);
  // Queues an overlapped pipeline send of `host` on its lane (SendLane).
  void send_overlapped(int host, sg4::Mailbox* box, void* payload, uint64_t size);
  void run_op(int rank, int replica, const PipeOp& op, bool keep);
  bool keeps_activations_of(const PipeOp& op) const;
  // A tensor-parallel collective of `host` as messages to and from its mirror (platform.h).
  void exchange(int host, const TpExchange& x);
  void all_to_all(int host, const TpExchange& x);
  // `serial`: called by the worker itself, so waiting for peers delays the host (async
  // subtracts that wait: see fold_steady_state).
  // With `signal` each bucket waits for its share of the last backward (see BucketSignal);
  // without, all start at once (after the pipeline work).
  void reduce_gradients(int rank, int replica, const IterOp& op, BucketSignal* signal);
  // compute(seconds), releasing the buckets whose share of the backward it completes.
  void compute_tracked(double seconds, BucketSignal* signal);
  double ring(const RingSpec& ring, int rank, int replica, const char* what, bool serial);
  double rings(const std::vector<RingSpec>& channels, int rank, int replica, const char* what,
               bool serial);
  int ring_channels(const std::vector<int>& members) const;
  double channel_rings(const RingSpec& r, int channels, int rank, int replica, const char* what,
                       bool serial);
  // A collective over `members` (host indices, this host at `position`) by the algorithm the
  // strategy names (kAuto: the one collective_cost.h picks for the data-parallel group):
  // `repeats` collectives of bytes / repeats back to back (ZeRO: one per layer).
  struct CollectiveSpec {
    CommKind kind = CommKind::kAllReduce;
    double bytes = 0;
    int repeats = 1;
    std::vector<int> members;
    int position = 0;
    std::string tag;
    const char* what = "";
    bool serial = false;
    double choice_B = 0;  // bytes the algorithm is chosen for (0: bytes / repeats)
    GroupKind group = GroupKind::kData;  // the plan's group the algorithm is chosen for
  };
  double collective(const CollectiveSpec& c, int rank, int replica);
  double hierarchical(const CollectiveSpec& c, int rank, int replica);
  double tree(const CollectiveSpec& c, int rank, int replica);
  void tree_half(const std::vector<int>& order, int i, double bytes, int chunks,
                 const std::string& tag);
  // The comm stream of a step (its ZeRO collectives), each op after its dependencies.
  void comm_stream(int rank, int replica, const StepProgram& step, StepState& state,
                   const std::string& tag);
  // The rank's gradient-reduce op (iteration.h), or null.
  const IterOp* gradient_reduce(int rank) const {
    for (const IterOp& op : plan_.iteration.tail[rank]) {
      if (op.kind == IterOpKind::kGradientReduce &&
          (op.group == GroupKind::kData || op.group == GroupKind::kShard)) {
        return &op;
      }
    }
    return nullptr;
  }
  // The simulated hosts holding the same experts as (rank, replica): the stage's devices are
  // numbered tp index + tp x replica and expert-parallel groups are ep consecutive devices, so
  // with tp | ep the replicas ep / tp apart. Empty when tp does not divide ep (the group then
  // holds devices no host stands for; the collective is costed in closed form).
  std::vector<int> expert_data_members(int rank, int replica) const {
    std::vector<int> m;
    const int tp = plan_.tp, ep = plan_.ep;
    if (ep % tp != 0) return m;
    const int stride = ep / tp;
    for (int d = replica % stride; d < dp_; d += stride) m.push_back(host_index(rank, d));
    return m;
  }
  // HSDP: a shard group is `shard` consecutive replicas; a replica group the replicas `shard`
  // apart.
  std::vector<int> members_of(GroupKind g, int rank, int replica) const {
    if (g == GroupKind::kExpertData) return expert_data_members(rank, replica);
    if (g == GroupKind::kPipelineMirror) {  // ranks r and pp - 1 - r, lower first
      const int low = std::min(rank, p_ - 1 - rank), high = std::max(rank, p_ - 1 - rank);
      return {host_index(low, replica), host_index(high, replica)};
    }
    const int shard = plan_.shard;
    std::vector<int> m;
    if (g == GroupKind::kShard) {
      for (int d = replica / shard * shard; d < (replica / shard + 1) * shard; ++d) m.push_back(host_index(rank, d));
      return m;
    }
    if (g == GroupKind::kReplica) {
      for (int d = replica % shard; d < dp_; d += shard) m.push_back(host_index(rank, d));
      return m;
    }
    return dp_members(rank);
  }
  // A collective of the tail over its group, simulated as messages when the group's members
  // are simulated hosts, else for its closed-form time (collective_cost.h).
  double tail_collective(const IterOp& op, int rank, int replica, const std::string& tag,
                         const char* what);
  // This host's place in a member list (host indices).
  int position_in(const std::vector<int>& members, int rank, int replica) const {
    const int me = host_index(rank, replica);
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i] == me) return static_cast<int>(i);
    }
    return 0;
  }
  std::vector<int> dp_members(int rank) const {
    std::vector<int> m;
    for (int d = 0; d < dp_; ++d) m.push_back(host_index(rank, d));
    return m;
  }
  void sync_and_step(int rank, int replica, sg4::ActorPtr reducer);

  const Plan& plan_;
  const GroupViews views_;  // a mixed cluster: each pipeline rank's group (group_views.h)
  const Plan& on(int rank) const { return views_.for_rank(rank); }
  const SimgridOptions& options_;
  const StageCosts costs_;
  const bool async_;
  const int m_;
  const int warm_iterations_, window_iterations_;  // async only
  const int stream_micro_batches_;                 // m, or the async stream's length
  const PipelineSchedule schedule_;
  const int p_, dp_, vstages_;
  const StageMap map_;  // which rank runs each virtual stage, and its neighbours
  std::vector<char> sync_phase_;     // per rank: past the pipeline ops (async: the sync phase)
  std::vector<char> event_in_sync_;  // per recorded event
  std::vector<double> steady_begin_s_, steady_end_s_;  // async: per rank, replica 0
  std::vector<double> first_op_s_;                     // per host: start of its first op
  std::vector<OpPieces> pieces_;                       // per virtual stage
  // Per host: time the worker waited for ring peers after its pipeline ops, in total and
  // until its data-parallel phase ended.
  std::vector<double> sync_wait_s_, dp_wait_s_;
  std::vector<double> last_op_start_s_, last_op_end_s_;  // per host: its last backward (or W) op
  double speed_ = 1;
  std::vector<int> micro_batch_ids_;  // message payloads (SimGrid refuses null payloads)
  std::vector<sg4::Host*> hosts_, mirrors_;
  SimRun run_;
  struct RingEntry {
    std::vector<double> at_s;  // when each member entered
    int left = 0;              // members that have not finished yet
  };
  std::map<std::string, RingEntry> ring_entry_;  // by tag, while the ring runs
  std::vector<int> host_node_;                   // node of each host
  std::vector<std::unique_ptr<BucketSignal>> bucket_signal_;  // per host, during its last backward
  std::vector<std::unique_ptr<SendLane>> send_lanes_;  // per host, from its first overlapped send
  int finished_ = 0;
};

}  // namespace stratasim::simgrid_detail
