// parse_many: the simdjson anchor for sluice's JSON parser.
//
// Loads an NDJSON file into memory (not timed), then parses every line N times
// with simdjson and prints one machine-readable summary line on stdout:
//
//   simdjson_dom_parse_many impl=icelake bytes=... docs=... values=... ... median_gbps=1.78 runs=1.75,1.78,1.80
//
// Modes:
//   (default)   DOM parser, parser.parse_many: full validation, builds the tape;
//               every document is then walked recursively (each value visited,
//               strings' lengths and numbers read) so no work can be skipped.
//   --ondemand  On-Demand parser, parser.iterate_many: every field visited, every
//               key and string unescaped, every number parsed. (simdjson 3.0.1's
//               iterate_many rejects top-level scalar documents such as a bare `1`
//               with "trailing content": they count as errors. Log lines are objects.)
//
// Per-run figures go to stderr. Documents that fail to parse are counted
// (errors=); DOM parse_many stops at the first error, so errors>0 also means the
// figures cover only part of the file: the exit status is then 2.
//
// Usage: parse_many [--ondemand] [-n RUNS] [-b BATCH_BYTES] FILE
// Pinning to one core is the caller's job (taskset -c 1 ...).
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace simdjson;

namespace {

// Counts from one pass. Every run must give the same counts; checksum mixes
// string lengths, numbers and booleans so the walk can't be optimised away.
struct counts {
  uint64_t docs = 0;
  uint64_t values = 0;     // every JSON value: objects, arrays and scalars (not keys)
  uint64_t keys = 0;       // object keys
  uint64_t str_bytes = 0;  // bytes of keys and string values (unescaped in On-Demand)
  uint64_t errors = 0;     // documents that failed
  uint64_t truncated = 0;  // bytes left unparsed at the end of the stream
  uint64_t checksum = 0;

  bool operator==(const counts &o) const {
    return docs == o.docs && values == o.values && keys == o.keys && str_bytes == o.str_bytes &&
           errors == o.errors && truncated == o.truncated && checksum == o.checksum;
  }
  bool operator!=(const counts &o) const { return !(*this == o); }
};

inline void mix(counts &c, uint64_t v) { c.checksum = (c.checksum ^ v) * 0x100000001b3ULL; }

inline uint64_t double_bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// ---- DOM ----

void walk_dom(dom::element e, counts &c) {
  c.values++;
  switch (e.type()) {
  case dom::element_type::ARRAY: {
    // A named local, not a range-for over a temporary result's value.
    dom::array arr = e.get_array().value_unsafe();
    for (dom::element child : arr) { walk_dom(child, c); }
    break;
  }
  case dom::element_type::OBJECT: {
    dom::object obj = e.get_object().value_unsafe();
    for (dom::key_value_pair kv : obj) {
      c.keys++;
      c.str_bytes += kv.key.size();
      walk_dom(kv.value, c);
    }
    break;
  }
  case dom::element_type::STRING: {
    size_t n = e.get_string().value_unsafe().size();
    c.str_bytes += n;
    mix(c, n);
    break;
  }
  case dom::element_type::INT64:
    mix(c, uint64_t(e.get_int64().value_unsafe()));
    break;
  case dom::element_type::UINT64:
    mix(c, e.get_uint64().value_unsafe());
    break;
  case dom::element_type::DOUBLE:
    mix(c, double_bits(e.get_double().value_unsafe()));
    break;
  case dom::element_type::BOOL:
    mix(c, e.get_bool().value_unsafe() ? 1 : 2);
    break;
  case dom::element_type::NULL_VALUE:
    mix(c, 3);
    break;
  }
}

counts run_dom(dom::parser &parser, const padded_string &json, size_t batch) {
  counts c;
  dom::document_stream stream;
  if (auto err = parser.parse_many(json, batch).get(stream)) {
    std::fprintf(stderr, "parse_many: %s\n", error_message(err));
    c.errors++;
    return c;
  }
  for (auto it = stream.begin(); it != stream.end(); ++it) {
    dom::element root;
    if (auto err = (*it).get(root)) {
      // parse_many ends the stream after an error; report the first one.
      if (c.errors++ == 0) {
        std::fprintf(stderr, "document %llu at byte %zu: %s\n", (unsigned long long)c.docs,
                     it.current_index(), error_message(err));
      }
      continue;
    }
    c.docs++;
    walk_dom(root, c);
  }
  c.truncated = stream.truncated_bytes();
  return c;
}

// ---- On-Demand ----

error_code walk_od(ondemand::value v, counts &c);

error_code walk_od_object(ondemand::object obj, counts &c) {
  for (auto field_result : obj) {
    ondemand::field field;
    if (auto err = std::move(field_result).get(field)) { return err; }
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) { return err; }
    c.keys++;
    c.str_bytes += key.size();
    if (auto err = walk_od(field.value(), c)) { return err; }
  }
  return SUCCESS;
}

error_code walk_od_array(ondemand::array arr, counts &c) {
  for (auto elem : arr) {
    ondemand::value v;
    if (auto err = std::move(elem).get(v)) { return err; }
    if (auto err = walk_od(v, c)) { return err; }
  }
  return SUCCESS;
}

// Scalars, for a value or a top-level document (On-Demand has no value view of
// a scalar document, so both go through this template).
template <typename V> error_code walk_od_scalar(V &v, ondemand::json_type t, counts &c) {
  switch (t) {
  case ondemand::json_type::number: {
    ondemand::number n;
    if (auto err = v.get_number().get(n)) { return err; }
    switch (n.get_number_type()) {
    case ondemand::number_type::signed_integer: mix(c, uint64_t(n.get_int64())); break;
    case ondemand::number_type::unsigned_integer: mix(c, n.get_uint64()); break;
    case ondemand::number_type::floating_point_number: mix(c, double_bits(n.get_double())); break;
    }
    return SUCCESS;
  }
  case ondemand::json_type::string: {
    std::string_view s;
    if (auto err = v.get_string().get(s)) { return err; }
    c.str_bytes += s.size();
    mix(c, s.size());
    return SUCCESS;
  }
  case ondemand::json_type::boolean: {
    bool b;
    if (auto err = v.get_bool().get(b)) { return err; }
    mix(c, b ? 1 : 2);
    return SUCCESS;
  }
  case ondemand::json_type::null: {
    bool is_null;
    if (auto err = v.is_null().get(is_null)) { return err; }
    if (!is_null) { return INCORRECT_TYPE; }
    mix(c, 3);
    return SUCCESS;
  }
  default:
    return INCORRECT_TYPE;
  }
}

error_code walk_od(ondemand::value v, counts &c) {
  c.values++;
  ondemand::json_type t;
  if (auto err = v.type().get(t)) { return err; }
  switch (t) {
  case ondemand::json_type::object: {
    ondemand::object obj;
    if (auto err = v.get_object().get(obj)) { return err; }
    return walk_od_object(obj, c);
  }
  case ondemand::json_type::array: {
    ondemand::array arr;
    if (auto err = v.get_array().get(arr)) { return err; }
    return walk_od_array(arr, c);
  }
  default:
    return walk_od_scalar(v, t, c);
  }
}

error_code walk_od_doc(ondemand::document_reference doc, counts &c) {
  c.values++;
  ondemand::json_type t;
  if (auto err = doc.type().get(t)) { return err; }
  switch (t) {
  case ondemand::json_type::object: {
    ondemand::object obj;
    if (auto err = doc.get_object().get(obj)) { return err; }
    return walk_od_object(obj, c);
  }
  case ondemand::json_type::array: {
    ondemand::array arr;
    if (auto err = doc.get_array().get(arr)) { return err; }
    return walk_od_array(arr, c);
  }
  default:
    return walk_od_scalar(doc, t, c);
  }
}

counts run_ondemand(ondemand::parser &parser, const padded_string &json, size_t batch) {
  counts c;
  ondemand::document_stream stream;
  if (auto err = parser.iterate_many(json, batch).get(stream)) {
    std::fprintf(stderr, "iterate_many: %s\n", error_message(err));
    c.errors++;
    return c;
  }
  for (auto it = stream.begin(); it != stream.end(); ++it) {
    ondemand::document_reference doc;
    error_code err = (*it).get(doc);
    if (!err) { err = walk_od_doc(doc, c); }
    if (err) {
      if (c.errors++ == 0) {
        std::fprintf(stderr, "document %llu at byte %zu: %s\n", (unsigned long long)(c.docs + c.errors - 1),
                     it.current_index(), error_message(err));
      }
      continue;
    }
    c.docs++;
  }
  c.truncated = stream.truncated_bytes();
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string join(const std::vector<double> &v, const char *fmt) {
  std::string out;
  char buf[64];
  for (size_t i = 0; i < v.size(); i++) {
    std::snprintf(buf, sizeof buf, fmt, v[i]);
    if (i) { out += ','; }
    out += buf;
  }
  return out;
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: parse_many [--ondemand] [-n RUNS] [-b BATCH_BYTES] FILE\n");
  std::exit(64);
}

} // namespace

int main(int argc, char **argv) {
  bool ondemand_mode = false;
  int runs = 5;
  size_t batch = 1 << 20; // must exceed the longest line
  const char *path = nullptr;
  for (int i = 1; i < argc; i++) {
    std::string_view a = argv[i];
    if (a == "--ondemand") {
      ondemand_mode = true;
    } else if (a == "-n" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "-b" && i + 1 < argc) {
      batch = std::strtoull(argv[++i], nullptr, 10);
    } else if (!a.empty() && a[0] == '-') {
      usage();
    } else if (!path) {
      path = argv[i];
    } else {
      usage();
    }
  }
  if (!path || runs < 1 || batch == 0) { usage(); }

  padded_string json;
  if (auto err = padded_string::load(path).get(json)) {
    std::fprintf(stderr, "load %s: %s\n", path, error_message(err));
    return 1;
  }

  dom::parser dom_parser;
  ondemand::parser od_parser;
  const char *name = ondemand_mode ? "simdjson_ondemand_iterate_many" : "simdjson_dom_parse_many";
  // DOM dispatches at run time inside the library. On-Demand is inlined from the
  // header and compiled for this binary's -march target, so its kernel is this
  // translation unit's SIMDJSON_BUILTIN_IMPLEMENTATION (builtin_implementation()
  // would name the library's build target instead, not what runs here).
  std::string impl = ondemand_mode ? SIMDJSON_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION)
                                   : get_active_implementation()->name();

  std::vector<double> gbps, lps;
  counts first;
  for (int r = 0; r < runs; r++) {
    auto t0 = std::chrono::steady_clock::now();
    counts c = ondemand_mode ? run_ondemand(od_parser, json, batch) : run_dom(dom_parser, json, batch);
    auto t1 = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(t1 - t0).count();
    gbps.push_back(double(json.size()) / secs / 1e9);
    lps.push_back(double(c.docs) / secs);
    std::fprintf(stderr, "%s run %d: %.3f s  %.3f GB/s  %.3f M lines/s  docs=%llu errors=%llu\n", name,
                 r + 1, secs, gbps.back(), lps.back() / 1e6, (unsigned long long)c.docs,
                 (unsigned long long)c.errors);
    if (r == 0) {
      first = c;
    } else if (c != first) {
      std::fprintf(stderr, "run %d gave different counts from run 1\n", r + 1);
      return 1;
    }
  }

  std::printf("%s impl=%s bytes=%zu docs=%llu values=%llu keys=%llu str_bytes=%llu errors=%llu "
              "truncated=%llu checksum=%016llx batch=%zu median_gbps=%.3f median_lines_per_s=%.0f "
              "runs=%s runs_lines_per_s=%s\n",
              name, impl.c_str(), json.size(), (unsigned long long)first.docs, (unsigned long long)first.values,
              (unsigned long long)first.keys, (unsigned long long)first.str_bytes,
              (unsigned long long)first.errors, (unsigned long long)first.truncated,
              (unsigned long long)first.checksum, batch, median(gbps), median(lps),
              join(gbps, "%.3f").c_str(), join(lps, "%.0f").c_str());
  return first.errors || first.truncated ? 2 : 0;
}
