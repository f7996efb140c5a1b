// DirectoryLock: flock on dir/.lock, holder's pid written inside for the message of the one refused.
#include "replica/core/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "replica/core/error.h"

namespace replica {

DirectoryLock::DirectoryLock(const std::string& dir, const std::string& what) {
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("{}: cannot create the lock file {} ({})", what, path, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    char pid[32] = {};
    const ssize_t got = ::pread(fd_, pid, sizeof pid - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (why == EWOULDBLOCK)
      fail("{}: in use by another replica process (pid {}, holding {}); wait for it to finish or choose another "
           "directory",
           what, got > 0 ? std::string(pid, size_t(got)) : "unknown", path);
    fail("{}: cannot lock {} ({})", what, path, std::strerror(why));
  }
  // The pid is only for the message of a process refused later: the lock holds whether or not it is written.
  const std::string self = std::to_string(::getpid());
  [[maybe_unused]] const bool written =
      ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, self.data(), self.size(), 0) == ssize_t(self.size());
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace replica
