// An evaluation surface: its section of the suite YAML, how it runs on a model, and its typed result written as
// JSON and as a console table. The table of surfaces is surfaces(); adding one is a file and a row there.
#pragma once
#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "replica/data/tokenizer.h"
#include "replica/eval/progress.h"
#include "replica/model/transformer.h"

namespace replica::eval {

struct SuiteSpec;

// What one surface produced.
class SurfaceResult {
 public:
  virtual ~SurfaceResult() = default;
  virtual nlohmann::json to_json() const = 0;  // its object in the suite's JSON (metrics.jsonl, `replica eval --json`)
  virtual std::string format() const = 0;      // its console table
};

// What a surface runs with besides the model: the suite (its own section, batch_tokens), the tokenizer, and
// where its progress and summary lines go.
struct SurfaceContext {
  const SuiteSpec& spec;
  const data::Tokenizer& tokenizer;
  Progress& progress;
};

class Surface {
 public:
  virtual ~Surface() = default;
  // Its section of the suite YAML and its key in the results.
  virtual const char* name() const = 0;
  // Reads its section into `spec` (which it enables); bad keys and values raise replica::Error naming `where`.
  virtual void parse(const YAML::Node& section, const std::string& where, SuiteSpec& spec) const = 0;
  virtual bool enabled(const SuiteSpec& spec) const = 0;
  // The files it reads when enabled (token files, task files): their contents key the cached results of a suite
  // (reproduce/evaluation_cache.h), so a surface that lists its own inputs needs no entry there.
  virtual std::vector<std::string> input_files(const SuiteSpec& spec) const = 0;
  virtual std::unique_ptr<SurfaceResult> run(model::Transformer& model, model::WeightSource& weights,
                                             const SurfaceContext& ctx) const = 0;
};

// Every surface, in the order the suite runs and reports them.
const std::vector<const Surface*>& surfaces();

// `items` in label order, the last of equal labels kept: the rows of the JSON object they are written to, so a
// table lists what the JSON holds.
template <typename T, typename Label>
std::vector<const T*> by_label(const std::vector<T>& items, Label label) {
  std::map<std::string, const T*> rows;
  for (const T& item : items) rows[label(item)] = &item;
  std::vector<const T*> out;
  for (const auto& [name, item] : rows) out.push_back(item);
  return out;
}

}  // namespace replica::eval
