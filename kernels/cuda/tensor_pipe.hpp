#pragma once
// The tensor-pipe ceiling of a GPU: "tensor.<dtype>", the rate of the tensor cores alone. A roof that GEMMs
// exceed is not a roof, so this ceiling is measured without a GEMM: every SM runs back-to-back wgmma m64n256
// instructions on operands that stay in shared memory (A also from registers), with no global-memory traffic,
// and the SM clock of the run is recorded. Before it is timed, every accumulator of every block is compared with
// its closed form (steps x K x row value x column value, exact by construction), and afterwards the rate is held
// against the dense tensor rate at the clock it ran: a figure above that is physics broken, reported as failed.
// cuBLASLt's 8192^3 GEMM stays beside it as `gemm.<dtype>`, an achieved reference (kind "achieved"), not a roof.
#include <optional>
#include <string>

#include "kernels/common/backend.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/harness.hpp"

namespace aispflow::kernels::cuda {

// Test hooks: each makes the probe do less than it claims, so a test sees its check fail. Tests alone pass
// anything but `none`.
enum class TensorPipeSabotage {
  none,
  half_steps,    // the kernel runs half the steps the closed form assumes
  noop,          // nothing is launched
  half_blocks,   // only half the SMs get a block
};

// The dtypes the probe knows: bf16, fp16, tf32, fp8_e4m3.
bool tensor_pipe_knows(const std::string& dtype);

// Dense tensor-core FLOP per SM per clock for a compute capability and dtype, from NVIDIA's published dense
// rates divided by SM count and boost clock (H100 SXM: 989.4 TFLOP/s bf16 = 132 SMs x 1830 MHz x 4096);
// nullopt where unknown.
std::optional<double> tensor_flops_per_sm_clock(int compute_capability, const std::string& dtype);

// Measures "tensor.<dtype>" on the harness's device. A device without wgmma (anything but sm_90) gets a
// "not measured" ceiling that says why; a failed check gets status "failed" and no value.
Ceiling measure_tensor_pipe(Harness& harness, const DeviceInfo& device, const std::string& dtype,
                            const TimingPolicy& timing, TensorPipeSabotage sabotage = TensorPipeSabotage::none);

}  // namespace aispflow::kernels::cuda
