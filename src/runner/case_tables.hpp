// The tables the runner gives every case (io/result_model.hpp names them):
// the phases the workload marked and the GPU's readings, built on each rank
// and gathered, with the workload's own tables, in one step to rank 0.
#pragma once

#include <string>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "io/case_table.hpp"
#include "runner/sample_timer.hpp"
#include "telemetry/telemetry.hpp"

namespace gpuscale {

// This rank's phase intervals; `names`: what the phase indices name.
CaseTable phases_table(const SampleTimes& t, const std::vector<std::string>& names);
// This rank's readings, taken every `interval_s`.
CaseTable telemetry_table(const std::vector<TelemetrySample>& readings, double interval_s);

// Collective: every rank's tables merged into one per name (merge_rank_tables)
// on rank 0; empty elsewhere.
std::vector<CaseTable> gather_tables(const MpiCommunicator& comm, const std::vector<CaseTable>& mine);

}  // namespace gpuscale
