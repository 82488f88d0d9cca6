// bench_reader: how fast CkptScope reads a checkpoint's metadata and tensor
// table, how much memory that costs, and how fast it lists a directory.
//
//   bench_reader FILE [--iters N] [--dir DIR] [--dir-runs N]
//                [--cli PATH] [--launches N] [--json OUT.json]
//
// In-process figure: CheckpointFile::open(FILE) + CheckpointView + walking the
// tensor table (name, dtype, shape of every tensor) + reading step, loss and
// config; median over N iterations after a warm-up. The file's page cache is
// warm (the same file is read over and over): this measures the reader, not
// the disk.
// Memory: VmRSS (and the heap bytes malloc hands out) before the first open and
// after one opened file is kept alive with its view and tensor walk.
// Breakdown: the same work split into the phases CheckpointFile::open goes
// through, rebuilt here from the library's public pieces (InputFile,
// ZipArchive, PickleReader, walkTensors), so a miss can be pinned on a phase.
// --dir: scanDirectory(DIR) (what `ckptscope-cli ls` does), median of runs.
// --cli: fresh `PATH info FILE > /dev/null` processes (posix_spawn + waitpid),
// median of launches; `/bin/true` is timed the same way as the spawn floor.
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/input_file.h"
#include "ckpt/format/pickle_reader.h"
#include "ckpt/format/zip_archive.h"
#include "ckpt/index/scanner.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;
using ckpt::Value;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Keeps the optimiser from dropping work whose result nobody reads.
volatile uint64_t g_sink = 0;

struct Stats {
  double median = 0, min = 0, p90 = 0, mean = 0;
  size_t n = 0;
};

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.min = v.front();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.p90 = v[std::min(v.size() - 1, size_t(double(v.size()) * 0.9))];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  return s;
}

json statsJson(const Stats& s, double scale) {
  return json{{"median", s.median * scale},
              {"min", s.min * scale},
              {"p90", s.p90 * scale},
              {"mean", s.mean * scale},
              {"n", s.n}};
}

// /proc/self/status field in kB ("VmRSS", "VmHWM").
long procStatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::atol(line.c_str() + n + 1);
  return -1;
}

size_t heapInUse() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
#else
  return 0;
#endif
}

// The work the headline figure measures, on an opened file: the view, step /
// loss / config, and every tensor's name, dtype and shape.
uint64_t describe(const ckpt::CheckpointFile& file) {
  const ckpt::CheckpointView view(file);
  uint64_t h = 0;
  if (view.step()) h += uint64_t(*view.step());
  if (view.loss()) h += uint64_t(*view.loss() * 1000);
  if (const Value* c = view.config())
    for (const auto& [k, v] : c->entries) h += k->text.size() + uint64_t(v->kind);
  for (const ckpt::TensorInfo& t : file.tensors()) {
    const std::string_view name = t.name();
    const std::string_view dtype = ckpt::dtypeName(t.dtype);
    h += name.size() + dtype.size();
    for (int64_t d : t.shape) h += uint64_t(d);
  }
  return h;
}

uint64_t openAndDescribe(const std::string& path) {
  const auto file = ckpt::CheckpointFile::open(path);
  return describe(*file);
}

// Minor page faults of this thread so far (fresh memory being touched).
long minorFaults() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

// A cache-contention meter: nanoseconds per load of a pointer chase through
// 1 MiB in random line order. About 15 ns when this core's L2 is ours;
// 25-50 ns and more while a neighbour on the same core (another guest of a
// shared VM host) crowds it, and an open then takes about 1.7x as long. Read between slices of each
// round of the in-process figure and printed with it: a slow round with a slow chase was crowded.
class ChaseMeter {
 public:
  ChaseMeter() {
    const size_t lines = (size_t(1) << 20) / 64;
    std::vector<size_t> order(lines);
    for (size_t i = 0; i < lines; ++i) order[i] = i;
    uint64_t x = 0x9E3779B97F4A7C15ull;  // a fixed shuffle (xorshift)
    for (size_t i = lines - 1; i > 0; --i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::swap(order[i], order[size_t(x % (i + 1))]);
    }
    m_next.assign(lines * 8, 0);
    for (size_t i = 0; i < lines; ++i) m_next[order[i] * 8] = order[(i + 1) % lines] * 8;
  }
  double nsPerLoad() {
    const size_t steps = m_next.size() / 8;  // once round the whole cycle
    uint64_t p = 0;
    for (size_t i = 0; i < steps; ++i) p = m_next[p];  // a first round brings it in
    const auto t0 = Clock::now();
    for (size_t i = 0; i < steps; ++i) p = m_next[p];
    g_sink = g_sink + p;
    return std::chrono::duration<double>(Clock::now() - t0).count() * 1e9 / double(steps);
  }

 private:
  std::vector<uint64_t> m_next;
};

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Wall-clock seconds per call; `cpu`, when given, gets this thread's CPU
// seconds per call (what the work costs when other processes compete for
// the cores: the wall figure then includes time spent waiting for one).
template <class F>
std::vector<double> timeIt(size_t warmup, size_t iters, F&& f, std::vector<double>* cpu = nullptr) {
  for (size_t i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  t.reserve(iters);
  if (cpu) cpu->reserve(iters);
  for (size_t i = 0; i < iters; ++i) {
    const double c0 = cpu ? threadCpuSeconds() : 0;
    const auto t0 = Clock::now();
    f();
    t.push_back(secondsSince(t0));
    if (cpu) cpu->push_back(threadCpuSeconds() - c0);
  }
  return t;
}

// ---- phase breakdown ------------------------------------------------------

// The floor under any pickle parser: step over every opcode and its
// argument bytes, build nothing. Knows the opcodes torch.save writes
// (FORMAT.md section 2); returns -1 on any other.
int64_t opcodeScan(const uint8_t* p, uint64_t n) {
  uint64_t i = 0;
  int64_t ops = 0;
  auto le = [&](uint64_t at, int bytes) {
    uint64_t v = 0;
    for (int b = 0; b < bytes; ++b) v |= uint64_t(p[at + uint64_t(b)]) << (8 * b);
    return v;
  };
  while (i < n) {
    const uint8_t op = p[i++];
    ++ops;
    switch (op) {
      case '.':
        return ops;  // STOP
      case 0x80:
      case 'K':
      case 'q':
      case 'h':
        i += 1;
        break;  // PROTO BININT1 BINPUT BINGET
      case 'M':
        i += 2;
        break;  // BININT2
      case 'J':
      case 'r':
      case 'j':
        i += 4;
        break;  // BININT LONG_BINPUT LONG_BINGET
      case 'G':
      case 0x95:
        i += 8;
        break;  // BINFLOAT FRAME
      case 'X':
      case 'T':
      case 'B':
        i += 4 + le(i, 4);
        break;  // BINUNICODE BINSTRING BINBYTES
      case 0x8c:
      case 'U':
      case 'C':
      case 0x8a:
        i += 1 + p[i];
        break;   // SHORT_BINUNICODE ... LONG1
      case 'c':  // GLOBAL: two lines
        for (int line = 0; line < 2; ++line) {
          while (i < n && p[i] != '\n') ++i;
          ++i;
        }
        break;
      case '(':
      case 't':
      case 0x85:
      case 0x86:
      case 0x87:
      case ')':
      case '}':
      case ']':
      case 's':
      case 'u':
      case 'a':
      case 'e':
      case 0x88:
      case 0x89:
      case 'N':
      case 'R':
      case 'b':
      case 0x81:
      case 'Q':
      case '0':
      case '1':
      case 0x94:
      case 0x93:
      case 0x8f:
      case 0x90:
      case 0x91:
        break;
      default:
        return -1;
    }
  }
  return -1;
}

struct Phase {
  const char* name;
  const char* what;
  std::vector<double> times;
};

json breakdown(const std::string& path, size_t iters, std::vector<Phase>& phases, json& counts) {
  // The library's own phases (ReadOptions::phases), then what the headline
  // does with the open file, then its teardown: the same work as the
  // headline figure, split where it happens.
  enum {
    kSniff,
    kZip,
    kPklRead,
    kParse,
    kRecords,
    kFinish,
    kView,
    kWalk,
    kTeardown,
    kMapNames,
    kCount
  };
  phases = {
      {"file open + sniff", "InputFile (open, fstat) + sniffFile (pread 512 B)", {}},
      {"zip directory", "ZipArchive: end records, central directory; records by name", {}},
      {"pickle read", "data.pkl's local header + pread into the value arena", {}},
      {"pickle parse", "PickleReader::parse: value tree, memo, storage and tensor tables", {}},
      {"storage records", "every storage's zip record found and its size checked", {}},
      {"finish (tree walk)", "tensors in tree order with their paths, extents checked", {}},
      {"CheckpointView",
       "CheckpointView ctor: model_state/optimizer/metadata, step, loss, config",
       {}},
      {"tensor table walk", "name + dtypeName + shape of every tensor", {}},
      {"teardown",
       "CheckpointFile destroyed: arena, tables (kept for the next open), zip, file",
       {}},
      {"(not in headline) view.entries()",
       "state-dict names, tie detection, optimizer mapping",
       {}},
  };
  for (auto& p : phases) p.times.reserve(iters);

  ckpt::OpenPhases op;
  ckpt::ReadOptions options;
  options.phases = &op;
  auto once = [&](bool record) {
    auto file = ckpt::CheckpointFile::open(path, options);
    auto t = Clock::now();
    auto lap = [&](int phase) {
      const auto now = Clock::now();
      if (record)
        phases[size_t(phase)].times.push_back(std::chrono::duration<double>(now - t).count());
      t = now;
    };
    uint64_t h = 0;
    {
      const ckpt::CheckpointView view(*file);
      if (view.step()) h += uint64_t(*view.step());
      if (const Value* c = view.config()) h += c->entries.size();
      lap(kView);
    }
    for (const ckpt::TensorInfo& ti : file->tensors()) {
      h += ti.name().size() + ckpt::dtypeName(ti.dtype).size();
      for (int64_t d : ti.shape) h += uint64_t(d);
    }
    g_sink = g_sink + h;
    lap(kWalk);
    if (record) {
      const double library[] = {op.sniff, op.directory, op.pickleRead,
                                op.parse, op.records,   op.finish};
      for (int i = kSniff; i <= kFinish; ++i) phases[size_t(i)].times.push_back(library[i]);
    } else {
      const ckpt::ZipEntry* pkl = nullptr;
      for (const ckpt::ZipEntry& e : file->zip()->entries())
        if (e.name.size() >= 9 && e.name.compare(e.name.size() - 9, 9, "/data.pkl") == 0) pkl = &e;
      counts["data_pkl_bytes"] = pkl ? pkl->size : 0;
      counts["zip_entries"] = file->zip()->entries().size();
      counts["values_in_tree"] = file->valueCount();
      counts["sizeof_Value"] = sizeof(Value);
      counts["sizeof_TensorInfo"] = sizeof(ckpt::TensorInfo);
      counts["tensors"] = file->tensors().size();
      counts["storages"] = file->storages().size();
    }
    {
      const ckpt::CheckpointView view(*file);
      t = Clock::now();  // the view's ctor is not part of this phase
      g_sink = g_sink + view.entries().size() + view.optimizerParams().size();
      lap(kMapNames);
    }
    t = Clock::now();
    file.reset();
    lap(kTeardown);
  };
  once(false);
  for (size_t i = 0; i < std::max<size_t>(5, iters / 10); ++i) once(false);
  for (size_t i = 0; i < iters; ++i) once(true);

  json out = json::array();
  for (const Phase& p : phases) {
    const Stats s = stats(p.times);
    out.push_back({{"phase", p.name},
                   {"what", p.what},
                   {"median_ms", s.median * 1e3},
                   {"min_ms", s.min * 1e3}});
  }
  return out;
}

// ---- fresh processes --------------------------------------------------------

double spawnOnce(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const auto t0 = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const double dt = secondsSince(t0);
  posix_spawn_file_actions_destroy(&fa);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(argv[0] + " " + (argv.size() > 1 ? argv[1] : "") + " failed (status " +
                             std::to_string(status) + ")");
  return dt;
}

Stats spawnStats(const std::vector<std::string>& argv, size_t warmup, size_t launches) {
  return stats(timeIt(warmup, launches, [&] { spawnOnce(argv); }));
}

void usage() {
  std::fprintf(
      stderr,
      "usage: bench_reader FILE [--iters N] [--dir DIR] [--dir-runs N] [--cli PATH] [--launches N] "
      "[--json OUT.json] [--profile-loop N]\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else allocates: the memory baseline.
  const long rssStartKb = procStatusKb("VmRSS");
  const size_t heapStart = heapInUse();

  std::string file, dir, cli, jsonOut;
  size_t iters = 2000, dirRuns = 7, launches = 20, profileLoops = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--iters")
      iters = std::stoul(value());
    else if (a == "--dir")
      dir = value();
    else if (a == "--dir-runs")
      dirRuns = std::stoul(value());
    else if (a == "--cli")
      cli = value();
    else if (a == "--launches")
      launches = std::stoul(value());
    else if (a == "--json")
      jsonOut = value();
    else if (a == "--profile-loop")
      profileLoops = std::stoul(value());
    else if (a.rfind("--", 0) == 0) {
      usage();
      return 2;
    } else
      file = a;
  }
  if (file.empty()) {
    usage();
    return 2;
  }

  if (profileLoops > 0) {  // for `perf record`: nothing but the headline work
    for (size_t i = 0; i < profileLoops; ++i) g_sink = g_sink + openAndDescribe(file);
    return 0;
  }

  json out;
  out["file"] = file;
  try {
    // ---- memory: one opened file kept alive ----
    uint64_t check = 0;
    {
      const auto kept = ckpt::CheckpointFile::open(file);
      const ckpt::CheckpointView view(*kept);
      check = describe(*kept);
      (void)view.entries();  // what `info` also builds
      const long rssKeptKb = procStatusKb("VmRSS");
      const size_t heapKept = heapInUse();
      out["memory"] = {{"vmrss_before_kb", rssStartKb},
                       {"vmrss_after_kb", rssKeptKb},
                       {"rss_growth_mb", double(rssKeptKb - rssStartKb) / 1024.0},
                       {"heap_in_use_growth_mb", double(heapKept - heapStart) / (1024.0 * 1024.0)},
                       {"values_in_tree", kept->valueCount()},
                       {"tensors", kept->tensors().size()},
                       {"storages", kept->storages().size()},
                       {"file_bytes", kept->fileSize()}};
      out["view"] = {{"step", view.step() ? json(*view.step()) : json(nullptr)},
                     {"loss", view.loss() ? json(*view.loss()) : json(nullptr)},
                     {"config_keys", view.config() ? view.config()->entries.size() : 0},
                     {"state_entries", view.entries().size()},
                     {"optimizer_params", view.optimizerParams().size()}};
      std::printf(
          "memory: VmRSS %ld kB -> %ld kB with one file open (+%.2f MB; heap in use +%.2f MB), "
          "%zu values, %zu tensors, %zu storages\n",
          rssStartKb, rssKeptKb, double(rssKeptKb - rssStartKb) / 1024.0,
          double(heapKept - heapStart) / (1024.0 * 1024.0), kept->valueCount(),
          kept->tensors().size(), kept->storages().size());
    }

    // ---- in-process: open + view + tensor table + step/loss/config ----
    // In rounds a quarter second apart: on a shared VM other guests slow
    // everything that touches memory for a second or so at a time, and a
    // run of one round would then be measuring them. The headline is the
    // median of the round medians; every round is printed, and the
    // statistics over all iterations are kept too.
    const size_t rounds = std::min<size_t>(10, iters),
                 perRound = std::max<size_t>(1, iters / rounds);
    std::vector<double> inprocT, inprocCpuT, roundMedians, roundChase;
    ChaseMeter meter;
    const long faults0 = minorFaults();
    for (size_t r = 0; r < rounds; ++r) {
      if (r) std::this_thread::sleep_for(std::chrono::milliseconds(250));
      // The round in 8 slices with the meter read between them (not timed).
      std::vector<double> t, cpuT;
      double chase = 0;
      constexpr size_t kSlices = 8;
      for (size_t k = 0; k < kSlices; ++k) {
        std::vector<double> sliceCpu;
        const size_t n = perRound / kSlices + (k < perRound % kSlices ? 1 : 0);
        const std::vector<double> st = timeIt(
            k == 0 ? std::max<size_t>(20, perRound / 10) : 0, n,
            [&] {
              if (openAndDescribe(file) != check)
                throw std::runtime_error("nondeterministic result");
            },
            &sliceCpu);
        t.insert(t.end(), st.begin(), st.end());
        cpuT.insert(cpuT.end(), sliceCpu.begin(), sliceCpu.end());
        chase += meter.nsPerLoad() / double(kSlices);
      }
      roundChase.push_back(chase);
      roundMedians.push_back(stats(t).median);
      inprocT.insert(inprocT.end(), t.begin(), t.end());
      inprocCpuT.insert(inprocCpuT.end(), cpuT.begin(), cpuT.end());
    }
    const double faultsPerOpen = double(minorFaults() - faults0) /
                                 double(rounds * (std::max<size_t>(20, perRound / 10) + perRound));
    out["in_process_page_faults_per_open"] = faultsPerOpen;
    const Stats all = stats(inprocT), inprocCpu = stats(inprocCpuT), byRound = stats(roundMedians);
    out["in_process_ms"] = statsJson(all, 1e3);
    out["in_process_ms"]["median"] = byRound.median * 1e3;
    out["in_process_ms"]["median_of_all_iterations"] = all.median * 1e3;
    out["in_process_ms"]["round_medians"] = json::array();
    for (double m : roundMedians) out["in_process_ms"]["round_medians"].push_back(m * 1e3);
    out["in_process_ms"]["iters"] = rounds * perRound;
    out["in_process_cpu_ms"] = statsJson(inprocCpu, 1e3);
    std::printf(
        "in-process open+view+table: median %.4f ms (of %zu round medians; all %zu iterations: "
        "median %.4f, "
        "min %.4f, p90 %.4f); thread CPU median %.4f ms\n",
        byRound.median * 1e3, rounds, rounds * perRound, all.median * 1e3, all.min * 1e3,
        all.p90 * 1e3, inprocCpu.median * 1e3);
    std::printf("  round medians (ms):");
    for (double m : roundMedians) std::printf(" %.4f", m * 1e3);
    std::printf(
        "\n  1 MiB pointer chase during each round (ns/load; about 15 while this core's L2 is "
        "ours, 25-50 crowded):");
    for (double c : roundChase) std::printf(" %.0f", c);
    std::printf("\n  page faults per open: %.2f\n", faultsPerOpen);
    out["in_process_ms"]["chase_ns_per_load"] = roundChase;

    // ---- where the time goes ----
    std::vector<Phase> phases;
    json counts = json::object();
    const size_t bIters = std::max<size_t>(50, iters / 2);
    out["breakdown"] = breakdown(file, bIters, phases, counts);
    out["breakdown_counts"] = counts;
    double sum = 0;
    std::printf("breakdown (median of %zu, ms):\n", bIters);
    for (size_t i = 0; i < phases.size(); ++i) {
      const Stats s = stats(phases[i].times);
      if (i + 1 < phases.size()) sum += s.median;
      std::printf("  %-34s %8.4f   %s\n", phases[i].name, s.median * 1e3, phases[i].what);
    }
    std::printf("  %-34s %8.4f   (sum of the headline phases; whole measured above: %.4f)\n", "sum",
                sum * 1e3, byRound.median * 1e3);
    std::printf("  counts: %s\n", counts.dump().c_str());
    {
      // The floor under any parser: stepping over the opcodes of data.pkl.
      const auto f = ckpt::CheckpointFile::open(file);
      const ckpt::ZipEntry* pkl = nullptr;
      for (const ckpt::ZipEntry& e : f->zip()->entries())
        if (e.name.size() >= 9 && e.name.compare(e.name.size() - 9, 9, "/data.pkl") == 0) pkl = &e;
      const std::vector<uint8_t> bytes = f->zip()->readAll(*pkl, 1ull << 30);
      int64_t ops = 0;
      const Stats scan =
          stats(timeIt(20, bIters, [&] { ops = opcodeScan(bytes.data(), bytes.size()); }));
      out["opcode_scan_floor_ms"] = ops > 0 ? json(scan.median * 1e3) : json(nullptr);
      if (ops > 0)
        std::printf(
            "  %-34s %8.4f   (%lld opcodes of %zu bytes stepped over, nothing built: the parse "
            "floor)\n",
            "opcode scan floor", scan.median * 1e3, (long long)ops, bytes.size());
    }
    {
      // Floor for the tree alone: as many empty Values as the file decodes
      // to, made in a ValueArena and freed again.
      const size_t n = counts.value("values_in_tree", size_t(0));
      const Stats floor = stats(timeIt(20, bIters, [&] {
        ckpt::ValueArena arena;
        for (size_t i = 0; i < n; ++i) arena.make(Value::Kind::None);
        g_sink = g_sink + arena.size();
      }));
      out["value_arena_floor_ms"] = floor.median * 1e3;
      std::printf("  %-34s %8.4f   (%zu empty Values made and freed: the node-allocation floor)\n",
                  "arena floor", floor.median * 1e3, n);
    }

    // ---- ls: scanDirectory over DIR ----
    if (!dir.empty()) {
      size_t found = 0, errors = 0;
      auto scan = [&] {
        const ckpt::ScanResult r = ckpt::scanDirectory(dir);
        found = errors = 0;
        for (const auto& run : r.runs)
          for (const auto& c : run.checkpoints) {
            ++found;
            if (!c.error.empty()) ++errors;
          }
      };
      std::vector<double> scanCpuT;
      const Stats s = stats(timeIt(1, dirRuns, scan, &scanCpuT));
      const Stats scanCpu = stats(scanCpuT);
      out["scan_dir_s"] = statsJson(s, 1.0);
      out["scan_dir_s"]["checkpoints"] = found;
      out["scan_dir_s"]["errors"] = errors;
      out["scan_dir_cpu_s"] = statsJson(scanCpu, 1.0);
      std::printf(
          "scanDirectory(%s): median %.4f s (min %.4f) over %zu runs, %zu checkpoints, %zu errors; "
          "thread CPU median %.4f s\n",
          dir.c_str(), s.median, s.min, dirRuns, found, errors, scanCpu.median);

      // Where scanDirectory's time goes: finding the files, and one
      // describeCheckpoint (open + view) per file.
      std::vector<std::string> files;
      const Stats walk = stats(timeIt(1, dirRuns, [&] {
        files.clear();
        std::error_code ec;
        for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
             it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
          if (it->is_regular_file(ec) && ckpt::isCandidateName(it->path().filename().string()))
            files.push_back(it->path().string());
        std::sort(files.begin(), files.end());
      }));
      size_t next = 0;
      const Stats one = stats(timeIt(5, std::max<size_t>(200, files.size()), [&] {
        const std::string& f = files[next++ % files.size()];
        const ckpt::CheckpointEntry e = ckpt::describeCheckpoint(f, f);
        g_sink = g_sink + uint64_t(e.step.value_or(0));
      }));
      out["scan_dir_breakdown"] = {{"find_files_ms", walk.median * 1e3},
                                   {"describe_checkpoint_ms", one.median * 1e3},
                                   {"files", files.size()},
                                   {"estimate_s", walk.median + one.median * double(files.size())}};
      std::printf(
          "  finding %zu files: %.3f ms; describeCheckpoint per file: median %.4f ms -> %.3f s for "
          "all\n",
          files.size(), walk.median * 1e3, one.median * 1e3, one.median * double(files.size()));
    }

    // ---- fresh processes ----
    if (!cli.empty()) {
      const Stats info = spawnStats({cli, "info", file}, 2, launches);
      const Stats floor = spawnStats({"/bin/true"}, 2, launches);
      out["cli_info_ms"] = statsJson(info, 1e3);
      out["spawn_floor_ms"] = statsJson(floor, 1e3);
      std::printf(
          "fresh `%s info FILE`: median %.3f ms (min %.3f) over %zu launches; /bin/true %.3f ms\n",
          cli.c_str(), info.median * 1e3, info.min * 1e3, launches, floor.median * 1e3);
      if (!dir.empty()) {
        const Stats ls = spawnStats({cli, "ls", dir}, 1, std::max<size_t>(3, launches / 4));
        out["cli_ls_ms"] = statsJson(ls, 1e3);
        std::printf("fresh `%s ls DIR`: median %.3f ms (min %.3f)\n", cli.c_str(), ls.median * 1e3,
                    ls.min * 1e3);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_reader: %s\n", e.what());
    return 1;
  }

  if (!jsonOut.empty()) {
    std::ofstream f(jsonOut);
    f << out.dump(1) << "\n";
    if (!f) {
      std::fprintf(stderr, "bench_reader: cannot write %s\n", jsonOut.c_str());
      return 1;
    }
  }
  return 0;
}
