// The one clock every timestamp comes from: monotonic seconds.
#pragma once

#include <chrono>

namespace gpuscale {

inline double clock_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace gpuscale
