#include "kernels/common/cluster_places.hpp"

#include <map>
#include <stdexcept>

namespace aispflow::kernels {

std::vector<int> gpc_cluster_places(const std::vector<int>& cluster_sm, const std::vector<int>& sm_group) {
  // Each cluster's group: the GPCs numbered in the order their first cluster appears, unknown SMs last.
  std::map<int, int> rank_of_gpc;
  std::vector<int> group_of;
  for (std::size_t i = 0; i < cluster_sm.size(); ++i) {
    const int sm = cluster_sm[i];
    if (sm < 0 || sm >= int(sm_group.size()))
      throw std::invalid_argument("cluster " + std::to_string(i) + " ran on SM " + std::to_string(sm) +
                                  ", outside the " + std::to_string(sm_group.size()) + " SMs calibrated");
    const int gpc = sm_group[std::size_t(sm)];
    group_of.push_back(gpc < 0 ? -1 : rank_of_gpc.emplace(gpc, int(rank_of_gpc.size())).first->second);
  }
  const int unknown = int(rank_of_gpc.size());
  for (int& g : group_of)
    if (g < 0) g = unknown;
  // Places: group by group, launch order within a group.
  std::vector<int> place(group_of.size());
  int next = 0;
  for (int g = 0; g <= unknown; ++g)
    for (std::size_t i = 0; i < group_of.size(); ++i)
      if (group_of[i] == g) place[i] = next++;
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
