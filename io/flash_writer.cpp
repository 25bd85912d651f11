// FLASH HDF5 file format version 9, the writer: write_flash_file (io/flash_file.hpp).
// The layout is shared/reference/flash-hdf5-format.md (yt frontends/flash, VisIt
// avtFLASHFileFormat.C, Flash-X IO/IOMain/hdf5); § below refers to that note. It checks the
// spec, writes the tree (not in a particle file), the parameter lists, `sim info`, `unknown
// names`, the variables and the particles (§6), and the checksum manifest last
// (io/manifest.hpp). It reads nothing back:
// reading is io/flash_reader.cpp and io/flash_restart_read.cpp, checking io/flash_check.cpp.
//
// Parallel pattern (HDF5 1.10 rules): every rank creates every dataset and attribute
// (metadata operations are collective); replicated metadata is written by rank 0 inside
// a collective H5Dwrite in which the other ranks select nothing; each rank writes its own
// rows of the variables in one collective H5Dwrite per variable, and its blocks' rows of
// `tracer particles` in one more.
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "io/flash_file.hpp"
#include "io/flash_format.hpp"
#include "io/hdf5_util.hpp"
#include "io/manifest.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::io {
namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): io's own internals
using parallel::agree;

/// Checks that are the same on every rank (the tree and the lists are replicated).
std::string check_global(const FlashFileSpec& s) {
  if (s.ndim < 1 || s.ndim > 3) return "ndim " + std::to_string(s.ndim) + " is not 1, 2 or 3";
  if (s.nxb < 1 || s.nyb < 1 || s.nzb < 1) return "nxb, nyb and nzb must be >= 1";
  if ((s.ndim < 3 && s.nzb != 1) || (s.ndim < 2 && s.nyb != 1)) {
    return "nyb/nzb must be 1 for unused dimensions";
  }
  const std::size_t n = s.refine_level.size();
  if (n == 0) return "no blocks";
  const auto bad_size = [&](const char* what, std::size_t got, std::size_t want) {
    return std::string(what) + " has " + std::to_string(got) + " entries, expected " +
           std::to_string(want);
  };
  if (s.node_type.size() != n) return bad_size("node type", s.node_type.size(), n);
  if (s.processor_number.size() != n) {
    return bad_size("processor number", s.processor_number.size(), n);
  }
  const std::size_t ncol = static_cast<std::size_t>(gid_columns(s.ndim));
  if (s.gid.size() != n * ncol) return bad_size("gid", s.gid.size(), n * ncol);
  if (s.bounding_box.size() != n * 6) {
    return bad_size("bounding box", s.bounding_box.size(), n * 6);
  }
  if (s.coordinates.size() != n * 3) return bad_size("coordinates", s.coordinates.size(), n * 3);
  if (s.block_size.size() != n * 3) return bad_size("block size", s.block_size.size(), n * 3);
  if (s.real_scalars.empty() || s.real_scalars.front().first != "time") {
    return "real scalars must start with 'time'";
  }
  std::string why;
  const auto check_names = [&](const auto& list, bool check_values) {
    if (!why.empty()) return;
    for (const auto& [name, value] : list) {
      if (name.size() >= kStringLen) {
        why = "parameter name '" + name + "' is longer than 79 characters";
        return;
      }
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>) {
        if (check_values && value.size() >= kStringLen) {
          why = "value of string parameter '" + name + "' is longer than 79 characters";
          return;
        }
      }
    }
  };
  for (const auto* l : {&s.int_scalars, &s.int_runtime}) check_names(*l, false);
  for (const auto* l : {&s.real_scalars, &s.real_runtime}) check_names(*l, false);
  for (const auto* l : {&s.str_scalars, &s.str_runtime}) check_names(*l, true);
  for (const auto* l : {&s.log_scalars, &s.log_runtime}) check_names(*l, false);
  if (!why.empty()) return why;
  std::set<std::string> seen;
  for (const auto& v : s.var_names) {
    if (v.empty() || v.size() > kUnknownNameLen || v.find('/') != std::string::npos) {
      return "variable name '" + v + "' must have 1 to 4 characters and no '/'";
    }
    if (reserved_names().count(v) != 0) return "variable name '" + v + "' is a FLASH dataset";
    if (!seen.insert(v).second) return "variable name '" + v + "' appears twice";
  }
  std::set<std::string> props;
  for (const auto& p : s.particle_names) {
    if (p.empty() || p.size() >= kParticleNameLen) {
      return "particle property name '" + p + "' must have 1 to 23 characters";
    }
    if (!props.insert(p).second) return "particle property name '" + p + "' appears twice";
  }
  if (!s.grid) {
    if (!s.var_names.empty()) return "a particle file (grid false) holds no variables";
    if (s.particle_names.empty()) return "a particle file (grid false) needs particle names";
  }
  return {};
}

/// Checks of this rank's rows and data.
std::string check_local(const FlashFileSpec& s) {
  const std::size_t n = s.refine_level.size();
  for (std::size_t r = 0; r < s.local_rows.size(); ++r) {
    const int row = s.local_rows[r];
    if (row < 0 || static_cast<std::size_t>(row) >= n) {
      return "local row " + std::to_string(row) + " is outside 0.." + std::to_string(n - 1);
    }
    if (r > 0 && row <= s.local_rows[r - 1]) return "local rows are not strictly ascending";
  }
  const std::size_t cells = static_cast<std::size_t>(s.nxb) * s.nyb * s.nzb;
  const std::size_t want = s.var_names.size() * s.local_rows.size() * cells;
  if (s.data.size() != want) {
    return "data has " + std::to_string(s.data.size()) + " values, expected " +
           std::to_string(want);
  }
  if (s.particle_names.empty()) {
    if (!s.localnp.empty() || !s.particles.empty()) {
      return "localnp or particles given without particle names";
    }
    return {};
  }
  if (s.localnp.size() != s.local_rows.size()) {
    return "localnp has " + std::to_string(s.localnp.size()) + " entries, expected " +
           std::to_string(s.local_rows.size()) + " (one per local row)";
  }
  std::size_t count = 0;
  for (std::size_t r = 0; r < s.localnp.size(); ++r) {
    if (s.localnp[r] < 0)
      return "localnp of row " + std::to_string(s.local_rows[r]) + " is negative";
    count += static_cast<std::size_t>(s.localnp[r]);
  }
  if (s.particles.size() != count * s.particle_names.size()) {
    return "particles has " + std::to_string(s.particles.size()) + " values, expected " +
           std::to_string(count * s.particle_names.size()) + " (sum of localnp x " +
           std::to_string(s.particle_names.size()) + " properties)";
  }
  return {};
}

class Writer {
 public:
  Writer(MPI_Comm comm, const FlashFileSpec& spec)
      : comm_(comm), s_(spec), c_("cannot write FLASH file '" + spec.path + "': ") {
    MPI_Comm_rank(comm, &rank_);
  }

  /// A collective write's status, agreed: if it failed on any rank (a full disk may fail
  /// one rank's part only), every rank throws, so no rank waits in the next collective.
  void agreed(herr_t rc, const std::string& call) const {
    agree(comm_, rc < 0 ? c_.message(call + " failed") : std::string());
  }

  void run() {
    agree(comm_, validate());
    agree(comm_, check_rows());
    create_file();
    dxpl_ = c_.check(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
    c_.check(H5Pset_dxpl_mpio(dxpl_.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    if (s_.grid) write_tree();
    write_lists();
    write_sim_info();
    write_unknown_names();
    for (std::size_t v = 0; v < s_.var_names.size(); ++v) write_variable(v);
    if (!s_.particle_names.empty()) write_particles();
    write_manifest();
    dxpl_.close();
    TESSERA_REGION("io/h5fclose");
    agreed(file_.close(), "H5Fclose");
  }

 private:
  std::string validate() const {
    std::string why = check_global(s_);
    if (why.empty()) why = check_local(s_);
    return why.empty() ? why : c_.message(why);
  }

  /// Collective; after validate(). Every row must come from exactly one rank.
  std::string check_rows() const {
    std::vector<int> count(s_.refine_level.size(), 0);
    for (const int row : s_.local_rows) ++count[static_cast<std::size_t>(row)];
    MPI_Allreduce(MPI_IN_PLACE, count.data(), static_cast<int>(count.size()), MPI_INT, MPI_SUM,
                  comm_);
    for (std::size_t row = 0; row < count.size(); ++row) {
      if (count[row] != 1) {
        return c_.message("row " + std::to_string(row) + " is provided by " +
                          std::to_string(count[row]) + " ranks, expected 1");
      }
    }
    return {};
  }

  void create_file() {
    std::string why;
    try {
      Handle fapl = c_.check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
      set_fapl_mpio(c_, fapl.get(), comm_, s_.hints);
      file_ = c_.check(H5Fcreate(s_.path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose,
                       "H5Fcreate");
    } catch (const Error& e) {
      why = e.what();
    }
    agree(comm_, why);
  }

  Handle create_dataset(const std::string& name, hid_t file_type, const std::vector<hsize_t>& dims,
                        int deflate = 0) const {
    Handle space = c_.check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                            H5Sclose, "H5Screate_simple" + quoted(name));
    Handle dcpl = c_.check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
    // Every element is written below, so skip the fill pass.
    c_.check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
    if (deflate > 0) {
      // One block per chunk: each rank compresses its own rows (parallel HDF5 >= 1.10.2
      // supports filters with collective writes).
      std::vector<hsize_t> chunk(dims);
      chunk[0] = 1;
      c_.check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
               "H5Pset_chunk" + quoted(name));
      c_.check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(deflate)),
               "H5Pset_deflate" + quoted(name));
    }
    return c_.check(H5Dcreate2(file_.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT,
                               dcpl.get(), H5P_DEFAULT),
                    H5Dclose, "H5Dcreate2" + quoted(name));
  }

  /// Collective write of a replicated dataset: rank 0 writes it all, the rest nothing.
  void write_from_root(const Handle& dset, const std::string& name, hid_t mem_type,
                       const void* buf) const {
    Handle fspace = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space" + quoted(name));
    Handle mspace = c_.check(H5Scopy(fspace.get()), H5Sclose, "H5Scopy" + quoted(name));
    if (rank_ != 0) {
      c_.check(H5Sselect_none(fspace.get()), "H5Sselect_none" + quoted(name));
      c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none" + quoted(name));
    }
    agreed(H5Dwrite(dset.get(), mem_type, mspace.get(), fspace.get(), dxpl_.get(), buf),
           "H5Dwrite" + quoted(name));
    if (rank_ == 0) {
      // Memory and file types have the same bytes here (little-endian, packed records).
      const hssize_t n = H5Sget_simple_extent_npoints(fspace.get());
      const std::size_t bytes = static_cast<std::size_t>(n) * H5Tget_size(mem_type);
      manifest_.push_back({name, crc_of_bytes(buf, bytes), bytes});
    }
  }

  /// Collective: the manifest (a JSON string) as the last dataset, written by rank 0.
  void write_manifest() const {
    // Every rank creates the dataset, whose string type is as long as the text.
    const std::string text =
        parallel::broadcast(comm_, rank_ == 0 ? manifest_json(manifest_) : std::string(), 0);
    Handle type = string_type(c_, std::max<std::size_t>(text.size(), 1));
    Handle space = c_.check(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate" + quoted(kManifestName));
    Handle dset = c_.check(H5Dcreate2(file_.get(), kManifestName, type.get(), space.get(),
                                      H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                           H5Dclose, std::string("H5Dcreate2") + quoted(kManifestName));
    Handle fspace = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space");
    Handle mspace = c_.check(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
    if (rank_ != 0) {
      c_.check(H5Sselect_none(fspace.get()), "H5Sselect_none");
      c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none");
    }
    agreed(H5Dwrite(dset.get(), type.get(), mspace.get(), fspace.get(), dxpl_.get(), text.data()),
           std::string("H5Dwrite") + quoted(kManifestName));
  }

  void write_ints(const std::string& name, const std::vector<int>& values,
                  const std::vector<hsize_t>& dims) const {
    static_assert(sizeof(int) == 4);
    Handle dset = create_dataset(name, H5T_STD_I32LE, dims);
    write_from_root(dset, name, H5T_NATIVE_INT, values.data());
  }

  /// FLASH writes tree reals in the file's precision: f64 checkpoints, f32 plotfiles.
  void write_reals(const std::string& name, const std::vector<double>& values,
                   const std::vector<hsize_t>& dims) const {
    if (s_.double_precision) {
      Handle dset = create_dataset(name, H5T_IEEE_F64LE, dims);
      write_from_root(dset, name, H5T_NATIVE_DOUBLE, values.data());
    } else {
      const std::vector<float> single(values.begin(), values.end());
      Handle dset = create_dataset(name, H5T_IEEE_F32LE, dims);
      write_from_root(dset, name, H5T_NATIVE_FLOAT, single.data());
    }
  }

  void write_tree() const {
    const hsize_t n = s_.refine_level.size();
    write_ints("refine level", s_.refine_level, {n});
    write_ints("node type", s_.node_type, {n});
    write_ints("gid", s_.gid, {n, static_cast<hsize_t>(gid_columns(s_.ndim))});
    write_ints("processor number", s_.processor_number, {n});
    write_reals("bounding box", s_.bounding_box, {n, 3, 2});
    write_reals("coordinates", s_.coordinates, {n, 3});
    write_reals("block size", s_.block_size, {n, 3});
  }

  template <class T>
  void write_list(const std::vector<std::pair<std::string, T>>& list, bool runtime) const {
    if (list.empty()) return;  // §3: omit empty lists
    const ListKind kind = kind_of<T>();
    const std::string name = list_dataset_name(kind, runtime);
    Handle file_type = list_type(c_, kind, true);
    Handle mem_type = list_type(c_, kind, false);
    const std::vector<unsigned char> buf = pack_list(list);
    Handle dset = create_dataset(name, file_type.get(), {list.size()});
    write_from_root(dset, name, mem_type.get(), buf.data());
  }

  void write_lists() const {
    write_list(s_.int_scalars, false);
    write_list(s_.real_scalars, false);
    write_list(s_.str_scalars, false);
    write_list(s_.log_scalars, false);
    write_list(s_.int_runtime, true);
    write_list(s_.real_runtime, true);
    write_list(s_.str_runtime, true);
    write_list(s_.log_runtime, true);
  }

  void write_sim_info() const {
    std::size_t total = 0;
    for (const auto& m : kSimInfo) total += m.size == 0 ? sizeof(std::int32_t) : m.size;
    Handle file_type = c_.check(H5Tcreate(H5T_COMPOUND, total), H5Tclose, "H5Tcreate");
    Handle mem_type = c_.check(H5Tcreate(H5T_COMPOUND, total), H5Tclose, "H5Tcreate");
    std::vector<unsigned char> buf(total, 0);

    std::array<char, kStringLen> now{};
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);
    std::strftime(now.data(), now.size(), "%Y-%m-%d %H:%M:%S UTC", &utc);
    const auto text_of = [&](const std::string& member) -> std::string {
      if (member == "setup call" || member == "flash version") return "tessera";
      if (member == "file creation time") return now.data();
      return {};
    };

    std::size_t offset = 0;
    for (const auto& m : kSimInfo) {
      if (m.size == 0) {
        c_.check(H5Tinsert(file_type.get(), m.name, offset, H5T_STD_I32LE), "H5Tinsert");
        c_.check(H5Tinsert(mem_type.get(), m.name, offset, H5T_NATIVE_INT32), "H5Tinsert");
        const std::int32_t version = kFileFormatVersion;
        std::memcpy(buf.data() + offset, &version, sizeof version);
        offset += sizeof version;
      } else {
        Handle str = string_type(c_, m.size);
        c_.check(H5Tinsert(file_type.get(), m.name, offset, str.get()), "H5Tinsert");
        c_.check(H5Tinsert(mem_type.get(), m.name, offset, str.get()), "H5Tinsert");
        put_string(buf.data() + offset, m.size, text_of(m.name));
        offset += m.size;
      }
    }
    Handle dset = create_dataset("sim info", file_type.get(), {1});
    write_from_root(dset, "sim info", mem_type.get(), buf.data());
  }

  void write_unknown_names() const {
    if (s_.var_names.empty()) return;
    Handle type = string_type(c_, kUnknownNameLen);
    std::vector<unsigned char> buf(s_.var_names.size() * kUnknownNameLen, 0);
    for (std::size_t v = 0; v < s_.var_names.size(); ++v) {
      put_string(buf.data() + v * kUnknownNameLen, kUnknownNameLen, s_.var_names[v]);
    }
    Handle dset = create_dataset("unknown names", type.get(), {s_.var_names.size(), 1});
    write_from_root(dset, "unknown names", type.get(), buf.data());
  }

  void write_variable(std::size_t v) const {
    const std::string& name = s_.var_names[v];
    const hsize_t n = s_.refine_level.size();
    const std::array<hsize_t, 4> dims{n, static_cast<hsize_t>(s_.nzb), static_cast<hsize_t>(s_.nyb),
                                      static_cast<hsize_t>(s_.nxb)};
    const std::size_t cells = static_cast<std::size_t>(s_.nxb) * s_.nyb * s_.nzb;
    const std::size_t count = s_.local_rows.size() * cells;
    const double* values = s_.data.data() + v * count;

    // The bytes to write (converted to f32 for a plotfile) and their extrema as stored.
    std::vector<float> single;
    if (!s_.double_precision) single.assign(values, values + count);
    std::array<double, 2> extrema{std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::infinity()};  // {min, -max}
    {
      TESSERA_REGION("io/extrema");
      for (std::size_t i = 0; i < count; ++i) {
        const double x = s_.double_precision ? values[i] : static_cast<double>(single[i]);
        extrema[0] = std::min(extrema[0], x);
        extrema[1] = std::min(extrema[1], -x);
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, extrema.data(), 2, MPI_DOUBLE, MPI_MIN, comm_);

    Handle dset = create_dataset(name, s_.double_precision ? H5T_IEEE_F64LE : H5T_IEEE_F32LE,
                                 std::vector<hsize_t>(dims.begin(), dims.end()), s_.deflate);
    Handle fspace = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space" + quoted(name));
    select_rows(fspace, name);
    const hsize_t mdim = std::max<hsize_t>(count, 1);
    Handle mspace =
        c_.check(H5Screate_simple(1, &mdim, nullptr), H5Sclose, "H5Screate_simple" + quoted(name));
    if (count == 0) c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none" + quoted(name));
    static const double kNoData = 0.0;  // collective writes want a valid pointer
    const void* buf = count == 0            ? static_cast<const void*>(&kNoData)
                      : s_.double_precision ? static_cast<const void*>(values)
                                            : static_cast<const void*>(single.data());
    {
      TESSERA_REGION("io/h5dwrite");
      agreed(H5Dwrite(dset.get(), s_.double_precision ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT,
                      mspace.get(), fspace.get(), dxpl_.get(), buf),
             "H5Dwrite" + quoted(name));
    }

    write_attribute(dset, name, "minimum", extrema[0]);
    write_attribute(dset, name, "maximum", -extrema[1]);

    // Checksum of the whole dataset in file order: each rank checksums its rows, the
    // row checksums are summed onto rank 0 (one contributor per row) and chained there,
    // so the result does not depend on how rows are spread over ranks.
    const std::size_t elem = s_.double_precision ? sizeof(double) : sizeof(float);
    const std::size_t row_bytes = cells * elem;
    std::vector<std::uint32_t> row_crc(n, 0);
    TESSERA_REGION("io/crc");
    for (std::size_t r = 0; r < s_.local_rows.size(); ++r) {
      const void* p = s_.double_precision ? static_cast<const void*>(values + r * cells)
                                          : static_cast<const void*>(single.data() + r * cells);
      row_crc[static_cast<std::size_t>(s_.local_rows[r])] = crc_of_bytes(p, row_bytes);
    }
    MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : row_crc.data(), row_crc.data(), static_cast<int>(n),
               MPI_UINT32_T, MPI_SUM, 0, comm_);
    if (rank_ == 0) manifest_.push_back({name, chain_row_crcs(row_crc, row_bytes), row_bytes * n});
  }

  /// Collective: `particle names`, `localnp` (every rank's counts gathered into file
  /// order) and `tracer particles`, which each rank writes its blocks' rows of in one
  /// collective H5Dwrite (a union of hyperslabs; a rank without particles selects none).
  void write_particles() const {
    const std::size_t n = s_.refine_level.size();
    const std::size_t nprop = s_.particle_names.size();

    Handle name_type = string_type(c_, kParticleNameLen);
    std::vector<unsigned char> names(nprop * kParticleNameLen, 0);
    for (std::size_t q = 0; q < nprop; ++q) {
      put_string(names.data() + q * kParticleNameLen, kParticleNameLen, s_.particle_names[q]);
    }
    Handle names_dset = create_dataset("particle names", name_type.get(), {nprop, 1});
    write_from_root(names_dset, "particle names", name_type.get(), names.data());

    // One contributor per row (check_rows), so the sum is every rank's counts in place.
    std::vector<int> localnp(n, 0);
    for (std::size_t r = 0; r < s_.local_rows.size(); ++r) {
      localnp[static_cast<std::size_t>(s_.local_rows[r])] = s_.localnp[r];
    }
    MPI_Allreduce(MPI_IN_PLACE, localnp.data(), static_cast<int>(n), MPI_INT, MPI_SUM, comm_);
    write_ints("localnp", localnp, {n});

    const std::string name = "tracer particles";
    const std::vector<std::uint64_t> first = particle_offsets(localnp);
    const std::size_t row_bytes = nprop * sizeof(double);
    // No particles at all: a (0, nprop) dataset, which HDF5 creates and h5py and yt read;
    // there is nothing to write (every rank knows, the total is global).
    Handle dset = create_dataset(name, H5T_IEEE_F64LE, {first[n], nprop});
    if (first[n] > 0) {
      Handle fspace = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space" + quoted(name));
      std::vector<std::pair<hsize_t, hsize_t>> ranges;
      for (std::size_t r = 0; r < s_.local_rows.size(); ++r) {
        ranges.emplace_back(first[static_cast<std::size_t>(s_.local_rows[r])],
                            static_cast<hsize_t>(s_.localnp[r]));
      }
      select_row_ranges(c_, fspace, ranges, nprop, name);
      const std::size_t count = s_.particles.size();
      const hsize_t mdim = std::max<hsize_t>(count, 1);
      Handle mspace = c_.check(H5Screate_simple(1, &mdim, nullptr), H5Sclose,
                               "H5Screate_simple" + quoted(name));
      if (count == 0) c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none" + quoted(name));
      static const double kNoData = 0.0;  // collective writes want a valid pointer
      agreed(H5Dwrite(dset.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), dxpl_.get(),
                      count == 0 ? &kNoData : s_.particles.data()),
             "H5Dwrite" + quoted(name));
    }

    // Checksum in file order without gathering the particles: each rank checksums its
    // blocks' particles, the block checksums are summed onto rank 0 (one contributor per
    // row, 0 for a block without particles) and chained there with each block's length.
    std::vector<std::uint32_t> crc(n, 0);
    std::size_t at = 0;
    for (std::size_t r = 0; r < s_.local_rows.size(); ++r) {
      const std::size_t bytes = static_cast<std::size_t>(s_.localnp[r]) * row_bytes;
      crc[static_cast<std::size_t>(s_.local_rows[r])] =
          crc_of_bytes(s_.particles.data() + at, bytes);
      at += static_cast<std::size_t>(s_.localnp[r]) * nprop;
    }
    MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : crc.data(), crc.data(), static_cast<int>(n),
               MPI_UINT32_T, MPI_SUM, 0, comm_);
    if (rank_ == 0) {
      std::vector<std::uint64_t> bytes(n);
      for (std::size_t b = 0; b < n; ++b) bytes[b] = (first[b + 1] - first[b]) * row_bytes;
      manifest_.push_back({name, chain_crcs(crc, bytes), first[n] * row_bytes});
    }
  }

  void select_rows(const Handle& fspace, const std::string& name) const {
    detail::select_rows(c_, fspace, s_.local_rows, {s_.nzb, s_.nyb, s_.nxb}, name);
  }

  /// Attributes are written collectively with the same value on every rank.
  void write_attribute(const Handle& dset, const std::string& var, const char* attr,
                       double value) const {
    const hsize_t one = 1;
    const std::string what = quoted(var + "/" + attr);
    Handle space = c_.check(H5Screate_simple(1, &one, nullptr), H5Sclose, "H5Screate_simple");
    Handle a = c_.check(
        H5Acreate2(dset.get(), attr, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose, "H5Acreate2" + what);
    c_.check(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &value), "H5Awrite" + what);
  }

  MPI_Comm comm_;
  const FlashFileSpec& s_;
  Context c_;
  int rank_ = 0;
  Handle file_;  // declared before dxpl_ so it is closed after it
  Handle dxpl_;
  mutable std::vector<ManifestEntry> manifest_;  ///< rank 0 only
};

}  // namespace

void write_flash_file(MPI_Comm comm, const FlashFileSpec& spec) {
  // Errors become one-line exceptions; HDF5's own stack dump would only add noise.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Writer(comm, spec).run();
}

}  // namespace tessera::io
