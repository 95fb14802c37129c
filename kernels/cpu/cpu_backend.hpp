#pragma once
#include <memory>

#include "kernels/common/backend.hpp"

namespace aispflow::kernels {
// The CPU backend: always built; the default where no GPU is found. Providers cpu.naive, cpu.blocked,
// cpu.openblas; STREAM-style bandwidth and FMA compute probes; fingerprint = CPU model, cores, build id.
std::unique_ptr<Backend> make_cpu_backend();
// The CPU providers by name, for other backends that also offer them (nullptr for unknown names).
std::unique_ptr<GemmProvider> make_cpu_provider(const std::string& name);
std::vector<std::string> cpu_provider_names();
}  // namespace aispflow::kernels
