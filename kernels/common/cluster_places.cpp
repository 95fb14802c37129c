#include "kernels/common/cluster_places.hpp"

#include <stdexcept>

namespace aispflow::kernels {

std::vector<int> gpc_cluster_places(const std::vector<int>& cluster_sm, const std::vector<int>& sm_group) {
  const int clusters = int(cluster_sm.size());
  // Groups in the order their first cluster appears; unknown SMs form the last group.
  std::vector<int> group_rank(sm_group.size() + 1, -1);
  std::vector<int> group_of(static_cast<std::size_t>(clusters));
  int groups = 0;
  for (int i = 0; i < clusters; ++i) {
    const int sm = cluster_sm[std::size_t(i)];
    if (sm < 0 || sm >= int(sm_group.size()))
      throw std::invalid_argument("cluster " + std::to_string(i) + " ran on SM " + std::to_string(sm) +
                                  ", outside the " + std::to_string(sm_group.size()) + " SMs calibrated");
    const int g = sm_group[std::size_t(sm)];
    if (g >= 0) {
      if (std::size_t(g) >= group_rank.size()) group_rank.resize(std::size_t(g) + 1, -1);
      if (group_rank[std::size_t(g)] < 0) group_rank[std::size_t(g)] = groups++;
      group_of[std::size_t(i)] = group_rank[std::size_t(g)];
    } else {
      group_of[std::size_t(i)] = -1;
    }
  }
  for (int i = 0; i < clusters; ++i)
    if (group_of[std::size_t(i)] < 0) group_of[std::size_t(i)] = groups;   // unknown: last
  std::vector<int> place(static_cast<std::size_t>(clusters));
  int next = 0;
  for (int g = 0; g <= groups; ++g)
    for (int i = 0; i < clusters; ++i)
      if (group_of[std::size_t(i)] == g) place[std::size_t(i)] = next++;
  return place;
}

std::string place_table_error(const std::vector<int>& place) {
  std::vector<char> taken(place.size(), 0);
  for (std::size_t i = 0; i < place.size(); ++i) {
    const int p = place[i];
    if (p < 0 || std::size_t(p) >= place.size())
      return "cluster " + std::to_string(i) + " has place " + std::to_string(p) + ", outside 0.." +
             std::to_string(place.size() - 1);
    if (taken[std::size_t(p)]++)
      return "place " + std::to_string(p) + " is given to two clusters (the second: cluster " + std::to_string(i) + ")";
  }
  return {};
}

}  // namespace aispflow::kernels
