#include "parallel/singleton.hpp"

#include <signal.h>  // kill (POSIX)
#include <stdlib.h>  // mkdtemp, setenv (POSIX)
#include <unistd.h>  // getpid

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace tessera::parallel {

namespace {
std::string& session_base() {
  static std::string dir;
  return dir;
}
void remove_session_base() {
  std::error_code ec;
  if (!session_base().empty()) std::filesystem::remove_all(session_base(), ec);
}
/// Removes the session directories under `base` of processes that no longer exist
/// (tessera-mpi-<pid>-XXXXXX: a process killed, by SIGKILL say, could not remove its own).
void remove_stale(const std::string& base) {
  std::error_code ec;
  const std::string prefix = "tessera-mpi-";
  for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::size_t dash = name.find('-', prefix.size());
    if (dash == std::string::npos) continue;
    long pid = 0;
    try {
      pid = std::stol(name.substr(prefix.size(), dash - prefix.size()));
    } catch (const std::exception&) {
      continue;
    }
    std::error_code rm;
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      std::filesystem::remove_all(it->path(), rm);
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
  if (!session_base().empty()) return session_base();
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  remove_stale(base);
  std::string pattern = base + "/tessera-mpi-" + std::to_string(getpid()) + "-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr) return "";
  session_base() = name.data();
  std::atexit(remove_session_base);  // after main's MPI_Finalize
  setenv("OMPI_MCA_orte_tmpdir_base", session_base().c_str(), 1);
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 1);
  return session_base();
}

}  // namespace tessera::parallel
