#include "pipeline/artifact.hpp"

namespace aispflow {

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::ok: return "ok";
    case Verdict::expectations_not_met: return "expectations_not_met";
  }
  return "ok";
}

Verdict verdict_from_string(const std::string& s) {
  return s == "expectations_not_met" ? Verdict::expectations_not_met : Verdict::ok;
}

ArtifactData::ArtifactData(json value) : value_(std::move(value)) {
  std::call_once(once_, [] {});  // nothing left to load
}

ArtifactData::ArtifactData(std::function<json()> load) : load_(std::move(load)) {}

const json& ArtifactData::get() const {
  std::call_once(once_, [this] {
    try {
      value_ = load_();
    } catch (...) {
      error_ = std::current_exception();
    }
  });
  if (error_) std::rethrow_exception(error_);
  return value_;
}

const json& Artifact::data() const {
  static const json null_document;
  return data_ ? data_->get() : null_document;
}

void Artifact::set_data(json data) { data_ = std::make_shared<const ArtifactData>(std::move(data)); }

void Artifact::set_data_loader(std::function<json()> load) {
  data_ = std::make_shared<const ArtifactData>(std::move(load));
}

}  // namespace aispflow
