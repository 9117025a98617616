#include "runner/runner.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <optional>

#include "comm/mpi_check.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "runner/case_tables.hpp"
#include "runner/case_watch.hpp"
#include "runner/host_load.hpp"
#include "runner/sample_timer.hpp"
#include "workloads/memory_need.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

// Every rank's answer to one question, with the first non-empty one (in rank order) everywhere.
std::string first_reason(const MpiCommunicator& comm, const std::string& mine) {
  std::string first;
  for (const auto& r : comm.gather(mine)) {
    if (!r.empty()) {
      first = r;
      break;
    }
  }
  return comm.broadcast(first);
}

// This rank's turn as 0..turns-1, the turns numbered in the order of their ids; and the number of turns.
std::pair<int, int> compact_turn(const MpiCommunicator& comm, int mine) {
  std::vector<int> all(comm.size());
  GPUSCALE_MPI(MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm.comm()));
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  const int index = static_cast<int>(std::lower_bound(all.begin(), all.end(), mine) - all.begin());
  return {index, static_cast<int>(all.size())};
}

// Warm-up samples whose device times the file keeps, per rank and case (the count is always kept).
constexpr std::size_t kWarmupSamplesKept = 1000;

std::vector<std::int64_t> to_int64(const std::vector<double>& v) {
  return std::vector<std::int64_t>(v.begin(), v.end());
}

std::vector<std::int64_t> to_int64(const std::vector<int>& v) { return std::vector<std::int64_t>(v.begin(), v.end()); }

// What a case's parameters say about how it runs.
struct CaseSettings {
  int warmup = 0, reps = 0;
  double warmup_s = 0.0;
};

// The untimed samples each rank ran before its timed ones.
struct WarmUp {
  std::vector<double> times;  // device times of the first kWarmupSamplesKept
  std::int64_t count = 0;
};

// The samples of one case on this rank: warm-up, then the timed ones, in the case's mode.
class CaseSamples {
 public:
  CaseSamples(const MpiCommunicator& comm, const CommonClock& clock, SampleTimer& timer, CaseWatch& watch,
              const CaseSettings& s)
      : comm_(comm), clock_(clock), timer_(timer), watch_(watch), s_(s) {}

  // Collective. Runs `mode` with this rank in turn `my_turn` of `turns`.
  void run(Mode mode, int my_turn, int turns) {
    if (mode == Mode::parallel) {
      warm_up(true);
      for (int i = 0; i < s_.reps; ++i) timed(i, comm_.comm());
    } else {
      // The ranks of one turn start each sample together, as in parallel mode.
      MPI_Comm unit = MPI_COMM_NULL;
      GPUSCALE_MPI(MPI_Comm_split(comm_.comm(), my_turn, comm_.rank(), &unit));
      const CommHandle unit_h(unit);
      for (int turn = 0; turn < turns; ++turn) {
        if (turn > 0 && watch_.automatic()) watch_.start();
        warm_up(turn == my_turn);
        if (turn == my_turn) {
          for (int i = 0; i < s_.reps; ++i) timed(i, unit);
        }
        comm_.idle_barrier();
      }
    }
  }
  const WarmUp& warm() const { return warm_; }

 private:
  // Warm-up, collective over all ranks: untimed samples until every rank of
  // this turn (`mine`) has run at least `warmup` of them and for at least
  // `warmup_s` seconds (GPU clocks ramp up from idle). The ranks stop
  // together: a transfer's ranks must run as many. Ranks outside the turn
  // wait without spinning; afterwards every rank knows the slowest sample.
  void warm_up(bool mine) {
    const double t0 = clock_.now();
    watch_.new_turn();
    while (true) {
      const double i0 = clock_.now();
      const bool more = mine && (warm_.count < s_.warmup || i0 - t0 < s_.warmup_s);
      if (comm_.max(more ? 1.0 : 0.0, !mine) == 0.0) break;
      if (!mine) continue;
      const double t = timer_.run(-1);
      watch_.warm_sample(clock_.now() - i0);  // with the agreement, as a timed sample has its barrier
      if (warm_.times.size() < kWarmupSamplesKept) warm_.times.push_back(t);
      ++warm_.count;
    }
    watch_.timed_start(comm_, mine, s_.reps);
  }
  // One timed sample after the ranks of `unit` line up.
  void timed(int i, MPI_Comm unit) {
    const double i0 = clock_.now();
    GPUSCALE_MPI(MPI_Barrier(unit));
    timer_.run(i);
    watch_.timed_sample(clock_.now() - i0);
  }

  const MpiCommunicator& comm_;
  const CommonClock& clock_;
  SampleTimer& timer_;
  CaseWatch& watch_;
  const CaseSettings& s_;
  WarmUp warm_;
};

// Collective. Every rank's samples, warm-up and verification into `rec` on rank 0; elsewhere this rank's own.
void gather_samples(const MpiCommunicator& comm, const SampleTimes& t, WarmUp warm, const Verification& v,
                    int my_turn, CaseRecord& rec) {
  rec.device_time_s = comm.gather(t.device);
  rec.enqueue_s = comm.gather(t.enqueue);
  rec.core_wait_s = comm.gather(t.core_wait);
  rec.wall_start_s = comm.gather(t.start);
  rec.wall_end_s = comm.gather(t.end);
  rec.verify_error = comm.gather(std::vector<double>{v.max_error});
  rec.turn = to_int64(comm.gather(my_turn));
  rec.warmup_samples = to_int64(comm.gather(static_cast<int>(warm.count)));
  // Ranks ran different numbers of warm-up samples: rows padded with NaN to the longest.
  int width = static_cast<int>(warm.times.size());
  GPUSCALE_MPI(MPI_Allreduce(MPI_IN_PLACE, &width, 1, MPI_INT, MPI_MAX, comm.comm()));
  warm.times.resize(static_cast<std::size_t>(width), std::nan(""));
  rec.warmup_width = width;
  rec.warmup_device_time_s = comm.gather(warm.times);
  if (comm.rank() == 0) return;
  rec.device_time_s = t.device;
  rec.enqueue_s = t.enqueue;
  rec.core_wait_s = t.core_wait;
  rec.wall_start_s = t.start;
  rec.wall_end_s = t.end;
  rec.verify_error = {v.max_error};
  rec.turn = {my_turn};
  rec.warmup_samples = {warm.count};
  rec.warmup_device_time_s = warm.times;
}

}  // namespace

double default_warmup_s(Backend backend) { return backend == Backend::cuda ? 0.5 : 0.0; }

CaseContext Runner::context(const Case& c, PhaseLog& phases) const {
  CaseContext ctx{dev_};
  ctx.nodes = comm_.node_count();
  ctx.node_index = comm_.node_index();
  ctx.hostname = comm_.hostname();
  ctx.world_rank = comm_.rank();
  ctx.phases = &phases;
  const auto& type = find_workload(c.workload);
  if (const auto scope = type.scope(c.params)) {
    if (!groups_) throw RuntimeError("case " + c.label() + " moves data between ranks, but this runner has no data plane");
    const int first = type.group_size(c.params);
    // A group larger than the job is the workload's to skip (skip_reason), with the world as its group meanwhile.
    ctx.group = first > 0 && first <= comm_.size() ? &groups_->first(first) : &groups_->get(*scope);
  }
  return ctx;
}

// What the record says before anything runs: the case, the job, the group.
CaseRecord Runner::start_record(const Case& c, const CaseContext& ctx, double warmup_s) const {
  CaseRecord rec;
  rec.index = c.index;
  rec.experiment = c.experiment;
  rec.workload = c.workload;
  rec.mode = c.mode;
  rec.backend = backend_;
  rec.ranks = comm_.size();
  rec.nodes = comm_.node_count();
  rec.reps = static_cast<int>(c.params.get_int("reps"));
  rec.warmup = static_cast<int>(c.params.get_int("warmup"));
  rec.params = c.params;
  rec.expect = c.expect;
  if (!rec.params.has("warmup_s")) rec.params.set("warmup_s", warmup_s);  // the value used
  if (ctx.group) {
    rec.scope = ctx.group->scope;
    if (ctx.group->data) rec.comm = ctx.data().kind();  // rank 0, which writes it, is in every group
    rec.groups = ctx.group->count;
    rec.group = to_int64(comm_.gather(ctx.group->index));
    rec.group_rank = to_int64(comm_.gather(ctx.group->rank));
    rec.group_size = to_int64(comm_.gather(ctx.group->size));
  }
  return rec;
}

// After the samples: what the workload says of them, every rank's numbers and tables, and the verdict.
void Runner::finish_record(const Workload& w, const CaseContext& ctx, const Verification& v, CaseRecord& rec,
                           std::vector<CaseTable> tables) const {
  rec.flops_per_sample = w.flops_per_sample();
  rec.bytes_per_sample = w.bytes_per_sample();
  rec.verify_tolerance = v.tolerance;
  rec.note = w.note(ctx);
  for (auto& t : w.tables(ctx)) tables.push_back(std::move(t));
  rec.tables = gather_tables(comm_, tables);
  if (comm_.rank() == 0) w.finish_tables(rec.tables);
  if (ctx.group) {
    rec.wrong_elements = to_int64(comm_.gather(std::vector<double>{static_cast<double>(v.wrong_elements)}));
    rec.op_bytes = comm_.gather(std::vector<double>{w.op_bytes()});
    rec.bus_factor = comm_.gather(std::vector<double>{w.bus_factor(ctx)});
  }
  rec.status = comm_.any(!v.ok) ? CaseStatus::verify_failed : CaseStatus::ok;
}

CaseRecord Runner::run(const Case& c) {
  try {
    return run_case(c);
  } catch (const std::bad_alloc&) {  // new, a vector: no size to say but the case's own need
    const double need = memory_need(c, dev_.buffers_on_host()).host_bytes;
    throw OutOfMemory("out of host memory for " + c.numbered(cases_) +
                      (need > 0 ? ", which needs about " + format_bytes(need) + " of host memory per rank" : "") +
                      " (std::bad_alloc)");
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(std::string(e.what()) + " for " + c.numbered(cases_));
  }
}

CaseRecord Runner::run_case(const Case& c) {
  CaseSettings s;
  s.warmup = static_cast<int>(c.params.get_int("warmup"));
  s.warmup_s = c.params.has("warmup_s") ? c.params.get_double("warmup_s") : default_warmup_s(backend_);
  s.reps = static_cast<int>(c.params.get_int("reps"));
  dev_.set_threads(static_cast<int>(c.params.get_int("threads")));
  CaseWatch watch(watchdog_, timeout_, c.numbered(cases_), s.warmup_s);
  watch.start();

  std::unique_ptr<Workload> w = find_workload(c.workload).make(c.params);
  PhaseLog phases(dev_);
  CaseContext ctx = context(c, phases);
  CaseRecord rec = start_record(c, ctx, s.warmup_s);
  rec.status_reason = first_reason(comm_, w->skip_reason(ctx));
  if (!rec.status_reason.empty()) {
    rec.status = CaseStatus::skipped;
    rec.reps = 0;
    return rec;
  }

  // Different inputs per rank, the same ones on every run with this seed.
  w->setup(ctx, seed_ + 1000003ULL * static_cast<std::uint64_t>(comm_.rank()) + c.index);
  // graph = true: the sample's work is recorded once, here, and replayed by every sample.
  std::unique_ptr<DeviceGraph> graph;
  if (uses_graph(c.params)) graph = dev_.capture([&] { w->run_sample(ctx); });
  // No rank's timed work may overlap another rank's setup (allocation, input generation).
  comm_.idle_barrier();

  SampleTimer timer(dev_, clock_, *w, ctx, phases, graph.get(), s.reps);
  CaseSamples samples(comm_, clock_, timer, watch, s);
  std::optional<TelemetrySampler> sampler;
  if (telemetry_) {
    sampler.emplace(*telemetry_, telemetry_interval_s_, [this] { return clock_.now(); });
    sampler->start();
  }
  const auto [my_turn, turns] = compact_turn(comm_, w->turn(ctx, comm_.rank()));
  const HostReading host_start = read_host_load();
  samples.run(c.mode, my_turn, turns);
  std::vector<CaseTable> tables{phases_table(timer.times(), phases.names()), host_table(host_start, read_host_load())};
  if (sampler) tables.push_back(telemetry_table(sampler->stop(), telemetry_interval_s_));
  const Verification v = w->verify(ctx);
  gather_samples(comm_, timer.times(), samples.warm(), v, my_turn, rec);
  finish_record(*w, ctx, v, rec, std::move(tables));
  return rec;
}

}  // namespace gpuscale
