// Bounds on a config before the TOML parser sees it: a regular file of at
// most 1 MiB, and values and dotted keys nested only so deep (toml++ recurses
// once per level, and a key of 50,000 parts overflows its stack).
#pragma once

#include <cstddef>
#include <string>

namespace gpuscale {

constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;  // 1 MiB: a config of thousands of experiments
constexpr std::size_t kMaxNesting = 32;    // arrays and inline tables inside one another
constexpr std::size_t kMaxKeyParts = 32;   // parts of one dotted key or [table] header

// Throws InputError "SOURCE:LINE:COL: ..." (just "SOURCE: ..." where
// `with_position` is false, as for a --set value) when `text` is over
// kMaxConfigBytes, nests values deeper than kMaxNesting or has a key of more
// than kMaxKeyParts parts. A cheap scan that skips strings and comments; the
// parser finds every other mistake.
void check_config_shape(const std::string& text, const std::string& source, bool with_position = true);

// The text of a config file, or InputError when it is not a regular file (a
// directory, a device, a FIFO: never opened, so nothing blocks), is over
// kMaxConfigBytes or cannot be read.
std::string read_config_file(const std::string& path);

}  // namespace gpuscale
