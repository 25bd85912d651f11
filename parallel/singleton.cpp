#include "parallel/singleton.hpp"

#include <stdlib.h>  // mkdtemp, setenv (POSIX)

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
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/tessera-mpi-XXXXXX";
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
