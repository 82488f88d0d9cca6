// libFuzzer target for TensorBoard event files (core/index tfevents.h): the
// input is written as an event file and read whole, then again in two
// pieces as a live run is followed (the first read of a copy cut at a byte
// the input picks, the second from where it stopped on the whole file).
// Besides the sanitizers it checks that each read stops inside what it was
// given and the second goes on from the first, and that the Event decoder
// alone never reports a byte past its record. (That the two pieces give the
// whole read's points is tst_tfevents::followsAGrowingFile's: a fuzzed file
// can name a tag's plugin in one piece and rely on it in the other.) Build with the `fuzz` preset,
// then:
//   /usr/bin/python3 tests/python/make_tfevents_fixtures.py build/fuzz/tfevents
//   mkdir -p CORPUS && cp build/fuzz/tfevents/tb/*/events.out.* CORPUS/
//   build/fuzz/tests/fuzz/fuzz_tfevents -max_len=65536 -timeout=5 CORPUS
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "ckpt/index/tfevents.h"
#include "tfevent_decode.h"

using namespace ckpt;

namespace {

std::string scratch(const char* name) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fuzz_tfevents.XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) std::abort();
    return std::string(d);
  }();
  return dir + "/" + name;
}

void write(const std::string& path, const uint8_t* data, size_t size) {
  // A new file, not a truncated one: ext4 flushes a file truncated and
  // rewritten on close (a few executions a second instead of thousands).
  ::unlink(path.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

using Points = std::vector<std::pair<std::string, MetricPoint>>;

class Sink : public TfEventsHandler {
 public:
  void scalar(std::string_view tag, const MetricPoint&) override {
    if (tag.empty()) std::abort();  // a value without a name is never reported
  }
  void sessionStart(int64_t) override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string whole = scratch("events.out.tfevents.1.whole");
  const std::string cut = scratch("events.out.tfevents.2.cut");
  write(whole, data, size);
  std::vector<std::string> problems;
  uint64_t end = 0;
  const Points all = readTfEventsPoints(whole, 0, &end, &problems);
  if (end > size) std::abort();

  // The first read of a copy cut short, the rest from where it stopped.
  const size_t at = size ? size_t(data[0]) * size / 256 : 0;
  write(cut, data, at);
  uint64_t mid = 0;
  Points followed = readTfEventsPoints(cut, 0, &mid);
  if (mid > at) std::abort();
  write(cut, data, size);
  uint64_t end2 = 0;
  const Points rest = readTfEventsPoints(cut, mid, &end2);
  followed.insert(followed.end(), rest.begin(), rest.end());
  if (end2 > size || end2 < mid) std::abort();

  // The decoder alone, on the input as one record.
  Sink sink;
  detail::EventDecoder decoder(sink);
  const char* why = "";
  size_t where = 0;
  if (!decoder.decode(data, size, &why, &where) && where > size) std::abort();
  return 0;
}
