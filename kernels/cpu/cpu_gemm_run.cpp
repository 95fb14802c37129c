#include "kernels/cpu/cpu_gemm_run.hpp"

#include <chrono>
#include <cstdio>
#include <limits>
#include <span>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "kernels/common/fingerprint.hpp"
#include "kernels/common/verify.hpp"

namespace aispflow::kernels {

namespace {

// Distinct seeds for A and B, fixed so that every provider sees the same inputs for the same shape.
constexpr std::uint64_t kSeedA = 0xA11CE, kSeedB = 0xB0B;

std::string gib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1 << 30));
  return buf;
}

// Between timed samples: stream through a buffer twice the size of the last-level cache so the next
// sample starts with A, B and C out of cache, as a GEMM inside a model layer would.
class CacheFlusher {
 public:
  CacheFlusher() : buffer_(std::size_t(2 * last_level_cache_bytes()) / sizeof(float), 1.0f) {}
  void operator()() {
    float* p = buffer_.data();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, buffer_.size(), 1 << 16), [p](const auto& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) p[i] += 1.0f;
    });
  }

 private:
  std::vector<float> buffer_;
};

template <class T>
GemmRecord run_impl(const CpuGemmJob& job, const CpuGemmCall<T>& call) {
  const GemmShape& s = job.shape;
  GemmRecord rec;
  rec.provider = job.provider;
  rec.kernel = job.kernel;
  rec.shape = s;
  rec.dtype = job.dtype;
  rec.tolerance = default_tolerance(job.dtype, s.k);

  const std::size_t a_count = std::size_t(s.batch * s.m * s.k), b_count = std::size_t(s.batch * s.k * s.n),
                    c_count = std::size_t(s.batch * s.m * s.n);
  std::vector<T> a(a_count), b(b_count), c(c_count);
  fill_random(std::span<T>(a), kSeedA);
  fill_random(std::span<T>(b), kSeedB);
  // NaN in every output element: anything the kernel fails to write is caught by verification.
  std::fill(c.begin(), c.end(), std::numeric_limits<T>::quiet_NaN());

  auto run_all = [&] {
    for (std::int64_t bb = 0; bb < s.batch; ++bb)
      call(a.data() + bb * s.m * s.k, b.data() + bb * s.k * s.n, c.data() + bb * s.m * s.n);
  };

  run_all();
  const VerifyResult v = verify_gemm(s, a.data(), b.data(), c.data(), rec.tolerance);
  rec.max_rel_err = v.max_rel_err;
  rec.extra["verification"] = {{"checked_elements", v.checked}, {"detail", v.detail}};
  if (!v.ok) {
    rec.status = "failed";
    rec.reason = "verification failed: " + v.detail;
    return rec;   // a wrong result is never timed
  }
  rec.verified = true;

  std::function<void()> between;
  std::optional<CacheFlusher> flusher;
  if (job.timing.flush_cache) {
    flusher.emplace();
    between = [&] { (*flusher)(); };
  }
  rec.time = measure(job.timing,
                     [&] {
                       const auto start = std::chrono::steady_clock::now();
                       run_all();
                       return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                           .count();
                     },
                     between);
  rec.extra["timing"] = job.timing.to_json();
  return rec;
}

}  // namespace

GemmRecord run_cpu_gemm(const CpuGemmJob& job, const CpuGemmCall<float>& call) { return run_impl(job, call); }
GemmRecord run_cpu_gemm(const CpuGemmJob& job, const CpuGemmCall<double>& call) { return run_impl(job, call); }

std::optional<std::string> cpu_memory_limit(const GemmShape& s, const std::string& dtype) {
  const int bytes = dtype == "fp64" ? 8 : 4;
  const double needed =
      double(s.batch) * (double(s.m) * double(s.k) + double(s.k) * double(s.n) + double(s.m) * double(s.n)) * bytes;
  const double memory = double(total_memory_bytes());
  if (memory > 0 && needed > memory / 2)
    return "needs " + gib_text(needed) + " for A, B and C, more than half of this machine's " + gib_text(memory);
  return std::nullopt;
}

}  // namespace aispflow::kernels
