#include "sim/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "sim/core/error.h"

namespace stratasim {
namespace {

namespace fs = std::filesystem;

// The file a path names once its symlinks are followed (a dangling link names the file it
// would create). Loops end with an error.
std::string resolve_symlinks(const std::string& path) {
  fs::path target = path;
  for (int hops = 0;; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(target, ec))) return target.string();
    if (hops == 40) throw InputError(path + ": cannot write file: too many levels of symbolic links");
    const fs::path link = fs::read_symlink(target, ec);
    if (ec) throw InputError(path + ": cannot write file: " + ec.message());
    target = link.is_absolute() ? link : target.parent_path() / link;
  }
}

void write_all(int fd, std::string_view content, const std::string& path, const char* cleanup) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      if (cleanup != nullptr) ::unlink(cleanup);
      throw InputError(path + ": cannot write file: " + why);
    }
    done += static_cast<size_t>(n);
  }
}

// A device, FIFO or socket is written through, never replaced (`--json /dev/null` must leave
// /dev/null a device).
void write_through(const std::string& target, std::string_view content, const std::string& path) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot write file: " + std::strerror(errno));
  write_all(fd, content, path, nullptr);
  if (::close(fd) != 0) throw InputError(path + ": cannot write file: " + std::strerror(errno));
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content) {
  if (path.empty()) throw InputError("(empty path): cannot write file: no file name");
  const std::string target = resolve_symlinks(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(path + ": cannot write file: it is a directory");
    if (!S_ISREG(st.st_mode)) return write_through(target, content, path);
  }
  // A fresh temp file next to the target: mkstemp creates it exclusively, so a planted file or
  // symlink of that name is never followed or overwritten.
  std::string tmp = target + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw InputError(path + ": cannot write file: " + std::strerror(errno));
  write_all(fd, content, path, tmp.c_str());
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);  // mkstemp's 0600 would hide results from other users
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError(path + ": cannot write file: " + why);
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError(path + ": cannot replace file: " + why);
  }
}

}  // namespace stratasim
