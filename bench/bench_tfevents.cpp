// TensorBoard event files for bench/run_tfevents_bench.sh: writes them
// (fast, in C++: a Python writer spends minutes checksumming a gigabyte) and
// reads them with core/index's reader, printing what it took.
//
//   bench_tfevents write FILE MB [scalars]   a file of about MB megabytes
//   bench_tfevents runs DIR N STEPS          N run folders of STEPS steps each
//                                            (loss and a merged summary a step)
//   bench_tfevents read FILE                 {"bytes", "seconds", "records", "scalars"}
//
// The mixed file is what a vision or LLM run leaves: per step a loss event
// and a merged summary (lr, grad norm, a float32 tensor scalar), a
// 64-bucket histogram tensor, and every 20th step a 256 KB image.
// `scalars`: only scalar events (about 45 bytes a record): the reader's
// worst case per byte.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "ckpt/index/tfevents.h"
#include "crc32c.h"

namespace {

void varint(std::string& out, uint64_t n) {
  while (n >= 0x80) {
    out.push_back(char(n | 0x80));
    n >>= 7;
  }
  out.push_back(char(n));
}
void key(std::string& out, uint32_t field, uint32_t wire) {
  varint(out, field << 3 | wire);
}
void bytesField(std::string& out, uint32_t field, const std::string& b) {
  key(out, field, 2);
  varint(out, b.size());
  out += b;
}
void doubleField(std::string& out, uint32_t field, double d) {
  key(out, field, 1);
  out.append(reinterpret_cast<const char*>(&d), 8);
}
void floatField(std::string& out, uint32_t field, float f) {
  key(out, field, 5);
  out.append(reinterpret_cast<const char*>(&f), 4);
}

// Event{wall_time 1, step 2, summary 5 {value 1 ...}}.
std::string event(double wall, int64_t step, const std::vector<std::string>& values) {
  std::string e, summary;
  doubleField(e, 1, wall);
  key(e, 2, 0);
  varint(e, uint64_t(step));
  for (const std::string& v : values) bytesField(summary, 1, v);
  bytesField(e, 5, summary);
  return e;
}
std::string simple(const std::string& tag, float x) {
  std::string v;
  bytesField(v, 1, tag);
  floatField(v, 2, x);
  return v;
}
// A TensorProto of dtype float (1) / double (2) with `dims` and raw content.
std::string tensorValue(const std::string& tag, uint64_t dtype, const std::vector<int>& dims,
                        const std::string& content) {
  std::string t, shape, v;
  key(t, 1, 0);
  varint(t, dtype);
  for (int d : dims) {
    std::string dim;
    key(dim, 1, 0);
    varint(dim, uint64_t(d));
    bytesField(shape, 2, dim);
  }
  bytesField(t, 2, shape);
  bytesField(t, 4, content);
  bytesField(v, 1, tag);
  bytesField(v, 8, t);
  return v;
}

void record(std::FILE* f, const std::string& data) {
  char header[12];
  const uint64_t n = data.size();
  std::memcpy(header, &n, 8);
  const uint32_t h =
      ckpt::detail::maskCrc32c(ckpt::detail::crc32c(reinterpret_cast<uint8_t*>(header), 8));
  std::memcpy(header + 8, &h, 4);
  const uint32_t d = ckpt::detail::maskCrc32c(
      ckpt::detail::crc32c(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  std::fwrite(header, 1, 12, f);
  std::fwrite(data.data(), 1, data.size(), f);
  std::fwrite(&d, 1, 4, f);
}

std::string fileVersion(double wall) {
  std::string e;
  doubleField(e, 1, wall);
  bytesField(e, 3, "brain.Event:2");
  return e;
}

// What a step writes: a loss event only; that and the merged summary (a
// sweep's run); those, a histogram and every 20th step an image.
enum class Kind { Scalars, Sweep, Mixed };

// Writes steps until the file holds `bytes`; returns the steps written.
int64_t writeRun(const std::string& path, uint64_t bytes, Kind kind, int64_t maxSteps) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  std::mt19937_64 rng(42);
  std::string image(256 << 10, '\0');
  for (char& c : image) c = char(rng());
  std::string hist(64 * 3 * 8, '\0');
  const double t0 = 1.7e9;
  record(f, fileVersion(t0));
  int64_t step = 0;
  for (; step < maxSteps && uint64_t(std::ftell(f)) < bytes; ++step) {
    const double wall = t0 + double(step) * 0.25;
    const float loss = float(2 + 3 * std::exp(-double(step) / 1e5) + 0.05 * std::sin(step));
    record(f, event(wall, step, {simple("train/loss", loss)}));
    if (kind == Kind::Scalars) continue;
    const float x = float(step);
    record(f,
           event(wall, step,
                 {simple("train/learning_rate", 3e-4f), simple("train/grad_norm", 1.0f / (x + 1)),
                  tensorValue("train/tokens_per_sec", 1, {},
                              std::string(reinterpret_cast<const char*>(&x), 4))}));
    if (kind == Kind::Sweep) continue;
    for (size_t i = 0; i < hist.size(); i += 8) {
      const double b = double(i) + x;
      std::memcpy(hist.data() + i, &b, 8);
    }
    record(f, event(wall, step, {tensorValue("weights/histogram", 2, {64, 3}, hist)}));
    if (step % 20 == 0) {
      std::string v, img;
      bytesField(img, 4, image);
      bytesField(v, 1, "samples/image");
      bytesField(v, 4, img);
      record(f, event(wall, step, {v}));
    }
  }
  std::fclose(f);
  return step;
}

class Count : public ckpt::TfEventsHandler {
 public:
  uint64_t scalars = 0;
  double sum = 0;  // used, so the values are really read
  void scalar(std::string_view, const ckpt::MetricPoint& p) override {
    ++scalars;
    sum += p.value;
  }
  void sessionStart(int64_t) override {}
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "write" && argc >= 4) {
    const uint64_t mb = std::stoull(argv[3]);
    const Kind kind = argc > 4 && std::string(argv[4]) == "scalars" ? Kind::Scalars : Kind::Mixed;
    const int64_t steps = writeRun(argv[2], mb << 20, kind, INT64_MAX);
    std::printf("{\"steps\": %lld}\n", static_cast<long long>(steps));
    return 0;
  }
  if (mode == "runs" && argc == 5) {
    const int runs = std::stoi(argv[3]);
    const int64_t steps = std::stoll(argv[4]);
    for (int i = 0; i < runs; ++i) {
      const std::string dir = std::string(argv[2]) + "/seed" + std::to_string(i);
      std::filesystem::create_directories(dir);
      writeRun(dir + "/events.out.tfevents.1700000000.bench." + std::to_string(i) + ".0",
               UINT64_MAX, Kind::Sweep, steps);
    }
    return 0;
  }
  if (mode == "read" && argc == 3) {
    Count count;
    std::vector<std::string> problems;
    const auto t = std::chrono::steady_clock::now();
    const std::clock_t c = std::clock();
    const ckpt::TfEventsRead r = ckpt::readTfEvents(argv[2], count, 0, &problems);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    // CPU time too: on a shared machine the wall time includes waiting for a core.
    const double cpu = double(std::clock() - c) / CLOCKS_PER_SEC;
    for (const std::string& p : problems) std::fprintf(stderr, "%s\n", p.c_str());
    std::printf(
        "{\"bytes\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"records\": %llu, "
        "\"scalars\": %llu, \"sum\": %.3f}\n",
        static_cast<unsigned long long>(r.end), s, cpu, static_cast<unsigned long long>(r.records),
        static_cast<unsigned long long>(count.scalars), count.sum);
    return problems.empty() && r.badRecords == 0 ? 0 : 1;
  }
  std::fprintf(stderr,
               "usage: bench_tfevents write FILE MB [scalars] | runs DIR N STEPS | read FILE\n");
  return 2;
}
