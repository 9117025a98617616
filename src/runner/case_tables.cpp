#include "runner/case_tables.hpp"

#include "io/result_model.hpp"

namespace gpuscale {

CaseTable phases_table(const SampleTimes& t, const std::vector<std::string>& names) {
  CaseTable p;
  p.name = kPhasesTable;
  p.description = "named intervals the workload marked inside its timed samples";
  p.columns.push_back(int_column("sample", "the timed sample the interval is in", ColumnRange::sample));
  p.columns.push_back(int_column("phase", "the interval's phase, an index into names", ColumnRange::level));
  p.columns.push_back(clock_column("start", "interval start on the common clock"));
  p.columns.push_back(clock_column("end", "interval end on the common clock"));
  p.columns[0].ints = t.phase_sample;
  p.columns[1].ints = t.phase;
  p.columns[1].levels = names;
  p.columns[1].levels_name = "names";
  p.columns[2].reals = t.phase_start;
  p.columns[3].reals = t.phase_end;
  return p;
}

CaseTable telemetry_table(const std::vector<TelemetrySample>& readings, double interval_s) {
  CaseTable t;
  t.name = kTelemetryTable;
  t.description = "readings of each rank's GPU from the start of warm-up to the end of the timed samples";
  t.attrs = {{"interval", interval_s}};
  t.columns.push_back(clock_column("time", "when the reading was taken, on the common clock"));
  t.columns.push_back(real_column("sm_clock", "MHz", "SM clock (NaN: not readable)"));
  t.columns.push_back(real_column("mem_clock", "MHz", "memory clock (NaN: not readable)"));
  t.columns.push_back(real_column("temperature", "degC", "GPU temperature (NaN: not readable)"));
  t.columns.push_back(real_column("power", "W", "power draw (NaN: not readable)"));
  t.columns.push_back(int_column("clock_event_reasons", "NVML's clock event reasons, a bitmask (-1: not readable)"));
  t.columns[1].unit_si = t.columns[2].unit_si = 1e6;
  for (const auto& s : readings) {
    t.columns[0].reals.push_back(s.time_s);
    t.columns[1].reals.push_back(s.sm_clock_mhz);
    t.columns[2].reals.push_back(s.mem_clock_mhz);
    t.columns[3].reals.push_back(s.temperature_c);
    t.columns[4].reals.push_back(s.power_w);
    t.columns[5].ints.push_back(s.clock_event_reasons);
  }
  return t;
}

std::vector<CaseTable> gather_tables(const MpiCommunicator& comm, const std::vector<CaseTable>& mine) {
  const auto all = comm.gather(serialize_tables(mine));
  if (comm.rank() != 0) return {};
  std::vector<std::vector<CaseTable>> per_rank;
  per_rank.reserve(all.size());
  for (const auto& bytes : all) per_rank.push_back(deserialize_tables(bytes));
  return merge_rank_tables(per_rank);
}

}  // namespace gpuscale
