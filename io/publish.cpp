#include "io/publish.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/error.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::io {

namespace fs = std::filesystem;

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

/// Bytes the file will take: every dataset as stored plus room for HDF5's metadata.
/// `particle_values`: every rank's particles together (f64 values).
std::uint64_t expected_bytes(const FlashFileSpec& s, std::uint64_t particle_values) {
  const std::uint64_t n = s.refine_level.size();
  const std::uint64_t cells = std::uint64_t(s.nxb) * s.nyb * s.nzb;
  const std::uint64_t elem = s.double_precision ? 8 : 4;
  const std::uint64_t vars = n * cells * elem * s.var_names.size();
  const std::uint64_t tree =
      n * (4 * (s.gid.size() / std::max<std::uint64_t>(n, 1) + 3) + elem * (6 + 3 + 3));
  const std::uint64_t particles =
      s.particle_names.empty() ? 0 : 8 * particle_values + 4 * n + 24 * s.particle_names.size();
  const std::uint64_t data = vars + tree + particles;
  return data + data / 100 + (std::uint64_t(64) << 10);
}

}  // namespace

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) throw Error("cannot open '" + path + "' to fsync it: " + errno_text());
  const int rc = ::fsync(fd);
  const std::string why = rc != 0 ? errno_text() : "";
  ::close(fd);
  if (rc != 0) throw Error("fsync of '" + path + "' failed: " + why);
}

std::uint64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::uint64_t>(n);
}

std::string write_and_publish(MPI_Comm comm, FlashFileSpec& spec, const std::string& final_path,
                              const std::string& stage_dir, bool inject_failure) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const fs::path final_p(final_path);
  const std::string target =
      stage_dir.empty() ? final_path : (fs::path(stage_dir) / final_p.filename()).string();
  const std::string tmp = target + ".tmp";
  spec.path = tmp;
  std::string why;
  // A full disk must be found before writing: HDF5 1.10 may fail inside H5Fclose on one
  // rank only and leave the others waiting in its collective flush. Rank 0 decides, so it
  // needs every rank's particles.
  std::uint64_t particle_values = spec.particles.size();
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &particle_values, &particle_values, 1, MPI_UINT64_T,
             MPI_SUM, 0, comm);
  if (rank == 0) {
    struct statvfs fs_info {};
    const std::string dir = fs::path(tmp).parent_path().empty()
                                ? std::string(".")
                                : fs::path(tmp).parent_path().string();
    const std::uint64_t need = expected_bytes(spec, particle_values);
    if (::statvfs(dir.c_str(), &fs_info) == 0) {
      const std::uint64_t have = std::uint64_t(fs_info.f_bavail) * fs_info.f_frsize;
      if (have < need)
        why = "cannot write '" + tmp + "': not enough space in '" + dir + "' (need about " +
              std::to_string(need) + " bytes, " + std::to_string(have) + " available)";
    }
  }
  parallel::agree(comm, why);
  try {
    write_flash_file(comm, spec);
    if (inject_failure && rank == size - 1)
      why = "cannot write '" + tmp + "' on rank " + std::to_string(rank) +
            ": injected failure (io.inject_write_error)";
  } catch (const std::exception& e) {
    why = e.what();
  }
  try {
    parallel::agree(comm, why);
  } catch (...) {
    if (rank == 0) ::unlink(tmp.c_str());
    throw;
  }
  // Every rank's part is in the file. Rank 0 makes it durable and visible.
  why.clear();
  if (rank == 0) {
    TESSERA_REGION("io/fsync");
    try {
      fsync_path(tmp, false);
      if (::rename(tmp.c_str(), target.c_str()) != 0)
        throw Error("cannot rename '" + tmp + "' to '" + target + "': " + errno_text());
      const fs::path dir = fs::path(target).parent_path();
      fsync_path(dir.empty() ? std::string(".") : dir.string(), true);
    } catch (const std::exception& e) {
      why = e.what();
      ::unlink(tmp.c_str());
    }
  }
  parallel::agree(comm, why);
  return target;
}

void drain_staged(const std::string& staged_path, const std::string& final_path) {
  const std::string tmp = final_path + ".tmp";
  const int in = ::open(staged_path.c_str(), O_RDONLY);
  if (in < 0) throw Error("cannot open staged file '" + staged_path + "': " + errno_text());
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) {
    const std::string e = errno_text();
    ::close(in);
    throw Error("cannot create '" + tmp + "': " + e);
  }
  std::vector<char> buf(std::size_t(8) << 20);
  std::string why;
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      why = "reading '" + staged_path + "' failed: " + errno_text();
      break;
    }
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = ::write(out, buf.data() + off, static_cast<std::size_t>(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        why = "writing '" + tmp + "' failed: " + errno_text();
        break;
      }
      off += w;
    }
    if (!why.empty()) break;
  }
  if (why.empty() && ::fsync(out) != 0) why = "fsync of '" + tmp + "' failed: " + errno_text();
  ::close(in);
  if (::close(out) != 0 && why.empty()) why = "closing '" + tmp + "' failed: " + errno_text();
  if (why.empty() && ::rename(tmp.c_str(), final_path.c_str()) != 0)
    why = "cannot rename '" + tmp + "' to '" + final_path + "': " + errno_text();
  if (!why.empty()) {
    ::unlink(tmp.c_str());
    throw Error(why);
  }
  const fs::path dir = fs::path(final_path).parent_path();
  fsync_path(dir.empty() ? std::string(".") : dir.string(), true);
  ::unlink(staged_path.c_str());
}

}  // namespace tessera::io
