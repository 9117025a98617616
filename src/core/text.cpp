#include "core/text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>

namespace gpuscale {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string nearest(const std::string& word, const std::vector<std::string>& options) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& o : options) {
    const std::size_t d = edit_distance(word, o);
    if (d < best_d) {
      best_d = d;
      best = o;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& options) {
  const std::string n = nearest(word, options);
  return n.empty() ? std::string() : " (did you mean '" + n + "'?)";
}

std::string format_number(const char* format, double v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string format_duration(double seconds) {
  const double s = std::max(0.0, seconds);
  char buf[64];
  if (s < 10) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 60) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%d h %02d min", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  return buf;
}

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  // Whole numbers from 1000 (up to 1023), where %.3g would print "1e+03".
  return format_number(u == 0 || bytes >= 1000 ? "%.0f " : "%.3g ", bytes) + units[u];
}

std::string wrap(const std::string& text, std::size_t width, const std::string& indent) {
  std::string out, line;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t to = text.find(' ', from);
    if (to == std::string::npos) to = text.size();
    const std::string word = text.substr(from, to - from);
    from = to + 1;
    if (word.empty()) continue;
    const bool first_line = out.empty();
    const std::size_t start = first_line ? 0 : indent.size();
    if (!line.empty() && start + line.size() + 1 + word.size() > width) {
      out += (first_line ? "" : indent) + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty() || out.empty()) out += (out.empty() ? "" : indent) + line + "\n";
  return out;
}

}  // namespace gpuscale
