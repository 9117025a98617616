// A WorkloadType whose hooks read a case's parameters parsed once into the
// workload's own struct P (its keys as the workload uses them), instead of
// each hook reading the strings of Params again. A type gives its schema,
// parse() and the hooks of P below; make, memory, work, scope, group_size and
// single_turn parse the Params and hand P on. examples(), small(), analysis()
// and stream_kinds() stay on Params, as WorkloadType has them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "workloads/workload.hpp"

namespace gpuscale {

template <class P>
class TypedWorkloadType : public WorkloadType {
 public:
  explicit TypedWorkloadType(WorkloadSchema schema) : schema_(std::move(schema)) {}
  const WorkloadSchema& schema() const final { return schema_; }
  // A case's keys (those of the schema; Params made in code may hold the runner's too). Throws InputError where
  // they cannot make a case (a dimension past its maximum); keys that cannot run together are unsupported()'s.
  virtual P parse(const Params& p) const = 0;

  std::unique_ptr<Workload> make(const Params& p) const final { return make_for(parse(p)); }
  // unsupported_for(parse(p)); a type whose refusals read keys that P leaves out (the graph key, a key as given
  // before parse() narrows it) overrides this instead.
  std::string unsupported(const Params& p, const RunTarget& target) const override {
    return unsupported_for(parse(p), target);
  }
  MemoryNeed memory(const Params& p, bool buffers_on_host) const final { return memory_for(parse(p), buffers_on_host); }
  CaseWork work(const Params& p, const JobShape& job) const final { return work_for(parse(p), job); }
  std::optional<Scope> scope(const Params& p) const final { return scope_for(parse(p)); }
  int group_size(const Params& p) const final { return group_size_for(parse(p)); }
  bool single_turn(const Params& p) const final { return single_turn_for(parse(p)); }

 protected:
  // The hooks of WorkloadType of the same names (workload.hpp), from the parsed keys.
  virtual std::unique_ptr<Workload> make_for(const P& p) const = 0;
  virtual std::string unsupported_for(const P&, const RunTarget&) const { return ""; }
  virtual MemoryNeed memory_for(const P& p, bool buffers_on_host) const = 0;
  virtual CaseWork work_for(const P& p, const JobShape& job) const = 0;
  virtual std::optional<Scope> scope_for(const P&) const { return std::nullopt; }
  virtual int group_size_for(const P&) const { return 0; }
  virtual bool single_turn_for(const P&) const { return false; }

 private:
  WorkloadSchema schema_;
};

}  // namespace gpuscale
