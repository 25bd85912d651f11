#pragma once
// The io.* parameters (declared here, by the module that owns them) and what they turn
// into: the OutputManager's configuration and the MPI-IO hints.
#include <string>
#include <utility>
#include <vector>

#include "io/output_manager.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::io {

void declare_params(base::Params& p);

/// Validated configuration (throws tessera::Error naming the parameter).
OutputConfig config_from(const base::Params& p, const std::string& run_dir, bool thread_multiple);

/// MPI-IO hints from io.romio_cb_write, io.romio_ds_write, io.cb_buffer_size, io.cb_nodes
/// and io.mpi_hints ("key=value" each).
std::vector<std::pair<std::string, std::string>> hints_from(const base::Params& p);

}  // namespace tessera::io
