// Node type `cost_per_token`: energy and electricity cost of generating tokens, from average power and
// throughput. Pure arithmetic (not hardware-bound).
#include <stdexcept>
#include <string>

#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {

namespace {

constexpr double kJoulesPerKwh = 3.6e6;

json compute(const json& p) {
  const double power_w = required_number(p, "power_w");
  const double tokens_per_s = required_number(p, "tokens_per_s");
  if (!has_value(p, "price_per_kwh")) throw std::invalid_argument("price_per_kwh: required, expected a number >= 0");
  const double price_per_kwh = number(p, "price_per_kwh", 0, /*allow_zero=*/true);
  const double pue = number(p, "pue", 1.0);
  if (pue < 1.0)
    throw std::invalid_argument("pue: power usage effectiveness is facility power / IT power, so >= 1; got " +
                                p["pue"].dump());
  const double gpus = number(p, "gpus", 1.0);

  // Facility power (IT power scaled by PUE) spread over the tokens produced each second.
  const double facility_w = power_w * gpus * pue;
  const double joules_per_token = facility_w / tokens_per_s;
  const double kwh_per_million = joules_per_token * 1e6 / kJoulesPerKwh;
  return {
      {"power_w", power_w},
      {"gpus", gpus},
      {"pue", pue},
      {"facility_power_w", facility_w},
      {"tokens_per_s", tokens_per_s},
      {"price_per_kwh", price_per_kwh},
      {"joules_per_token", joules_per_token},
      {"tokens_per_joule", 1.0 / joules_per_token},
      {"kwh_per_million_tokens", kwh_per_million},
      {"cost_per_million_tokens", kwh_per_million * price_per_kwh},
      {"units", "power in W (per GPU, times gpus, times pue); price per kWh in your currency; "
                "cost_per_million_tokens in that currency"},
  };
}

class CostPerTokenNode final : public CalculatorNode {
 public:
  std::string name() const override { return "cost_per_token"; }
  std::string doc() const override {
    return "Energy and cost per token: joules_per_token = power_w * gpus * pue / tokens_per_s, tokens_per_joule, "
           "kwh_per_million_tokens and cost_per_million_tokens at price_per_kwh.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"power_w", ParamKind::number, json(), true, "average power draw in watts (per GPU when gpus is set)"},
        {"tokens_per_s", ParamKind::number, json(), true, "throughput of the whole deployment, tokens per second"},
        {"price_per_kwh", ParamKind::number, json(), true, "electricity price per kWh (any currency)"},
        {"pue", ParamKind::number, 1.0, false, "power usage effectiveness of the facility (>= 1)"},
        {"gpus", ParamKind::number, 1, false, "multiplier on power_w (number of GPUs drawing it)"},
    };
  }
  json calculate(const json& params) const override { return compute(params); }
};

}  // namespace

std::unique_ptr<NodeType> make_cost_per_token_node() { return std::make_unique<CostPerTokenNode>(); }

}  // namespace aispflow
