// FLASH HDF5 file format version 9, the serial reader: read_flash_file
// (io/flash_file.hpp), the whole file on the calling rank, for tools and tests; and the
// same without the variables' values and the particles for the restart read
// (io/flash_internal.hpp). Checkpoints, plotfiles and particle files (no tree). It
// checks the format version, shapes and types as it reads, but not the checksums: that is
// io/flash_check.cpp. The distributed read of a checkpoint is io/flash_restart_read.cpp.
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "io/flash_file.hpp"
#include "io/flash_format.hpp"
#include "io/flash_internal.hpp"
#include "io/hdf5_util.hpp"

namespace tessera::io {
namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): io's own internals

class Reader {
 public:
  /// with_data false: everything but the variables' values (var_names are read).
  explicit Reader(const std::string& path, bool with_data = true)
      : path_(path), with_data_(with_data), c_("cannot read FLASH file '" + path + "': ") {}

  FlashFileSpec run() {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) c_.fail("no such file");
    const htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
    if (is_hdf5 < 0) c_.fail("H5Fis_hdf5 failed (unreadable file?)");
    if (is_hdf5 == 0) c_.fail("not an HDF5 file");
    file_ = c_.check(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, "H5Fopen");

    FlashFileSpec s;
    s.path = path_;
    read_version();
    // A particle file has no tree (yt's test for a particle-only dataset, §1).
    s.grid = exists("bounding box") || !exists("localnp");
    if (s.grid) read_tree(s);
    read_lists(s);
    if (s.grid) {
      read_variables(s);
    } else {
      read_particle_file_shape(s);
    }
    read_particles(s);
    c_.check(file_.close(), "H5Fclose");
    return s;
  }

 private:
  bool exists(const std::string& name) const {
    return H5Lexists(file_.get(), name.c_str(), H5P_DEFAULT) > 0;
  }

  Handle open(const std::string& name) const {
    if (!exists(name)) c_.fail("dataset '" + name + "' is missing");
    return c_.check(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT), H5Dclose,
                    "H5Dopen2" + quoted(name));
  }

  std::vector<hsize_t> dims_of(const Handle& dset, const std::string& name) const {
    Handle space = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space" + quoted(name));
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0) c_.fail("H5Sget_simple_extent_ndims" + quoted(name) + " failed");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    c_.check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
             "H5Sget_simple_extent_dims" + quoted(name));
    return dims;
  }

  void expect_dims(const std::vector<hsize_t>& got, const std::vector<hsize_t>& want,
                   const std::string& name) const {
    if (got == want) return;
    const auto text = [](const std::vector<hsize_t>& d) {
      std::string t = "(";
      for (std::size_t i = 0; i < d.size(); ++i) {
        if (i) t += ',';
        t += std::to_string(d[i]);
      }
      return t + ")";
    };
    c_.fail("dataset '" + name + "' has shape " + text(got) + ", expected " + text(want));
  }

  template <class T>
  std::vector<T> read_all(const std::string& name, hid_t mem_type,
                          const std::vector<hsize_t>& want) const {
    Handle dset = open(name);
    expect_dims(dims_of(dset, name), want, name);
    std::size_t count = 1;
    for (const hsize_t d : want) count *= d;
    std::vector<T> out(count);
    if (count > 0) {
      c_.check(H5Dread(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()),
               "H5Dread" + quoted(name));
    }
    return out;
  }

  void read_version() const {
    std::int32_t version = 0;
    if (exists("sim info")) {
      // Read the one member by name; the other members are informational.
      Handle dset = open("sim info");
      Handle mem = c_.check(H5Tcreate(H5T_COMPOUND, sizeof version), H5Tclose, "H5Tcreate");
      c_.check(H5Tinsert(mem.get(), "file format version", 0, H5T_NATIVE_INT32), "H5Tinsert");
      const std::vector<hsize_t> dims = dims_of(dset, "sim info");
      if (dims != std::vector<hsize_t>{1}) c_.fail("dataset 'sim info' is not of shape (1,)");
      c_.check(H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &version),
               "H5Dread 'sim info'");
    } else if (exists("file format version")) {
      version = read_all<std::int32_t>("file format version", H5T_NATIVE_INT32, {1})[0];
    } else {
      c_.fail("dataset 'sim info' is missing");
    }
    if (version != kFileFormatVersion) {
      c_.fail("file format version " + std::to_string(version) + " is not supported (need 9)");
    }
  }

  void read_tree(FlashFileSpec& s) const {
    const Handle gid = open("gid");
    const std::vector<hsize_t> gdims = dims_of(gid, "gid");
    if (gdims.size() != 2) c_.fail("dataset 'gid' is not 2-D");
    const hsize_t n = gdims[0];
    s.ndim = 0;
    for (int d = 1; d <= 3; ++d) {
      if (static_cast<hsize_t>(gid_columns(d)) == gdims[1]) s.ndim = d;
    }
    if (s.ndim == 0) c_.fail("dataset 'gid' has " + std::to_string(gdims[1]) + " columns");
    s.gid = read_all<int>("gid", H5T_NATIVE_INT, gdims);
    s.refine_level = read_all<int>("refine level", H5T_NATIVE_INT, {n});
    s.node_type = read_all<int>("node type", H5T_NATIVE_INT, {n});
    s.processor_number = read_all<int>("processor number", H5T_NATIVE_INT, {n});
    s.bounding_box = read_all<double>("bounding box", H5T_NATIVE_DOUBLE, {n, 3, 2});
    s.coordinates = read_all<double>("coordinates", H5T_NATIVE_DOUBLE, {n, 3});
    s.block_size = read_all<double>("block size", H5T_NATIVE_DOUBLE, {n, 3});
  }

  template <class T>
  void read_list(std::vector<std::pair<std::string, T>>& list, bool runtime) const {
    const ListKind kind = kind_of<T>();
    const std::string name = list_dataset_name(kind, runtime);
    list.clear();
    if (!exists(name)) return;  // empty lists are omitted (§3)
    Handle dset = open(name);
    const std::vector<hsize_t> dims = dims_of(dset, name);
    if (dims.size() != 1) c_.fail("dataset '" + name + "' is not 1-D");
    Handle mem = list_type(c_, kind, false);
    std::vector<unsigned char> buf(dims[0] * layout_of(kind).size);
    if (!buf.empty()) {
      c_.check(H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
               "H5Dread" + quoted(name));
    }
    list = unpack_list<T>(buf);
  }

  void read_lists(FlashFileSpec& s) const {
    read_list(s.int_scalars, false);
    read_list(s.real_scalars, false);
    read_list(s.str_scalars, false);
    read_list(s.log_scalars, false);
    read_list(s.int_runtime, true);
    read_list(s.real_runtime, true);
    read_list(s.str_runtime, true);
    read_list(s.log_runtime, true);
  }

  void read_unknown_names(FlashFileSpec& s) const {
    const std::string name = "unknown names";
    s.var_names.clear();
    if (!exists(name)) return;  // the writer omits it when there are no variables
    Handle dset = open(name);
    const std::vector<hsize_t> dims = dims_of(dset, name);
    if (dims.empty() || dims.size() > 2 || (dims.size() == 2 && dims[1] != 1)) {
      c_.fail("dataset 'unknown names' is not of shape (nvar,1)");
    }
    Handle ftype = c_.check(H5Dget_type(dset.get()), H5Tclose, "H5Dget_type" + quoted(name));
    if (H5Tget_class(ftype.get()) != H5T_STRING || H5Tis_variable_str(ftype.get()) != 0) {
      c_.fail("dataset 'unknown names' does not hold fixed-length strings");
    }
    const std::size_t size = H5Tget_size(ftype.get());
    if (size == 0) c_.fail("H5Tget_size 'unknown names' failed");
    Handle mem = string_type(c_, size);
    std::vector<unsigned char> buf(dims[0] * size);
    if (!buf.empty()) {
      c_.check(H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
               "H5Dread" + quoted(name));
    }
    s.var_names.resize(dims[0]);
    for (std::size_t v = 0; v < dims[0]; ++v) {
      s.var_names[v] = get_string(buf.data() + v * size, size);
    }
  }

  void read_variables(FlashFileSpec& s) const {
    const hsize_t n = s.refine_level.size();
    read_unknown_names(s);
    // Zones per block from `integer scalars`, as VisIt and yt do.
    const auto scalar = [&](const char* key) {
      for (const auto& [k, v] : s.int_scalars) {
        if (k == key) return v;
      }
      c_.fail(std::string("integer scalar '") + key + "' is missing");
    };
    s.nxb = scalar("nxb");
    s.nyb = scalar("nyb");
    s.nzb = scalar("nzb");
    if (s.nxb < 1 || s.nyb < 1 || s.nzb < 1) c_.fail("nxb, nyb or nzb is below 1");

    s.double_precision = real_size("bounding box") == 8;
    if (!with_data_) {
      if (!s.var_names.empty()) s.double_precision = real_size(s.var_names.front()) == 8;
      return;
    }
    s.local_rows.resize(n);
    for (hsize_t r = 0; r < n; ++r) s.local_rows[r] = static_cast<int>(r);
    const std::vector<hsize_t> dims{n, static_cast<hsize_t>(s.nzb), static_cast<hsize_t>(s.nyb),
                                    static_cast<hsize_t>(s.nxb)};
    const std::size_t count = n * static_cast<std::size_t>(s.nxb) * s.nyb * s.nzb;
    s.data.resize(count * s.var_names.size());
    for (std::size_t v = 0; v < s.var_names.size(); ++v) {
      const std::vector<double> values = read_all<double>(s.var_names[v], H5T_NATIVE_DOUBLE, dims);
      std::copy(values.begin(), values.end(),
                s.data.begin() + static_cast<std::ptrdiff_t>(v * count));
      if (v == 0) s.double_precision = real_size(s.var_names[v]) == 8;
    }
  }

  /// A particle file: zones per block and dimensionality from the scalars when present
  /// (as yt does), no variables; the tree vectors stay empty.
  void read_particle_file_shape(FlashFileSpec& s) const {
    const auto scalar = [&](const char* key, int fallback) {
      for (const auto& [k, v] : s.int_scalars) {
        if (k == key) return v;
      }
      return fallback;
    };
    s.nxb = scalar("nxb", 1);
    s.nyb = scalar("nyb", 1);
    s.nzb = scalar("nzb", 1);
    s.ndim = scalar("dimensionality", s.nzb > 1 ? 3 : (s.nyb > 1 ? 2 : 1));
  }

  /// `particle names`, `localnp` and (with data) `tracer particles`, if the file has
  /// particles; all rows. N is the tree's, or localnp's length in a particle file.
  void read_particles(FlashFileSpec& s) const {
    s.particle_names.clear();
    s.localnp.clear();
    s.particles.clear();
    const std::string tracer = "tracer particles";
    if (!exists("particle names") && !exists(tracer)) return;

    // Names: (nprop,1) fixed-length strings (FLASH: size 24, space-padded).
    const std::string names = "particle names";
    Handle dset = open(names);
    const std::vector<hsize_t> dims = dims_of(dset, names);
    if (dims.empty() || dims.size() > 2 || (dims.size() == 2 && dims[1] != 1)) {
      c_.fail("dataset 'particle names' is not of shape (nprop,1)");
    }
    Handle ftype = c_.check(H5Dget_type(dset.get()), H5Tclose, "H5Dget_type" + quoted(names));
    if (H5Tget_class(ftype.get()) != H5T_STRING || H5Tis_variable_str(ftype.get()) != 0) {
      c_.fail("dataset 'particle names' does not hold fixed-length strings");
    }
    const std::size_t size = H5Tget_size(ftype.get());
    if (size == 0) c_.fail("H5Tget_size 'particle names' failed");
    Handle mem = string_type(c_, size);
    std::vector<unsigned char> buf(dims[0] * size);
    if (!buf.empty()) {
      c_.check(H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
               "H5Dread" + quoted(names));
    }
    for (std::size_t q = 0; q < dims[0]; ++q) {
      s.particle_names.push_back(get_string(buf.data() + q * size, size));
    }
    const hsize_t nprop = dims[0];

    if (s.grid) {
      s.localnp = read_all<int>("localnp", H5T_NATIVE_INT, {s.refine_level.size()});
    } else {
      Handle lnp = open("localnp");
      const std::vector<hsize_t> ldims = dims_of(lnp, "localnp");
      if (ldims.size() != 1) c_.fail("dataset 'localnp' is not 1-D");
      s.localnp = read_all<int>("localnp", H5T_NATIVE_INT, ldims);
      if (with_data_) {
        s.local_rows.resize(ldims[0]);
        for (hsize_t r = 0; r < ldims[0]; ++r) s.local_rows[r] = static_cast<int>(r);
      }
    }
    for (std::size_t b = 0; b < s.localnp.size(); ++b) {
      if (s.localnp[b] < 0) c_.fail("dataset 'localnp' is negative in row " + std::to_string(b));
    }
    // Every particle belongs to a block: FLASH's blockless particles (rows after
    // sum(localnp)) are not supported.
    const hsize_t npart = particle_offsets(s.localnp).back();
    Handle tp = open(tracer);
    expect_dims(dims_of(tp, tracer), {npart, nprop}, tracer);
    if (real_size(tracer) != 8) c_.fail("dataset 'tracer particles' is not f64");
    if (!with_data_) return;
    const std::vector<double> values = read_all<double>(tracer, H5T_NATIVE_DOUBLE, {npart, nprop});
    s.particles.assign(values.begin(), values.end());
  }

  /// Bytes per element of a floating-point dataset.
  std::size_t real_size(const std::string& name) const {
    Handle dset = open(name);
    Handle type = c_.check(H5Dget_type(dset.get()), H5Tclose, "H5Dget_type" + quoted(name));
    if (H5Tget_class(type.get()) != H5T_FLOAT) c_.fail("dataset '" + name + "' is not real");
    return H5Tget_size(type.get());
  }

  std::string path_;
  bool with_data_ = true;
  Context c_;
  Handle file_;
};

}  // namespace

FlashFileSpec read_flash_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return Reader(path).run();
}

FlashFileSpec detail::read_flash_file_without_data(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return Reader(path, /*with_data=*/false).run();
}

}  // namespace tessera::io
