#include "runner/runner.hpp"

#include <algorithm>

#include "comm/mpi_check.hpp"
#include "core/error.hpp"
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

std::vector<std::int64_t> to_int64(const std::vector<double>& v) {
  return std::vector<std::int64_t>(v.begin(), v.end());
}

std::vector<std::int64_t> to_int64(const std::vector<int>& v) { return std::vector<std::int64_t>(v.begin(), v.end()); }

}  // namespace

CaseRecord Runner::run(const Case& c) {
  const int warmup = static_cast<int>(c.params.get_int("warmup"));
  const int reps = static_cast<int>(c.params.get_int("reps"));
  dev_.set_threads(static_cast<int>(c.params.get_int("threads")));

  const WorkloadEntry& entry = find_workload(c.workload);
  std::unique_ptr<Workload> w = entry.make(c.params);
  CaseContext ctx{dev_};
  ctx.nodes = comm_.node_count();
  if (const auto scope = entry.scope(c.params)) {
    if (!groups_) throw RuntimeError("case " + c.label() + " moves data between ranks, but this runner has no data plane");
    ctx.group = &groups_->get(*scope);
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
  if (ctx.group) {
    rec.scope = scope_name(ctx.group->scope);
    rec.comm = ctx.data().kind();
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
  // No rank's timed work may overlap another rank's setup (allocation, input generation).
  comm_.idle_barrier();

  std::vector<double> time(reps), start(reps), end(reps), enqueue(reps);
  auto ev0 = dev_.create_event();
  auto ev1 = dev_.create_event();
  // A transfer's sample starts on the stream once all of it is enqueued (see Device::begin_batch).
  const bool batch = ctx.group != nullptr;
  auto sample = [&](int i) {
    const double t0 = clock_.now();
    if (batch) dev_.begin_batch();
    ev0->record();
    w->run_sample(ctx);
    ev1->record();
    if (batch) dev_.end_batch();
    const double queued = clock_.now();  // the launch calls have returned
    ctx.synchronize();
    const double t1 = clock_.now();
    if (i >= 0) {
      start[i] = t0;
      end[i] = t1;
      enqueue[i] = queued - t0;
      time[i] = dev_.elapsed_s(*ev0, *ev1);
    }
  };

  const auto [my_turn, turns] = compact_turn(comm_, w->turn(ctx, comm_.rank()));
  if (c.mode == "parallel") {
    for (int i = 0; i < warmup; ++i) sample(-1);
    for (int i = 0; i < reps; ++i) {
      comm_.barrier();
      sample(i);
    }
  } else if (c.mode == "serial") {
    // The ranks of one turn start each sample together, as in parallel mode.
    MPI_Comm unit = MPI_COMM_NULL;
    GPUSCALE_MPI(MPI_Comm_split(comm_.comm(), my_turn, comm_.rank(), &unit));
    const CommHandle unit_h(unit);
    for (int turn = 0; turn < turns; ++turn) {
      if (turn == my_turn) {
        for (int i = 0; i < warmup; ++i) sample(-1);
        for (int i = 0; i < reps; ++i) {
          GPUSCALE_MPI(MPI_Barrier(unit));
          sample(i);
        }
      }
      comm_.idle_barrier();
    }
  } else {
    throw RuntimeError("unknown mode '" + c.mode + "'");
  }
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
  }
  return rec;
}

}  // namespace gpuscale
