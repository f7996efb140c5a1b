// An exclusive lock on a directory for as long as a process works in it (a run directory): a second process is
// refused with the first one's pid instead of interleaving its files with the first's.
#pragma once
#include <string>

namespace replica {

class DirectoryLock {
 public:
  // Takes an flock(2) on dir/.lock (created if needed) and writes this pid into it; raises replica::Error
  // naming `what` and the holder's pid when another process holds it. The kernel drops the lock when the
  // process ends, however it ends, so a crash never leaves a stale lock behind.
  DirectoryLock(const std::string& dir, const std::string& what);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace replica
