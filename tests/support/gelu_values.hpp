#pragma once
// GELU (tanh form) at exactly representable inputs, computed with mpmath 1.3.0 at 30 significant digits
// (tests/unit/test_gelu.cpp shows the formula), for the host and GPU tests of gelu_tanh. The comment on each row
// is how far the erf form of GELU lies from it, to show which rows tell the two forms apart.
#include <cmath>
#include <utility>

namespace aispflow::test {

inline constexpr std::pair<double, double> kGeluTanhValues[] = {
    {-6.0, -8.43964670076229708371e-11},       // erf form differs by 5.84e-9
    {-3.0, -0.00363739208177301883782},        // erf form differs by 0.000412
    {-1.5, -0.100428423019767077551},          // erf form differs by -0.000218
    {-0.75, -0.170039444834379695816},         // erf form differs by -6.89e-5
    {-0.25, -0.100324649298314999775},         // erf form differs by -1.23e-6
    {-0.0078125, -0.00388190074450059777315},  // erf form differs by -1.23e-12
    {0.0, 0.0},                                // erf form differs by 0
    {0.5, 0.345714009825143922038},            // erf form differs by -1.72e-5
    {1.0, 0.841191990608276704782},            // erf form differs by -0.000153
    {2.0, 1.95459769408777501878},             // erf form differs by 9.8e-5
    {3.0, 2.99636260791822698116},             // erf form differs by 0.000412
    {10.0, 10.0},                              // erf form differs by 7.62e-23
};

// fp32 evaluation: 1 + tanh cancels for negative x, so an absolute term (a few ulp of 1) besides a relative one.
inline double gelu_tolerance(double want) { return 1e-6 + 1e-6 * std::abs(want); }

}  // namespace aispflow::test
