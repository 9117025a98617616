// Checks the global heap collections of a file in HDF5's earliest format (no checksums: result files before
// schema 1.4) before the HDF5 library reads them: on some damage, HDF5 1.10 loops forever reading one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpuscale {

// What is wrong with the first damaged global heap collection of the file at `path`, in a user's words
// ("global heap at byte 2048: the object at byte 2064 has size 0"); nothing when each collection the library
// could read walks object by object to its end, and for files whose superblock is of version 2 on (checksummed
// metadata, as gpuscale writes from schema 1.4 on), or that the check cannot open.
std::optional<std::string> old_heap_damage(const std::string& path);

}  // namespace gpuscale
