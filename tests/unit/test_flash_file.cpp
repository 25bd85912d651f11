// FLASH HDF5 writer/reader (io/flash_file): round trips on 1..n ranks, the format
// details yt and VisIt depend on (shared/reference/flash-hdf5-format.md), and errors.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "io/flash_file.hpp"
#include "io/hdf5_util.hpp"
#include "io/output_manager.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using tessera::testing_util::world_rank;
using tessera::testing_util::world_size;

using tessera::io::FlashFileSpec;

/// A FLASH-style file name ("..._hdf5_chk_0000") that every rank agrees on; rank 0's pid
/// and the test's tag make it unique.
std::string shared_path(const std::string& tag, const std::string& kind) {
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return testing::TempDir() + "tessera_" + std::to_string(pid) + "_" + tag + "_hdf5_" + kind +
         "_0000";
}

/// Removes the file after every rank is done with it.
void remove_shared(const std::string& path) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());
}

// Smooth fields whose values are not exact in f32.
double dens_at(double x, double y) {
  return 1.0 + x + 2.0 * y + 0.1 * x * y;
}
double pres_at(double x, double y) {
  return 0.6 + 3.0 * x * x - y / 3.0;
}

constexpr int kN = 5, kNxb = 4, kNyb = 4, kCells = kNxb * kNyb;

/// Given a 2-D domain [0,1]^2 of one root block refined into four children (N = 5,
/// 4x4 zones, variables dens and pres on every block), with row r owned by owner(r):
/// the full spec, with all rows as local rows.
FlashFileSpec two_level_spec(const std::string& path, bool double_precision,
                             const std::function<int(int)>& owner) {
  FlashFileSpec s;
  s.path = path;
  s.double_precision = double_precision;
  s.ndim = 2;
  s.nxb = kNxb;
  s.nyb = kNyb;
  s.nzb = 1;
  constexpr int kOutflow = -32;
  for (int b = 0; b < kN; ++b) {
    const bool root = b == 0;
    const int c = b - 1;  // child index, x fastest
    const int ix = c & 1, iy = (c >> 1) & 1;
    const double xlo = root ? 0.0 : 0.5 * ix, ylo = root ? 0.0 : 0.5 * iy;
    const double h = root ? 1.0 : 0.5;
    s.refine_level.push_back(root ? 1 : 2);
    s.node_type.push_back(root ? 2 : 1);
    s.processor_number.push_back(owner(b));
    if (root) {
      s.gid.insert(s.gid.end(), {kOutflow, kOutflow, kOutflow, kOutflow, -1, 2, 3, 4, 5});
    } else {
      const int blk = b + 1;  // 1-based
      s.gid.insert(s.gid.end(),
                   {ix == 0 ? kOutflow : blk - 1, ix == 1 ? kOutflow : blk + 1,
                    iy == 0 ? kOutflow : blk - 2, iy == 1 ? kOutflow : blk + 2, 1, -1, -1, -1, -1});
    }
    s.bounding_box.insert(s.bounding_box.end(), {xlo, xlo + h, ylo, ylo + h, 0.0, 1.0});
    s.coordinates.insert(s.coordinates.end(), {xlo + 0.5 * h, ylo + 0.5 * h, 0.5});
    s.block_size.insert(s.block_size.end(), {h, h, 1.0});
  }
  s.int_scalars = {{"nxb", kNxb},           {"nyb", kNyb}, {"nzb", 1},
                   {"globalnumblocks", kN}, {"nstep", 12}, {"dimensionality", 2}};
  s.real_scalars = {{"time", 0.125}, {"dt", 1.0e-3}};
  s.str_scalars = {{"geometry", "cartesian"}};
  s.log_scalars = {{"io_restart", false}};
  s.int_runtime = {
      {"lrefine_min", 1}, {"lrefine_max", 2}, {"nblockx", 1}, {"nblocky", 1}, {"nblockz", 1}};
  s.real_runtime = {{"xmin", 0.0}, {"xmax", 1.0}, {"ymin", 0.0},       {"ymax", 1.0},
                    {"zmin", 0.0}, {"zmax", 1.0}, {"gamma", 5.0 / 3.0}};
  s.str_runtime = {{"geometry", "cartesian"}, {"xl_boundary_type", "outflow"}};
  s.log_runtime = {{"usegravity", false}, {"usehydro", true}};
  s.var_names = {"dens", "pres"};
  for (int b = 0; b < kN; ++b) s.local_rows.push_back(b);
  for (const auto& f : {dens_at, pres_at}) {
    for (int b = 0; b < kN; ++b) {
      const double* bb = &s.bounding_box[6 * b];
      const double dx = (bb[1] - bb[0]) / kNxb, dy = (bb[3] - bb[2]) / kNyb;
      for (int j = 0; j < kNyb; ++j) {
        for (int i = 0; i < kNxb; ++i) {
          s.data.push_back(f(bb[0] + (i + 0.5) * dx, bb[2] + (j + 0.5) * dy));
        }
      }
    }
  }
  return s;
}

/// This rank's share of a full spec: the rows owner() assigns to it.
FlashFileSpec local_part(const FlashFileSpec& full, const std::function<int(int)>& owner) {
  FlashFileSpec s = full;
  s.local_rows.clear();
  s.data.clear();
  for (int b = 0; b < kN; ++b) {
    if (owner(b) == world_rank()) s.local_rows.push_back(b);
  }
  for (std::size_t v = 0; v < full.var_names.size(); ++v) {
    for (const int b : s.local_rows) {
      const auto first = full.data.begin() + static_cast<std::ptrdiff_t>((v * kN + b) * kCells);
      s.data.insert(s.data.end(), first, first + kCells);
    }
  }
  // Particles (full.localnp has every row): this rank's rows' counts and particles.
  s.localnp.clear();
  s.particles.clear();
  if (!full.particle_names.empty()) {
    const std::size_t nprop = full.particle_names.size();
    std::vector<std::size_t> first(kN + 1, 0);
    for (int b = 0; b < kN; ++b) first[b + 1] = first[b] + full.localnp[b];
    for (const int b : s.local_rows) {
      s.localnp.push_back(full.localnp[b]);
      s.particles.insert(
          s.particles.end(), full.particles.begin() + static_cast<std::ptrdiff_t>(first[b] * nprop),
          full.particles.begin() + static_cast<std::ptrdiff_t>(first[b + 1] * nprop));
    }
  }
  return s;
}

/// FLASH's property columns (sorted; yt needs blk posx posy posz, posz even in 2-D).
const std::vector<std::string> kProps{"blk", "posx", "posy", "posz", "proc",
                                      "tag", "velx", "vely", "velz"};

/// `full` with particles: counts[b] in block b (all rows), in file order, each inside its
/// block, proc = owner(b), tag a global id; values not exact in f32.
FlashFileSpec with_particles(FlashFileSpec full, const std::vector<int>& counts,
                             const std::function<int(int)>& owner) {
  full.particle_names = kProps;
  full.localnp = counts;
  full.particles.clear();
  int tag = 0;
  for (int b = 0; b < kN; ++b) {
    const double* bb = &full.bounding_box[6 * b];
    for (int p = 0; p < counts[b]; ++p, ++tag) {
      const double u = (p + 0.3) / (counts[b] + 0.1), w = std::sqrt(0.17 + 0.11 * tag);
      const double x = bb[0] + u * (bb[1] - bb[0]), y = bb[2] + (1.0 - u) * (bb[3] - bb[2]);
      full.particles.insert(full.particles.end(), {double(b + 1), x, y, 0.5, double(owner(b)),
                                                   double(tag + 1), w, -w / 3.0, 0.0});
    }
  }
  return full;
}

/// Particles as bytes, so that comparisons are bitwise.
template <class V>
std::vector<unsigned char> bytes_of(const V& v) {
  std::vector<unsigned char> out(v.size() * sizeof(double));
  if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// What a value becomes after a trip through an f32 dataset.
double as_f32(double x) {
  return static_cast<double>(static_cast<float>(x));
}

std::vector<double> as_f32(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), [](double x) { return as_f32(x); });
  return out;
}

/// Then the file read back on this rank equals `want` (reals rounded to f32 for a plotfile).
void expect_round_trip(const FlashFileSpec& got, const FlashFileSpec& want) {
  const bool f64 = want.double_precision;
  const auto reals = [&](const std::vector<double>& v) { return f64 ? v : as_f32(v); };
  EXPECT_EQ(got.path, want.path);
  EXPECT_EQ(got.double_precision, want.double_precision);
  EXPECT_EQ(got.ndim, want.ndim);
  EXPECT_EQ(got.nxb, want.nxb);
  EXPECT_EQ(got.nyb, want.nyb);
  EXPECT_EQ(got.nzb, want.nzb);
  EXPECT_EQ(got.refine_level, want.refine_level);
  EXPECT_EQ(got.node_type, want.node_type);
  EXPECT_EQ(got.gid, want.gid);
  EXPECT_EQ(got.processor_number, want.processor_number);
  EXPECT_EQ(got.bounding_box, reals(want.bounding_box));
  EXPECT_EQ(got.coordinates, reals(want.coordinates));
  EXPECT_EQ(got.block_size, reals(want.block_size));
  EXPECT_EQ(got.int_scalars, want.int_scalars);
  EXPECT_EQ(got.int_runtime, want.int_runtime);
  EXPECT_EQ(got.real_scalars, want.real_scalars);  // parameters stay f64 in plotfiles
  EXPECT_EQ(got.real_runtime, want.real_runtime);
  EXPECT_EQ(got.str_scalars, want.str_scalars);
  EXPECT_EQ(got.str_runtime, want.str_runtime);
  EXPECT_EQ(got.log_scalars, want.log_scalars);
  EXPECT_EQ(got.log_runtime, want.log_runtime);
  EXPECT_EQ(got.var_names, want.var_names);
  EXPECT_EQ(got.local_rows, want.local_rows);
  EXPECT_TRUE(got.grid);
  EXPECT_EQ(got.particle_names, want.particle_names);
  EXPECT_EQ(got.localnp, want.localnp);
  EXPECT_EQ(bytes_of(got.particles), bytes_of(want.particles)) << "particles, bitwise";
  ASSERT_EQ(got.data.size(), want.data.size());
  const std::vector<double> data = reals(std::vector<double>(want.data.begin(), want.data.end()));
  for (std::size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(got.data[i], data[i]) << "value " << i;
    if (!f64) {
      ASSERT_NEAR(got.data[i], want.data[i], 1e-7 * std::abs(want.data[i]));
    }
  }
}

/// Write `full` split by owner(), read it back on every rank, compare.
void check_split_round_trip(const std::string& tag, const std::string& kind, bool double_precision,
                            const std::function<int(int)>& owner) {
  const std::string path = shared_path(tag, kind);
  const FlashFileSpec full = two_level_spec(path, double_precision, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  expect_round_trip(tessera::io::read_flash_file(path), full);
  remove_shared(path);
}

TEST(FlashFile, CheckpointRoundTripsExactlyWithRowsInterleavedAcrossRanks) {
  // Row r on rank r % size: rank 0 writes rows {0, 2, 4} on 2 ranks, three hyperslabs.
  check_split_round_trip("interleaved", "chk", true, [](int b) { return b % world_size(); });
}

TEST(FlashFile, CheckpointRoundTripsWhenSomeRanksHoldNoRows) {
  // Rows in two contiguous runs on the last rank; every other rank selects nothing.
  check_split_round_trip("one_rank", "chk", true, [](int) { return world_size() - 1; });
}

TEST(FlashFile, PlotfileRoundTripsToSinglePrecision) {
  check_split_round_trip("plot", "plt_cnt", false, [](int b) { return (b / 2) % world_size(); });
}

// --- Format details, checked with plain HDF5 calls ---------------------------------------

std::vector<hsize_t> dims_of(hid_t dset) {
  const hid_t space = H5Dget_space(dset);
  std::vector<hsize_t> dims(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  H5Sclose(space);
  return dims;
}

struct TypeInfo {
  H5T_class_t cls;
  std::size_t size;
};

TypeInfo type_of(hid_t dset) {
  const hid_t t = H5Dget_type(dset);
  const TypeInfo info{H5Tget_class(t), H5Tget_size(t)};
  H5Tclose(t);
  return info;
}

/// Offset of a compound member, or -1.
long member_offset(hid_t dset, const char* member) {
  const hid_t t = H5Dget_type(dset);
  const int idx = H5Tget_member_index(t, member);
  const long off =
      idx < 0 ? -1 : static_cast<long>(H5Tget_member_offset(t, static_cast<unsigned>(idx)));
  H5Tclose(t);
  return off;
}

double attribute(hid_t dset, const char* name) {
  double v = 0.0;
  const hid_t a = H5Aopen(dset, name, H5P_DEFAULT);
  EXPECT_GE(a, 0) << name;
  if (a >= 0) {
    H5Aread(a, H5T_NATIVE_DOUBLE, &v);
    H5Aclose(a);
  }
  return v;
}

/// Then the checkpoint `full` was written to has every detail of §2-§5 (local checks only,
/// so that a failed ASSERT cannot skip a collective call).
void expect_checkpoint_layout(const FlashFileSpec& full) {
  const std::string& path = full.path;
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const auto open = [&](const char* name) { return H5Dopen2(f, name, H5P_DEFAULT); };

  // §2: version 9 in `sim info` only (a `file format version` dataset would make VisIt
  // assume version 8 next to particles).
  EXPECT_EQ(H5Lexists(f, "file format version", H5P_DEFAULT), 0);
  const hid_t info = open("sim info");
  EXPECT_EQ(dims_of(info), (std::vector<hsize_t>{1}));
  EXPECT_EQ(type_of(info).size, 1764u);
  EXPECT_EQ(member_offset(info, "file format version"), 0);
  EXPECT_EQ(member_offset(info, "build time stamp"), 1684);
  const hid_t vt = H5Tcreate(H5T_COMPOUND, sizeof(int));
  H5Tinsert(vt, "file format version", 0, H5T_NATIVE_INT);
  int version = 0;
  H5Dread(info, vt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &version);
  EXPECT_EQ(version, 9);
  H5Tclose(vt);
  H5Dclose(info);

  // §3: FLASH's record layouts.
  struct Layout {
    const char* dataset;
    std::size_t size;
    long name, value;
  };
  for (const Layout& l : {Layout{"integer scalars", 84, 0, 80}, Layout{"real scalars", 88, 0, 80},
                          Layout{"string scalars", 160, 80, 0}, Layout{"logical scalars", 84, 4, 0},
                          Layout{"integer runtime parameters", 84, 0, 80},
                          Layout{"real runtime parameters", 88, 0, 80},
                          Layout{"string runtime parameters", 160, 80, 0},
                          Layout{"logical runtime parameters", 84, 4, 0}}) {
    const hid_t d = open(l.dataset);
    ASSERT_GE(d, 0) << l.dataset;
    EXPECT_EQ(type_of(d).size, l.size) << l.dataset;
    EXPECT_EQ(member_offset(d, "name"), l.name) << l.dataset;
    EXPECT_EQ(member_offset(d, "value"), l.value) << l.dataset;
    H5Dclose(d);
  }

  // §4: tree shapes and types.
  const std::array<std::pair<const char*, std::vector<hsize_t>>, 7> tree{{
      {"gid", {5, 9}},
      {"refine level", {5}},
      {"node type", {5}},
      {"processor number", {5}},
      {"bounding box", {5, 3, 2}},
      {"coordinates", {5, 3}},
      {"block size", {5, 3}},
  }};
  for (const auto& [name, dims] : tree) {
    const hid_t d = open(name);
    ASSERT_GE(d, 0) << name;
    EXPECT_EQ(dims_of(d), dims) << name;
    const TypeInfo t = type_of(d);
    const bool is_int = dims.size() == 1 || std::string(name) == "gid";
    EXPECT_EQ(t.cls, is_int ? H5T_INTEGER : H5T_FLOAT) << name;
    EXPECT_EQ(t.size, is_int ? 4u : 8u) << name;
    H5Dclose(d);
  }

  // §5: `unknown names` (nvar,1) of NUL-padded 4-byte strings; one real dataset per name
  // with its extrema attached.
  const hid_t names = open("unknown names");
  EXPECT_EQ(dims_of(names), (std::vector<hsize_t>{2, 1}));
  const hid_t nt = H5Dget_type(names);
  EXPECT_EQ(H5Tget_class(nt), H5T_STRING);
  EXPECT_EQ(H5Tget_size(nt), 4u);
  EXPECT_NE(H5Tget_strpad(nt), H5T_STR_SPACEPAD);
  std::array<char, 8> raw{};
  H5Dread(names, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data());
  EXPECT_EQ(std::string(raw.data(), 8), std::string("denspres", 8));
  H5Tclose(nt);
  H5Dclose(names);
  for (std::size_t v = 0; v < 2; ++v) {
    const hid_t d = open(full.var_names[v].c_str());
    EXPECT_EQ(dims_of(d), (std::vector<hsize_t>{5, 1, 4, 4}));
    EXPECT_EQ(type_of(d).size, 8u);
    const auto first = full.data.begin() + static_cast<std::ptrdiff_t>(v * kN * kCells);
    const auto [lo, hi] = std::minmax_element(first, first + kN * kCells);
    EXPECT_EQ(attribute(d, "minimum"), *lo);
    EXPECT_EQ(attribute(d, "maximum"), *hi);
    H5Dclose(d);
  }
  H5Fclose(f);
}

TEST(FlashFile, FileHasTheLayoutYtAndVisItRead) {
  const std::string path = shared_path("layout", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec full = two_level_spec(path, true, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  expect_checkpoint_layout(full);
  remove_shared(path);
}

TEST(FlashFile, PlotfileStoresRealsInSinglePrecision) {
  const std::string path = shared_path("plot_types", "plt_cnt");
  const auto owner = [](int) { return 0; };
  const FlashFileSpec full = two_level_spec(path, false, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  for (const char* name : {"dens", "pres", "bounding box", "coordinates", "block size"}) {
    const hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    EXPECT_EQ(type_of(d).cls, H5T_FLOAT) << name;
    EXPECT_EQ(type_of(d).size, 4u) << name;
    H5Dclose(d);
  }
  H5Fclose(f);
  remove_shared(path);
}

// --- Errors ---------------------------------------------------------------------------------

using tessera::testing_util::error_of;

TEST(FlashFile, UnwritableDirectoryIsAnErrorOnEveryRankNamingTheFile) {
  const std::string path = "/nonexistent-tessera-dir/run_hdf5_chk_0000";
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec spec = local_part(two_level_spec(path, true, owner), owner);
  const std::string what = error_of([&] { tessera::io::write_flash_file(MPI_COMM_WORLD, spec); });
  EXPECT_NE(what.find("cannot write FLASH file '" + path + "'"), std::string::npos) << what;
  EXPECT_NE(what.find("H5Fcreate"), std::string::npos) << what;
}

TEST(FlashFile, BadDataOnOneRankIsAnErrorOnEveryRank) {
  const std::string path = shared_path("bad_data", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  FlashFileSpec spec = local_part(two_level_spec(path, true, owner), owner);
  if (world_rank() == world_size() - 1) spec.data.pop_back();
  const std::string what = error_of([&] { tessera::io::write_flash_file(MPI_COMM_WORLD, spec); });
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("data has"), std::string::npos) << what;
  remove_shared(path);
}

TEST(FlashFile, RowsMissingOrDuplicatedAcrossRanksAreAnError) {
  const std::string path = shared_path("rows", "chk");
  const auto owner = [](int) { return 0; };
  const FlashFileSpec full = two_level_spec(path, true, owner);
  FlashFileSpec spec = local_part(full, owner);
  // Every rank claims row 0 (duplicated when size > 1); on one rank it is simply absent.
  if (world_size() > 1) {
    if (world_rank() != 0) {
      spec.local_rows = {0};
      spec.data.clear();
      for (std::size_t v = 0; v < 2; ++v) {
        const auto first = full.data.begin() + static_cast<std::ptrdiff_t>(v * kN * kCells);
        spec.data.insert(spec.data.end(), first, first + kCells);
      }
    }
  } else {
    spec.local_rows.pop_back();
    spec.data.resize(2 * 4 * kCells);
  }
  const std::string what = error_of([&] { tessera::io::write_flash_file(MPI_COMM_WORLD, spec); });
  EXPECT_NE(what.find("row "), std::string::npos) << what;
  remove_shared(path);
}

TEST(FlashFile, InvalidSpecIsRejectedBeforeTheFileIsCreated) {
  const std::string path = shared_path("invalid", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec good = local_part(two_level_spec(path, true, owner), owner);
  const auto write = [&](const FlashFileSpec& s) {
    return error_of([&] { tessera::io::write_flash_file(MPI_COMM_WORLD, s); });
  };

  FlashFileSpec long_name = good;
  long_name.var_names[0] = "density";
  EXPECT_NE(write(long_name).find("'density'"), std::string::npos);

  FlashFileSpec no_time = good;
  no_time.real_scalars = {{"dt", 1.0}, {"time", 0.0}};
  EXPECT_NE(write(no_time).find("time"), std::string::npos);

  FlashFileSpec short_gid = good;
  short_gid.gid.pop_back();
  EXPECT_NE(write(short_gid).find("gid"), std::string::npos);

  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "no file is created for an invalid spec";
}

TEST(FlashFile, ReadingAMissingFileNamesIt) {
  const std::string path = "/nonexistent-tessera-dir/run_hdf5_chk_0000";
  const std::string what = error_of([&] { tessera::io::read_flash_file(path); });
  EXPECT_NE(what.find("cannot read FLASH file '" + path + "'"), std::string::npos) << what;
}

TEST(FlashFile, ReadingAnHdf5FileWithoutTheFlashDatasetsNamesTheMissingOne) {
  const std::string path = shared_path("empty", "empty");
  if (world_rank() == 0) {
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(f, 0);
    H5Fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string what = error_of([&] { tessera::io::read_flash_file(path); });
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("dataset 'sim info' is missing"), std::string::npos) << what;
  remove_shared(path);
}

// --- Distributed, verified read (restart) ---------------------------------------------------

using tessera::io::FlashFileMeta;

/// Flip one bit of element `element` of row `row` of a contiguous dataset, on rank 0.
void corrupt(const std::string& path, const char* dataset, int row, int element) {
  if (world_rank() == 0) {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    const hid_t t = H5Dget_type(d);
    const std::vector<hsize_t> dims = dims_of(d);
    std::size_t row_elems = 1;
    for (std::size_t a = 1; a < dims.size(); ++a) row_elems *= dims[a];
    const std::size_t elem = H5Tget_size(t);
    const haddr_t at = H5Dget_offset(d);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
    ASSERT_NE(at, HADDR_UNDEF) << dataset << " is not contiguous";
    std::FILE* fp = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(fp, nullptr);
    const long pos = static_cast<long>(at + (row * row_elems + element) * elem + 2);
    std::fseek(fp, pos, SEEK_SET);
    const int c = std::fgetc(fp);
    std::fseek(fp, pos, SEEK_SET);
    std::fputc(c ^ 0x40, fp);
    std::fclose(fp);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/// This rank's rows under owner(), ascending.
std::vector<int> rows_of(const std::function<int(int)>& owner) {
  std::vector<int> rows;
  for (int b = 0; b < kN; ++b)
    if (owner(b) == world_rank()) rows.push_back(b);
  return rows;
}

/// read_flash_rows into a buffer laid out as FlashFileSpec::data (variable-major).
std::vector<double> read_rows(const FlashFileMeta& meta, const std::vector<std::string>& names,
                              const std::vector<int>& rows) {
  std::vector<double> got(names.size() * rows.size() * kCells, -1.0);
  tessera::io::read_flash_rows(
      MPI_COMM_WORLD, meta, names, rows, [&](std::size_t v, std::size_t r, const double* q) {
        std::copy(q, q + kCells,
                  got.begin() + static_cast<std::ptrdiff_t>((v * rows.size() + r) * kCells));
      });
  return got;
}

TEST(FlashFileRows,
     GivenAFileWrittenOnOneSplitWhenEachRankReadsAnotherSplitThenItGetsItsRowsExactly) {
  // Written with row r on rank r % size, read with the rows in reverse round robin (on 2
  // ranks: rank 0 reads rows 1, 3 written by rank 1, and so on); pres before dens.
  const std::string path = shared_path("rows", "chk");
  const auto writer = [](int b) { return b % world_size(); };
  const auto reader = [](int b) { return (world_size() - 1 - b % world_size()); };
  const FlashFileSpec full = two_level_spec(path, true, writer);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, writer));
  MPI_Barrier(MPI_COMM_WORLD);

  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  EXPECT_TRUE(meta.spec.double_precision);
  EXPECT_EQ(meta.spec.refine_level, full.refine_level);
  EXPECT_EQ(meta.spec.gid, full.gid);
  EXPECT_EQ(meta.spec.bounding_box, full.bounding_box);
  EXPECT_EQ(meta.spec.int_scalars, full.int_scalars);
  EXPECT_EQ(meta.spec.real_runtime, full.real_runtime);
  EXPECT_EQ(meta.spec.str_runtime, full.str_runtime);
  EXPECT_EQ(meta.spec.log_runtime, full.log_runtime);
  EXPECT_EQ(meta.spec.var_names, full.var_names);
  EXPECT_TRUE(meta.spec.data.empty()) << "the metadata carries no variable data";
  ASSERT_EQ(meta.variables.size(), 2u);
  EXPECT_EQ(meta.variables[0].name, "dens");
  EXPECT_EQ(meta.variables[0].bytes, std::uint64_t{kN * kCells * 8});

  const std::vector<int> rows = rows_of(reader);
  const std::vector<double> got = read_rows(meta, {"pres", "dens"}, rows);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (int c = 0; c < kCells; ++c) {
      const std::size_t want_at = static_cast<std::size_t>(rows[r] * kCells + c);
      ASSERT_EQ(got[r * kCells + c], full.data[kN * kCells + want_at]) << "pres row " << rows[r];
      ASSERT_EQ(got[(rows.size() + r) * kCells + c], full.data[want_at]) << "dens row " << rows[r];
    }
  }
  remove_shared(path);
}

TEST(FlashFileRows, GivenRanksWithoutRowsWhenTheLastRankReadsEverythingThenAllTakePart) {
  const std::string path = shared_path("rows_one", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec full = two_level_spec(path, true, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  const std::vector<int> rows = rows_of([](int) { return world_size() - 1; });
  const std::vector<double> got = read_rows(meta, {"dens", "pres"}, rows);
  if (!rows.empty()) {
    EXPECT_EQ(got, std::vector<double>(full.data.begin(), full.data.end()));
  }
  remove_shared(path);
}

TEST(FlashFileRows, GivenABitFlippedInARowOfTheLastRankThenEveryRankFailsNamingTheDataset) {
  const std::string path = shared_path("rows_bad", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec full = two_level_spec(path, true, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const auto reader = [](int b) { return b == kN - 1 ? world_size() - 1 : 0; };
  corrupt(path, "pres", kN - 1, 5);  // read by the last rank only

  // The metadata verifies (the variables are checked as they are read) ...
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  // ... and reading them fails on every rank with the same line.
  const std::string what = error_of([&] { read_rows(meta, {"dens", "pres"}, rows_of(reader)); });
  EXPECT_EQ(what.rfind("dataset 'pres': checksum mismatch (stored ", 0), 0u) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  // The same words as `tessera check`.
  if (world_rank() == 0) {
    const auto c = tessera::io::check_flash_file(path);
    ASSERT_EQ(c.problems.size(), 1u);
    EXPECT_EQ(c.problems[0], what);
  }
  remove_shared(path);
}

TEST(FlashFileRows, GivenABitFlippedInTheTreeThenTheMetadataIsRefusedOnEveryRank) {
  const std::string path = shared_path("meta_bad", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  tessera::io::write_flash_file(MPI_COMM_WORLD,
                                local_part(two_level_spec(path, true, owner), owner));
  MPI_Barrier(MPI_COMM_WORLD);
  corrupt(path, "bounding box", 3, 1);
  const std::string what =
      error_of([&] { tessera::io::read_flash_metadata(MPI_COMM_WORLD, path); });
  EXPECT_EQ(what.rfind("dataset 'bounding box': checksum mismatch (stored ", 0), 0u) << what;
  remove_shared(path);
}

TEST(FlashFileRows, GivenRowsThatNoRankReadsThenEveryRankFails) {
  const std::string path = shared_path("rows_gap", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  tessera::io::write_flash_file(MPI_COMM_WORLD,
                                local_part(two_level_spec(path, true, owner), owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  std::vector<int> rows = rows_of(owner);
  if (world_rank() == 0) rows.erase(rows.begin());  // nobody reads row 0
  const std::string what = error_of([&] { read_rows(meta, {"dens"}, rows); });
  EXPECT_NE(what.find("row 0 is read by 0 ranks, expected 1"), std::string::npos) << what;
  remove_shared(path);
}

TEST(FlashFileRows, GivenAPlotfileThenTheMetadataSaysSinglePrecision) {
  const std::string path = shared_path("rows_plot", "plt_cnt");
  const auto owner = [](int b) { return b % world_size(); };
  tessera::io::write_flash_file(MPI_COMM_WORLD,
                                local_part(two_level_spec(path, false, owner), owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  EXPECT_FALSE(meta.spec.double_precision);
  // Rows are only read as stored f64.
  const std::string what = error_of([&] { read_rows(meta, {"dens"}, rows_of(owner)); });
  EXPECT_NE(what.find("dataset 'dens' is not stored as little-endian f64"), std::string::npos)
      << what;
  remove_shared(path);
}

TEST(FlashFileRows, GivenAMissingFileThenTheMetadataReadSaysSoOnEveryRank) {
  const std::string what = error_of(
      [&] { tessera::io::read_flash_metadata(MPI_COMM_WORLD, "/nonexistent-tessera/x_chk"); });
  EXPECT_EQ(what, "no such file");
}

// --- Particles (reference §6) ---------------------------------------------------------------

using tessera::io::crc_of_bytes;

/// Counts per block: none in the root (a parent), none in one leaf, some in the others.
const std::vector<int> kCounts{0, 3, 1, 0, 4};

/// Write `full` (with particles) split by owner(); then it reads back serially on every
/// rank, bitwise, particles in file order; the file verifies; and the manifest's CRC of
/// `tracer particles` is the CRC of all particles in file order, whatever the split.
void check_particle_round_trip(const std::string& tag, const std::function<int(int)>& owner) {
  const std::string path = shared_path(tag, "chk");
  const FlashFileSpec full = with_particles(two_level_spec(path, true, owner), kCounts, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  expect_round_trip(tessera::io::read_flash_file(path), full);
  const auto check = tessera::io::check_flash_file(path);
  EXPECT_TRUE(check.ok) << (check.problems.empty() ? "" : check.problems.front());
  EXPECT_EQ(check.datasets_checked, 22);  // 19 without particles
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  EXPECT_EQ(meta.particles.name, "tracer particles");
  EXPECT_EQ(meta.particles.bytes, 8u * 9u * 8u);
  EXPECT_EQ(meta.particles.crc32, crc_of_bytes(full.particles.data(), meta.particles.bytes));
  remove_shared(path);
}

TEST(FlashFileParticles, CheckpointRoundTripsBitwiseWithRowsInterleavedAcrossRanks) {
  check_particle_round_trip("p_interleaved", [](int b) { return b % world_size(); });
}

TEST(FlashFileParticles, CheckpointRoundTripsWhenOneRankHoldsAllParticles) {
  // On 2+ ranks rank 0 holds the root and the two leaves without particles, so it
  // writes none; on 4 ranks ranks 2 and 3 hold no rows at all.
  check_particle_round_trip("p_one_rank", [](int b) {
    return (b == 0 || kCounts[b] == 0) ? 0 : world_size() > 1 ? 1 : 0;
  });
}

TEST(FlashFileParticles, CheckpointStoresTheDatasetsYtAndVisItRead) {
  const std::string path = shared_path("p_layout", "chk");
  const auto owner = [](int b) { return (b + 1) % world_size(); };
  const FlashFileSpec full = with_particles(two_level_spec(path, true, owner), kCounts, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_EQ(H5Lexists(f, "file format version", H5P_DEFAULT), 0) << "VisIt would assume v8";
  const hid_t names = H5Dopen2(f, "particle names", H5P_DEFAULT);
  EXPECT_EQ(dims_of(names), (std::vector<hsize_t>{9, 1}));
  EXPECT_EQ(type_of(names).cls, H5T_STRING);
  EXPECT_EQ(type_of(names).size, 24u);
  std::vector<char> raw(9 * 24);
  const hid_t nt = H5Dget_type(names);
  H5Dread(names, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data());
  EXPECT_EQ(std::string(raw.data() + 24), "posx");
  H5Tclose(nt);
  H5Dclose(names);
  const hid_t localnp = H5Dopen2(f, "localnp", H5P_DEFAULT);
  EXPECT_EQ(dims_of(localnp), (std::vector<hsize_t>{kN}));
  EXPECT_EQ(type_of(localnp).cls, H5T_INTEGER);
  EXPECT_EQ(type_of(localnp).size, 4u);
  std::vector<int> counts(kN);
  H5Dread(localnp, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, counts.data());
  EXPECT_EQ(counts, kCounts);
  H5Dclose(localnp);
  const hid_t tracer = H5Dopen2(f, "tracer particles", H5P_DEFAULT);
  EXPECT_EQ(dims_of(tracer), (std::vector<hsize_t>{8, 9}));
  EXPECT_EQ(type_of(tracer).cls, H5T_FLOAT);
  EXPECT_EQ(type_of(tracer).size, 8u);
  H5Dclose(tracer);
  H5Fclose(f);
  remove_shared(path);
}

TEST(FlashFileParticles, ABitFlippedInAParticleIsAChecksumMismatch) {
  const std::string path = shared_path("p_bad", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  tessera::io::write_flash_file(
      MPI_COMM_WORLD,
      local_part(with_particles(two_level_spec(path, true, owner), kCounts, owner), owner));
  MPI_Barrier(MPI_COMM_WORLD);
  corrupt(path, "tracer particles", 6, 2);  // block 5's third particle, posy
  if (world_rank() == 0) {
    const auto c = tessera::io::check_flash_file(path);
    EXPECT_FALSE(c.ok);
    ASSERT_EQ(c.problems.size(), 1u);
    EXPECT_EQ(c.problems[0].rfind("dataset 'tracer particles': checksum mismatch (stored ", 0), 0u)
        << c.problems[0];
  }
  remove_shared(path);
}

/// `full` as a particle file: no variables, grid false.
FlashFileSpec particle_file(FlashFileSpec full) {
  full.grid = false;
  full.var_names.clear();
  full.data.clear();
  return full;
}

TEST(FlashFileParticles, ParticleFileHasNoTreeAndRoundTrips) {
  const std::string path = shared_path("p_part", "part");
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec full =
      particle_file(with_particles(two_level_spec(path, true, owner), kCounts, owner));
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);

  // yt's particle-only dataset: no `bounding box`, but `localnp` (reference §1).
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  for (const char* absent : {"bounding box", "gid", "refine level", "node type", "coordinates",
                             "block size", "processor number", "unknown names", "dens"}) {
    EXPECT_EQ(H5Lexists(f, absent, H5P_DEFAULT), 0) << absent;
  }
  for (const char* present : {"sim info", "integer scalars", "real scalars",
                              "real runtime parameters", "localnp", "tracer particles"}) {
    EXPECT_GT(H5Lexists(f, present, H5P_DEFAULT), 0) << present;
  }
  H5Fclose(f);

  const FlashFileSpec got = tessera::io::read_flash_file(path);
  EXPECT_FALSE(got.grid);
  EXPECT_TRUE(got.refine_level.empty());
  EXPECT_TRUE(got.bounding_box.empty());
  EXPECT_TRUE(got.var_names.empty());
  EXPECT_TRUE(got.data.empty());
  EXPECT_EQ(got.ndim, 2);
  EXPECT_EQ(got.nxb, kNxb);
  EXPECT_EQ(got.local_rows, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(got.real_scalars, full.real_scalars);
  EXPECT_EQ(got.str_runtime, full.str_runtime);
  EXPECT_EQ(got.particle_names, kProps);
  EXPECT_EQ(got.localnp, kCounts);
  EXPECT_EQ(bytes_of(got.particles), bytes_of(full.particles));
  const auto c = tessera::io::check_flash_file(path);
  EXPECT_TRUE(c.ok) << (c.problems.empty() ? "" : c.problems.front());
  EXPECT_EQ(c.datasets_checked, 12);  // sim info, 8 lists and 3 particle datasets
  remove_shared(path);
}

TEST(FlashFileParticles, ZeroParticlesGiveAnEmptyDatasetThatReadsBack) {
  const std::string path = shared_path("p_zero", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec full =
      with_particles(two_level_spec(path, true, owner), std::vector<int>(kN, 0), owner);
  ASSERT_TRUE(full.particles.empty());
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t tracer = H5Dopen2(f, "tracer particles", H5P_DEFAULT);
  EXPECT_EQ(dims_of(tracer), (std::vector<hsize_t>{0, 9}));
  H5Dclose(tracer);
  H5Fclose(f);
  expect_round_trip(tessera::io::read_flash_file(path), full);
  const auto c = tessera::io::check_flash_file(path);
  EXPECT_TRUE(c.ok) << (c.problems.empty() ? "" : c.problems.front());
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  EXPECT_EQ(meta.spec.localnp, std::vector<int>(kN, 0));
  EXPECT_EQ(meta.particles.bytes, 0u);
  EXPECT_TRUE(tessera::io::read_flash_particles(MPI_COMM_WORLD, meta, rows_of(owner)).empty());
  remove_shared(path);
}

TEST(FlashFileParticles, InvalidParticlesAreRejectedBeforeTheFileIsCreated) {
  const std::string path = shared_path("p_invalid", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec full = with_particles(two_level_spec(path, true, owner), kCounts, owner);
  const FlashFileSpec good = local_part(full, owner);
  const auto write = [&](const FlashFileSpec& s) {
    return error_of([&] { tessera::io::write_flash_file(MPI_COMM_WORLD, s); });
  };
  using tessera::testing_util::contains;

  FlashFileSpec long_name = good;
  long_name.particle_names[8] = std::string(24, 'v');
  EXPECT_TRUE(contains(write(long_name), "must have 1 to 23 characters"));
  FlashFileSpec twice = good;
  twice.particle_names[8] = "velx";
  EXPECT_TRUE(contains(write(twice), "particle property name 'velx' appears twice"));
  FlashFileSpec short_localnp = good;  // on the last rank only: every rank must throw
  if (world_rank() == world_size() - 1) short_localnp.localnp.pop_back();
  EXPECT_TRUE(contains(write(short_localnp), "localnp has "));
  FlashFileSpec short_particles = good;
  if (world_rank() == world_size() - 1) {
    short_particles.localnp.back() += 1;  // one more particle than given
  }
  EXPECT_TRUE(contains(write(short_particles), "particles has "));
  FlashFileSpec negative = good;
  if (world_rank() == 0) negative.localnp.front() = -1;
  EXPECT_TRUE(contains(write(negative), "is negative"));
  FlashFileSpec unnamed = good;
  unnamed.particle_names.clear();
  EXPECT_TRUE(contains(write(unnamed), "without particle names"));
  FlashFileSpec part_with_vars = good;
  part_with_vars.grid = false;
  EXPECT_TRUE(contains(write(part_with_vars), "a particle file (grid false) holds no variables"));
  EXPECT_TRUE(contains(write(short_localnp), path)) << "the error names the file";

  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "no file is created for an invalid spec";
}

TEST(FlashFileParticles, CheckSaysWhenAPlotfilesParticleFileHasAnotherTime) {
  // yt pairs X_hdf5_plt_cnt_0000 with X_hdf5_part_0000 and drops the particle file
  // without an error when the first `real scalars` rows differ.
  const std::string plot = shared_path("p_pair", "plt_cnt");
  const std::string part = shared_path("p_pair", "part");
  const std::string part_name = part.substr(part.rfind('/') + 1);
  const auto owner = [](int b) { return b % world_size(); };
  FlashFileSpec plot_spec = two_level_spec(plot, false, owner);
  plot_spec.real_scalars[0].second = 0.2;
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(plot_spec, owner));
  FlashFileSpec part_spec =
      particle_file(with_particles(two_level_spec(part, true, owner), kCounts, owner));
  part_spec.real_scalars[0].second = 0.25;
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(part_spec, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    auto c = tessera::io::check_flash_file(plot);
    EXPECT_FALSE(c.ok);
    ASSERT_EQ(c.problems.size(), 1u);
    EXPECT_EQ(c.problems[0], "particle file '" + part_name + "' has time 0.25, its plotfile 0.2");
    EXPECT_TRUE(tessera::io::check_flash_file(part).ok) << "the particle file itself is sound";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  part_spec.real_scalars[0].second = 0.2 * (1.0 + 1e-9);  // np.isclose: the same time
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(part_spec, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    const auto c = tessera::io::check_flash_file(plot);
    EXPECT_TRUE(c.ok) << (c.problems.empty() ? "" : c.problems.front());
  }
  remove_shared(part);
  remove_shared(plot);
}

/// Then `got` is exactly the particles of `rows` of `full`, in row order.
void expect_particles_of_rows(const std::vector<double>& got, const FlashFileSpec& full,
                              const std::vector<int>& rows) {
  std::vector<std::size_t> first(kN + 1, 0);
  for (int b = 0; b < kN; ++b) first[b + 1] = first[b] + full.localnp[b];
  std::vector<double> want;
  for (const int b : rows) {
    want.insert(want.end(), full.particles.begin() + static_cast<std::ptrdiff_t>(first[b] * 9),
                full.particles.begin() + static_cast<std::ptrdiff_t>(first[b + 1] * 9));
  }
  EXPECT_EQ(bytes_of(got), bytes_of(want)) << "rank " << world_rank();
}

TEST(FlashFileParticleRows, GivenAFileWrittenOnOneSplitWhenEachRankReadsAnotherThenItGetsItsRows) {
  const auto writer = [](int b) { return b % world_size(); };
  const auto reader = [](int b) { return (world_size() - 1 - b % world_size()); };
  for (const bool grid : {true, false}) {
    const std::string path = shared_path("p_rows", grid ? "chk" : "part");
    FlashFileSpec full = with_particles(two_level_spec(path, true, writer), kCounts, writer);
    if (!grid) full = particle_file(std::move(full));
    tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(full, writer));
    MPI_Barrier(MPI_COMM_WORLD);
    const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
    EXPECT_EQ(meta.spec.grid, grid);
    EXPECT_EQ(meta.spec.particle_names, kProps);
    EXPECT_EQ(meta.spec.localnp, kCounts);
    EXPECT_TRUE(meta.spec.particles.empty());
    const std::vector<int> rows = rows_of(reader);
    expect_particles_of_rows(tessera::io::read_flash_particles(MPI_COMM_WORLD, meta, rows), full,
                             rows);
    remove_shared(path);
  }
}

TEST(FlashFileParticleRows, GivenABitFlippedInAParticleOfTheLastRankThenEveryRankFails) {
  const std::string path = shared_path("p_rows_bad", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  tessera::io::write_flash_file(
      MPI_COMM_WORLD,
      local_part(with_particles(two_level_spec(path, true, owner), kCounts, owner), owner));
  MPI_Barrier(MPI_COMM_WORLD);
  corrupt(path, "tracer particles", 7, 6);  // block 5's last particle, read by the last rank
  const auto reader = [](int b) { return b == kN - 1 ? world_size() - 1 : 0; };
  // The metadata verifies (the particles are checked as they are read) ...
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  // ... and reading them fails on every rank with the line `tessera check` prints.
  const std::string what =
      error_of([&] { tessera::io::read_flash_particles(MPI_COMM_WORLD, meta, rows_of(reader)); });
  EXPECT_EQ(what.rfind("dataset 'tracer particles': checksum mismatch (stored ", 0), 0u) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  if (world_rank() == 0) {
    const auto c = tessera::io::check_flash_file(path);
    ASSERT_EQ(c.problems.size(), 1u);
    EXPECT_EQ(c.problems[0], what);
  }
  remove_shared(path);
}

TEST(FlashFileParticleRows, GivenARowWithParticlesThatNoRankReadsThenEveryRankFails) {
  const std::string path = shared_path("p_rows_gap", "chk");
  const auto owner = [](int b) { return b % world_size(); };
  tessera::io::write_flash_file(
      MPI_COMM_WORLD,
      local_part(with_particles(two_level_spec(path, true, owner), kCounts, owner), owner));
  MPI_Barrier(MPI_COMM_WORLD);
  const FlashFileMeta meta = tessera::io::read_flash_metadata(MPI_COMM_WORLD, path);
  // Rows without particles need no reader: row 0 (none) is skipped without complaint.
  std::vector<int> rows = rows_of(owner);
  if (world_rank() == 0) rows.erase(rows.begin());
  expect_particles_of_rows(tessera::io::read_flash_particles(MPI_COMM_WORLD, meta, rows),
                           with_particles(two_level_spec(path, true, owner), kCounts, owner), rows);
  // Row 1 (3 particles) unread.
  rows = rows_of(owner);
  rows.erase(std::remove(rows.begin(), rows.end(), 1), rows.end());
  const std::string what =
      error_of([&] { tessera::io::read_flash_particles(MPI_COMM_WORLD, meta, rows); });
  EXPECT_TRUE(tessera::testing_util::contains(what, "row 1 (3 particles) is read by 0 ranks"));
  remove_shared(path);
}

TEST(FlashFileParticles, WritesSampleFilesForThePythonReaderAndYt) {
  // tests/python/test_particle_io.py runs this with TESSERA_PARTICLE_FILES_DIR set: a
  // plotfile, its particle file (same number and time), a checkpoint with the same
  // particles and one with none, written here, read by tessera.reader and yt.
  const char* dir = std::getenv("TESSERA_PARTICLE_FILES_DIR");
  if (dir == nullptr) GTEST_SKIP() << "TESSERA_PARTICLE_FILES_DIR is not set";
  const std::string base = std::string(dir) + "/pair_hdf5_";
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec plot = two_level_spec(base + "plt_cnt_0001", false, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(plot, owner));
  const FlashFileSpec part = particle_file(
      with_particles(two_level_spec(base + "part_0001", true, owner), kCounts, owner));
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(part, owner));
  const FlashFileSpec chk =
      with_particles(two_level_spec(base + "chk_0001", true, owner), kCounts, owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(chk, owner));
  const FlashFileSpec none =
      with_particles(two_level_spec(std::string(dir) + "/none_hdf5_chk_0001", true, owner),
                     std::vector<int>(kN, 0), owner);
  tessera::io::write_flash_file(MPI_COMM_WORLD, local_part(none, owner));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    for (const auto* s : {&plot, &part, &chk, &none}) {
      const auto c = tessera::io::check_flash_file(s->path);
      EXPECT_TRUE(c.ok) << s->path << ": " << (c.problems.empty() ? "" : c.problems.front());
    }
  }
}

TEST(FlashFileOutputManager, ParticleFilesArePublishedWithTheirOwnStatsAndNeverRolled) {
  // A third kind beside checkpoints and plotfiles: published under its final name, counted
  // under "particles", and not a checkpoint for keep_checkpoints. With a staging
  // directory the file is drained like the others.
  const std::string dir = shared_path("om", "dir");
  const std::string stage = dir + "_stage";
  if (world_rank() == 0) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto owner = [](int b) { return b % world_size(); };
  const FlashFileSpec full = with_particles(two_level_spec("", true, owner), kCounts, owner);
  {
    tessera::io::OutputConfig cfg;
    cfg.dir = dir;
    cfg.stage_dir = stage;
    cfg.keep_checkpoints = 1;
    tessera::io::OutputManager out(MPI_COMM_WORLD, cfg);
    for (int k = 0; k < 2; ++k) {
      const std::string number = "000" + std::to_string(k);
      out.write(
          tessera::io::OutputKind::checkpoint, "om_hdf5_chk_" + number, 0,
          [&] { return local_part(full, owner); }, false);
      out.write(
          tessera::io::OutputKind::particles, "om_hdf5_part_" + number, 0,
          [&] { return local_part(particle_file(full), owner); }, false);
    }
    out.drain();
    EXPECT_EQ(out.local_error(), "");
    const nlohmann::json stats = out.stats_json(MPI_COMM_WORLD);
    EXPECT_EQ(stats["particles"]["count"], 2);
    EXPECT_EQ(stats["checkpoint"]["count"], 2);
    EXPECT_EQ(stats["plotfile"]["count"], 0);
    if (world_rank() == 0) {
      EXPECT_GT(stats["particles"]["bytes"].get<std::uint64_t>(), 0u);
      EXPECT_EQ(out.published(), (std::vector<std::string>{"om_hdf5_part_0000", "om_hdf5_chk_0001",
                                                           "om_hdf5_part_0001"}));
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    for (const char* name : {"om_hdf5_part_0000", "om_hdf5_part_0001", "om_hdf5_chk_0001"}) {
      const auto c = tessera::io::check_flash_file(dir + "/" + name);
      EXPECT_TRUE(c.ok) << name << ": " << (c.problems.empty() ? "" : c.problems.front());
    }
    EXPECT_FALSE(std::filesystem::exists(dir + "/om_hdf5_chk_0000")) << "rolled";
    const FlashFileSpec got = tessera::io::read_flash_file(dir + "/om_hdf5_part_0001");
    EXPECT_FALSE(got.grid);
    EXPECT_EQ(bytes_of(got.particles), bytes_of(full.particles));
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(stage);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A two-level file split over the ranks, this rank's live copy of its variables (what a
// capture copies), and an asynchronous output manager's configuration writing into a
// directory of its own; done() checks on rank 0 that `file` holds the file's variables
// as they were when copied, bitwise, and removes the directory.
struct LiveOutput {
  std::string dir;
  std::function<int(int)> owner = [](int b) { return b % world_size(); };
  FlashFileSpec full;
  std::vector<double> live;
  tessera::io::OutputConfig cfg;
  explicit LiveOutput(const char* name) : dir(shared_path(name, "dir")) {
    if (world_rank() == 0) std::filesystem::create_directories(dir);
    MPI_Barrier(MPI_COMM_WORLD);
    full = two_level_spec("", true, owner);
    const FlashFileSpec mine = local_part(full, owner);
    live.assign(mine.data.begin(), mine.data.end());
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    cfg.dir = dir;
    cfg.async = true;
    cfg.thread_multiple = provided == MPI_THREAD_MULTIPLE;
  }
  /// This rank's part of the file, its variables left to a capture.
  FlashFileSpec without_data() const {
    FlashFileSpec f = local_part(full, owner);
    f.data.clear();
    return f;
  }
  std::function<void(FlashFileSpec&)> copy() {
    return [this](FlashFileSpec& s) { s.data.assign(live.begin(), live.end()); };
  }
  void done(const std::string& file, const std::string& absent = "") {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
      if (!absent.empty()) {
        EXPECT_FALSE(std::filesystem::exists(dir + "/" + absent));
      }
      const FlashFileSpec got = tessera::io::read_flash_file(dir + "/" + file);
      EXPECT_EQ(bytes_of(got.data), bytes_of(full.data)) << "variables, bitwise";
      std::filesystem::remove_all(dir);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
};

TEST(FlashFileOutputManager, GivenACaptureOfLiveData_TheFileHoldsTheDataAsOfTheCapture) {
  // An output whose variables are copied by FlashFileSpec::capture (by the I/O thread when
  // MPI offers threads, else by the writer): once wait_captures() returns, the live data
  // may change; the file holds what the capture copied.
  LiveOutput o("cap");
  {
    tessera::io::OutputManager out(MPI_COMM_WORLD, o.cfg);
    out.write(
        tessera::io::OutputKind::checkpoint, "cap_hdf5_chk_0000", 0,
        [&] {
          FlashFileSpec f = o.without_data();
          f.capture = o.copy();
          return f;
        },
        false);
    out.wait_captures();
    std::fill(o.live.begin(), o.live.end(), -1.0);  // the step loop goes on
    out.drain();
    EXPECT_EQ(out.local_error(), "");
  }
  o.done("cap_hdf5_chk_0000");
}

TEST(FlashFileOutputManager,
     GivenACaptureStartedWhileAssembling_TheFileHoldsItAndAFailedAssembleWritesNothing) {
  // start_capture hands the copy to the I/O thread from inside write()'s assemble (which
  // then describes the rest): the file holds what it copied. An assemble that throws after
  // starting its copy rethrows from write(), leaves nothing queued and no file, and the
  // next output is written. Outside an assemble, start_capture takes nothing.
  LiveOutput o("start");
  o.cfg.writer = "rank";
  {
    tessera::io::OutputManager out(MPI_COMM_WORLD, o.cfg);
    EXPECT_FALSE(out.start_capture(o.copy()));
    auto assemble = [&](bool fail) {
      FlashFileSpec f = o.without_data();
      const bool taken = out.start_capture(o.copy());
      EXPECT_EQ(taken, out.defers_capture());
      if (fail) throw std::runtime_error("assemble failed");
      if (!taken) f.capture = o.copy();
      return f;
    };
    EXPECT_THROW(out.write(
                     tessera::io::OutputKind::checkpoint, "start_hdf5_chk_0000", 0,
                     [&] { return assemble(true); }, false),
                 std::runtime_error);
    out.write(
        tessera::io::OutputKind::checkpoint, "start_hdf5_chk_0001", 0,
        [&] { return assemble(false); }, false);
    out.wait_captures();
    std::fill(o.live.begin(), o.live.end(), -1.0);  // the step loop goes on
    out.drain();
    EXPECT_EQ(out.local_error(), "");
  }
  o.done("start_hdf5_chk_0001", "start_hdf5_chk_0000");
}

}  // namespace

namespace {

// Issue 48: a failed HDF5 call said only "H5Fcreate failed"; the operating system's reason
// in HDF5's error stack (a full disk's "No space left on device (errno 28)") goes with it.
TEST(FlashFileErrors, GivenACallTheSystemRefusedThenTheMessageSaysWhy) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t f =
      H5Fcreate("/nonexistent-tessera-dir/x.h5", H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_LT(f, 0);
  const tessera::io::detail::Context c("cannot write 'x.h5': ");
  const std::string m = c.message("H5Fcreate failed");
  EXPECT_NE(m.find("H5Fcreate failed: No such file or directory (errno 2)"), std::string::npos)
      << m;
}

}  // namespace
