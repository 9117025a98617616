// Small string helpers for messages: joining lists, suggesting the nearest valid word.
#pragma once

#include <string>
#include <vector>

namespace gpuscale {

std::string join(const std::vector<std::string>& items, const std::string& sep);

// The option closest to `word` by edit distance, or "" when none is close enough
// to be a plausible typo.
std::string nearest(const std::string& word, const std::vector<std::string>& options);

// " (did you mean 'x'?)" or "" when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& options);

}  // namespace gpuscale
