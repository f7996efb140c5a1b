// Scratch files for the harnesses.
#include "fuzz_input.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace replica::fuzz {

namespace {

// Created on first use; its destructor removes it when the process exits.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    path = std::string(tmp && *tmp ? tmp : "/tmp") + "/replica-fuzz-XXXXXX";
    if (!::mkdtemp(path.data())) property_failed("cannot create a scratch directory under " + path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

}  // namespace

const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0)
    property_failed("cannot write " + path);
  return path;
}

void property_failed(const std::string& what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what.c_str());
  std::abort();
}

}  // namespace replica::fuzz
