// Fuzzes Dolma document metadata sidecars (`.csv.gz`, one `start,end[,...]` line per document): gzip inflation and
// the line parser, through the sidecar of a token file of 2^20 tokens. Property: what is accepted is a list of
// non-empty documents in file order, not overlapping, within the token file.
#include "fuzz_input.h"
#include "replica/data/document_metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  constexpr uint64_t kTotalTokens = uint64_t(1) << 20;
  const std::string sidecar = fuzz::write_input("part-000.csv.gz", data, size);
  const std::string token_path = sidecar.substr(0, sidecar.size() - 7) + ".npy";
  fuzz::expect_only_replica_errors([&] {
    uint64_t previous_end = 0;
    for (const data::DocumentSpan& d : data::DocumentMetadata(token_path).documents(kTotalTokens)) {
      if (!(previous_end <= d.start && d.start < d.end && d.end <= kTotalTokens))
        fuzz::property_failed("parse_document_metadata accepted a document out of order, empty or out of bounds");
      previous_end = d.end;
    }
  });
  return 0;
}
