#pragma once
// The roofline plot (SVG) of the `roofline` node (nodes/roofline.cpp): the ceilings and points it draws, and
// the drawing itself -- axes, roofs, ridge points, markers per provider and dtype, legend. Kept apart from
// the node so the arithmetic (which roof binds, what is attainable) and the layout can be read separately.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nodes/record_match.hpp"

namespace aispflow::roofline {

using json = nlohmann::json;

struct Ceiling {
  std::string name;
  bool memory = false;       // memory (GB/s) or compute (TFLOP/s)
  double value = 0;          // GB/s for memory, TFLOP/s for compute
  bool measured = true;      // false: datasheet
  std::string dtype;         // compute ceilings: the dtype they were measured with (may be empty)
  std::string level;         // memory ceilings: "dram", "hbm", "l2", ...
  std::string method;

  std::string unit() const { return memory ? "GB/s" : "TFLOP/s"; }
  std::string label() const {
    return name + "  " + records::format_number(value) + " " + unit() + (measured ? "" : " (datasheet)");
  }
  json to_json() const {
    json j = {{"name", name},   {"kind", memory ? "memory" : "compute"}, {"unit", unit()},
              {"value", value}, {"source", measured ? "measured" : "datasheet"}};
    if (!dtype.empty()) j["dtype"] = dtype;
    if (!level.empty()) j["level"] = level;
    if (!method.empty()) j["method"] = method;
    return j;
  }
};

struct Point {
  std::string id, provider, shape, dtype, source;   // source: "record" | "ncu" | "kernels"
  std::string note;                                  // appended to the hover text (e.g. the binding resource)
  double intensity = 0, achieved = 0;
  // Against the roof used for the numbers (measured, or datasheet when nothing was measured).
  double attainable = 0;
  std::string binding, memory_ceiling, compute_ceiling, compute_choice;
  double compute_ceiling_tflops = 0;     // the compute roof's value: achieved / it is the share of the pipe used
  std::optional<double> ds_attainable;   // against the datasheet roof, when there is one
};

// A line of the plot: one ceiling, or several of the same kind, source and (printed) value merged into one
// line with one label ("datasheet.bf16, datasheet.fp16  989.4 TFLOP/s (datasheet)").
struct DrawnCeiling {
  Ceiling ceiling;                  // the first of them: value, kind, source, level
  std::vector<std::string> names;   // every merged ceiling's name
  std::string label() const;
};

// What the plot draws. By default: the compute ceilings of the dtypes that have points (every compute ceiling
// when no point has a dtype, and those without a dtype always), and per memory level and source the best
// memory ceiling (the one the numbers use; lesser roofs of a level sit a few percent below it and only
// crowd the picture); `all` draws every ceiling. Equal values are merged either way. `hidden` counts the
// ceilings left out.
std::vector<DrawnCeiling> ceilings_to_draw(const std::vector<Ceiling>& ceilings, const std::vector<std::string>& dtypes,
                                           bool all, int* hidden = nullptr);

// The whole SVG document. `warning` (may be empty) is shown under the subtitle; `ridges` are the
// {"intensity", "compute", "memory"} ridge points; providers and dtypes name colours and markers in order.
// Ceiling labels go into <g id="ceiling-labels">, each where it overlaps no other label and stays inside the
// plot area (else only the legend names that line).
std::string draw_svg(const std::string& title, const std::string& subtitle, const std::string& warning,
                     const std::vector<Ceiling>& ceilings, const std::vector<Point>& points, const json& ridges,
                     const std::vector<std::string>& providers, const std::vector<std::string>& dtypes, double width,
                     double height, bool all_ceilings = false);

}  // namespace aispflow::roofline
