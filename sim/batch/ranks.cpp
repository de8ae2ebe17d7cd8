#include "sim/batch/ranks.h"

#include <cstdlib>
#include <exception>
#include <thread>

#include "sim/core/error.h"

#ifdef STRATASIM_WITH_MPI
#include <dlfcn.h>
#include <mpi.h>

#include <cstring>
#endif

namespace stratasim {
namespace {

// Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMI/PMIx launchers (srun --mpi=pmi2|pmix,
// MPICH's hydra) set PMI_SIZE or PMIX_RANK. A plain `stratasim search` sets none of them and
// must not pay for (or depend on) MPI's singleton start-up.
[[maybe_unused]] bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

}  // namespace

bool Ranks::built_with_mpi() {
#ifdef STRATASIM_WITH_MPI
  return true;
#else
  return false;
#endif
}

Ranks::Ranks() {
#ifdef STRATASIM_WITH_MPI
  if (!launched_by_mpi()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  SS_ASSERT(!initialized, "one Ranks per process");
  // SimGrid's SMPI defines the same MPI functions; calling its MPI_Init aborts the process.
  Dl_info where{};
  const bool smpi = ::dladdr(reinterpret_cast<void*>(&MPI_Init), &where) != 0 &&
                    where.dli_fname != nullptr && std::strstr(where.dli_fname, "simgrid");
  SS_ASSERT(!smpi, "MPI_Init binds to SimGrid's SMPI: link MPI before SimGrid");
  MPI_Init(nullptr, nullptr);
  mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
#endif
}

Ranks::~Ranks() {
#ifdef STRATASIM_WITH_MPI
  if (!mpi_) return;
  // A rank that fails alone would leave the others blocked in a receive: stop them all.
  if (std::uncaught_exceptions() > 0 && size_ > 1) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Finalize();
#endif
}

int Ranks::threads_per_rank() const {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, hw / std::max(1, local_size_));
}

#ifdef STRATASIM_WITH_MPI
void Ranks::send(int to, std::string_view text) const {
  SS_ASSERT(mpi_, "send needs an MPI launch");
  SS_ASSERT(text.size() < (1ull << 31), "one message stays under 2 GiB");
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, 0, MPI_COMM_WORLD);
}

std::string Ranks::receive(int from) const {
  SS_ASSERT(mpi_, "receive needs an MPI launch");
  MPI_Status status;
  MPI_Probe(from, 0, MPI_COMM_WORLD, &status);
  int n = 0;
  MPI_Get_count(&status, MPI_CHAR, &n);
  std::string text(static_cast<size_t>(n), '\0');
  MPI_Recv(text.data(), n, MPI_CHAR, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return text;
}

std::string Ranks::broadcast(const std::string& text) const {
  if (size_ == 1) return text;
  unsigned long long n = text.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string out = root() ? text : std::string(n, '\0');
  MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return out;
}
#else
void Ranks::send(int, std::string_view) const { SS_ASSERT(false, "send needs an MPI build"); }
std::string Ranks::receive(int) const {
  SS_ASSERT(false, "receive needs an MPI build");
  return {};
}
std::string Ranks::broadcast(const std::string& text) const { return text; }
#endif

std::vector<std::string> Ranks::gather(const std::string& text) const {
  if (!root()) {
    send(0, text);
    return {};
  }
  std::vector<std::string> all{text};
  for (int r = 1; r < size_; ++r) all.push_back(receive(r));
  return all;
}

}  // namespace stratasim
