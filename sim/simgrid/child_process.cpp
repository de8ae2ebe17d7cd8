#include "sim/simgrid/child_process.h"

#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace stratasim::simgrid_detail {
namespace {

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& work) {
  // Unwritten stdio buffers would be copied into the child and written twice.
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {  // child: first byte says whether the rest is a result or an error message
    ::close(fds[0]);
    // Dies with its parent: a killed `simulate` (the GUI's Cancel) leaves no simulation behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(5);  // the parent died before prctl took effect
    int code = 0;
    std::string out;
    try {
      out = "R";
      out += work();
    } catch (const std::exception& e) {
      out = std::string("E") + e.what();
      code = 3;
    } catch (...) {
      out = "Eunknown exception";
      code = 3;
    }
    if (!write_all(fds[1], out)) code = 4;
    ::close(fds[1]);
    ::_exit(code);
  }
  ::close(fds[1]);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    throw std::runtime_error("simulation process killed by signal " +
                             std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
                             ")");
  }
  if (!text.empty() && text[0] == 'E') throw std::runtime_error(text.substr(1));
  if (text.empty() || text[0] != 'R' || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("simulation process failed (exit status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  }
  return text.substr(1);
}

}  // namespace stratasim::simgrid_detail
