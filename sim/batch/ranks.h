// This process's place among the processes of an MPI launch (`mpirun -np N`, `srun`), and the
// few messages the search and batch commands exchange: texts sent point to point, broadcast
// from rank 0, gathered at rank 0. The only code that includes <mpi.h> is ranks.cpp, and only
// when built with STRATASIM_WITH_MPI; otherwise, or when the process was not started by an MPI
// launcher, it is rank 0 of 1 and nothing is sent.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stratasim {

class Ranks {
 public:
  Ranks();   // MPI_Init when built with MPI and started by an MPI launcher
  ~Ranks();  // MPI_Finalize; MPI_Abort when unwinding an exception with other ranks waiting
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  int local_size() const { return local_size_; }  // ranks on this node (to share its cores)
  // Hardware threads this rank may use: the node's threads shared among its ranks.
  int threads_per_rank() const;

  void send(int to, std::string_view text) const;
  std::string receive(int from) const;
  std::string broadcast(const std::string& text) const;  // rank 0's text, on every rank
  // At rank 0: every rank's text in rank order; elsewhere an empty vector.
  std::vector<std::string> gather(const std::string& text) const;

  static bool built_with_mpi();

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
  bool mpi_ = false;
};

}  // namespace stratasim
