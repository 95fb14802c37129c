// Host side of ours.wgmma and ours.cluster: their configurations, what each can run, tensor maps, grid and
// split-K choice, and the launch (device code: hopper_gemm.cuh, compiled in hopper_instances_*.cu).
#include "kernels/cuda/ours/hopper_kernels.hpp"

#include <cuda_bf16.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <stdexcept>
#include <vector>

#include "kernels/common/gemm_pick_model.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/epilogue.cuh"
#include "kernels/common/cluster_places.hpp"
#include "kernels/cuda/ours/cluster_calibration.hpp"
#include "kernels/cuda/ours/hopper_params.hpp"
#include "kernels/cuda/ours/padded_operands.hpp"

namespace aispflow::kernels::cuda::ours {

HopperInstance hopper_instance_bf16_kmajor(int block_m, int block_n, bool ping_pong);
HopperInstance hopper_instance_bf16_mnmajor(int block_m, int block_n, bool ping_pong);
HopperInstance hopper_instance_fp8(int block_n, int promote_every);

namespace {

struct InstanceOverrides {
  std::mutex mutex;
  std::vector<std::pair<HopperInstanceKey, HopperInstance>> list;
};
InstanceOverrides& instance_overrides() {
  static InstanceOverrides overrides;
  return overrides;
}

}  // namespace

HopperInstanceOverride::HopperInstanceOverride(const HopperInstanceKey& key, const HopperInstance& instance)
    : key_(key) {
  auto& o = instance_overrides();
  const std::lock_guard lock(o.mutex);
  for (const auto& [k, i] : o.list)
    if (k == key) throw std::logic_error("a Hopper instance override for this key is already alive");
  o.list.emplace_back(key, instance);
}

HopperInstanceOverride::~HopperInstanceOverride() {
  auto& o = instance_overrides();
  const std::lock_guard lock(o.mutex);
  std::erase_if(o.list, [this](const auto& entry) { return entry.first == key_; });
}

HopperInstance hopper_instance(const HopperInstanceKey& key) {
  {
    auto& o = instance_overrides();
    const std::lock_guard lock(o.mutex);
    for (const auto& [k, i] : o.list)
      if (k == key) return i;
  }
  HopperInstance inst;
  if (key.fp8) {
    if (!key.ping_pong && key.block_m == 128) inst = hopper_instance_fp8(key.block_n, key.promote_every);
  } else {
    inst = key.b_mn_major ? hopper_instance_bf16_mnmajor(key.block_m, key.block_n, key.ping_pong)
                          : hopper_instance_bf16_kmajor(key.block_m, key.block_n, key.ping_pong);
  }
  if (!inst.launch)
    throw std::invalid_argument(std::string("no Hopper GEMM instance ") + (key.fp8 ? "fp8" : "bf16") + " with tile " +
                                std::to_string(key.block_m) + " x " + std::to_string(key.block_n) +
                                (key.ping_pong ? " and the ping-pong schedule" : ""));
  return inst;
}

namespace {

// Split-K second pass: sums the splits' fp32 partials, then the epilogue, bf16 out.
__global__ void splitk_reduce_kernel(const HopperParams p, __nv_bfloat16* c) {
  const std::int64_t count = std::int64_t(p.batch) * p.m * p.n;
  const float scale = (p.scale_a && p.scale_b) ? (*p.scale_a) * (*p.scale_b) : 1.0f;
  const auto* bias = static_cast<const __nv_bfloat16*>(p.bias);
  // Four consecutive elements per step (n is a multiple of 8, so they share a row): 16-byte partial loads.
  for (std::int64_t i = 4 * (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x); i < count;
       i += 4 * std::int64_t(gridDim.x) * blockDim.x) {
    float4 sum = *reinterpret_cast<const float4*>(p.partials + i);
    for (int s = 1; s < p.splits; ++s) {
      const float4 x = *reinterpret_cast<const float4*>(p.partials + s * count + i);
      sum.x += x.x;
      sum.y += x.y;
      sum.z += x.z;
      sum.w += x.w;
    }
    const float in[4] = {sum.x, sum.y, sum.z, sum.w};
    __align__(8) __nv_bfloat16 out[4];
    for (int e = 0; e < 4; ++e) {
      float v = scale * in[e];
      if (p.epilogue != 0) v += __bfloat162float(bias[(i + e) % p.n]);
      if (p.epilogue == 2) v = gelu_tanh_fast(v);
      out[e] = __float2bfloat16_rn(v);
    }
    *reinterpret_cast<uint2*>(c + i) = *reinterpret_cast<const uint2*>(out);
  }
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    AISPFLOW_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !p)
      throw CudaError("the CUDA driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12+ driver)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// How much an L2 miss of a TMA load fetches. 256 bytes, unless the rows are not a whole number of 128-byte lines
// apart: then each 128-byte box row straddles two lines, and 256-byte fills made the misaligned shapes 7-11 %
// slower (NOTES.md step 97: 1000 x 1000 x 1008 nn 9.2 -> 8.6 us, 3000 x 5000 x 2000 nt 211 -> 190 us, with
// 128-byte fills; 1000^3 12.3 -> 10.9). Where rows are whole lines the fill size made no difference beyond +-1 %
// (steps 34, 67, 77, 97), except 128 x 8192 x 8192, 3 % faster with 256-byte fills.
CUtensorMapL2promotion l2_promotion(std::uint64_t row_stride_bytes) {
  return row_stride_bytes % 128 == 0 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
}

// A 3-D (inner, outer, batch) row-major tensor with swizzled boxes of box_inner x box_outer (128-byte swizzle, or
// 64-byte for the 32-column C chunks of a 128 x 32 tile).
CUtensorMap tensor_map(const void* base, CUtensorMapDataType type, int elem_bytes, std::int64_t inner,
                       std::int64_t outer, std::int64_t batch, int box_inner, int box_outer,
                       CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(outer), cuuint64_t(batch)};
  const cuuint64_t strides[2] = {cuuint64_t(inner * elem_bytes), cuuint64_t(inner * outer * elem_bytes)};
  const cuuint32_t box[3] = {cuuint32_t(box_inner), cuuint32_t(box_outer), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r = tensor_map_encoder()(&map, type, 3, const_cast<void*>(base), dims, strides, box, element_strides,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2_promotion(strides[0]),
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ") for a " +
                    std::to_string(inner) + " x " + std::to_string(outer) + " x " + std::to_string(batch) +
                    " tensor, box " + std::to_string(box_inner) + " x " + std::to_string(box_outer));
  return map;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

const DeviceInfo* first_device() {
  const auto& sys = system_info();
  return sys.devices.empty() ? nullptr : &sys.devices.front();
}

// Everything bind() computes for one problem: the launch shape, and per operand copy its tensor maps.
struct Plan {
  HopperInstance instance;
  HopperParams params;
  int ctas = 0;
  std::vector<CUtensorMap> maps;   // 3 per copy: A, B, C
  std::vector<void*> outputs;      // C per copy (the split-K reduce writes it)
  DeviceBuffer partials;
  DeviceBuffer sk_partials, sk_flags;
  int cluster_ctas_override = 0;   // KernelSabotage::What::launch_without_cluster
  std::unique_ptr<PaddedOperands> padded;   // what the kernel reads and writes: padded copies where rows are unaligned
};

class HopperGemm final : public OurKernel {
 public:
  explicit HopperGemm(HopperConfig config) : config_(std::move(config)) {}
  const HopperConfig& hopper_config() const { return config_; }

  std::string identity(const GemmCase& c) const override {
    const bool mn = b_stored_mn_major(c.layout, config_.fp8);
    char text[512];
    std::snprintf(text, sizeof text,
                  "%s %s %s tile %dx%dx%d stages %d cluster %dx%d %s split-k %d; wgmma m64n%dk%d from %s-major B, "
                  "TMA loads (128B swizzle%s), 1 producer + 2 consumer warpgroups (%s), epilogue %s",
                  config_.family.c_str(), c.dtype.c_str(), c.layout.c_str(), config_.block_m, config_.block_n,
                  config_.block_k(),
                  stages(), config_.cluster_m, config_.cluster_n,
                  config_.persistent ? ("persistent raster " +
                                        std::to_string(config_.band_for(int(ceil_div(c.shape.m, config_.block_m)),
                                                                        int(ceil_div(c.shape.n, config_.block_n)))) +
                                        (config_.bands_across_n() ? " cluster-columns" : "") +
                                        (config_.ordered_by_gpc() ? " in GPC order" : "")).c_str()
                                     : "one tile per CTA",
                  splits_that_run(c.shape), config_.block_n, config_.fp8 ? 32 : 16, mn ? "MN" : "K",
                  config_.cluster_m * config_.cluster_n > 1 ? ", cluster multicast" : "",
                  config_.ping_pong()         ? "ping-pong: whole tiles in turn"
                  : config_.block_m == 256    ? "cooperative: 128 rows each"
                                               : "cooperative: 64 rows each",
                  splits_that_run(c.shape) > 1 ? "fp32 partials + reduce kernel" : "bf16 via swizzled smem + TMA store");
    std::string out = text + row_padding(c.shape, config_.fp8 ? 1 : 2, !mn).describe();
    if (trims_a_box(c.shape)) out += std::string("; ") + kATrimKernelNote + " (M <= 64)";
    if (config_.fp8)
      out += "; fp8 partial sums promoted to fp32 every " + std::to_string(128 * config_.promotion_interval) + " K" +
             (config_.staggered_promotion ? " (the two consumer warpgroups half an interval apart)" : "");
    return config_.stream_k ? out + "; " + stream_k_text(c.shape) : out;
  }

  nlohmann::json config() const override {
    nlohmann::json j = {{"name", config_.name()},     {"tile", {config_.block_m, config_.block_n, config_.block_k()}},
                        {"stages", stages()},         {"cluster", {config_.cluster_m, config_.cluster_n}},
                        {"persistent", config_.persistent}, {"raster_group", config_.raster_group},
                        {"split_k", config_.split_k == 0 ? nlohmann::json("auto") : nlohmann::json(config_.split_k)},
                        {"schedule", config_.schedule},   {"stream_k", config_.stream_k},
                        {"promotion_interval", config_.promotion_interval}};
    // The persistent grid's size on this device: the pick model's wave count rests on it, and a record that
    // carries it lets a later fit use the real count instead of inferring it (docs/kernels.md).
    if (config_.persistent)
      if (const int clusters = co_resident_clusters(); clusters > 0) j["co_resident_clusters"] = clusters;
    // Every stream-K configuration also shares all tiles where split-K would otherwise run (small_grid_tiles).
    if (config_.stream_k) j["stream_k_small_grid"] = true;
    if (config_.staggered_promotion) j["promotion_stagger"] = promotion_stagger();
    if (config_.persistent && config_.cluster_m * config_.cluster_n > 1) {
      j["work_order"] = config_.gpc_order ? "gpc" : "launch";
      j["bands"] = config_.bands_across_n() ? "cluster_columns" : "cluster_rows";
    }
    // At M <= 64 a stage loads a 64-row A box (trims_a_box): the pick model prices the rows a stage loads.
    j["a_box_trim"] = a_box_trim_capable(config_.block_m, config_.ping_pong());
    return j;
  }

  std::optional<std::string> unsupported(const GemmCase& c) const override {
    const std::string want = config_.fp8 ? "fp8_e4m3" : "bf16";
    if (c.dtype != want) return config_.family + " " + config_.name() + " runs " + want + ", not " + c.dtype;
    const DeviceInfo* d = first_device();
    if (!d) return std::string("no CUDA device");
    if (d->compute_capability() != 90)
      return "requires sm_90a (Hopper wgmma and TMA); found sm_" + std::to_string(d->compute_capability()) + " on " +
             d->name;
    const auto& s = c.shape;
    // Rows that are not 16-byte aligned (TMA's unit) run on padded copies: bind() and padded_operands.hpp.
    if (s.m > (1LL << 31) - 1 || s.n > (1LL << 31) - 1 || s.k > (1LL << 31) - 1) return std::string("dimension above 2^31");
    if (config_.cluster_m * config_.cluster_n > 1 && !config_.persistent)
      return std::string("clusters are only built persistent");   // a configuration error, never reached
    // MN-major B is loaded in boxes of 64 columns (128 bytes, the swizzle's row): a tile narrower than one cannot
    // (the kernel asserts the same at compile time); a 240-wide one loads four and leaves 16 columns unread.
    if (config_.block_n < 64 && b_stored_mn_major(c.layout, config_.fp8))
      return config_.family + " " + config_.name() + " reads B K-major only (layout nt); layout nn loads B in 64-column boxes";
    return std::nullopt;
  }

  BoundLaunch bind(const GemmProblem& problem, Epilogue epilogue_asked) const override {
    auto plan = std::make_shared<Plan>();
    const auto& s = problem.shape();
    const bool mn = !problem.b_transposed();   // B stored K x N: MN-major
    if (mn && config_.fp8) throw std::invalid_argument("fp8 wgmma needs K-major B");
    plan->instance = hopper_instance(config_.instance_key(mn));
    plan->instance.prepare();
    const int bk = plan->instance.block_k;
    const int ab_bytes = config_.fp8 ? 1 : 2;
    // The kernel runs on rows padded to 16 bytes (K to pad.k, N to pad.n); an aligned shape has pad == shape.
    const RowPadding pad = row_padding(s, ab_bytes, !mn);
    plan->padded = std::make_unique<PaddedOperands>(problem, pad, ab_bytes, epilogue_asked != Epilogue::none);
    const PaddedOperands& ops = *plan->padded;

    HopperParams& p = plan->params;
    p.m = int(s.m);
    p.n = int(pad.n);
    p.k = int(pad.k);
    p.batch = int(s.batch);
    p.m_tiles = int(ceil_div(s.m, config_.block_m));
    p.n_tiles = int(ceil_div(s.n, config_.block_n));
    p.k_tiles = int(ceil_div(s.k, bk));
    p.cluster_m = config_.cluster_m;
    p.cluster_n = config_.cluster_n;
    p.cm_tiles = int(ceil_div(p.m_tiles, p.cluster_m));
    p.cn_tiles = int(ceil_div(p.n_tiles, p.cluster_n));
    p.k_tiles_per_split = int(ceil_div(p.k_tiles, splits_for(s)));
    p.splits = splits_that_run(s);
    if (p.splits != int(ceil_div(p.k_tiles, p.k_tiles_per_split))) throw std::logic_error("split-K count disagrees");
    p.total_work = p.splits * p.batch * p.cm_tiles * p.cn_tiles;
    p.raster_group = config_.band_for(p.m_tiles, p.n_tiles);
    p.raster_along_n = config_.bands_across_n() ? 1 : 0;
    p.divisors = p.raster_along_n ? WorkDivisors::of(p.batch, p.cn_tiles, p.cm_tiles, p.raster_group)
                                  : WorkDivisors::of(p.batch, p.cm_tiles, p.cn_tiles, p.raster_group);
    p.promotion_stagger = promotion_stagger();
    const bool trim_a = trims_a_box(s) || (KernelSabotage::active(KernelSabotage::What::trim_live_rows_of_a) &&
                                            a_box_trim_capable(config_.block_m, config_.ping_pong()));
    p.a_box_rows = trim_a ? 64 : 0;
    if (KernelSabotage::active(KernelSabotage::What::launch_without_cluster)) plan->cluster_ctas_override = 1;
    if (config_.fp8) {
      p.scale_a = problem.device_scale_a();
      p.scale_b = problem.device_scale_b();
    }
    p.epilogue = int(epilogue_asked);
    p.bias = ops.bias();
    if (p.splits > 1) {
      plan->partials = DeviceBuffer(std::size_t(p.splits) * std::size_t(s.batch * s.m * pad.n) * sizeof(float));
      p.partials = plan->partials.as<float>();
    }
    const int cluster = p.cluster_m * p.cluster_n;
    int clusters = p.total_work;
    const int small_grid = small_grid_tiles(s);
    if (config_.persistent) {
      const int resident = std::max(1, co_resident_clusters(mn));
      // Small-grid stream-K runs every co-resident cluster (more clusters than tiles: each takes a k-range, at
      // least 4 k-tiles long: stream_k_small_grid_tiles).
      clusters = small_grid > 0 ? resident : std::min(clusters, resident);
    }
    plan->ctas = clusters * cluster;
    if (config_.stream_k && !config_.ping_pong() && p.splits == 1 && config_.persistent) {
      p.sk_tiles = small_grid > 0 ? small_grid
                                  : stream_k_tiles(p.total_work, clusters, p.k_tiles, config_.block_m, config_.block_n);
      if (p.sk_tiles > 0) {
        // One slot per consumer warpgroup: its share of the tile, block_m x block_n / 256 floats a thread.
        const std::size_t slot_floats = std::size_t(128) * (config_.block_m * config_.block_n / 256);
        plan->sk_partials = DeviceBuffer(std::size_t(plan->ctas) * 2 * slot_floats * sizeof(float));
        plan->sk_flags = DeviceBuffer(std::size_t(plan->ctas) * 2 * sizeof(int));
        AISPFLOW_CUDA_CHECK(cudaMemset(plan->sk_flags.get(), 0, plan->sk_flags.bytes()));
        p.sk_partials = plan->sk_partials.as<float>();
        p.sk_flags = plan->sk_flags.as<int>();
        p.sk_skip_fixup = KernelSabotage::active(KernelSabotage::What::skip_stream_k_fix_up) ? 1 : 0;
      }
    }

    if (config_.ordered_by_gpc() && clusters <= kMaxPlaces) {
      std::vector<int> place = measured_gpc_places(cluster, clusters, std::size_t(plan->instance.smem_bytes));
      if (const std::string error = place_table_error(place); !error.empty() || int(place.size()) != clusters)
        throw std::logic_error(config_.name() + ": the GPC order's place table is not a permutation of the " +
                               std::to_string(clusters) + " clusters: " + error);
      // (Test hook: two clusters given one place, one place none, past the check above.)
      if (KernelSabotage::active(KernelSabotage::What::repeat_a_place) && clusters > 1) place[1] = place[0];
      p.places = clusters;
      for (int i = 0; i < clusters; ++i) p.cluster_place[i] = std::uint8_t(place[std::size_t(i)]);
    }

    const CUtensorMapDataType ab = config_.fp8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    // A K x N B keeps its K rows when only K is padded: TMA fills rows past K with zeros, as past any tile.
    for (int copy = 0; copy < problem.copies(); ++copy) {
      plan->maps.push_back(tensor_map(ops.a(copy), ab, ab_bytes, pad.k, s.m, s.batch, bk,
                                      (trim_a ? 64 : config_.block_m) / p.cluster_n));
      if (mn)   // B row-major K x N: boxes of 64 columns x bk rows
        plan->maps.push_back(tensor_map(ops.b(copy), ab, ab_bytes, pad.n, s.k, s.batch, 64, bk));
      else      // B row-major N x K: boxes of bk x (block_n / cluster_m) rows
        plan->maps.push_back(
            tensor_map(ops.b(copy), ab, ab_bytes, pad.k, s.n, s.batch, bk, config_.block_n / p.cluster_m));
      // C: the epilogue's chunks (hopper_gemm.cuh): 64 columns, or 32 for a 128 x 32 tile.
      const int chunk_cols = epilogue_chunk_cols(config_.block_n);
      plan->maps.push_back(tensor_map(ops.c(copy), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, pad.n, s.m, s.batch, chunk_cols,
                                      kStoreRows,
                                      chunk_cols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B));
      plan->outputs.push_back(ops.c(copy));
    }
    return [plan](cudaStream_t stream, int copy) {
      plan->padded->pad_inputs(stream, copy);
      HopperLaunchArgs args;
      args.a = &plan->maps[std::size_t(copy) * 3];
      args.b = &plan->maps[std::size_t(copy) * 3 + 1];
      args.c = &plan->maps[std::size_t(copy) * 3 + 2];
      args.params = plan->params;
      args.ctas = plan->ctas;
      args.cluster_ctas_override = plan->cluster_ctas_override;
      plan->instance.launch(args, stream);
      if (plan->params.splits > 1) {
        const std::int64_t count = std::int64_t(plan->params.batch) * plan->params.m * plan->params.n;
        const unsigned blocks = unsigned(std::min<std::int64_t>(ceil_div(count, 4 * 256), 132 * 8));
        splitk_reduce_kernel<<<blocks, 256, 0, stream>>>(plan->params,
                                                         static_cast<__nv_bfloat16*>(plan->outputs[std::size_t(copy)]));
        AISPFLOW_CUDA_CHECK_LAUNCH();
      }
      plan->padded->copy_back(stream, copy);
    };
  }

 private:
  // What the stream-K rule does for this shape on the present GPU (the co-resident cluster count decides).
  std::string stream_k_text(const GemmShape& s) const {
    const DeviceInfo* d = first_device();
    if (config_.ping_pong() || splits_that_run(s) > 1 || !d || d->compute_capability() != 90)
      return "stream-K when the last wave's idle time outweighs the fix-up, or where split-K would run";
    const int clusters = co_resident_clusters();
    if (const int all = small_grid_tiles(s); all > 0)
      return "stream-K: all " + std::to_string(all) + " tiles shared by " + std::to_string(clusters) +
             " clusters (a grid the tiles cannot fill; instead of split-K)";
    const std::int64_t tiles = s.batch * ceil_div(ceil_div(s.m, config_.block_m), config_.cluster_m) *
                               ceil_div(ceil_div(s.n, config_.block_n), config_.cluster_n);
    const int shared =
        stream_k_tiles(tiles, clusters, int(ceil_div(s.k, config_.block_k())), config_.block_m, config_.block_n);
    if (shared == 0) return "stream-K off (the fix-up would cost more than the last wave leaves idle)";
    return "stream-K: the last " + std::to_string(shared) + " of " + std::to_string(tiles) + " tiles shared by " +
           std::to_string(clusters) + " clusters";
  }

  int stages() const { return hopper_instance(config_.instance_key(false)).stages; }

  // How many clusters of this configuration's size the first device holds at once (cudaOccupancyMaxActiveClusters
  // for the instance that runs: a cluster lives in one GPC, so on the H100 2x2 clusters get fewer than 132 / 4
  // slots); 0 without a Hopper device. Asked once per compiled kernel and cluster size; bind() sizes the
  // persistent grid with it, config() and the stream-K rules report and price the same number.
  int co_resident_clusters(bool b_mn_major = false) const {
    const DeviceInfo* d = first_device();
    if (!d || d->compute_capability() != 90) return 0;
    const HopperInstance inst = hopper_instance(config_.instance_key(b_mn_major));
    const int size = config_.cluster_m * config_.cluster_n;
    static std::mutex mutex;
    static std::map<std::pair<void (*)(const HopperLaunchArgs&, cudaStream_t), int>, int> known;
    std::lock_guard<std::mutex> lock(mutex);
    const auto id = std::make_pair(inst.launch, size);
    if (const auto it = known.find(id); it != known.end()) return it->second;
    inst.prepare();   // the occupancy query sees the instance's dynamic shared memory only once it is allowed
    return known[id] = inst.max_clusters(size);
  }

  // Split-K for skinny problems: when the output tiles cannot fill the GPU, split K so that about one wave of
  // CTAs runs, each split keeping at least 4 k-tiles (a shorter mainloop cannot hide its pipeline fill). The rule
  // lives with the pick model (gemm_pick_model.cpp), which predicts the same splits.
  int splits_for(const GemmShape& s) const {
    if (config_.split_k > 0) return config_.split_k;
    if (!config_.persistent) return 1;
    if (small_grid_tiles(s) > 0) return 1;   // stream-K takes the place of split-K
    const DeviceInfo* d = first_device();
    return auto_split_k({s.m, s.n, s.k, s.batch}, config_.block_m, config_.block_n, config_.block_k(),
                        d ? d->sm_count : 132);
  }

  // Small-grid stream-K (a `_sk` configuration where auto split-K would run: the tiles cannot fill the GPU): the
  // cluster tiles to share, all of them, or 0 (gemm_pick_model.cpp's small_grid_stream_k_tiles, which the pick
  // model applies too). Needs the device's co-resident cluster count: 0 without a Hopper GPU.
  int small_grid_tiles(const GemmShape& s) const {
    if (!config_.stream_k || config_.ping_pong() || !config_.persistent || config_.split_k != 0) return 0;
    const DeviceInfo* d = first_device();
    const int clusters = co_resident_clusters();
    if (!d || clusters <= 0) return 0;
    return small_grid_stream_k_tiles({s.m, s.n, s.k, s.batch}, config_.block_m, config_.block_n, config_.block_k(),
                                     config_.cluster_m, config_.cluster_n, d->sm_count, clusters);
  }

  // At M <= 64 a stage loads only A's first 64 rows (HopperParams::a_box_rows): cooperative 128-row tiles; in a
  // 1x2 cluster each CTA loads 32 of them and multicasts them to both.
  bool trims_a_box(const GemmShape& s) const { return a_box_trimmed(s.m, config_.block_m, config_.ping_pong()); }

  // k-tiles that consumer warpgroup 1 promotes one at a time before its first interval: half an interval.
  int promotion_stagger() const {
    return config_.fp8 && config_.staggered_promotion ? config_.promotion_interval / 2 : 0;
  }

  // The splits that run: every split takes ceil(k_tiles / requested) k-tiles, so fewer splits may be needed
  // than requested (K = 2880 is 45 k-tiles: 11 requested give 5 per split, i.e. 9 splits). The record's
  // `kernel` names these, not the request.
  int splits_that_run(const GemmShape& s) const {
    const std::int64_t k_tiles = ceil_div(s.k, config_.block_k());
    const std::int64_t per_split = ceil_div(k_tiles, splits_for(s));
    return int(ceil_div(k_tiles, std::max<std::int64_t>(per_split, 1)));
  }

  HopperConfig config_;
};

}  // namespace

std::string HopperConfig::name() const {
  return std::to_string(block_m) + "x" + std::to_string(block_n) + "x" + std::to_string(block_k()) + "_c" + std::to_string(cluster_m) +
         "x" + std::to_string(cluster_n) + (persistent ? "_persistent" : "") +
         (split_k > 0 ? "_splitk" + std::to_string(split_k) : "") + (schedule == "cooperative" ? "" : "_" + schedule) + (stream_k ? "_sk" : "") +
         (promotion_interval > 1 ? "_promote" + std::to_string(promotion_interval) : "") +
         (staggered_promotion ? "_stagger" : "") +
         (!gpc_order && persistent && cluster_m * cluster_n > 1 ? "_launchorder" : "") +
         (ordered_by_gpc() && !balanced_bands ? "_fixedbands" : "");
}

int HopperConfig::band_for(int m_tiles, int n_tiles) const {
  if (!ordered_by_gpc() || !balanced_bands) return raster_group;
  return balanced_band_width(raster_group, bands_across_n() ? (n_tiles + cluster_n - 1) / cluster_n
                                                            : (m_tiles + cluster_m - 1) / cluster_m);
}

namespace {
// Live hooks per kind: one counter per enumerator, chosen by a switch without a default, so that a new kind
// without its counter is a compiler warning (-Wswitch) rather than an array indexed past its end.
std::atomic<int>& live_hooks(KernelSabotage::What what) {
  static std::atomic<int> skip_fix_up{0}, trim_rows{0}, without_cluster{0}, repeat_place{0};
  switch (what) {
    case KernelSabotage::What::skip_stream_k_fix_up: return skip_fix_up;
    case KernelSabotage::What::trim_live_rows_of_a: return trim_rows;
    case KernelSabotage::What::launch_without_cluster: return without_cluster;
    case KernelSabotage::What::repeat_a_place: return repeat_place;
  }
  std::abort();   // not a KernelSabotage::What
}
}  // namespace
KernelSabotage::KernelSabotage(What what) : what_(what) { ++live_hooks(what); }
KernelSabotage::~KernelSabotage() { --live_hooks(what_); }
bool KernelSabotage::active(What what) { return live_hooks(what).load() > 0; }

std::unique_ptr<OurKernel> make_hopper_kernel(const HopperConfig& config) {
  return std::make_unique<HopperGemm>(config);
}

const HopperConfig* hopper_config_of(const OurKernel& kernel) {
  const auto* hopper = dynamic_cast<const HopperGemm*>(&kernel);
  return hopper ? &hopper->hopper_config() : nullptr;
}

// ours.wgmma: one tile per CTA, no cluster: the TMA + wgmma + warp-specialization technique on its own.
std::vector<std::unique_ptr<OurKernel>> wgmma_kernels() {
  std::vector<std::unique_ptr<OurKernel>> out;
  for (bool fp8 : {false, true})
    for (int bn : {256, 192, 128})
      if (!fp8 || bn <= 192) out.push_back(make_hopper_kernel({"ours.wgmma", fp8, bn, 1, 1, false, 8, 1}));
  return out;
}

// ours.cluster: the same mainloop, persistent over a rasterized tile order, clusters multicasting the shared
// operand (2x1: B, 1x2: A, 2x2: both), split-K for skinny shapes. `autotune` tries every configuration that
// can run a case; pick_cluster() chooses one without a search.
std::vector<HopperConfig> cluster_configs() {
  std::vector<HopperConfig> out;
  const std::pair<int, int> clusters[] = {{2, 1}, {1, 2}, {2, 2}, {1, 1}};
  for (int bn : {256, 192, 128})
    for (auto [cm, cn] : clusters) out.push_back({"ours.cluster", false, bn, cm, cn, true, 8, 0});
  // The ping-pong schedule: 128 x 128 tiles, one per consumer warpgroup at a time.
  for (auto [cm, cn] : clusters)
    out.push_back({"ours.cluster", false, 128, cm, cn, true, 8, 0, "pingpong"});
  // 256 x 128 tiles (bf16): each consumer warpgroup 128 rows x 128 columns, two m64n128 wgmmas per k-step, the
  // tile cuBLASLt's heuristic runs at 4096^3 (NOTES.md step 17).
  for (auto [cm, cn] : clusters) {
    HopperConfig tall{"ours.cluster", false, 128, cm, cn, true, 8, 0};
    tall.block_m = 256;
    out.push_back(tall);
  }
  // fp8 promotes each k-tile through a second accumulator set: block N 256 would not fit (hopper_instances_fp8.cu).
  for (int bn : {192, 128})
    for (auto [cm, cn] : clusters) out.push_back({"ours.cluster", true, bn, cm, cn, true, 8, 0});
  // fp8 promoting every 4 k-tiles (512 K), with and without stream-K (every 2 was slower than every 4 on each
  // shape measured, NOTES.md step 16).
  for (int interval : {4})
    for (int bn : {192, 128})
      for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}})
        for (bool sk : {false, true})
          out.push_back({"ours.cluster", true, bn, cm, cn, true, 8, 0, "cooperative", sk, interval});
  // fp8 promoting every 8 k-tiles (1024 K): half the drains of promote4 (NOTES.md step 43: the drains are most of
  // what fp8 loses to the tensor pipe), more rounding in the tensor cores' partial sums, which the verification
  // bounds with the same fp8 tolerance as every other configuration.
  for (int bn : {192, 128})
    for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}})
      out.push_back({"ours.cluster", true, bn, cm, cn, true, 8, 0, "cooperative", false, 8});
  // The same, the two consumer warpgroups promoting half an interval apart (NOTES.md step 21).
  for (int bn : {192, 128})
    for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}}) {
      HopperConfig staggered{"ours.cluster", true, bn, cm, cn, true, 8, 0, "cooperative", false, 4};
      staggered.staggered_promotion = true;
      out.push_back(staggered);
    }
  // 128 x 64 tiles (NOTES.md step 22): they fill grids that wider tiles leave half empty (128 x 8192 x 8192 and
  // 1000^3 make 128 tiles, one wave, where 128 x 128 makes 64 and splits K), and win there by 5-24 %. Built for
  // decode, where they measured slower than 128 x 192 with split-K. bf16 (B either way) and fp8 promote4.
  // The bf16 tile alone walks bands of 2 tile rows instead of 8: its CTAs then read 28 % fewer L2 sectors for the
  // same loads at 1000 x 1000 x 1008 (nn), 12 % faster, and 2048^3 runs 7-11 % faster; equal at 128 x 8192 x 8192,
  // K = 256 and fp8 1000^3. The 1x2 pair, whose band 2 lost at 2048^3, keeps 8 (NOTES.md step 93). The 2x1 pair,
  // in GPC order (bands of cluster-columns), takes bands of 16: 5-15 % faster than bands of 2 there at 1000 x 1000
  // x 1008 (nn) and 4096^3, equal at 2048^3 (NOTES.md step 127).
  for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2}}) {
    const int band = cm == 2 ? 16 : cn == 1 ? 2 : 8;
    out.push_back({"ours.cluster", false, 64, cm, cn, true, band, 0});
  }
  for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}})
    out.push_back({"ours.cluster", true, 64, cm, cn, true, 8, 0, "cooperative", false, 4});
  // 128 x 32 tiles (NOTES.md step 44), for decode: the tile cuBLASLt's decode kernels run (32 of N by the 64 rows
  // of M). At N = 2880 they make 90 tiles, a wave without split-K, where 128 x 64 makes 45 and splits K in two
  // (fp32 partials, a reduce kernel). Alone or as a 1x2 pair multicasting A (every CTA reads all of A from L2).
  // B K-major only (layout nt; fp8 is always K-major).
  for (auto [cm, cn] : {std::pair{1, 1}, std::pair{1, 2}}) {
    out.push_back({"ours.cluster", false, 32, cm, cn, true, 8, 0});
    out.push_back({"ours.cluster", true, 32, cm, cn, true, 8, 0, "cooperative", false, 4});
  }
  // 128 x 240 tiles (bf16; NOTES.md step 145): N = 2880 in 12 whole tiles (4096 x 2880: 384 tiles, 2.9 waves),
  // where 256 runs the same 3 waves with a last column three quarters empty, 6 % of the tensor work for nothing.
  // As a 2x1 pair only: alone and as a 1x2 pair it won nothing (a tie at K = 128) and lost 8-10 % to the pair in
  // layout nn, whose B boxes start mid-line in three tiles of four, and 16-30 % at 3000 x 5000 x 2001 (run-fb99c92).
  out.push_back({"ours.cluster", false, 240, 2, 1, true, 8, 0});
  // Stream-K for the last wave, on the clusters that win large shapes (2x1) and without a cluster.
  for (int bn : {256, 192, 128})
    for (auto [cm, cn] : {std::pair{2, 1}, std::pair{1, 1}})
      out.push_back({"ours.cluster", false, bn, cm, cn, true, 8, 0, "cooperative", true});
  for (int bn : {192, 128})
    for (auto [cm, cn] : {std::pair{2, 1}, std::pair{1, 1}})
      out.push_back({"ours.cluster", true, bn, cm, cn, true, 8, 0, "cooperative", true});
  return out;
}
std::vector<std::unique_ptr<OurKernel>> cluster_kernels() {
  std::vector<std::unique_ptr<OurKernel>> out;
  for (const HopperConfig& config : cluster_configs()) out.push_back(make_hopper_kernel(config));
  return out;
}

namespace {

// The block N that wastes least of the last column of tiles: the largest of 256 / 192 / 128 dividing N, else 256.
int block_n_for(std::int64_t n, bool fp8) {
  for (int bn : {256, 192, 128})
    if (!(fp8 && bn > 192) && n % bn == 0) return bn;
  return fp8 ? 192 : 256;
}

std::size_t find_config(const std::vector<std::unique_ptr<OurKernel>>& list, bool fp8, int bn, int cm, int cn) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto c = list[i]->config();
    if (c["tile"][1] == bn && c["cluster"][0] == cm && c["cluster"][1] == cn &&
        (c["tile"][2].get<int>() == 128) == fp8)
      return i;
  }
  return 0;
}

}  // namespace

std::size_t pick_wgmma(const std::vector<std::unique_ptr<OurKernel>>& list, const GemmCase& c) {
  const bool fp8 = c.dtype == "fp8_e4m3";
  return find_config(list, fp8, block_n_for(c.shape.n, fp8), 1, 1);
}

// The least time the pick model predicts (kernels/common/gemm_pick_model.hpp, docs/kernels.md: waves and the
// last wave's fill, tile quantization, operand traffic, cluster coupling, split-K), among the configurations that
// can run the case; with none (no device, a shape no configuration takes), among those of the case's dtype, so
// that the provider names that configuration's reason.
std::size_t pick_cluster(const std::vector<std::unique_ptr<OurKernel>>& list, const GemmCase& c) {
  const bool fp8 = c.dtype == "fp8_e4m3";
  std::vector<PickConfig> runnable, of_dtype;
  std::vector<std::size_t> runnable_at, of_dtype_at;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const PickConfig pc = pick_config_from_json(list[i]->config());
    if ((pc.block_k == 128) != fp8) continue;   // 128 bytes of K: 128 fp8 or 64 bf16 elements
    of_dtype.push_back(pc);
    of_dtype_at.push_back(i);
    if (!list[i]->unsupported(c)) {
      runnable.push_back(pc);
      runnable_at.push_back(i);
    }
  }
  const auto& configs = runnable.empty() ? of_dtype : runnable;
  const auto& at = runnable.empty() ? of_dtype_at : runnable_at;
  if (configs.empty()) return 0;
  const DeviceInfo* d = first_device();
  const PickShape shape{c.shape.m, c.shape.n, c.shape.k, c.shape.batch, b_stored_mn_major(c.layout, fp8)};
  return at[pick_argmin(shape, c.dtype, configs, h100_pick_constants(), d ? d->sm_count : 132)];
}

}  // namespace aispflow::kernels::cuda::ours
