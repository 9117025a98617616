// Whether this build has a CUDA backend and whether a device is usable: the
// answer behind backend = "auto" and `gpuscale info`. Compiles without CUDA.
#pragma once

#include <string>
#include <vector>

namespace gpuscale {

struct CudaStatus {
  bool built = false;   // compiled with CUDA
  bool usable = false;  // at least one device answered
  int device_count = 0;
  double device_memory_bytes = 0;  // the smallest visible device's memory (0: none visible)
  std::string runtime_version;  // "13.0" where built
  std::string reason;           // why not usable, as one clause
};

CudaStatus probe_cuda();

// Which of the visible devices can reach which directly (peer access: NVLink or PCIe peer to peer, what NCCL and
// CUDA IPC between ranks of a node need): [i][j] is 1 where device i can access device j's memory, 0 where it
// cannot, and the diagonal 1. Empty without a usable device (or in a build without CUDA).
std::vector<std::vector<int>> peer_access_matrix();

}  // namespace gpuscale
