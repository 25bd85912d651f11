#include "parallel/singleton.hpp"

#include <fcntl.h>     // open
#include <signal.h>    // kill
#include <stdlib.h>    // mkdtemp, setenv
#include <sys/file.h>  // flock
#include <unistd.h>    // getpid, gethostname, close

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

namespace tessera::parallel {

namespace {

constexpr const char* kPrefix = "tessera-mpi-";
constexpr const char* kLock = "/owner.lock";

struct Session {
  std::string dir;  ///< the session base directory made by this process
  pid_t owner = 0;  ///< the process that made it (a forked child must not remove it)
};
Session& session() {
  static Session s;
  return s;
}
void remove_session_base() {
  std::error_code ec;
  if (!session().dir.empty() && getpid() == session().owner)
    std::filesystem::remove_all(session().dir, ec);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string h(buf);
  for (char& c : h)
    if (c == '/') c = '_';
  return h.empty() ? "host" : h;
}

/// Removes the session directories under `base` left by processes that no longer run
/// (tessera-mpi-<host>-<pid>-XXXXXX: a process killed, by SIGKILL say, could not remove
/// its own). Only this host's; only where the pid is gone; and only where nobody holds the
/// owner's lock (flock on <dir>/owner.lock, held for the owner's life): a live owner in
/// another pid namespace sharing this /tmp keeps its directory.
void remove_stale(const std::string& base, const std::string& host) {
  std::error_code ec;
  const std::string mine = kPrefix + host + "-";
  for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(mine, 0) != 0) continue;
    const std::size_t dash = name.rfind('-');
    if (dash == std::string::npos || dash < mine.size()) continue;
    const char* first = name.data() + mine.size();
    const char* last = name.data() + dash;
    long pid = 0;
    const auto [ptr, err] = std::from_chars(first, last, pid);
    if (err != std::errc() || ptr != last || pid <= 0) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string lock = it->path().string() + kLock;
    const int fd = open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      continue;
    }
    std::error_code rm;
    std::filesystem::remove_all(it->path(), rm);
    if (fd >= 0) close(fd);
  }
}

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

std::string prepare_singleton() {
  const char* want = std::getenv("TESSERA_MPI_SINGLETON");
  if (want == nullptr || std::string(want) != "isolated" || launched_by_mpi()) return "";
  if (!session().dir.empty()) return session().dir;
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  const std::string host = host_name();
  remove_stale(base, host);
  const std::string pattern =
      base + "/" + kPrefix + host + "-" + std::to_string(getpid()) + "-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr) {
    const int e = errno;
    std::cerr << "tessera: TESSERA_MPI_SINGLETON=isolated: cannot make a directory in " << base
              << " (" << std::strerror(e) << "): Open MPI's default singleton is used\n";
    return "";
  }
  session().dir = name.data();
  session().owner = getpid();
  // Held until this process ends (the descriptor is never closed): remove_stale's sign
  // that the directory is in use.
  const int fd = open((session().dir + kLock).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) flock(fd, LOCK_EX);
  std::atexit(remove_session_base);  // after main's MPI_Finalize
  setenv("OMPI_MCA_orte_tmpdir_base", session().dir.c_str(), 1);
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 1);
  return session().dir;
}

}  // namespace tessera::parallel
