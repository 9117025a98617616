// The phase names that mean the same to the workloads that mark them
// (workloads/phases.hpp) and to the report that reads them from the phases
// table (kPhasesTable): compute and transfer, which overlap.
#pragma once

namespace gpuscale {

// The phases of workloads that overlap compute with transfers; the report
// turns them into exposed transfer and overlap (report/breakdown.hpp,
// workloads/overlap_report.hpp).
constexpr const char* kComputePhase = "compute";
constexpr const char* kTransferPhase = "transfer";

}  // namespace gpuscale
