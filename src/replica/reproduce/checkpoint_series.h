// A checkpoint series: the checkpoints of one training run in step order, read from a replica run directory (its
// checkpoints/stepNNNNNNNN), a directory of Hugging Face model directories named like AI2's revisions
// (stage1-step1000, stage2-ingredient1-step2000, step1000, each optionally ending in -tokens<N>B), or a CSV in AI2's
// format (OLMo-core's OLMo-3-1025-7B.csv: Stage,Step[,Tokens],Checkpoint Directory: local paths, or http(s):// URLs
// of HF checkpoint directories that reproduce fetches when it pairs them).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace replica::reproduce {

// Tokens seen at a checkpoint, exactly (a replica checkpoint's train_state.json, a CSV's Tokens column) or to the
// resolution of a revision name's -tokens<N>B suffix (1e9: AI2 rounds to whole billions).
struct TokensSeen {
  int64_t value = 0;
  int64_t resolution = 0;  // 0: exact
};

struct SeriesCheckpoint {
  int64_t step = 0;
  std::string stage;                 // "stage1", "stage2-ingredient1"; empty for a replica run or a plain stepN
  std::string path;                  // a replica checkpoint or an HF model directory (once fetched, for a URL)
  std::optional<TokensSeen> tokens;  // none: unknown (an HF directory named without -tokens<N>B)
  std::string url;                   // an http(s):// checkpoint directory of a CSV row; empty for a local one
  std::string label() const;         // "stage1-step1000", "step1000"
};

struct CheckpointSeries {
  std::string source;  // the path it was read from
  std::string kind;    // "replica run", "HF revisions", "CSV"
  std::vector<SeriesCheckpoint> checkpoints;  // ascending step; one per step
};

// Reads the series at `path`, only the checkpoints of `stage` when it is set ("stage1"; AI2's steps restart at each
// stage, so a series spanning stages must be narrowed to one); replica::Error names the path (and the row or
// directory) when it is none of the three kinds, is empty, spans stages without `stage`, or holds a step twice.
CheckpointSeries read_series(const std::string& path, const std::string& stage = "");

// A revision name's parts: "stage2-ingredient1-step2000-tokens9B" → stage "stage2-ingredient1", step 2000, 9e9
// tokens at resolution 1e9. None when the name is not a revision's.
std::optional<SeriesCheckpoint> parse_revision_name(const std::string& name);

}  // namespace replica::reproduce
