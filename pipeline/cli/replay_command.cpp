#include "pipeline/cli/replay_command.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kernels/cuda_plugin.hpp"
#include "pipeline/errors.hpp"

namespace aispflow::cli {

namespace {

using nlohmann::json;

json read_record(const std::string& file, int index) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file + ": cannot read the record file");
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) throw InputError(file + ": not JSON");
  const json* records = doc.is_array() ? &doc : doc.is_object() && doc.contains("records") ? &doc["records"] : nullptr;
  if (!records || !records->is_array()) throw InputError(file + ": expected a JSON array of records or {\"records\": [...]}");
  if (index < 0 || index >= int(records->size()))
    throw InputError(file + ": --index " + std::to_string(index) + " is out of range (" +
                     std::to_string(records->size()) + " records)");
  return (*records)[std::size_t(index)];
}

}  // namespace

int replay_command(const ReplayArgs& args) {
  json request = {{"record", read_record(args.record_file, args.index)}, {"warmup", args.warmup}};
  if (!args.kernel.empty()) request["kernel"] = args.kernel;
  json result;
  try {
    result = kernels::replay_gemm_in_plugin(request);
  } catch (const std::invalid_argument& e) {
    throw InputError(args.record_file + " record " + std::to_string(args.index) + ": " + e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aispflow replay: %s record %d: %s\n", args.record_file.c_str(), args.index, e.what());
    return kExitNodeFailed;
  }
  const std::string text = result.dump(1) + "\n";
  if (args.out.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream out(args.out, std::ios::binary | std::ios::trunc);
    if (!(out << text)) throw std::runtime_error("cannot write " + args.out);
  }
  return kExitOk;
}

}  // namespace aispflow::cli
