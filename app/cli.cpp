// tessera: the command line (tessera::app::main; app/main.cpp calls it). Subcommands:
//   run FILE [--dir DIR] [--restart CHECKPOINT] [section.key=value ...]   run a problem
//   check FILE...                                   verify output files (checksums)
//   plan FILE [--ranks N] [--ranks-per-node N] [--memory-per-node SIZE] [--blocks N]
//        [--blocks-per-rank N] [--scale] [--json]
//                                                   predict per-rank memory
//   params [--json]                                 print every parameter with its doc
//   units [FILE] [overrides] [--json|--markdown]    the registered physics units
//                                                   (units_command.hpp)
//   eos --dens D (--temp T | --eint E | --pres P) --abar A --zbar Z [--coulomb 0|1]
//       [--table PATH] [--json]                     one Helmholtz EOS call (eos_command.hpp)
//   nse --ye Y --dens D --emq E | --burn --dens D --temp T ...
//                                                   the NSE table, a one-zone burn
//                                                   (nse_command.hpp)
// Any error: one line "tessera: error: <reason>" on stderr and a non-zero exit.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app/app.hpp"
#include "app/eos_command.hpp"
#include "app/nse_command.hpp"
#include "app/units_command.hpp"
#include "base/error.hpp"
#include "base/params.hpp"
#include "base/simd.hpp"
#include "base/size.hpp"
#include "driver/simulation.hpp"
#include "driver/units.hpp"
#include "io/flash_file.hpp"
#include "memory/planner.hpp"
#include "parallel/comm.hpp"
#include "parallel/singleton.hpp"

namespace {

using namespace tessera;

int run(const std::string& file, const std::string& dir, const std::string& restart,
        const std::vector<std::string>& overrides, bool thread_multiple) {
  base::Params params;
  driver::declare_all_params(params);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto checkpoint = std::make_shared<io::FlashFileMeta>();
  nlohmann::json from_checkpoint;
  if (!restart.empty() && std::filesystem::is_directory(restart)) {
    // A run directory instead of a checkpoint in it: name the newest one.
    std::string newest;
    for (const auto& e : std::filesystem::directory_iterator(restart)) {
      const auto n = e.path().filename().string();
      if (n.find("_hdf5_chk_") != std::string::npos && n.find(".tmp") == std::string::npos &&
          e.path().string() > newest)
        newest = e.path().string();
    }
    throw Error(
        "--restart '" + restart + "' is a directory: name a checkpoint file" +
        (newest.empty() ? std::string(" (it holds none)") : " (its newest: '" + newest + "')"));
  }
  if (!restart.empty()) {
    // Every rank gets the checkpoint without its variables (rank 0 reads and verifies
    // it); the simulation reads each rank's blocks. A file that does not verify is
    // refused with the first reason, the same on every rank.
    try {
      *checkpoint = io::read_flash_metadata(MPI_COMM_WORLD, restart);
    } catch (const Error& e) {
      throw Error("refusing to restart from '" + restart + "': " + e.what());
    }
    driver::checkpoint_params(params, checkpoint->spec);
    from_checkpoint = params.to_json();
  }
  params.load_file(file);
  for (const auto& o : overrides) params.apply_override(o);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create output directory '" + dir + "': " + ec.message());
  std::string log_error;  // rank 0's parameters.log failed: every rank stops with it
  if (rank == 0) {
    std::cout << "tessera run " << file << " -> " << std::filesystem::absolute(dir).string()
              << "\n";
    if (!restart.empty()) {
      // Parameters in FILE or on the command line override the checkpoint's.
      const auto now = params.to_json();
      int changed = 0;
      for (const auto* s : params.all()) {
        if (now[s->key] == from_checkpoint[s->key]) continue;
        if (changed++ == 0) std::cout << "restart: parameters changed from the checkpoint's:\n";
        std::cout << "  " << s->key << ": " << from_checkpoint[s->key].dump() << " -> "
                  << now[s->key].dump() << " (" << s->source << ")\n";
      }
      if (changed == 0) std::cout << "restart: no parameter differs from the checkpoint's\n";
    }
    // The full table goes to DIR/parameters.log (and summary.json); the terminal shows
    // what the file or the command line set and the active units' own sections.
    {
      // The first file of the run: a directory that cannot hold it (a full disk, the
      // kernel's /proc) is refused here, not at the first output (issue 48).
      const auto path = std::filesystem::path(dir) / "parameters.log";
      errno = 0;
      std::ofstream log(path);
      log << "tessera run " << file << "\nparameters in effect (value, where it came from):\n";
      params.print_in_effect(log);
      log.close();
      if (!log)
        log_error = "cannot write in the output directory '" + dir + "' ('" + path.string() +
                    "': " + (errno != 0 ? std::strerror(errno) : "write failed") + ")";
    }
    std::vector<std::string> sections;
    for (const auto& n : driver::active_unit_names(params)) sections.push_back(n + ".");
    auto shown = [&](const base::ParamSpec& s) {
      if (s.source != "default") return true;
      for (const auto& sec : sections)
        if (s.key.rfind(sec, 0) == 0) return true;
      return false;
    };
    std::ostringstream os;
    const std::size_t n = params.print_in_effect(os, shown);
    std::cout << "parameters set or of the active units (" << n << " of " << params.all().size()
              << "; all in " << (std::filesystem::path(dir) / "parameters.log").string() << "):\n"
              << os.str();
    std::cout.flush();
  }
  parallel::agree(MPI_COMM_WORLD, log_error);
  driver::RunOptions opt;
  opt.run_dir = dir;
  if (!restart.empty()) opt.restart = checkpoint;
  opt.restart_path = restart;
  opt.thread_multiple = thread_multiple;
  checkpoint.reset();  // the simulation holds the only reference and drops it after use
  driver::Simulation sim(params, MPI_COMM_WORLD, std::move(opt));
  sim.run();
  return 0;
}

/// Verify each file; print one line per file (and one per problem). 0 only if all verify.
int check(const std::vector<std::string>& files) {
  const int rank = parallel::world_rank();
  int bad = 0;
  for (const auto& f : files) {
    if (rank != 0) continue;  // serial reads: rank 0 verifies and reports
    const auto c = io::check_flash_file(f);
    if (c.ok) {
      std::cout << f << ": OK (" << c.datasets_checked << " datasets, "
                << format_bytes(static_cast<double>(c.bytes_checked)) << " verified)\n";
    } else {
      ++bad;
      std::cout << f << ": FAILED\n";
      for (const auto& p : c.problems) std::cout << "  " << p << "\n";
    }
  }
  int on = 0;
  MPI_Initialized(&on);
  if (on != 0) MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);  // every rank: rank 0's verdict
  return bad == 0 ? 0 : 1;
}

/// Predict the memory of the run FILE describes.
int plan(const std::string& file, const std::vector<std::string>& overrides, int ranks,
         int ranks_per_node, const std::string& memory_per_node, long blocks, long blocks_per_rank,
         bool scale, bool json) {
  const int rank = parallel::world_rank();
  base::Params params;
  driver::declare_all_params(params);
  params.load_file(file);
  for (const auto& o : overrides) params.apply_override(o);
  std::size_t mem = 0;
  if (!memory_per_node.empty()) {
    try {
      mem = parse_bytes(memory_per_node);
    } catch (const Error& e) {
      throw Error(std::string("--memory-per-node: ") + e.what());
    }
  }
  const auto p = memory::plan_memory(params, driver::declared(params), ranks, ranks_per_node, mem,
                                     blocks_per_rank, blocks);
  if (rank == 0) {
    if (json) {
      std::cout << p.dump(2) << "\n";
    } else {
      memory::print_plan(std::cout, p);
      if (scale) {
        std::cout << '\n';
        memory::print_scale(std::cout, p.at("scale"));
      }
    }
  }
  return 0;
}

}  // namespace

int tessera::app::main(int argc, char** argv) {
  // MPI starts first where a launcher started the ranks, else only for `tessera run` and
  // `tessera plan`: a serial command (eos, nse, units, params, simd, check) started by
  // itself runs without MPI, whose start is most of its time (0.25 s of CPU; simd: 33 ms
  // in all without it; the tests call these hundreds of times). Without MPI every rank
  // test below is rank 0.
  // The asynchronous writer's I/O thread calls MPI (MPI-IO through HDF5) on its own
  // communicator while the step loop communicates: that needs MPI_THREAD_MULTIPLE.
  int provided = MPI_THREAD_SINGLE;
  auto start_mpi = [&] {
    int on = 0;
    MPI_Initialized(&on);
    if (on != 0) return;
    tessera::parallel::prepare_singleton();  // TESSERA_MPI_SINGLETON=isolated: no orted
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  };
  auto finish = [](int code) {
    int on = 0;
    MPI_Initialized(&on);
    if (on != 0) MPI_Finalize();
    return code;
  };
  if (tessera::parallel::launched_by_mpi()) start_mpi();
  const int rank = parallel::world_rank();
  CLI::App app{"Tessera: block-structured AMR hydrodynamics"};
  app.require_subcommand(1);
  std::string file, dir = ".", restart;
  std::vector<std::string> overrides, check_files;
  auto* run_cmd = app.add_subcommand("run", "run a problem from a TOML parameter file");
  run_cmd->add_option("file", file, "parameter file")->required();
  run_cmd->add_option("overrides", overrides, "section.key=value overrides");
  run_cmd->add_option("--dir", dir, "output directory (default: current directory)");
  run_cmd->add_option("--restart", restart,
                      "continue from this checkpoint (FILE and overrides change its parameters)");
  auto* check_cmd = app.add_subcommand("check", "verify output files against their checksums");
  check_cmd->add_option("files", check_files, "FLASH HDF5 files written by tessera")->required();
  auto* params_cmd = app.add_subcommand("params", "print every runtime parameter with its doc");
  bool params_json = false;
  params_cmd->add_flag("--json", params_json,
                       "print them as JSON (key, section, name, type, default, range, choices, "
                       "doc)");
  auto* plan_cmd = app.add_subcommand("plan", "predict per-rank memory and the blocks that fit");
  std::string plan_file, plan_mem;
  std::vector<std::string> plan_overrides;
  int plan_ranks = 1, plan_rpn = 0;
  long plan_blocks = 0, plan_blocks_per_rank = 0;
  bool plan_json = false, plan_scale = false;
  plan_cmd->add_option("file", plan_file, "parameter file")->required();
  plan_cmd->add_option("overrides", plan_overrides, "section.key=value overrides");
  plan_cmd->add_option("--ranks", plan_ranks, "MPI ranks of the run (default 1)");
  plan_cmd->add_option("--ranks-per-node", plan_rpn, "ranks per node (default: all on one)");
  plan_cmd->add_option("--memory-per-node", plan_mem, "node memory, e.g. 27G (default: MemTotal)");
  plan_cmd->add_option("--blocks", plan_blocks,
                       "blocks of the whole mesh, leaves and parents (default: the tree "
                       "refined everywhere to lrefine_max, capped by mesh.maxblocks x ranks)");
  plan_cmd->add_option("--blocks-per-rank", plan_blocks_per_rank,
                       "blocks one rank holds (default: --blocks / ranks)");
  plan_cmd->add_flag("--scale", plan_scale,
                     "also print the structures that grow with the global tree, up to 10^5 "
                     "ranks and 10^7 blocks (always in --json: \"scale\")");
  plan_cmd->add_flag("--json", plan_json, "print the prediction as JSON");
  auto* units_cmd = app.add_subcommand(
      "units", "list the registered physics units: requirements, variables, hooks");
  std::string units_file;
  std::vector<std::string> units_overrides;
  bool units_json = false;
  units_cmd->add_option("file", units_file, "parameter file (default: every default)");
  units_cmd->add_option("overrides", units_overrides, "section.key=value overrides");
  units_cmd->add_flag("--json", units_json, "print the list as JSON");
  bool units_markdown = false;
  units_cmd->add_flag("--markdown", units_markdown,
                      "print the hook table and unit list of docs/DESIGN.md (Markdown)");
  auto* simd_cmd = app.add_subcommand(
      "simd", "the vectorised kernels' instruction set here and the ones perf.simd can force");
  bool simd_json = false;
  simd_cmd->add_flag("--json", simd_json, "print {target, lanes, available} as JSON");
  tessera::app::EosOptions eos_opt;
  auto* eos_cmd = tessera::app::add_eos_command(app, eos_opt);
  tessera::app::NseOptions nse_opt;
  auto* nse_cmd = tessera::app::add_nse_command(app, nse_opt);
  int rc = 0;
  MPI_Comm error_comm = MPI_COMM_NULL;  // `run`: for a rank-local error's end
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      if (rank == 0) std::cout << app.help();
      return finish(0);
    } catch (const CLI::CallForAllHelp&) {
      if (rank == 0) std::cout << app.help("", CLI::AppFormatMode::All);
      return finish(0);
    } catch (const CLI::ParseError& e) {
      throw tessera::Error(std::string(e.what()) + " (see tessera --help)");
    }
    if (*params_cmd) {
      tessera::base::Params p;
      tessera::driver::declare_all_params(p);
      if (rank == 0 && params_json) std::cout << p.reference_json().dump(1) << "\n";
      if (rank == 0 && !params_json) p.print_reference(std::cout);
    } else if (*plan_cmd) {
      start_mpi();  // its baseline is this process's RSS with MPI as a run has it
      rc = plan(plan_file, plan_overrides, plan_ranks, plan_rpn, plan_mem, plan_blocks,
                plan_blocks_per_rank, plan_scale, plan_json);
    } else if (*check_cmd) {
      rc = check(check_files);
    } else if (*units_cmd) {
      rc = tessera::app::units_command(units_file, units_overrides, units_json, units_markdown);
    } else if (*simd_cmd) {
      // TESSERA_SIMD applies, as in a run with perf.simd = auto.
      tessera::simd::force_from_environment();
      const auto t = tessera::simd::current();
      const auto all = tessera::simd::available();
      if (rank == 0 && simd_json) {
        std::cout << nlohmann::json{{"target", t.name},
                                    {"lanes", t.lanes},
                                    {"available", all},
                                    {"compiled_for", tessera::simd::compiled_for()}}
                  << "\n";
      } else if (rank == 0) {
        std::cout << "kernels run " << t.name << " (" << t.lanes << " doubles per vector); "
                  << "perf.simd can force:";
        for (const auto& a : all) std::cout << " " << a;
        std::cout << "\nthe rest of the code is compiled for " << tessera::simd::compiled_for()
                  << "\n";
      }
    } else if (*eos_cmd) {
      rc = tessera::app::eos_command(eos_opt);
    } else if (*nse_cmd) {
      rc = tessera::app::nse_command(nse_opt);
    } else if (*run_cmd) {
      start_mpi();
      error_comm = parallel::error_exit_comm();
      rc = run(file, dir, restart, overrides, provided >= MPI_THREAD_MULTIPLE);
    }
  } catch (const std::exception& e) {
    parallel::end_with_error(error_comm, e.what());  // aborts the job if only this rank failed
    rc = 1;
  }
  return finish(rc);
}
