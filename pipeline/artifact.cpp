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

}  // namespace aispflow
