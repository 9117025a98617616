#include "runner/runner.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "comm/mpi_check.hpp"
#include "core/error.hpp"
#include "workloads/collective_pattern.hpp"
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

// Collective. The node-pair sweep's schedule (node_pair_partner) with the
// nodes, ranks and hosts that ran it; on rank 0, empty elsewhere.
CasePairs node_pair_table(const MpiCommunicator& comm, const Group& g) {
  const auto hosts = comm.gather(comm.hostname());
  const auto nodes = comm.gather(comm.node_index());
  const auto member = comm.gather(g.member() ? g.rank : -1);
  CasePairs t;
  if (comm.rank() != 0) return t;
  const int n = g.size;  // rank 0 is local rank 0 of node 0: a member
  std::vector<std::size_t> world(static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < member.size(); ++r) {
    if (member[r] >= 0) world.at(static_cast<std::size_t>(member[r])) = r;
  }
  for (int round = 0; round < node_pair_rounds(n); ++round) {
    for (int a = 0; a < n; ++a) {
      const int b = node_pair_partner(a, round, n);
      if (b <= a) continue;  // each pair once; -1: a rests
      const std::size_t ra = world[a], rb = world[b];
      t.round.push_back(round + 1);
      t.node_a.push_back(nodes[ra]);
      t.node_b.push_back(nodes[rb]);
      t.rank_a.push_back(static_cast<std::int64_t>(ra));
      t.rank_b.push_back(static_cast<std::int64_t>(rb));
      t.host_a.push_back(hosts[ra]);
      t.host_b.push_back(hosts[rb]);
    }
  }
  return t;
}

}  // namespace

// Collective: every rank's readings into one table on rank 0.
void Runner::gather_telemetry(const std::vector<TelemetrySample>& mine, CaseRecord& rec) const {
  std::vector<double> flat;  // 6 numbers per reading; the reasons, small integers, travel exactly as doubles
  for (const auto& s : mine) {
    flat.insert(flat.end(), {s.time_s, s.sm_clock_mhz, s.mem_clock_mhz, s.temperature_c, s.power_w,
                             static_cast<double>(s.clock_event_reasons)});
  }
  const auto counts = comm_.gather(static_cast<int>(mine.size()));
  const auto all = comm_.gather(flat);
  double interval = telemetry_ ? telemetry_interval_s_ : 0.0;
  GPUSCALE_MPI(MPI_Allreduce(MPI_IN_PLACE, &interval, 1, MPI_DOUBLE, MPI_MAX, comm_.comm()));
  rec.telemetry_interval_s = interval;
  CaseTelemetry& t = rec.telemetry;
  std::size_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    for (int i = 0; i < counts[r]; ++i, at += 6) {
      t.rank.push_back(static_cast<std::int64_t>(r));
      t.time_s.push_back(all[at]);
      t.sm_clock_mhz.push_back(all[at + 1]);
      t.mem_clock_mhz.push_back(all[at + 2]);
      t.temperature_c.push_back(all[at + 3]);
      t.power_w.push_back(all[at + 4]);
      t.clock_event_reasons.push_back(static_cast<std::int64_t>(all[at + 5]));
    }
  }
}

// Collective: every rank's phase intervals into one table on rank 0, with
// the phase names of all ranks (in the order they first appear).
void Runner::gather_phases(const CasePhases& mine, CaseRecord& rec) const {
  std::vector<double> flat;  // sample, phase, start, end per interval
  for (std::size_t i = 0; i < mine.sample.size(); ++i) {
    flat.insert(flat.end(), {static_cast<double>(mine.sample[i]), static_cast<double>(mine.phase[i]), mine.start_s[i],
                             mine.end_s[i]});
  }
  std::string names;
  for (const auto& n : mine.names) names += n + "\n";
  const auto all_names = comm_.gather(names);
  const auto counts = comm_.gather(static_cast<int>(mine.sample.size()));
  const auto all = comm_.gather(flat);
  CasePhases& p = rec.phases;
  std::size_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    std::vector<int> to_global;  // this rank's phase index -> index in p.names
    std::size_t from = 0;
    for (std::size_t nl; (nl = all_names[r].find('\n', from)) != std::string::npos; from = nl + 1) {
      const std::string n = all_names[r].substr(from, nl - from);
      auto it = std::find(p.names.begin(), p.names.end(), n);
      if (it == p.names.end()) it = p.names.insert(p.names.end(), n);
      to_global.push_back(static_cast<int>(it - p.names.begin()));
    }
    for (int i = 0; i < counts[r]; ++i, at += 4) {
      p.rank.push_back(static_cast<std::int64_t>(r));
      p.sample.push_back(static_cast<std::int64_t>(all[at]));
      p.phase.push_back(to_global.at(static_cast<std::size_t>(all[at + 1])));
      p.start_s.push_back(all[at + 2]);
      p.end_s.push_back(all[at + 3]);
    }
  }
}

double default_warmup_s(const std::string& backend) { return backend == "cuda" ? 0.5 : 0.0; }

CaseRecord Runner::run(const Case& c) {
  const int warmup = static_cast<int>(c.params.get_int("warmup"));
  const double warmup_s = c.params.has("warmup_s") ? c.params.get_double("warmup_s") : default_warmup_s(backend_);
  const int reps = static_cast<int>(c.params.get_int("reps"));
  dev_.set_threads(static_cast<int>(c.params.get_int("threads")));

  // The watchdog times setup and warm-up, then (timeout = auto) the timed
  // samples by what the samples so far took; disarmed however the case ends.
  const std::string what = c.numbered(cases_);
  struct Disarm {
    Watchdog* w;
    ~Disarm() {
      if (w) w->disarm();
    }
  } disarm{watchdog_};
  auto arm_start = [&] {
    if (watchdog_) {
      watchdog_->arm(what, timeout_.start_s(warmup_s),
                     timeout_.automatic() ? "timeout = auto: setup and warm-up get 60 s + 2 x warmup_s" : "");
    }
  };
  const char* kTimedWhy = "timeout = auto: from the last sample, 10 x the slowest sample yet, at least 30 s";
  double slowest = 0.0;  // wall time of this turn's slowest sample yet (warm-up included), any rank's after warm-up
  bool timed_armed = false;  // the watchdog says kTimedWhy: progress only moves the deadline
  // Collective: once every rank's warm-up ended; `mine`: this rank runs the
  // timed samples now (in serial mode the others wait for their turn).
  auto arm_timed = [&](bool mine) {
    if (!watchdog_ || !timeout_.automatic()) return;
    slowest = comm_.max(slowest, !mine);
    timed_armed = mine && slowest > 0;
    if (slowest <= 0) {
      watchdog_->arm(what, timeout_.start_s(warmup_s), "timeout = auto: no warm-up sample to go by, 60 s + 2 x warmup_s");
    } else if (mine) {
      watchdog_->arm(what, timeout_.timed_s(slowest, warmup_s), kTimedWhy);
    } else {
      watchdog_->arm(what, timeout_.waiting_s(reps, slowest, warmup_s),
                     "timeout = auto: waiting for another turn, 10 x its samples at the slowest rate, at least 300 s");
    }
  };
  // After a timed sample took `wall` seconds: the next one (or the verification) gets its bound afresh.
  auto progress = [&](double wall) {
    slowest = std::max(slowest, wall);
    if (!watchdog_ || !timeout_.automatic()) return;
    const double bound = timeout_.timed_s(slowest, warmup_s);
    if (timed_armed) {
      watchdog_->extend(bound);
    } else {
      watchdog_->arm(what, bound, kTimedWhy);
      timed_armed = true;
    }
  };
  arm_start();

  const WorkloadType& entry = find_workload(c.workload);
  std::unique_ptr<Workload> w = entry.make(c.params);
  CaseContext ctx{dev_};
  ctx.nodes = comm_.node_count();
  PhaseLog phases(dev_);
  ctx.phases = &phases;
  CasePhases my_phases;  // this rank's intervals of the timed samples
  if (const auto scope = entry.scope(c.params)) {
    if (!groups_) throw RuntimeError("case " + c.label() + " moves data between ranks, but this runner has no data plane");
    const int first = entry.group_size(c.params);
    // A group larger than the job is the workload's to skip (skip_reason), with the world as its group meanwhile.
    ctx.group = first > 0 && first <= comm_.size() ? &groups_->first(first) : &groups_->get(*scope);
  }

  CaseRecord rec;
  rec.index = c.index;
  rec.experiment = c.experiment;
  rec.workload = c.workload;
  rec.mode = c.mode;
  rec.backend = backend_;
  rec.ranks = comm_.size();
  rec.nodes = comm_.node_count();
  rec.reps = reps;
  rec.warmup = warmup;
  rec.params = c.params;
  rec.expect = c.expect;
  if (!rec.params.has("warmup_s")) rec.params.set("warmup_s", warmup_s);  // the value used
  if (ctx.group) {
    rec.scope = scope_name(ctx.group->scope);
    rec.comm = ctx.group->data ? ctx.data().kind() : "";  // rank 0, which writes it, is in every group
    rec.groups = ctx.group->count;
    rec.group = to_int64(comm_.gather(ctx.group->index));
    rec.group_rank = to_int64(comm_.gather(ctx.group->rank));
    rec.group_size = to_int64(comm_.gather(ctx.group->size));
  }

  rec.status_reason = first_reason(comm_, w->skip_reason(ctx));
  if (!rec.status_reason.empty()) {
    rec.status = "skipped";
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

  std::vector<double> time(reps), start(reps), end(reps), enqueue(reps);
  auto ev0 = dev_.create_event();
  auto ev1 = dev_.create_event();
  // A transfer's sample starts on the stream once all of it is enqueued (see Device::begin_batch).
  const bool batch = ctx.group != nullptr;
  const bool lanes = w->uses_lanes();
  // One sample; returns its device time. i < 0: a warm-up sample, not kept with the timed ones.
  auto sample = [&](int i) {
    const double t0 = clock_.now();
    if (batch) dev_.begin_batch();
    dev_.use_lane(Lane::compute);
    phases.start_sample();
    ev0->record();
    if (lanes) {  // every lane starts with the sample...
      dev_.wait(Lane::copy, Lane::compute);
      dev_.wait(Lane::comm, Lane::compute);
    }
    if (graph) {
      graph->launch();
    } else {
      w->run_sample(ctx);
    }
    dev_.use_lane(Lane::compute);
    if (lanes) dev_.join_lanes();  // ...and ends before its end event
    ev1->record();
    if (batch) dev_.end_batch();
    const double queued = clock_.now();  // the launch calls have returned
    ctx.synchronize();
    const double t1 = clock_.now();
    const double device_s = dev_.elapsed_s(*ev0, *ev1);
    if (i >= 0) {
      start[i] = t0;
      end[i] = t1;
      enqueue[i] = queued - t0;
      time[i] = device_s;
      // On the common clock: the sample's start plus the device time since its first event.
      for (const auto& iv : phases.intervals(*ev0)) {
        my_phases.sample.push_back(i);
        my_phases.phase.push_back(iv.phase);
        my_phases.start_s.push_back(t0 + iv.begin_s);
        my_phases.end_s.push_back(t0 + iv.end_s);
      }
    }
    return device_s;
  };

  // Warm-up, collective over all ranks: untimed samples until every rank of
  // this turn (`mine`) has run at least `warmup` of them and for at least
  // `warmup_s` seconds (GPU clocks ramp up from idle). The ranks stop
  // together: a transfer's ranks must run as many. Ranks outside the turn
  // wait without spinning; afterwards every rank knows the slowest sample.
  std::vector<double> warm_times;
  std::int64_t warm_count = 0;
  auto warm_up = [&](bool mine) {
    const double t0 = clock_.now();
    slowest = 0.0;
    while (true) {
      const double i0 = clock_.now();
      const bool more = mine && (warm_count < warmup || i0 - t0 < warmup_s);
      if (comm_.max(more ? 1.0 : 0.0, !mine) == 0.0) break;
      if (!mine) continue;
      const double t = sample(-1);
      slowest = std::max(slowest, clock_.now() - i0);  // with the agreement, as a timed sample has its barrier
      if (warm_times.size() < kWarmupSamplesKept) warm_times.push_back(t);
      ++warm_count;
    }
    arm_timed(mine);
  };
  // One timed sample after the ranks of `unit` line up.
  auto timed = [&](int i, MPI_Comm unit) {
    const double i0 = clock_.now();
    GPUSCALE_MPI(MPI_Barrier(unit));
    sample(i);
    progress(clock_.now() - i0);
  };

  std::optional<TelemetrySampler> sampler;
  if (telemetry_) {
    sampler.emplace(*telemetry_, telemetry_interval_s_, [this] { return clock_.now(); });
    sampler->start();
  }

  const auto [my_turn, turns] = compact_turn(comm_, w->turn(ctx, comm_.rank()));
  if (c.mode == "parallel") {
    warm_up(true);
    for (int i = 0; i < reps; ++i) timed(i, comm_.comm());
  } else if (c.mode == "serial") {
    // The ranks of one turn start each sample together, as in parallel mode.
    MPI_Comm unit = MPI_COMM_NULL;
    GPUSCALE_MPI(MPI_Comm_split(comm_.comm(), my_turn, comm_.rank(), &unit));
    const CommHandle unit_h(unit);
    for (int turn = 0; turn < turns; ++turn) {
      if (turn > 0 && timeout_.automatic()) arm_start();
      warm_up(turn == my_turn);
      if (turn == my_turn) {
        for (int i = 0; i < reps; ++i) timed(i, unit);
      }
      comm_.idle_barrier();
    }
  } else {
    throw RuntimeError("unknown mode '" + c.mode + "'");
  }
  const std::vector<TelemetrySample> readings = sampler ? sampler->stop() : std::vector<TelemetrySample>{};
  const Verification v = w->verify(ctx);

  rec.flops_per_sample = w->flops_per_sample();
  rec.bytes_per_sample = w->bytes_per_sample();
  rec.verify_tolerance = v.tolerance;
  rec.note = w->note(ctx);
  rec.device_time_s = comm_.gather(time);
  rec.enqueue_s = comm_.gather(enqueue);
  rec.wall_start_s = comm_.gather(start);
  rec.wall_end_s = comm_.gather(end);
  rec.verify_error = comm_.gather(std::vector<double>{v.max_error});
  rec.turn = to_int64(comm_.gather(my_turn));
  rec.warmup_samples = to_int64(comm_.gather(static_cast<int>(warm_count)));
  // Ranks ran different numbers of warm-up samples: rows padded with NaN to the longest.
  int width = static_cast<int>(warm_times.size());
  GPUSCALE_MPI(MPI_Allreduce(MPI_IN_PLACE, &width, 1, MPI_INT, MPI_MAX, comm_.comm()));
  warm_times.resize(static_cast<std::size_t>(width), std::nan(""));
  rec.warmup_width = width;
  rec.warmup_device_time_s = comm_.gather(warm_times);
  gather_telemetry(readings, rec);
  my_phases.names = phases.names();
  gather_phases(my_phases, rec);
  if (ctx.group && ctx.group->scope == Scope::node_pairs) rec.pairs = node_pair_table(comm_, *ctx.group);
  if (ctx.group) {
    rec.wrong_elements = to_int64(comm_.gather(std::vector<double>{static_cast<double>(v.wrong_elements)}));
    rec.op_bytes = comm_.gather(std::vector<double>{w->op_bytes()});
    rec.bus_factor = comm_.gather(std::vector<double>{w->bus_factor(ctx)});
  }
  const bool failed = comm_.any(!v.ok);
  rec.status = failed ? "verify-failed" : "ok";
  if (comm_.rank() != 0) {
    rec.device_time_s = time;
    rec.enqueue_s = enqueue;
    rec.wall_start_s = start;
    rec.wall_end_s = end;
    rec.verify_error = {v.max_error};
    rec.turn = {my_turn};
    rec.warmup_samples = {warm_count};
    rec.warmup_device_time_s = warm_times;
  }
  return rec;
}

}  // namespace gpuscale
