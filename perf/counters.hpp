#pragma once
// Hardware and software counters on the timer regions (perf/timers.hpp). A run names its
// counters once (`perf.counters = [...]`); each thread that should count calls
// configure_counters(), after which every TESSERA_REGION on that thread also sums the
// counter deltas between its entry and its exit.
//
// Each counter gets the first backend that works for it on this machine:
//   PAPI (built in, PAPI_library_init succeeded, the event can be added and started)
//   -> perf_event_open (perf names; PAPI presets with a perf equivalent, e.g.
//      PAPI_TOT_INS -> instructions)
//   -> software (getrusage / the thread CPU clock, for task-clock, page-faults,
//      minor-faults, major-faults, context-switches)
//   -> none: "unavailable (<what each backend said>)".
// A missing counter never stops a run; an unknown counter name does (at configuration).
//
// Counts are per thread (perf_event_open with pid = 0, cpu = -1; one PAPI event set per
// thread), matching the per-thread timer trees. task-clock and cpu-clock are nanoseconds.
#include <mpi.h>

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <variant>
#include <vector>

#include "perf/timers.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::perf {

/// Declares perf.counters (list of counter names; empty, the default, means off).
void declare_params(base::Params& p);

/// Backends configure_counters may try; all by default. Narrowing them is for tests and
/// experiments (e.g. software only, to compare with perf_event).
struct CounterBackends {
  bool papi = true;
  bool perf_event = true;
  bool software = true;
};

/// Configures the calling thread's counters and attaches them to its timer tree
/// (TimerTree::local()), whose counts restart from zero. An empty list turns counting off
/// on this thread. Throws tessera::Error (one line) for an unknown or repeated name,
/// before changing anything; never throws because a counter is unavailable. Replaces any
/// earlier configuration of this thread. Not collective.
void configure_counters(const std::vector<std::string>& names, CounterBackends allowed = {});

/// How one configured counter is measured on the calling thread.
struct CounterInfo {
  std::string name;     ///< as configured
  std::string backend;  ///< "papi", "perf_event", "software"; empty when unavailable
  std::string source;   ///< what is read, e.g. "perf_event instructions (user space only)"
  std::string reason;   ///< "unavailable (...)" when backend is empty, else empty
  bool available() const { return !backend.empty(); }
};
/// The calling thread's counters in configuration order; empty when counting is off.
std::vector<CounterInfo> configured_counters();

/// One counter's value over a region, summed over ranks, or why there is none.
using CounterValue = std::variant<std::uint64_t, std::string>;

/// One region of the reduced tree: seconds as in reduce_timers, counters summed over ranks.
struct ReducedCounterRow {
  std::string path;
  std::string name;  ///< the region's own name (leaf of the path)
  int depth;
  double max_s, avg_s;
  std::vector<CounterValue> values;  ///< one per ReducedCounters::names
};

/// The result of reduce_counters: identical on every rank.
struct ReducedCounters {
  int nranks = 1;
  std::vector<std::string> names;       ///< counters, in configuration order
  std::vector<std::string> status;      ///< per name: empty, or "unavailable (...)"
  std::vector<std::string> backends;    ///< per name: "papi", "perf_event", "software", or
                                        ///< several joined by '+' when ranks differ; "" if none
  std::vector<ReducedCounterRow> rows;  ///< depth-first, as reduce_timers
};

/// Collective over comm: every rank's calling-thread counters, merged by region path
/// (a counter unavailable on any rank is unavailable, with that rank's reason). Every rank
/// gets the same result; no names when no rank configured counters.
ReducedCounters reduce_counters(MPI_Comm comm);
/// The same, with the timer rows the caller already reduced (reduce_timers(comm)), so the
/// end of a run does not gather the timer tree twice.
ReducedCounters reduce_counters(MPI_Comm comm, const std::vector<ReducedRow>& timer_rows);

/// summary.json's "counters": {"<region path>": {"<counter>": number | "unavailable (...)",
/// ..., "derived": {"ipc": number | "unavailable (...)", ...}}}; {} when no counters.
/// A derived metric appears when all its inputs are configured: a number, or
/// "unavailable (inputs unavailable: ...)" / "unavailable (<input> = 0)". They are: ipc,
/// dtlb_misses_per_1000_loads, l1_miss_rate, l2_miss_rate, llc_miss_rate,
/// mem_bandwidth_bytes_per_s (64-byte lines × LLC misses / the region's max seconds over
/// ranks: an estimate), cpu_utilization (task-clock / wall time, averaged over ranks).
nlohmann::json counters_to_json(const ReducedCounters& reduced);
/// Collective: counters_to_json(reduce_counters(comm)).
nlohmann::json counters_to_json(MPI_Comm comm);
/// {"<counter>": backend | "unavailable (...)"}, for summary.json ("counter_backends").
nlohmann::json counter_backends_to_json(const ReducedCounters& reduced);

/// Region × counter table for the end of the log (numbers and numeric derived metrics);
/// unavailable counters are listed under it with their reasons instead of taking a
/// column. Prints nothing when there are no names. Not collective.
void print_counter_table(std::ostream& os, const ReducedCounters& reduced);

/// Every name configure_counters accepts besides PAPI native events (for docs and errors).
std::vector<std::string> known_counter_names();

}  // namespace tessera::perf
