// Statistics + histogram of one large tensor, next to torch doing the same.
//
//   bench_stats [CHECKPOINT [TENSOR]]
//
// Defaults: build/bench-data/gpt2s-sinks_step12000.pt (bench/run_bench.sh
// writes it) and its model_state.token_embed.weight, 50257 x 768 float32
// (38.6M elements). Without that file a 50257 x 768 randn tensor is written
// to a temporary file by /usr/bin/python3. The Python anchor times
// min / max / mean / std / norm / histc(100 bins) on the same tensor,
// loaded with torch.load, in the same run (load time not counted).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ckpt/analysis/tensor_stats.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_data.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string run(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    pclose(p);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : "build/bench-data/gpt2s-sinks_step12000.pt";
  std::string name = argc > 2 ? argv[2] : "model_state.token_embed.weight";
  const auto tmp = std::filesystem::temp_directory_path() / "ckpt_bench_stats.pt";
  if (!std::filesystem::exists(path)) {
    path = tmp.string();
    name.assign(1, 'w');  // not = "w": GCC 12 warns falsely (-Wrestrict, PR 105329)
    std::printf("no checkpoint given: writing a 50257 x 768 float32 tensor to %s\n", path.c_str());
    std::string cmd = "/usr/bin/python3 -c \"import torch; torch.manual_seed(0); ";
    cmd += "torch.save({'w': torch.randn(50257, 768) * 0.02}, '";
    cmd += path;
    cmd += "')\"";
    if (std::system(cmd.c_str()) != 0) return 1;
  }
  const auto file = ckpt::CheckpointFile::open(path);
  int index = -1;
  for (size_t i = 0; i < file->tensors().size(); ++i)
    if (ckpt::joinPath(file->tensors()[i].path) == name) index = int(i);
  if (index < 0) {
    std::fprintf(stderr, "bench_stats: no tensor %s in %s\n", name.c_str(), path.c_str());
    return 1;
  }
  const ckpt::TensorData data = file->tensorData(size_t(index));
  std::printf("tensor: %s %s %s, %llu elements\n", name.c_str(),
              std::string(ckpt::dtypeName(data.info().dtype)).c_str(),
              data.info().shapeString().c_str(), (unsigned long long)data.numel());

  ckpt::AnalysisOptions opt;
  opt.bins = 100;
  ckpt::AnalysisOptions withHeat = opt;
  withHeat.heatRows = 400;
  withHeat.heatCols = 600;
  std::vector<double> both, statsOnly, heat, oneThread;
  ckpt::TensorStats s;
  (void)ckpt::analyzeTensor(data,
                            opt);  // page the bytes in: the anchor's torch.load reads them too
  for (int it = 0; it < 5; ++it) {
    auto t0 = Clock::now();
    const auto a = ckpt::analyzeTensor(data, opt);
    auto t1 = Clock::now();
    const auto st = ckpt::computeStats(data);
    auto t2 = Clock::now();
    const auto h = ckpt::analyzeTensor(data, withHeat);
    auto t3 = Clock::now();
    ckpt::AnalysisOptions single = opt;
    single.threads = 1;
    const auto o = ckpt::analyzeTensor(data, single);
    auto t4 = Clock::now();
    both.push_back(seconds(t0, t1));
    statsOnly.push_back(seconds(t1, t2));
    heat.push_back(seconds(t2, t3));
    oneThread.push_back(seconds(t3, t4));
    s = a->stats;
    (void)st;
    (void)h;
    (void)o;
  }
  std::printf("stats: min %.9g max %.9g mean %.9g std %.9g norm %.9g\n", s.min, s.max, s.mean,
              s.std, s.l2norm);

  // Dotted names: take the longest key that prefixes what is left (state
  // dict keys carry dots themselves).
  std::string py = "/usr/bin/python3 - <<'EOF'\n";
  py += "import time, torch\n";
  py += "t = torch.load('";
  py += path;
  py += "', map_location='cpu')\nrest = '";
  py += name;
  py += "'\n";
  py += "while rest:\n";
  py += "    keys = [k for k in t.keys() if rest == k or rest.startswith(str(k) + '.')]\n";
  py += "    k = max(keys, key=lambda k: len(str(k)))\n";
  py += "    t, rest = t[k], rest[len(str(k)) + 1:]\n";
  py += "times = []\n";
  py += "for _ in range(5):\n";
  py += "    t0 = time.perf_counter()\n";
  py += "    lo, hi = t.min().item(), t.max().item()\n";
  py += "    m, s, n = t.mean().item(), t.std().item(), t.norm().item()\n";
  py += "    h = torch.histc(t, 100, lo, hi)\n";
  py += "    times.append(time.perf_counter() - t0)\n";
  py += "times.sort()\n";
  py += "print(times[len(times) // 2], torch.get_num_threads())\n";
  py += "EOF";
  const std::string anchor = run(py);
  double pyTime = 0;
  int pyThreads = 0;
  std::sscanf(anchor.c_str(), "%lf %d", &pyTime, &pyThreads);

  std::printf("\n%-52s %10s\n", "median of 5", "seconds");
  std::printf("%-52s %10.3f\n", "CkptScope stats + histogram (analyzeTensor)", median(both));
  std::printf("%-52s %10.3f\n", "CkptScope stats only (computeStats)", median(statsOnly));
  std::printf("%-52s %10.3f\n", "CkptScope stats + histogram + 400x600 heat map", median(heat));
  std::printf("%-52s %10.3f\n", "CkptScope stats + histogram, one thread", median(oneThread));
  if (pyTime > 0) {
    std::printf("%-52s %10.3f  (%d threads, float32 reductions)\n",
                "torch min/max/mean/std/norm/histc", pyTime, pyThreads);
    std::printf("ratio torch / CkptScope: %.2fx (goal: CkptScope < 0.5 s)\n",
                pyTime / median(both));
  } else {
    std::printf("python anchor failed: %s\n", anchor.c_str());
  }
  std::filesystem::remove(tmp);
  return 0;
}
