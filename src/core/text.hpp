// Small string helpers for messages: joining lists, suggesting the nearest
// valid word, formatting numbers and sizes, wrapping lines to a terminal's width.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuscale {

std::string join(const std::vector<std::string>& items, const std::string& sep);

// The option closest to `word` by edit distance, or "" when none is close enough
// to be a plausible typo.
std::string nearest(const std::string& word, const std::vector<std::string>& options);

// " (did you mean 'x'?)" or "" when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& options);

// A job's or a group's shape as the notes and errors write it: "2 rank(s) on 1 node(s)".
std::string shape_text(int ranks, int nodes);

// printf of one number: format_number("%.2f GB/s", 1.5) == "1.50 GB/s".
std::string format_number(const char* format, double v);

// `v` to three significant digits, trailing zeros kept and no exponent:
// "1.00", "12.5", "138", "0.0523", "1234" (whole from 1000 up). "-" when not finite.
std::string format_sig3(double v);

// A duration for progress lines: "8.5 s", "42 s", "3 min 20 s", "2 h 05 min";
// "more than 1000 h" beyond that (an estimate of a typo can be any size).
std::string format_duration(double seconds);
constexpr double kLongestDurationS = 1000 * 3600.0;

// An estimate in words: "about 3 min 20 s", or "more than 1000 h".
std::string about_duration(double seconds);

// Bytes in binary units, 3 significant digits: "512 B", "1.5 GiB", "1 EiB".
std::string format_bytes(double bytes);

// A size in bytes as people write it (nccl-tests' -b 16M): a number, whole or with a decimal point, then
// optionally a unit K, M, G or T (or KiB, MiB, GiB, TiB), powers of 1024, in any case, spaces allowed between:
// "4096", "64K", "16m", "1.5M" (1572864), "1 GiB". `problem` says why another text is not one: not a number
// with such a unit, negative, not a whole number of bytes (`approx` holds the number it is, "0.3K": 307.2), more
// than a 64-bit integer holds, or a decimal unit (KB, MB, GB, TB: 10^3k or 2^10k bytes?).
enum class SizeProblem { none, not_a_size, negative, not_whole, too_large, decimal_unit };
struct ParsedSize {
  SizeProblem problem = SizeProblem::none;
  std::int64_t bytes = 0;  // with SizeProblem::none
  double approx = 0;       // with SizeProblem::not_whole
};
ParsedSize parse_size(const std::string& text);

// `text` as lines of at most `width` characters, broken at spaces; lines after
// the first start with `indent`. A word longer than a line stays whole. Ends with '\n'.
std::string wrap(const std::string& text, std::size_t width = 80, const std::string& indent = "  ");

// The length of the valid UTF-8 sequence at text[i] (i < text.size()), with
// its code point in *cp; 0 where the bytes there are not UTF-8 (overlong
// forms, surrogates and code points past U+10FFFF are not).
std::size_t utf8_at(const std::string& text, std::size_t i, char32_t* cp);

// `text` with every byte that is not part of valid UTF-8 written as \xNN
// (upper-case hex), the rest as it is: text to store (a path, a command line
// and the environment need not be UTF-8).
std::string utf8_escaped(const std::string& text);

// What a file of this st_mode is, for a message about a path that is not a
// regular file: "a directory", "a FIFO", "a character device", ...
std::string file_kind(unsigned mode);

// Text from a file or another program, safe to print: every control character
// (C0, DEL) and every byte that is not part of valid UTF-8 written as \xNN, a C1
// control (U+0080..U+009F) as \u00NN; the characters of `keep` (e.g. "\n") stay.
std::string printable(const std::string& text, const std::string& keep = "");

// `text` as one word for a POSIX shell, on one line: printable() in single quotes, each quote written '\''; pasted
// into a shell it is data, whatever it holds.
std::string shell_quoted(const std::string& text);
// True where `name` is a host name as RFC 1123 writes one: labels of letters, digits and '-' (neither first nor
// last in a label), joined by '.'; at most 253 characters. Only such a name goes into a command gpuscale prints.
bool is_host_name(const std::string& name);

// "" when `text` is valid UTF-8 without control characters (C0, DEL, C1), else
// what is wrong first, e.g. "a control character (U+001B) at byte 3".
std::string text_problem(const std::string& text);

// One CSV field (RFC 4180): quoted where it holds a comma, a double quote, CR
// or LF (or always, with `always_quote`), quotes doubled; other control
// characters escaped as printable() does.
std::string csv_field(const std::string& text, bool always_quote = false);

}  // namespace gpuscale
