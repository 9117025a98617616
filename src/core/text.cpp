// Small string helpers for messages and for text read from files (core/text.hpp).
#include "core/text.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

std::string shape_text(int ranks, int nodes) {
  return std::to_string(ranks) + " rank(s) on " + std::to_string(nodes) + " node(s)";
}

std::string format_number(const char* format, double v) {
  char buf[128];
  const int n = std::snprintf(buf, sizeof buf, format, v);
  if (n < static_cast<int>(sizeof buf)) return buf;
  std::string out(static_cast<std::size_t>(n) + 1, '\0');  // a longer text around the number: all of it
  std::snprintf(out.data(), out.size(), format, v);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string format_duration(double seconds) {
  const double s = std::max(0.0, seconds);
  if (!(s <= kLongestDurationS)) return "more than 1000 h";  // and the int casts below stay in range
  char buf[64];
  if (s < 10) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 60) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%d h %02d min", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  return buf;
}

std::string about_duration(double seconds) {
  const std::string d = format_duration(seconds);
  return d.rfind("more than ", 0) == 0 ? d : "about " + d;
}

namespace {
std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
}  // namespace

std::string format_sig3(double v) {
  if (!std::isfinite(v)) return "-";
  if (v == 0) return "0.00";
  // Digits after the point for three significant ones, from the rounded magnitude (9.996 is "10.0").
  int decimals = 2 - static_cast<int>(std::floor(std::log10(std::fabs(v))));
  if (decimals > 0 && std::fabs(std::stod(fixed(v, decimals))) >= std::pow(10.0, 3 - decimals)) --decimals;
  return fixed(v, std::max(decimals, 0));
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

namespace {

// A size as written: its sign, the digits before and after the point (trailing zeros dropped), the unit's power
// of 1024 (0: none) and whether a decimal "B" follows the unit letter (KB, MB, ...).
struct SizeText {
  bool negative = false, decimal_unit = false;
  std::string whole, fraction;
  int power = 0;
};

// The unit after a size's number, from its first letter on: its power of 1024 (K: 1 ... T: 4) and whether a
// decimal "B" follows the letter; power 0 where it is none of K, M, G, T, KiB, MiB, GiB, TiB (or KB ... TB).
int size_unit(const std::string& unit, bool* decimal) {
  static const std::string letters = "KMGT";
  const std::size_t u = letters.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
  std::string rest = unit.substr(1);
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  *decimal = rest == "b";
  if (u == std::string::npos || !(rest.empty() || rest == "ib" || rest == "b")) return 0;
  return static_cast<int>(u) + 1;
}

// False where `text` is not a number with an optional unit (spaces around and between allowed).
bool split_size(const std::string& text, SizeText& out) {
  const std::size_t first = text.find_first_not_of(' ');
  if (first == std::string::npos) return false;
  const std::size_t end = text.find_last_not_of(' ') + 1;
  std::size_t i = first;
  const auto digits = [&](std::string& to) {
    while (i < end && std::isdigit(static_cast<unsigned char>(text[i]))) to += text[i++];
    return !to.empty();
  };
  out.negative = text[i] == '-';
  if (out.negative) ++i;
  if (!digits(out.whole)) return false;
  if (i < end && text[i] == '.') {
    ++i;
    if (!digits(out.fraction)) return false;
  }
  while (!out.fraction.empty() && out.fraction.back() == '0') out.fraction.pop_back();
  while (i < end && text[i] == ' ') ++i;
  if (i == end) return true;
  out.power = size_unit(text.substr(i, end - i), &out.decimal_unit);
  return out.power > 0;
}

// The bytes of a size split_size read (not negative, no decimal unit): whole x 2^s plus fraction x 2^s, where
// the fraction's d digits f make f x 2^s / 10^d bytes: whole only where d <= s (else 10 would divide f, whose
// last digit is not 0) and 5^d divides f. Exact in 128 bits: 5^d <= 5^40 < 2^94.
ParsedSize size_bytes(const SizeText& t) {
  __extension__ typedef unsigned __int128 U;  // GCC's and Clang's, where ISO C++ has no 128-bit integer
  const int shift = 10 * t.power;
  const U max = static_cast<U>(INT64_MAX);
  U whole = 0;
  for (char c : t.whole) {
    whole = whole * 10 + static_cast<U>(c - '0');
    if (whole > (max >> shift)) return {SizeProblem::too_large};
  }
  const auto d = static_cast<int>(t.fraction.size());
  U fraction = 0, rest = 0, five_d = 1;
  for (int k = 0; k < d && d <= shift; ++k) five_d *= 5;
  for (std::size_t k = 0; d <= shift && k < t.fraction.size(); ++k) {  // f / 5^d, long division
    rest = rest * 10 + static_cast<U>(t.fraction[k] - '0');
    fraction = fraction * 10 + rest / five_d;
    rest %= five_d;
  }
  if (d > shift || rest != 0) {
    const double approx = std::ldexp(std::strtod((t.whole + "." + t.fraction).c_str(), nullptr), shift);
    return {SizeProblem::not_whole, 0, approx};
  }
  // At most max: whole <= max >> shift, and the fraction's bytes are fewer than 2^shift.
  const U bytes = (whole << shift) + (fraction << (shift - d));
  return {SizeProblem::none, static_cast<std::int64_t>(bytes)};
}

}  // namespace

ParsedSize parse_size(const std::string& text) {
  SizeText t;
  if (!split_size(text, t)) return {SizeProblem::not_a_size};
  if (t.decimal_unit) return {SizeProblem::decimal_unit};
  if (t.negative) return {SizeProblem::negative};
  return size_bytes(t);
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

std::size_t utf8_at(const std::string& text, std::size_t i, char32_t* cp) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t n = 1;
  char32_t v = lead, least = 0;
  if (lead >= 0x80) {
    if ((lead & 0xE0) == 0xC0) n = 2, v = lead & 0x1F, least = 0x80;
    else if ((lead & 0xF0) == 0xE0) n = 3, v = lead & 0x0F, least = 0x800;
    else if ((lead & 0xF8) == 0xF0) n = 4, v = lead & 0x07, least = 0x10000;
    else return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (byte(i + k) & 0x3F);
  }
  if (v < least || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

namespace {

bool is_control(char32_t c) { return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F); }

std::string escaped(const char* format, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

namespace {

// Calls invalid(byte) for each byte of `text` that is not part of valid UTF-8, and valid(at, length, code point)
// for each character, in order.
template <class Invalid, class Valid>
void for_each_utf8(const std::string& text, Invalid&& invalid, Valid&& valid) {
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_at(text, i, &cp);
    if (n == 0) {
      invalid(static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      valid(i, n, cp);
      i += n;
    }
  }
}

}  // namespace

std::string printable(const std::string& text, const std::string& keep) {
  std::string out;
  out.reserve(text.size());
  for_each_utf8(
      text, [&](unsigned char byte) { out += escaped("\\x%02x", byte); },
      [&](std::size_t i, std::size_t n, char32_t cp) {
        if (is_control(cp) && (n > 1 || keep.find(text[i]) == std::string::npos)) {
          out += escaped(n == 1 ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(cp));
        } else {
          out.append(text, i, n);
        }
      });
  return out;
}

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : printable(text)) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool is_host_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;  // the current label's length
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '.') {
      if (label == 0 || name[i - 1] == '-') return false;
      label = 0;
      continue;
    }
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && label > 0)) return false;
    if (++label > 63) return false;
  }
  return label > 0 && name.back() != '-';
}

std::string utf8_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for_each_utf8(
      text, [&](unsigned char byte) { out += escaped("\\x%02X", byte); },
      [&](std::size_t i, std::size_t n, char32_t) { out.append(text, i, n); });
  return out;
}

std::string file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string text_problem(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_at(text, i, &cp);
    const std::string at = " at byte " + std::to_string(i + 1);
    if (n == 0) return "a byte that is not UTF-8 (" + printable(text.substr(i, 1)) + ")" + at;
    if (is_control(cp)) return "a control character (" + escaped("U+%04X", static_cast<unsigned>(cp)) + ")" + at;
    i += n;
  }
  return "";
}

std::string csv_field(const std::string& text, bool always_quote) {
  const std::string s = printable(text, "\r\n");
  if (!always_quote && s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

}  // namespace gpuscale
