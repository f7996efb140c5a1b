// Fuzzes recipes: the YAML text, then `section.key=value` overrides, validation, and the promise of
// Recipe::to_yaml() that reading its output gives the same recipe.
#include <algorithm>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "replica/train/recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  // The input is the recipe, then NUL-separated overrides: "run:\n  dir: x\n\0optim.lr=1e-3\0train.seed=2".
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t end = std::min(input.find('\0'), input.size());
  const std::string yaml = input.substr(0, end);
  std::vector<std::string> overrides;
  for (size_t at = end; at < input.size();) {
    const size_t next = std::min(input.find('\0', at + 1), input.size());
    overrides.push_back(input.substr(at + 1, next - at - 1));
    at = next;
  }
  fuzz::expect_only_replica_errors([&] {
    const train::Recipe recipe = train::load_recipe_text(yaml, "fuzz.yaml", overrides, /*check_files=*/false);
    const std::string resolved = recipe.to_yaml();
    std::string again;
    try {
      again = train::load_recipe_text(resolved, "resolved.yaml", {}, false).to_yaml();
    } catch (const Error& e) {
      fuzz::property_failed(std::string("to_yaml() output is refused: ") + e.what() + "\n" + resolved);
    }
    if (again != resolved) fuzz::property_failed("to_yaml() does not round-trip:\n" + resolved + "\n" + again);
  });
  return 0;
}
