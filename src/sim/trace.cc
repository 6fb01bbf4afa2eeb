#include "sim/trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>

#include "model/quantity.h"

namespace tidepool::sim {
namespace {

constexpr std::string_view kNativeColumns[] = {"id",   "submit_s",  "duration_s", "replicas",
                                               "cpu",  "memory",    "gpu",        "gpu_model",
                                               "gang", "namespace", "priority",   "spot"};
constexpr size_t kNativeRequired = 7;  // id .. gpu
constexpr std::string_view kAlibabaColumns[] = {
    "name", "cpu_milli", "memory_mib",    "num_gpu",       "gpu_milli",     "gpu_spec",
    "qos",  "pod_phase", "creation_time", "deletion_time", "scheduled_time"};

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      break;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
  for (auto& f : out) {
    while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.remove_suffix(1);
  }
  return out;
}

// Where a cell is, for errors.
struct Cell {
  std::string_view source;
  int line;
  std::string_view column;
  std::string_view text;

  std::unexpected<Error> Bad(std::string_view expected) const {
    return InvalidArgument("{}:{}: column {}: expected {}, got \"{}\"", source, line, column,
                           expected, text);
  }
};

Result<int64_t> ReadInt(const Cell& c, int64_t lo, int64_t hi, std::string_view what) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(c.text.data(), c.text.data() + c.text.size(), v);
  if (c.text.empty() || ec != std::errc() || ptr != c.text.data() + c.text.size() || v < lo ||
      v > hi) {
    return c.Bad(what);
  }
  return v;
}

// Seconds, integer or decimal, non-negative.
Result<Duration> ReadSeconds(const Cell& c) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(c.text.data(), c.text.data() + c.text.size(), v);
  if (c.text.empty() || ec != std::errc() || ptr != c.text.data() + c.text.size() || !(v >= 0) ||
      v > 1e11) {
    return c.Bad("a non-negative number of seconds");
  }
  return Duration(static_cast<int64_t>(v * 1000 + 0.5));
}

Result<bool> ReadBool(const Cell& c) {
  if (c.text.empty() || c.text == "false" || c.text == "False" || c.text == "0") return false;
  if (c.text == "true" || c.text == "True" || c.text == "1") return true;
  return c.Bad("true or false");
}

Result<model::Quantity> ReadQuantity(const Cell& c) {
  auto q = model::Quantity::Parse(c.text);
  if (!q || q->Sign() < 0) return c.Bad("a non-negative Kubernetes quantity (e.g. 500m, 4Gi)");
  return *q;
}

std::vector<std::string> SplitModels(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t bar = text.find('|', start);
    std::string_view m =
        text.substr(start, bar == std::string_view::npos ? text.npos : bar - start);
    if (!m.empty()) out.emplace_back(m);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

const model::ResourceId& GpuId() {
  static const model::ResourceId id = model::InternResource(model::kNvidiaGpu);
  return id;
}

Result<JobSpec> ParseNativeRow(const std::vector<std::string_view>& f, std::string_view source,
                               int line) {
  auto cell = [&](size_t i) { return Cell{source, line, kNativeColumns[i], f[i]}; };
  JobSpec j;
  j.line = line;
  j.id = std::string(f[0]);
  if (j.id.empty()) return cell(0).Bad("a job id");
  TIDEPOOL_ASSIGN_OR_RETURN(j.submit, ReadSeconds(cell(1)));
  TIDEPOOL_ASSIGN_OR_RETURN(j.duration, ReadSeconds(cell(2)));
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t replicas, ReadInt(cell(3), 1, 100000, "an integer >= 1"));
  j.replicas = static_cast<int>(replicas);
  TIDEPOOL_ASSIGN_OR_RETURN(model::Quantity cpu, ReadQuantity(cell(4)));
  TIDEPOOL_ASSIGN_OR_RETURN(model::Quantity mem, ReadQuantity(cell(5)));
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t gpu, ReadInt(cell(6), 0, 1024, "a GPU count >= 0"));
  j.requests.SetQuantity(model::kCpu, cpu);
  j.requests.SetQuantity(model::kMemory, mem);
  if (gpu > 0) j.requests.Set(GpuId(), gpu);
  if (f.size() > 7) j.gpu_models = SplitModels(f[7]);
  if (f.size() > 8) {
    TIDEPOOL_ASSIGN_OR_RETURN(j.gang, ReadBool(cell(8)));
  }
  if (f.size() > 9 && !f[9].empty()) j.namespace_ = std::string(f[9]);
  if (f.size() > 10 && !f[10].empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(int64_t p,
                              ReadInt(cell(10), -2000000000, 2000000000, "an integer priority"));
    j.priority = static_cast<int32_t>(p);
  }
  if (f.size() > 11) {
    TIDEPOOL_ASSIGN_OR_RETURN(j.spot, ReadBool(cell(11)));
  }
  return j;
}

struct AlibabaRow {
  JobSpec job;
  int64_t creation = 0;
  std::optional<int64_t> deletion, scheduled;
};

Result<AlibabaRow> ParseAlibabaRow(const std::vector<std::string_view>& f, std::string_view source,
                                   int line, const TraceOptions& options) {
  auto cell = [&](size_t i) { return Cell{source, line, kAlibabaColumns[i], f[i]}; };
  constexpr int64_t kMax = 1'000'000'000'000;
  AlibabaRow r;
  JobSpec& j = r.job;
  j.line = line;
  j.id = std::string(f[0]);
  if (j.id.empty()) return cell(0).Bad("a pod name");
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t cpu, ReadInt(cell(1), 0, kMax, "milli-CPUs >= 0"));
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t mem, ReadInt(cell(2), 0, kMax, "MiB >= 0"));
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t gpus, ReadInt(cell(3), 0, 1024, "a GPU count >= 0"));
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t gpu_milli, ReadInt(cell(4), 0, 1000, "0..1000"));
  j.requests.Set(model::kCpu, cpu);
  j.requests.Set(model::kMemory, mem * 1024 * 1024);
  if (gpus > 0 && options.gpu_sharing) {
    static const model::ResourceId kMilli = model::InternResource(kGpuMilliResource);
    if (gpus == 1 && gpu_milli > 0 && gpu_milli < 1000) {
      j.requests.Set(kMilli, gpu_milli);  // a share of one GPU
    } else {
      j.requests.Set(GpuId(), gpus);
      j.requests.Set(kMilli, gpus * 1000);
    }
  } else if (gpus > 0) {
    j.requests.Set(GpuId(), gpus);  // without sharing, a share of a GPU takes a whole one
  }
  j.gpu_models = SplitModels(f[5]);
  j.spot = f[6] == "BE";  // best-effort pods tolerate spot capacity
  TIDEPOOL_ASSIGN_OR_RETURN(r.creation, ReadInt(cell(8), 0, kMax, "seconds >= 0"));
  if (!f[9].empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(int64_t d, ReadInt(cell(9), 0, kMax, "seconds >= 0 or empty"));
    r.deletion = d;
  }
  if (!f[10].empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(int64_t s, ReadInt(cell(10), 0, kMax, "seconds >= 0 or empty"));
    r.scheduled = s;
  }
  if (r.deletion && *r.deletion < r.creation) return cell(9).Bad("a time >= creation_time");
  if (r.scheduled && *r.scheduled < r.creation) return cell(10).Bad("a time >= creation_time");
  if (r.deletion && r.scheduled && *r.deletion < *r.scheduled) {
    return cell(9).Bad("a time >= scheduled_time");
  }
  j.submit = std::chrono::seconds(r.creation);
  j.never_ran = !r.scheduled;
  return r;
}

bool HeaderIs(const std::vector<std::string_view>& header, std::span<const std::string_view> cols,
              size_t required) {
  if (header.size() < required || header.size() > cols.size()) return false;
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] != cols[i]) return false;
  return true;
}

}  // namespace

Result<std::vector<JobSpec>> ParseTrace(std::string_view text, std::string_view source,
                                        const TraceOptions& options) {
  std::vector<JobSpec> jobs;
  std::vector<AlibabaRow> alibaba;
  TraceFormat format = TraceFormat::kNative;
  size_t columns = 0;
  int line_no = 0;
  bool have_header = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == text.npos ? text.npos : nl - pos);
    pos = nl == text.npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> f = SplitCsv(line);
    if (!have_header) {
      have_header = true;
      if (HeaderIs(f, kNativeColumns, kNativeRequired)) {
        format = TraceFormat::kNative;
      } else if (HeaderIs(f, kAlibabaColumns, std::size(kAlibabaColumns))) {
        format = TraceFormat::kAlibaba;
      } else {
        return InvalidArgument(
            "{}:{}: unknown trace header \"{}\": expected the native header \"id,submit_s,"
            "duration_s,replicas,cpu,memory,gpu[,gpu_model,gang,namespace,priority,spot]\" or the "
            "Alibaba GPU trace header \"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
            "pod_phase,creation_time,deletion_time,scheduled_time\"",
            source, line_no, line.substr(0, 200));
      }
      columns = f.size();
      continue;
    }
    if (f.size() != columns) {
      return InvalidArgument("{}:{}: expected {} columns as in the header, got {}", source, line_no,
                             columns, f.size());
    }
    if (format == TraceFormat::kNative) {
      TIDEPOOL_ASSIGN_OR_RETURN(JobSpec j, ParseNativeRow(f, source, line_no));
      jobs.push_back(std::move(j));
    } else {
      TIDEPOOL_ASSIGN_OR_RETURN(AlibabaRow r, ParseAlibabaRow(f, source, line_no, options));
      alibaba.push_back(std::move(r));
    }
  }
  if (!have_header) return InvalidArgument("{}: is empty (expected a trace with a header)", source);
  if (format == TraceFormat::kAlibaba) {
    int64_t last = 0;
    for (const AlibabaRow& r : alibaba) {
      last = std::max({last, r.creation, r.deletion.value_or(0), r.scheduled.value_or(0)});
    }
    for (AlibabaRow& r : alibaba) {
      int64_t end = r.deletion.value_or(last);
      int64_t begin = r.scheduled.value_or(r.creation);
      r.job.duration = std::chrono::seconds(std::max<int64_t>(0, end - begin));
      jobs.push_back(std::move(r.job));
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  return jobs;
}

Result<std::vector<JobSpec>> LoadTrace(const std::string& path, const TraceOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("{}: cannot read the trace file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTrace(ss.str(), path, options);
}

}  // namespace tidepool::sim
