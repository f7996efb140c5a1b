// Fuzzes the model config reader on a config.json (HF Olmo3Config, Olmo2Config, LlamaConfig keys), and checks
// that a config it accepts survives the HF export round trip unchanged.
#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "replica/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  const std::string path = fuzz::write_input("config.json", data, size);
  fuzz::expect_only_replica_errors([&] {
    const model::ModelConfig config = model::load_model_config(path);
    const nlohmann::json exported = model::model_config_to_hf_json(config);
    if (!(model::model_config_from_json(exported, "exported config.json") == config))
      fuzz::property_failed("model_config_to_hf_json loses part of the config: " + exported.dump());
  });
  return 0;
}
